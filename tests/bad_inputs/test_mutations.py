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

import hashlib
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
from tests.bad_inputs.mutations import Mutation, mutations_of, number_paths, unusable_cells, unusable_numbers
from tests.helpers import reseal as reseal_evaluation

SEED = 20261126
RUN = "riemann"  # the evaluated run whose files are mutated (it has every kind of row)
MAIN = Path(__file__).parents[2] / "app" / "main.py"
HIERARCHY, GEOMETRY, EMBEDDINGS, CONFUSION, COMPARE, DECISIONS = (
    "views/hierarchy.py", "views/geometry.py", "views/embeddings.py", "views/confusion.py", "views/compare.py",
    "views/decisions.py")
PAGES_READING = {  # besides the Overview, which every run of the dashboard draws first
    "metrics.json": (HIERARCHY, GEOMETRY, EMBEDDINGS, CONFUSION, COMPARE, DECISIONS),
    "per_node.csv": (HIERARCHY, COMPARE), "geometry.csv": (GEOMETRY, COMPARE), "pair_angles.csv": (GEOMETRY,),
    "projections.csv": (EMBEDDINGS,), "embeddings.npz": (), "predictions.npz": (CONFUSION, HIERARCHY, DECISIONS),
    "decisions.csv": (DECISIONS,), "operating_curve.csv": (DECISIONS,)}
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


SHOWN_ACCEPTED = 2
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


@pytest.fixture(scope="module")
def referring(good, tmp_path_factory) -> tuple[Path, Path, dict]:
    """A run whose frozen backbone is read from its --init file (``w.safetensors``, by run.json's
    ``by_reference``), and the numbers of its evaluation."""
    from tests.test_pretrained import small_cnn_file

    root = tmp_path_factory.mktemp("referring")
    init, _ = small_cnn_file(root, "w.safetensors")
    run = root / "run"
    assert main(["train", "--head", "plain", "--backbone", "small-cnn", "--init", str(init), "--set",
                 "model.freeze_backbone=true", "--data-root", str(good.fashion), "--quiet", "--set", "optim.epochs=1",
                 "--set", "data.train_subset=64", "--set", "engine.threads=1", "--out", str(run)]) == 0
    assert json.loads((run / "run.json").read_text())["by_reference"]
    out = root / "eval"
    assert main(["evaluate", str(run), "--out", str(out), "--data-root", str(good.fashion), "--projections", "none",
                 "--quiet"]) == 0
    return run, init, _numbers(out / run.name)


def _by_reference_edits(record: dict) -> list[tuple[str, object]]:
    """Edits of run.json's ``by_reference`` (resealed): its path, its path from the run, its
    SHA-256, a tensor's key in the file and a tensor's name in the run."""
    name, key = next(iter(record["tensors"].items()))
    return [("path", {**record, "path": record["path"] + ".gone"}), ("relative", {**record, "relative": "x/w.pt"}),
            ("no relative", {**record, "relative": None}), ("sha256", {**record, "sha256": "0" * 64}),
            ("file key", {**record, "tensors": {**record["tensors"], name: key + "x"}}),
            ("run tensor", {**record, "tensors": {**record["tensors"], "backbone.body.nope": key}}),
            ("head's tensor", {**record, "tensors": {**record["tensors"], "head.classifier.weight": key}})]


