"""The mutation fuzzer on what decides where hseval may write: the marker of every kind of folder
(a run, an evaluation folder, one run's evaluation, an export) and the files of an export, each
mutated, deleted or damaged in turn, then the command that writes into that folder again (import
``--force``, report, evaluate, export). It exits 0 or 2 with at most one error line and no
traceback; refused, it changed nothing; done, it removed or changed no file the folder's marker
did not record as hseval's, and the folder is hseval's again with a marker that reads.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from hseval.cli.main import main
from hseval.io import folders as ownership
from hseval.io.folders import LOCK, MARKER
from tests.bad_inputs.builders import write
from tests.bad_inputs.cases import fashion_tree_file, foreign_cnn
from tests.bad_inputs.mutations import Mutation, mutations_of
from tests.bad_inputs.test_mutations import _apply, _stderr_lines

SEED = 20261127


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != LOCK}


def _recorded(marker: bytes | None) -> dict:
    """The ``files`` a (mutated) marker records, as far as it can be read."""
    try:
        files = json.loads(marker).get("files") if marker else None
    except (ValueError, AttributeError):
        return {}
    return files if isinstance(files, dict) else {}


FOLDERS = {  # folder kind -> (the folder in a case's copy, the command that writes there)
    "run": (lambda case: case / "run", lambda case, good: [
        "import", str(foreign_cnn(case, good)), "--backbone", "small-cnn", "--head", "plain", "--hierarchy",
        str(fashion_tree_file(case / "tree.json")), "--dataset", "fashion-mnist", "--force", "--out",
        str(case / "run")]),
    "evaluations": (lambda case: case / "eval", lambda case, good: ["report", str(case / "eval")]),
    "evaluation": (lambda case: case / "eval" / "run", lambda case, good: [
        "evaluate", str(case / "run"), "--data-root", str(good.fashion), "--projections", "none", "--quiet", "--out",
        str(case / "eval")]),
    "export": (lambda case: case / "tb", lambda case, good: ["export", str(case / "eval"), "--to", "tensorboard",
                                                             str(case / "tb")]),
}


@pytest.fixture(scope="module")
def folders(good, tmp_path_factory) -> Path:
    """A run, its evaluation folder (reported) and an export of it, written by hseval."""
    root = tmp_path_factory.mktemp("outputs")
    shutil.copytree(good.run, root / "run")
    assert main(["evaluate", str(root / "run"), "--data-root", str(good.fashion), "--projections", "pca", "--quiet",
                 "--out", str(root / "eval")]) == 0
    assert main(["report", str(root / "eval")]) == 0
    assert main(["export", str(root / "eval"), "--to", "tensorboard", str(root / "tb")]) == 0
    return root


def _mutations(folder: Path) -> list[Mutation]:
    rng = np.random.default_rng(SEED)
    found = [*mutations_of(MARKER, (folder / MARKER).read_bytes(), rng, json_edits=8),
             Mutation(MARKER, "deleted", lambda d: None)]
    if ownership.kind_of(folder) == "export":  # and every file of the export
        for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != MARKER):
            rel = path.relative_to(folder).as_posix()
            found += [Mutation(rel, "deleted", lambda d: None), Mutation(rel, "cut in the middle",
                                                                         lambda d: d[: len(d) // 2])]
        found.append(Mutation("plain/notes.md", "a file of the user's added", lambda d: b"mine"))
    return found


@pytest.mark.parametrize("kind", FOLDERS)
def test_mutated_folders_are_written_only_where_hseval_may(kind, folders, good, tmp_path, capsys, record_property):
    where, command = FOLDERS[kind]
    mutations = _mutations(where(folders))
    refused = 0
    for k, mutation in enumerate(mutations):
        case = Path(shutil.copytree(folders, tmp_path / str(k)))
        folder = where(case)
        if not (folder / mutation.file).exists():
            write(folder / mutation.file, b"")
        _apply(folder, mutation)
        before, marker = _snapshot(folder), (folder / MARKER).read_bytes() if (folder / MARKER).exists() else None
        argv = command(case, good)
        capsys.readouterr()
        code = main(argv)
        lines = _stderr_lines(capsys)
        assert code in (0, 2), (mutation.id, lines)
        if code == 2:
            refused += 1
            assert len(lines) == 1 and lines[0].startswith("hseval: error: "), (mutation.id, lines)
            assert _snapshot(folder) == before, f"{mutation.id}: refused, but the folder changed"
        else:
            after, files = _snapshot(folder), _recorded(marker)
            lost = [rel for rel, data in before.items() if after.get(rel) != data and rel != MARKER and
                    not ownership.recorded(rel, files) and not rel.startswith(".")]
            assert not lost, f"{mutation.id}: {lost} changed or removed, which the marker did not record"
            assert after == before or ownership.kind_of(folder) == kind, f"{mutation.id}: written, not hseval's"
        shutil.rmtree(case)
    record_property("output_mutations", f"{len(mutations)} tried, {refused} refused")
    print(f"\n{kind}: {len(mutations)} mutations; {refused} refused with one line, {len(mutations) - refused} "
          "written over nothing the marker did not record")
    assert refused > 0 or kind == "evaluation"  # a damaged evaluation is kept: the run gets another name
