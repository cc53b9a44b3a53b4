"""The mutation fuzzer: real run and evaluation folders, one file mutated at a time.

Starting from folders the real pipeline wrote (the ``good`` run and the ``evaluated`` folder of
three heads), every mutation of :mod:`tests.bad_inputs.mutations` is applied to one file, in two
modes: as is (the checksums then disagree: hseval must refuse the file, naming it, or give exactly
the result of the intact folder) and *resealed*, with the checksums recomputed as a user who knows
the format would (the schema checks must refuse it with one line, or the commands must work on it).
Every command that reads the folder runs: ``evaluate`` for the run; for the evaluation the loader,
``report`` through the CLI and every dashboard page through AppTest. Never a traceback, a hang or a
changed number without a word. The tensors of a run (resealed: the checksum recomputed) and of a
checkpoint to import are mutated tensor by tensor too, and the files of an export before it is
exported again.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from hseval.cli.main import main
from hseval.io import evaluation_format as eval_format
from hseval.io.folders import MARKER
from hseval.io.results import load_evaluation
from tests.bad_inputs.builders import match_checksum
from tests.bad_inputs.builders import reseal as reseal_run
from tests.bad_inputs.cases import import_cnn
from tests.bad_inputs.mutations import Mutation, mutations_of
from tests.helpers import reseal as reseal_evaluation

SEED = 20261126
RUN = "riemann"  # the evaluated run whose files are mutated (it has every kind of row)
MAIN = Path(__file__).parents[2] / "app" / "main.py"
HIERARCHY, GEOMETRY, EMBEDDINGS, CONFUSION, COMPARE = ("views/hierarchy.py", "views/geometry.py", "views/embeddings.py",
                                                       "views/confusion.py", "views/compare.py")
PAGES_READING = {  # besides the Overview, which every run of the dashboard draws first
    "metrics.json": (HIERARCHY, GEOMETRY, EMBEDDINGS, CONFUSION, COMPARE), "per_node.csv": (HIERARCHY, COMPARE),
    "geometry.csv": (GEOMETRY, COMPARE), "pair_angles.csv": (GEOMETRY,), "projections.csv": (EMBEDDINGS,),
    "embeddings.npz": (), "predictions.npz": (CONFUSION, HIERARCHY)}
"""The dashboard pages that read each file of an evaluated run."""
RUN_FILES = ("run.json", "model.safetensors", "history.csv")


def _mutations(folder: Path, files: tuple[str, ...], seed: int) -> list[Mutation]:
    rng = np.random.default_rng(seed)
    return [m for name in files for m in mutations_of(name, (folder / name).read_bytes(), rng, json_edits=6)]


def _apply(folder: Path, mutation: Mutation) -> bool:
    """Apply ``mutation`` in ``folder``; True when the file's bytes changed."""
    path = folder / mutation.file
    before = path.read_bytes()
    after = mutation.apply(before)
    if after is None:
        path.unlink()
        return True
    path.write_bytes(after)
    return after != before


def _stderr_lines(capsys) -> list[str]:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert "Traceback" not in captured.err and "internal error" not in captured.err, captured.err[-2000:]
    assert all(line.startswith(("hseval: error: ", "hseval: warning: ")) for line in lines), captured.err[-3000:]
    assert sum(line.startswith("hseval: error: ") for line in lines) <= 1, lines
    return lines


