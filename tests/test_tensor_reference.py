"""Disk: a frozen ``--init`` backbone is stored once, in its file, and runs refer to it by path and
SHA-256 (``run.json``'s ``by_reference``); a finished run's ``train_state.pt`` keeps the optimiser
state but not the weights, which are model.safetensors'. Each run loads as the self-contained run
of the same training, to the bit; a referred file that is gone or changed is one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from hseval.cli.main import main
from hseval.core.errors import RunFormatError
from hseval.core.fileio import sha256
from hseval.io.run_format import MODEL_FILE, STATE_FILE, load_run, load_train_state
from hseval.io.tensor_reference import reference
from hseval.train.engine import train
from tests.bad_inputs.builders import edit_meta
from tests.helpers import quick
from tests.test_pretrained import small_cnn_file

FROZEN = ["model.backbone=small-cnn", "model.freeze_backbone=true", "data.train_subset=64", "data.batch_size=16",
          "optim.epochs=1", "engine.threads=1"]


def _state(run: Path) -> dict[str, torch.Tensor]:
    return load_run(run).model.state_dict()


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.fixture(scope="module")
def project(tmp_path_factory, fashion_like) -> Path:
    """A project folder: the weights ``w/cnn.pt`` and a frozen run trained from them, ``runs/plain``."""
    root = tmp_path_factory.mktemp("project")
    (root / "w").mkdir()
    init, _ = small_cnn_file(root / "w")
    train(quick(fashion_like, "plain", f"model.init={init}", *FROZEN), root / "runs" / "plain", log=lambda _: None)
    return root


@pytest.mark.parametrize("suffix", [".pt", ".safetensors"])
def test_the_frozen_backbone_is_referred_to_and_loads_as_the_self_contained_run(fashion_like, tmp_path, suffix):
    """The run holds the head alone; loaded, it is the run ``engine.self_contained`` writes, to the
    bit, also from a float16 file (the backbone took its tensors as float32)."""
    init, state = small_cnn_file(tmp_path, f"cnn{suffix}")
    if suffix == ".safetensors":
        save_file({k: v.half() if v.is_floating_point() else v for k, v in state.items()}, str(init))
    referred = train(quick(fashion_like, "plain", f"model.init={init}", *FROZEN), tmp_path / "a", log=lambda _: None)
    whole = train(quick(fashion_like, "plain", f"model.init={init}", *FROZEN, "engine.self_contained=true"),
                  tmp_path / "b", log=lambda _: None)
    meta = json.loads((referred / "run.json").read_text())
    body = {k for k in _state(whole) if k.startswith("backbone.body.")}
    assert set(meta["by_reference"]["tensors"]) == body and meta["by_reference"]["sha256"] == sha256(init)
    assert not body & set(load_file(referred / MODEL_FILE)) and body <= set(load_file(whole / MODEL_FILE))
    assert "by_reference" not in json.loads((whole / "run.json").read_text())
    assert _same(_state(referred), _state(whole))
    assert (referred / MODEL_FILE).stat().st_size * 20 < (whole / MODEL_FILE).stat().st_size


def test_a_run_copied_with_its_weights_finds_them_from_where_it_lies(project, tmp_path):
    """A project copied elsewhere (runs and weights together): the file is found where it lies from
    the run, once the recorded path is gone."""
    copy = Path(shutil.copytree(project, tmp_path / "elsewhere"))
    expected = _state(project / "runs" / "plain")
    (project / "w" / "cnn.pt").rename(project / "w" / "away.pt")
    try:
        assert _same(_state(copy / "runs" / "plain"), expected)
        with pytest.raises(RunFormatError) as missing:
            load_run(project / "runs" / "plain")
    finally:
        (project / "w" / "away.pt").rename(project / "w" / "cnn.pt")
    message = str(missing.value)
    assert message.startswith(f"{project / 'w' / 'cnn.pt'}: missing; the run ") and "\n" not in message
    assert "'hseval train --set engine.self_contained=true'" in message


@pytest.mark.parametrize("change", ["other weights", "cut", "deleted"])
def test_a_changed_or_missing_file_is_one_line_and_evaluate_writes_nothing(project, fashion_like, tmp_path, capsys,
                                                                          change):
    copy = Path(shutil.copytree(project, tmp_path / "p"))
    run, init = copy / "runs" / "plain", copy / "w" / "cnn.pt"
    meta = json.loads((run / "run.json").read_text())
    # the copy refers to the project's file by its path: point it at its own, as a run trained here would
    edit_meta(run, lambda m: m["by_reference"].update(path=str(init)))
    assert meta["by_reference"]["relative"] == "../../w/cnn.pt"
    if change == "other weights":
        weights = torch.load(init, weights_only=True)
        weights["0.weight"] += 1
        torch.save(weights, init)
    elif change == "cut":
        init.write_bytes(init.read_bytes()[:1000])
    else:
        init.unlink()
    capsys.readouterr()
    assert main(["evaluate", str(run), "--out", str(tmp_path / "eval"), "--data-root", str(fashion_like),
                 "--quiet"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    said = "missing; the run" if change == "deleted" else "changed since the run"
    assert line.startswith(f"hseval: error: {init}: {said}") and "engine.self_contained=true" in line, line
    assert not (tmp_path / "eval").exists()


def test_a_file_changed_during_training_is_not_referred_to(project, tmp_path):
    """The tensors are compared with the file when the run is saved: a file that is not the one the
    training read (other SHA-256, gone) is not referred to; the run then stores every tensor."""
    run = project / "runs" / "plain"
    source = json.loads((run / "run.json").read_text())["initialised_from"]
    tensors = _state(run)
    assert reference(tensors, source, run)["tensors"].keys() == {k for k in tensors if k.startswith("backbone.body.")}
    assert reference(tensors, {**source, "sha256": "0" * 64}, run) is None
    assert reference(tensors, {**source, "path": str(tmp_path / "gone.pt")}, run) is None
    moved = {k: v + 1 if k == "backbone.body.0.weight" else v for k, v in tensors.items()}
    assert "backbone.body.0.weight" not in reference(moved, source, run)["tensors"]


def test_a_finished_runs_state_keeps_the_optimiser_not_the_weights(fashion_like, tmp_path):
    """train_state.pt of a finished run names model.safetensors by SHA-256 instead of holding the
    weights again; ``engine.keep_train_state=false`` removes it, and the run evaluates the same."""
    run = train(quick(fashion_like, "plain", "data.train_subset=64", "optim.epochs=1", "engine.threads=1"),
                tmp_path / "a", log=lambda _: None)
    raw = torch.load(run / STATE_FILE, weights_only=True)
    meta = json.loads((run / "run.json").read_text())
    assert raw["model"] is None and raw["model_sha256"] == meta["model_sha256"]
    assert raw["optimizers"]["optimizers"]["sgd"]["state"]  # the momentum, to extend the run
    assert _same(load_train_state(run)["model"], _state(run))
    dropped = train(quick(fashion_like, "plain", "data.train_subset=64", "optim.epochs=1", "engine.threads=1",
                          "engine.keep_train_state=false"), tmp_path / "b", log=lambda _: None)
    assert sorted(p.name for p in dropped.iterdir() if not p.name.startswith(".")) == \
        ["history.csv", "model.safetensors", "run.json"]
    assert (dropped / MODEL_FILE).read_bytes() == (run / MODEL_FILE).read_bytes()
    # the weights it names, replaced: one line, before anything resumes
    other = Path(shutil.copytree(run, tmp_path / "c"))
    save_file({"x": torch.zeros(1)}, str(other / MODEL_FILE))
    with pytest.raises(RunFormatError, match=r"model.safetensors: not the weights train_state.pt was left with"):
        load_train_state(other)