def test_mutated_referred_backbone(good, referring, tmp_path, capsys):
    """Every mutation of the --init file a run reads its frozen backbone from, as is (its SHA-256 then
    differs: refused in one line naming the file) and with run.json's SHA-256 of it resealed (one
    line naming it, or a finished evaluation); and edits of run.json's ``by_reference``, resealed:
    one line, or the intact numbers where the file is still found."""
    from tests.bad_inputs.builders import edit_meta

    run, init, intact_numbers = referring
    intact = init.read_bytes()
    mutations = mutations_of(init.name, intact, np.random.default_rng(SEED + 4))
    tried = 0
    for k, mutation in enumerate(mutations):
        for resealed in (False, True):
            copy = Path(shutil.copytree(run, tmp_path / f"{k}-{int(resealed)}" / run.name))
            changed = mutation.apply(intact)
            try:
                if changed is None:
                    init.unlink()
                else:
                    init.write_bytes(changed)
                if resealed and changed is not None:
                    digest = hashlib.sha256(changed).hexdigest()
                    edit_meta(copy, lambda m, d=digest: m["by_reference"].update(sha256=d))
                out = copy.parent / "eval"
                capsys.readouterr()
                code = main(["evaluate", str(copy), "--out", str(out), "--data-root", str(good.fashion),
                             "--projections", "none", "--quiet"])
            finally:
                init.write_bytes(intact)
            lines = _stderr_lines(capsys)
            tried += 1
            assert code in (0, 2) and (code == 2 or resealed), (mutation.id, resealed, lines)
            if code == 2:
                assert len(lines) == 1 and f"{init}: " in lines[0], (mutation.id, resealed, lines)
                assert not out.exists(), f"{mutation.id}: refused, but {out} was written"
    record = json.loads((run / "run.json").read_text())["by_reference"]
    for what, edited in _by_reference_edits(record):
        copy = Path(shutil.copytree(run, tmp_path / what / run.name))
        edit_meta(copy, lambda m, e=edited: m.update(by_reference=e))
        out = copy.parent / "eval"
        capsys.readouterr()
        code = main(["evaluate", str(copy), "--out", str(out), "--data-root", str(good.fashion), "--projections",
                     "none", "--quiet"])
        lines = _stderr_lines(capsys)
        if code == 0:  # the file still found, by one of its paths: the intact run
            assert what in ("relative", "no relative") and _numbers(out / run.name) == intact_numbers, (what, lines)
        else:
            assert code == 2 and len(lines) == 1 and not out.exists(), (what, lines)
        tried += 1
    print(f"\n{init.name}: {tried} mutations and edits tried")
    assert tried == 2 * len(mutations) + len(_by_reference_edits(record))


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