def _dashboard(folder: Path, monkeypatch, pages: tuple[str, ...]) -> AppTest:
    monkeypatch.setenv("HSEVAL_EVAL_DIR", str(folder))
    at = AppTest.from_file(str(MAIN), default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    for page in pages:
        at.switch_page(page).run()
        assert not at.exception, (page, [e.value for e in at.exception])
    return at


@pytest.fixture(scope="module")
def two_runs(evaluated, tmp_path_factory) -> Path:
    """The evaluation of riemann (the run mutated) and plain (kept intact: the Compare page, and the
    report of the other runs, must survive the damage)."""
    folder = tmp_path_factory.mktemp("fuzz") / "eval"
    for name in (RUN, "plain"):
        shutil.copytree(evaluated / name, folder / name)
    shutil.copy2(evaluated / MARKER, folder / MARKER)  # an evaluation folder hseval wrote, as the report needs
    return folder


SHOWN_ACCEPTED = 4
"""Accepted mutations of one evaluation file that the report and the dashboard are run on."""


@pytest.mark.parametrize("name", eval_format.FILES)
def test_mutated_evaluation_files(two_runs, tmp_path, monkeypatch, capsys, record_property, name):
    """Every mutation of one file of an evaluated run, as is and resealed."""
    evaluated = two_runs
    mutations = _mutations(evaluated / RUN, (name,), SEED)
    tried = refused = accepted = shown = 0
    checked_through_commands: set[tuple[str, bool]] = set()
    for k, mutation in enumerate(mutations):
        for resealed in (False, True):
            folder = Path(shutil.copytree(evaluated, tmp_path / f"{k}-{int(resealed)}"))
            changed = _apply(folder / RUN, mutation)
            if resealed:
                reseal_evaluation(folder / RUN)
            tried += 1
            evaluation = load_evaluation(folder)
            problems = [p for p in evaluation.problems if f"/{RUN}/" in p]
            if problems:  # refused: one line that names the mutated file (or, deleted, the file it needs)
                refused += 1
                assert len(problems) == 1 and "\n" not in problems[0], (mutation.id, problems)
                assert f"{RUN}/" in problems[0], (mutation.id, problems)
                if not resealed:
                    assert f"{RUN}/{mutation.file}" in problems[0], (mutation.id, problems)
            else:
                accepted += 1
                # as is, only an unchanged file may pass: a changed number is never shown without a word
                assert resealed or not changed, f"{mutation.id}: accepted although the file changed"
            key = (mutation.file, bool(problems))
            # through the report and the dashboard: the first few accepted (the loader's checks are the
            # same for all; each command costs seconds) and one refused per file
            if key not in checked_through_commands or (not problems and shown < SHOWN_ACCEPTED):
                checked_through_commands.add(key)
                shown += not problems
                capsys.readouterr()
                code = main(["report", str(folder)])
                lines = _stderr_lines(capsys)
                assert code == 0, (mutation.id, lines)
                if problems:
                    assert any(RUN in line and line.startswith("hseval: warning: left out") for line in lines)
                at = _dashboard(folder, monkeypatch, () if problems else PAGES_READING[name])
                if problems:
                    assert any(f"{RUN}/" in e.value for e in at.error), mutation.id
            shutil.rmtree(folder)
    record_property("mutations", f"{tried} tried, {refused} refused, {accepted} accepted")
    print(f"\n{name}: {len(mutations)} mutations × 2 modes = {tried} tried; {refused} refused with one line, "
          f"{accepted} accepted (resealed and valid, or unchanged)")
    assert tried == 2 * len(mutations) and refused >= len(mutations)


@pytest.fixture(scope="module")
def baseline(good, tmp_path_factory) -> dict:
    """The evaluation of the intact run: what an accepted mutation must reproduce exactly."""
    out = tmp_path_factory.mktemp("baseline") / "eval"
    assert main(["evaluate", str(good.run), "--out", str(out), "--data-root", str(good.fashion), "--projections",
                 "none", "--quiet"]) == 0
    return _numbers(out / good.run.name)


def _numbers(folder: Path) -> dict:
    metrics = json.loads((folder / "metrics.json").read_text())
    keep = ("top1", "top5", "superclass_acc", "superclass_acc_from_levels", "mistake_severity", "hierarchical_f1",
            "ece", "hierarchy")
    return {"metrics": {k: metrics.get(k) for k in keep}, "per_node": (folder / "per_node.csv").read_text(),
            "geometry": (folder / "geometry.csv").read_text()}


@pytest.mark.parametrize("name", RUN_FILES)
def test_mutated_run_files(good, baseline, tmp_path, capsys, record_property, name):
    """Every mutation of a run's file through ``hseval evaluate``: one line and exit 2, or the
    intact run's exact numbers (as is); one line or a finished evaluation (resealed run.json, or
    tensors resealed with their checksum)."""
    mutations = _mutations(good.run, (name,), SEED + 1)
    tried = refused = 0
    for k, mutation in enumerate(mutations):
        for resealed in (False, True) if mutation.file in ("run.json", "model.safetensors") else (False,):
            run = Path(shutil.copytree(good.run, tmp_path / f"{k}-{int(resealed)}" / good.run.name))
            _apply(run, mutation)
            if resealed and mutation.file == "model.safetensors" and (run / mutation.file).exists():
                match_checksum(run)  # to reach the checks of the tensors' values behind the checksum
            elif resealed and (run / "run.json").exists():
                try:
                    reseal_run(run)
                except (ValueError, AttributeError, TypeError):
                    pass  # not JSON (cut) or not an object: nothing to reseal
            out = run.parent / "eval"
            tried += 1
            capsys.readouterr()
            code = main(["evaluate", str(run), "--out", str(out), "--data-root", str(good.fashion), "--projections",
                         "none", "--quiet"])
            lines = _stderr_lines(capsys)
            assert code in (0, 2), (mutation.id, lines)
            if code == 2:
                refused += 1
                assert len(lines) == 1 and lines[0].startswith("hseval: error: "), (mutation.id, lines)
                assert not out.exists(), f"{mutation.id}: refused, but {out} was written"
            elif not resealed:
                assert _numbers(out / good.run.name) == baseline, f"{mutation.id}: other numbers without a word"
            shutil.rmtree(run.parent)
    record_property("run_mutations", f"{tried} tried, {refused} refused")
    print(f"\n{name}: {tried} mutations tried; {refused} refused with one line, {tried - refused} gave the intact "
          "run's numbers (a file evaluate does not read) or, resealed, a finished evaluation")
    assert refused > 0 or name == "history.csv"  # evaluate does not read history.csv


def test_mutated_checkpoint_to_import(good, tmp_path, capsys):
    """Every mutation of a checkpoint made elsewhere (the good run's tensors under torchvision-style
    names, as .safetensors) through ``hseval import``: one line naming it and no run folder, or a
    run that loads."""
    from safetensors.torch import load_file, save_file

    from hseval.io.run_format import load_run

    tensors = load_file(str(good.run / "model.safetensors"))
    state = {k.removeprefix("backbone.body."): v for k, v in tensors.items() if k.startswith("backbone.")}
    state["fc.weight"] = tensors["head.delta"][:10].clone()  # any (10, 128) floats: the plain head's weights
    intact = tmp_path / "ckpt.safetensors"
    save_file(state, str(intact))
    mutations = mutations_of(intact.name, intact.read_bytes(), np.random.default_rng(SEED + 2))
    assert any("below 0" in m.what for m in mutations)
    refused, accepted = 0, []
    for k, mutation in enumerate(mutations):
        folder = tmp_path / str(k)
        folder.mkdir()
        changed = mutation.apply(intact.read_bytes())
        checkpoint = folder / intact.name
        if changed is not None:
            checkpoint.write_bytes(changed)
        capsys.readouterr()
        code = main(import_cnn(folder, good, checkpoint))
        lines = _stderr_lines(capsys)
        assert code in (0, 2), (mutation.id, lines)
        if code == 2:
            refused += 1
            assert len(lines) == 1 and intact.name in lines[0], (mutation.id, lines)
            assert not (folder / "r").exists(), f"{mutation.id}: refused, but a run was written"
        else:
            accepted.append(mutation.what)
            load_run(folder / "r")
    print(f"\n{intact.name}: {len(mutations)} mutations tried; {refused} refused with one line")
    # a valid checkpoint may load: negated weights, or a byte changed inside the tensor data into a finite value
    # (safetensors has no checksum); a change in the header or any damage the checks name may not
    data_starts = 8 + int.from_bytes(intact.read_bytes()[:8], "little")
    valid = [w for w in accepted if w.endswith("negated") or
             (w.startswith("byte ") and int(w.split()[1]) >= data_starts)]
    assert accepted == valid and refused >= len(mutations) - 2, accepted


def test_mutated_export_files(two_runs, tmp_path, capsys):
    """Every mutation of one file of an export, then the same export again: it replaces the export
    (the files then equal a fresh export's) or refuses in one line; never a traceback."""
    fresh = tmp_path / "fresh"
    assert main(["export", str(two_runs), str(fresh), "--to", "tensorboard"]) == 0
    files = sorted(str(p.relative_to(fresh)) for p in fresh.rglob("*") if p.is_file() and not p.name.startswith("."))
    expected = {name: (fresh / name).read_bytes() for name in files}
    rng = np.random.default_rng(SEED + 3)
    tried = 0
    for name in files:
        for mutation in mutations_of(name, expected[name], rng):
            out = Path(shutil.copytree(fresh, tmp_path / f"tb-{tried}"))
            _apply(out, mutation)
            tried += 1
            capsys.readouterr()
            code = main(["export", str(two_runs), str(out), "--to", "tensorboard"])
            lines = _stderr_lines(capsys)
            assert code in (0, 2), (mutation.id, lines)
            if code == 0:
                assert {n: (out / n).read_bytes() for n in files} == expected, mutation.id
            else:
                assert len(lines) == 1, (mutation.id, lines)
            shutil.rmtree(out)
    assert tried >= 3 * len(files)
