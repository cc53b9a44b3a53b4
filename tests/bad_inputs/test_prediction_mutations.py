"""The mutation fuzzer on prediction files (``hseval evaluate --predictions``): every mutation of
:mod:`tests.bad_inputs.mutations` of a good .npz (logits or probs), .csv (logit_<i>, prob_<i> or
target,pred) and .safetensors file, through the CLI. A mutated file is refused in one line that
names it, writing nothing, or evaluated as what it says it holds: scores read as the kind its array
or columns are named, checked to be that kind, and the report then written."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from hseval.cli.main import main
from hseval.io.prediction_format import PROBABILITY_TOLERANCE
from hseval.tree import write_hierarchy
from tests import helpers
from tests.bad_inputs.mutations import _softmax, stream_flips
from tests.bad_inputs.test_mutations import SEED, _apply, _mutations, _stderr_lines
from tests.helpers import fashion_tree, thinned

FILES = ("logits.npz", "probs.npz", "logits.csv", "probs.csv", "pred.csv", "logits.safetensors")


@pytest.fixture(scope="module")
def prediction_files(tmp_path_factory) -> Path:
    """Good prediction files of 12 samples of the 10 Fashion-MNIST classes, and the tree."""
    from safetensors.numpy import save_file

    folder = tmp_path_factory.mktemp("prediction-files")
    tree = fashion_tree()
    write_hierarchy(tree, folder / "tree.txt", format="pairs")
    rng = np.random.default_rng(SEED)
    targets = rng.integers(0, 10, 12)
    logits = rng.normal(size=(12, 10)) + 2 * np.eye(10)[targets]
    extra = {"level_scores_1": rng.normal(size=(12, len(tree.nodes_at_depth(1)))),
             "embeddings": rng.normal(size=(12, 4)), "class_weights": rng.normal(size=(10, 4))}
    np.savez(folder / "logits.npz", targets=targets, logits=logits, **extra)
    np.savez(folder / "probs.npz", targets=targets, probs=_softmax(logits))
    save_file({"targets": targets, "logits": logits.astype(np.float32)}, str(folder / "logits.safetensors"))
    for prefix, scores in (("logit", logits), ("prob", _softmax(logits))):
        header = "target," + ",".join(f"{prefix}_{i}" for i in range(10))
        rows = [f"{tree.leaf_names[t]}," + ",".join(f"{v:.4f}" for v in row) for t, row in zip(targets, scores)]
        (folder / f"{prefix}s.csv").write_text(header + "\n" + "\n".join(rows) + "\n")
    predicted = np.where(rng.random(12) < 0.7, targets, rng.integers(0, 10, 12))
    (folder / "pred.csv").write_text("target,pred\n" + "".join(f"{t},{p}\n" for t, p in zip(targets, predicted)))
    return folder


def _declared(path: Path) -> str | None:
    """What the mutated file names its scores: a .npz/.safetensors member, or a CSV column prefix."""
    if path.suffix == ".csv":
        header = next(csv.reader(io.StringIO(path.read_text(encoding="utf-8-sig"))), [])
        prefixes = {h.split("_")[0] for h in header if "_" in h}
        return {"logit": "logits", "prob": "probs"}.get(prefixes.pop()) if len(prefixes) == 1 else None
    if path.suffix == ".npz":
        with np.load(path) as archive:
            return next((m for m in ("logits", "probs") if m in archive.files), None)
    return "logits"


@pytest.mark.parametrize("name", FILES)
def test_mutated_prediction_files(prediction_files, tmp_path, capsys, record_property, name):
    mutations = thinned(_mutations(prediction_files, (name,), SEED + 2))
    tried = refused = 0
    for k, mutation in enumerate(mutations):
        folder = Path(shutil.copytree(prediction_files, tmp_path / str(k)))
        _apply(folder, mutation)
        file, out = folder / name, folder / "ev"
        tried += 1
        capsys.readouterr()
        code = main(["evaluate", "--predictions", str(file), "--hierarchy", str(folder / "tree.txt"), "--projections",
                     "none", "--out", str(out)])
        lines = _stderr_lines(capsys)
        assert code in (0, 2), (mutation.id, lines)
        if code == 2:
            refused += 1
            assert len(lines) == 1 and str(file) in lines[0], (mutation.id, lines)
            assert not out.exists(), f"{mutation.id}: refused, but {out} was written"
        else:
            metrics = json.loads((out / file.stem / "metrics.json").read_text())
            inputs = metrics["source"]["inputs"]
            kind = next((m for m in ("logits", "probs") if m in inputs), None)
            assert kind == _declared(file), (mutation.id, inputs)  # read as what the file says, not guessed
            if kind is not None:
                assert metrics["cross_entropy"] is not None and np.isfinite(metrics["cross_entropy"]), mutation.id
            assert main(["report", str(out)]) == 0, mutation.id
            _stderr_lines(capsys)
        shutil.rmtree(folder)
    record_property("prediction_mutations", f"{tried} tried, {refused} refused")
    print(f"\n{name}: {tried} mutations tried; {refused} refused with one line naming the file, {tried - refused} "
          "evaluated as what they say they hold")
    assert refused >= (1 if helpers.FAST_LANE else 3)  # the fast lane tries a tenth of them


def test_probabilities_a_little_off_are_read_within_the_one_tolerance(prediction_files, tmp_path, capsys):
    """A row of probabilities scaled by 1 ± tolerance/2 is still probabilities; by 1 + 2·tolerance,
    refused naming the row."""
    for scale, accepted in ((1 + PROBABILITY_TOLERANCE / 2, True), (1 - PROBABILITY_TOLERANCE / 2, True),
                            (1 + 2 * PROBABILITY_TOLERANCE, False)):
        with np.load(prediction_files / "probs.npz") as archive:
            arrays = dict(archive)
        arrays["probs"][3] *= scale
        file = tmp_path / f"{scale}.npz"
        np.savez(file, **arrays)
        code = main(["evaluate", "--predictions", str(file), "--hierarchy", str(prediction_files / "tree.txt"),
                     "--projections", "none", "--out", str(tmp_path / f"ev-{scale}")])
        lines = _stderr_lines(capsys)
        assert (code == 0) == accepted, (scale, lines)
        if not accepted:
            assert "'probs' row 3 sums to" in lines[0], lines


def test_a_damaged_compressed_npz_is_said_to_be_damaged(tmp_path, capsys):
    """A byte changed in the compressed stream of a member of an ``np.savez_compressed`` file (of
    several blocks of rows) decodes to other numbers: the file is refused in one line that says it
    is damaged, before any value is used (it blamed "the model's output" for a NaN it decoded to,
    after two numpy warnings), or, where the change leaves the decoded bytes as they were, evaluated
    as the intact file is."""
    import warnings

    tree = fashion_tree()
    write_hierarchy(tree, tmp_path / "tree.txt", format="pairs")
    rng = np.random.default_rng(SEED)
    n = 2 * 8192 + 100  # more than one block of rows
    file = tmp_path / "p.npz"
    np.savez_compressed(file, targets=rng.integers(0, 10, n), logits=rng.normal(size=(n, 10)))
    intact = file.read_bytes()

    def evaluate(out: Path) -> tuple[int, list[str]]:
        capsys.readouterr()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            code = main(["evaluate", "--predictions", str(file), "--hierarchy", str(tmp_path / "tree.txt"),
                         "--projections", "none", "--out", str(out)])
        assert not caught, [str(w.message) for w in caught]
        return code, _stderr_lines(capsys)

    assert evaluate(tmp_path / "intact")[0] == 0
    expected = json.loads((tmp_path / "intact" / "p" / "metrics.json").read_text())["top1"]
    refused = 0
    for k, mutation in enumerate(stream_flips(file.name, intact, per_member=12)):
        file.write_bytes(mutation.apply(intact))
        code, lines = evaluate(tmp_path / f"ev{k}")
        if code == 2:
            refused += 1
            assert len(lines) == 1 and f"{file}: is damaged: '" in lines[0], (mutation.id, lines)
            assert "copy the file again" in lines[0] and not (tmp_path / f"ev{k}").exists(), (mutation.id, lines)
        else:
            assert code == 0 and not lines, (mutation.id, lines)
            metrics = json.loads((tmp_path / f"ev{k}" / "p" / "metrics.json").read_text())
            assert metrics["top1"] == expected, mutation.id
    assert refused >= 20