# ------------------------------------------------------------------ numbers no program can use
def _run_once(capsys, argv: list[str], folder: Path) -> list[str]:
    """``hseval ARGV``, refused: exit code 2, one line, ``folder`` as it was."""
    before = {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    capsys.readouterr()
    code = main(argv)
    lines = _stderr_lines(capsys)
    assert code == 2 and len(lines) == 1, (argv, code, lines)
    assert {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()} == before, "a file was written"
    return lines


def _json_codec(name: str):
    if name.endswith(".pt"):
        import io

        import torch

        def encode(doc) -> bytes:
            buffer = io.BytesIO()
            torch.save(doc, buffer)
            return buffer.getvalue()

        return encode, lambda data: torch.load(io.BytesIO(data), weights_only=True)
    return (lambda doc: json.dumps(doc).encode("utf-8")), json.loads


def _number_mutations(name: str, doc, record) -> list[Mutation]:
    from hseval.io.records import json_schema

    encode, decode = _json_codec(name)
    mutations = unusable_numbers(name, doc, json_schema(record), encode, decode)
    assert len(mutations) >= 3 * len(number_paths(doc)) > 0
    return mutations


def _named(line: str, mutation: Mutation) -> None:
    """The line names the file and the field (JSON) or the line and the column (CSV)."""
    field = mutation.what.split("'")[1]
    assert mutation.file in line and (f"'{field}" in line or f"column '{field}'" in line), (mutation.id, line)


def test_unusable_numbers_in_run_json(good, tmp_path, capsys):
    """Every number of a real run.json (checksum resealed) set to 10**400, NaN, infinity, and -1
    where run.json's schema makes it a count: ``hseval evaluate`` refuses it in one line naming
    the field, and writes nothing (a seed of 10**400 was evaluated, then the report died)."""
    from hseval.io.run_format import RunRecord

    run = Path(shutil.copytree(good.run, tmp_path / good.run.name))
    intact = (run / "run.json").read_bytes()
    mutations = _number_mutations("run.json", json.loads(intact), RunRecord)
    for mutation in mutations:
        (run / "run.json").write_bytes(mutation.apply(intact))
        reseal_run(run)
        (line,) = _run_once(capsys, ["evaluate", str(run), "--out", str(tmp_path / "eval"), "--data-root",
                                     str(good.fashion), "--quiet"], tmp_path)
        _named(line, mutation)
    print(f"\nrun.json: {len(mutations)} numbers out of range, each refused in one line")


def test_unusable_numbers_in_a_training_state(good, tmp_path, capsys):
    """The same in the history and epoch of a training state (built from the real run's history
    and settings) that ``--resume`` reads."""
    import torch

    from hseval.io.folders import MARKER
    from hseval.io.run_format import TrainState

    meta = json.loads((good.run / "run.json").read_text())
    state = {"epoch": len(meta["history"]), "history": meta["history"], "config": meta["training"], "model": {},
             "optimizers": {}, "rng": {}}
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy2(good.run / MARKER, run / MARKER)
    encode, _ = _json_codec(".pt")
    mutations = _number_mutations("train_state.pt", state, TrainState)
    for mutation in mutations:
        (run / "train_state.pt").write_bytes(mutation.apply(encode(state)))
        (line,) = _run_once(capsys, ["train", "--head", "riemann", "--data-root", str(good.fashion), "--quiet",
                                     "--out", str(run), "--resume"], tmp_path)
        _named(line, mutation)
    assert torch.load(run / "train_state.pt", weights_only=True)["epoch"] >= 1


@pytest.mark.parametrize("name", [eval_format.METRICS, *eval_format.TABLES])
def test_unusable_numbers_in_an_evaluation(evaluated, tmp_path, capsys, name):
    """Every number of metrics.json and every numeric column of the tables of a real evaluation
    (of riemann alone, projections included; its checksums resealed) out of range: ``hseval
    report`` refuses in one line naming the file and the field, and writes nothing."""
    folder = tmp_path / "eval"
    shutil.copytree(evaluated / RUN, folder / RUN)
    shutil.copy2(evaluated / MARKER, folder / MARKER)
    evaluated = folder / RUN
    intact = (evaluated / name).read_bytes()
    if name == eval_format.METRICS:
        mutations = _number_mutations(name, json.loads(intact), eval_format.metrics_record())
    else:
        mutations = unusable_cells(name, intact, eval_format.TABLES[name])
    assert mutations
    for mutation in mutations:
        (evaluated / name).write_bytes(mutation.apply(intact))
        reseal_evaluation(evaluated)
        (line,) = _run_once(capsys, ["report", str(folder)], tmp_path)
        _named(line, mutation)


def test_unusable_numbers_in_index_json(tmp_path):
    """index.json (rebuilt from the folders by ``evaluate``, read by nothing else): its record refuses
    every number out of range in one line naming the field."""
    from hseval.core.errors import RunFormatError
    from hseval.io.records import parse_record

    entry = {"run": "a", "path": "/r/a", "head": "plain", "dataset": "d", "backbone": "b", "seed": 3, "split": "test",
             "leaf_top1": 0.5}
    eval_format.write_index(tmp_path, [entry])
    intact = (tmp_path / eval_format.INDEX_FILE).read_bytes()
    mutations = _number_mutations(eval_format.INDEX_FILE, json.loads(intact), eval_format.IndexRecord)
    for mutation in mutations:
        with pytest.raises(RunFormatError) as info:
            parse_record(eval_format.IndexRecord, mutation.apply(intact), where=eval_format.INDEX_FILE)
        assert "\n" not in str(info.value)
        _named(str(info.value), mutation)
