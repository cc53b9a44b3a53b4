"""What a run was made from is checked before it is reused (``hseval.train.run_folder.reuse``):
every input a run records (its settings, the ``--init`` file and the tree by content, the data by
its identity, images included) is compared with the training asked for, by ``train --resume``
(an unfinished run), ``train-all --resume`` (a finished one) and the feature cache of a probe; a
changed input is named in one line and nothing is written, an unchanged one is reused. A finished
run asked for more epochs is extended where its schedule allows, and the extension is recorded."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from hseval.cli.main import main
from hseval.train import optim, probe
from hseval.train.engine import train
from hseval.train.runs import Datasets, probe_features
from hseval.tree import Hierarchy, write_hierarchy
from tests.helpers import DATA_CHANGES, changed_fashion_like, fashion_tree, quick, write_fashion_like
from tests.test_pretrained import small_cnn_file

SMALL = ["--backbone", "small-cnn", "--quiet", "--set", "model.freeze_backbone=true", "--set", "data.train_subset=64",
         "--set", "data.batch_size=32", "--set", "data.test_subset=50", "--set", "optim.milestones=[1]", "--set",
         "engine.threads=1"]


def other_tree() -> Hierarchy:
    """The Fashion-MNIST tree with Bag moved under footwear: the same classes, another tree."""
    record = fashion_tree().to_dict()
    record["parents"][record["names"].index("Bag")] = record["names"].index("footwear")
    return Hierarchy.from_dict(record)


MUTATIONS = {
    "nothing": (lambda inputs: None, None),
    "a setting": (lambda inputs: inputs["argv"].extend(["--set", "optim.lr=0.02"]),
                  r"it was trained with optim.lr=0.05, 0.02 asked"),
    "the init file's bytes": (lambda inputs: small_cnn_file(inputs["init"].parent),
                              r"it was trained from .*cnn.pt with SHA-256 [0-9a-f]{12}…, the file now has "
                              r"[0-9a-f]{12}…"),
    "the init file removed": (lambda inputs: inputs["init"].unlink(),
                              r"it was trained from .*cnn.pt with SHA-256 [0-9a-f]{12}…, the file is gone"),
    "the tree file": (lambda inputs: write_hierarchy(other_tree(), inputs["tree"]),
                      r"it was trained on another tree than .*tree.json gives now"),
    "the images": (lambda inputs: write_fashion_like(inputs["data"], seed=1),
                   r"it was trained on other images: the data under .*data had SHA-256 [0-9a-f]{12}…, it now has"),
}
"""Each recorded input changed in turn (None: the run is reused), and the clause that names it."""


def _inputs(tmp_path: Path) -> dict:
    """A private copy of every input of a run: the data, an init file and a tree file."""
    data = write_fashion_like(tmp_path / "data")
    init, _ = small_cnn_file(tmp_path)
    tree = tmp_path / "tree.json"
    write_hierarchy(fashion_tree(), tree)
    argv = ["--data-root", str(data), "--init", str(init), "--hierarchy", str(tree), *SMALL]
    return {"data": data, "init": init, "tree": tree, "argv": argv}


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _refused(argv: list[str], capsys) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("hseval: error: "), err
    return err


@pytest.mark.slow  # trains a run: not in the fast lane
@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_train_all_keeps_a_finished_run_only_when_its_inputs_are_unchanged(mutation, tmp_path, capsys):
    inputs = _inputs(tmp_path)
    runs = tmp_path / "runs"
    assert main(["train-all", "--heads", "plain", *inputs["argv"], "--set", "optim.epochs=1", "--out", str(runs)]) == 0
    change, named = MUTATIONS[mutation]
    change(inputs)
    before = _files(runs)
    argv = ["train-all", "--heads", "plain", *inputs["argv"], "--set", "optim.epochs=1", "--out", str(runs), "--resume"]
    if named is None:
        capsys.readouterr()
        assert main(argv) == 0
        assert "plain is finished with these settings; reusing it" in capsys.readouterr().out
    else:
        err = _refused(argv, capsys)
        assert "plain: a finished run that --resume cannot reuse: " in err and "--force" in err, err
        assert re.search(named, err), err
    assert _files(runs) == before  # kept or refused: nothing written, the lock file included


@pytest.mark.slow  # trains a run: not in the fast lane
@pytest.mark.parametrize("mutation", [m for m in MUTATIONS if m != "the init file removed"])  # as for any training
def test_train_resume_continues_an_unfinished_run_only_when_its_inputs_are_unchanged(mutation, tmp_path, capsys):
    inputs = _inputs(tmp_path)
    run = tmp_path / "run"
    assert main(["train", *inputs["argv"], "--set", "optim.epochs=1", "--out", str(run)]) == 0
    (run / "run.json").unlink()  # killed after its first epoch's checkpoint
    change, named = MUTATIONS[mutation]
    change(inputs)
    before = _files(run)
    argv = ["train", *inputs["argv"], "--set", "optim.epochs=2", "--out", str(run), "--resume"]
    if named is None:
        capsys.readouterr()
        assert main(argv) == 0
        assert f"resuming {run} at epoch 2/2" in capsys.readouterr().out
        assert [h["epoch"] for h in json.loads((run / "run.json").read_text())["history"]] == [1, 2]
    else:
        err = _refused(argv, capsys)
        assert "run: an unfinished run that --resume cannot continue: " in err, err
        assert re.search(named, err), err
        assert _files(run) == before


@pytest.mark.parametrize("change", list(DATA_CHANGES))
def test_resume_keeps_a_run_only_on_the_same_data_by_content(change, fashion_like, tmp_path, capsys):
    """``--resume`` on a copy of the data changed in each way: the same files under another root
    keep the run; other pixels under the same count and labels, a label, an image more or fewer are
    refused, naming the images."""
    runs = tmp_path / "runs"
    argv = ["train-all", "--heads", "plain", *SMALL, "--set", "optim.epochs=1", "--out", str(runs)]
    assert main([*argv, "--data-root", str(fashion_like)]) == 0
    data = changed_fashion_like(fashion_like, tmp_path / "data", change)
    before = _files(runs)
    again = [*argv, "--data-root", str(data), "--resume"]
    if DATA_CHANGES[change]:
        capsys.readouterr()
        assert main(again) == 0
        assert "plain is finished with these settings; reusing it" in capsys.readouterr().out
    else:
        err = _refused(again, capsys)
        assert re.search(r"it was trained on other images: the data under .*data had SHA-256 [0-9a-f]{12}…", err), err
    assert _files(runs) == before


@pytest.mark.parametrize("change", ["nothing", "the images", "moved"])
def test_the_feature_cache_is_extracted_again_when_the_images_changed(change, fashion_like, tmp_path):
    """A features file is reused only for the backbone and the data it was extracted from (the same
    files under another root are the same data); when the images under the same root changed, it
    is extracted again in its place, with a one-line note (a cache is recomputed, not refused), and
    holds the new images' features."""
    data = write_fashion_like(tmp_path / "data")
    init, _ = small_cnn_file(tmp_path)
    settings = ("plain", f"model.init={init}", "model.backbone=small-cnn", "model.freeze_backbone=true",
                "data.augment=false", "data.train_subset=64", "data.eval_batch_size=64")
    config = quick(data, *settings)
    folder = tmp_path / "runs" / probe.FEATURES
    first = probe_features([(config, "plain")], Datasets(), folder, log=lambda _: None)["plain"]
    if change == "the images":
        write_fashion_like(data, seed=1)
    if change == "moved":
        config = quick(changed_fashion_like(data, tmp_path / "elsewhere", "moved"), *settings)
    lines: list[str] = []
    again = probe_features([(config, "plain")], Datasets(), folder, log=lines.append)["plain"]
    assert again.path == first.path and list(folder.iterdir()) == [first.path]
    if change != "the images":
        assert lines == [f"reusing the features in {first.path}"] and again.sha256 == first.sha256
        return
    assert lines[0].startswith(f"note: {first.path}: extracted from images with SHA-256 ") and \
        lines[0].endswith("(the data changed); extracting the features again"), lines
    assert again.key != first.key and again.sha256 != first.sha256
    assert not torch.equal(again.tensors["train"], first.tensors["train"])


def test_a_finished_run_is_extended_to_more_epochs_as_if_trained_for_them(fashion_like, tmp_path, capsys):
    """``--resume --set optim.epochs=N`` continues a finished run from its training state: the
    step schedule does not depend on the epoch count, so the extended run ends with the weights of
    the run trained for N epochs at once; run.json records each training's end (``segments``)."""
    argv = ["train", "--data-root", str(fashion_like), *SMALL[:2], "--quiet", "--set", "data.train_subset=64", "--set",
            "data.batch_size=32", "--set", "optim.milestones=[2]", "--set", "engine.threads=1"]
    straight, extended = tmp_path / "straight", tmp_path / "extended"
    assert main([*argv, "--set", "optim.epochs=3", "--out", str(straight)]) == 0
    assert main([*argv, "--set", "optim.epochs=1", "--out", str(extended)]) == 0
    capsys.readouterr()
    assert main([*argv, "--set", "optim.epochs=3", "--out", str(extended), "--resume"]) == 0
    out = capsys.readouterr().out
    assert f"extending {extended} from 1 to 3 epochs" in out and "epoch 1/3" not in out, out
    assert (straight / "model.safetensors").read_bytes() == (extended / "model.safetensors").read_bytes()
    meta = json.loads((extended / "run.json").read_text())
    assert meta["segments"] == [1, 3] and [h["epoch"] for h in meta["history"]] == [1, 2, 3]
    assert json.loads((straight / "run.json").read_text())["segments"] == [3]
    assert main([*argv, "--set", "optim.epochs=4", "--out", str(extended), "--resume"]) == 0
    assert json.loads((extended / "run.json").read_text())["segments"] == [1, 3, 4]
    err = _refused([*argv, "--set", "optim.epochs=4", "--out", str(extended), "--resume"], capsys)
    assert "already finished with these settings; nothing to resume (use --force to retrain, or --set " \
        "optim.epochs=N with N > 4 to extend it)" in err, err
    err = _refused([*argv, "--set", "optim.epochs=2", "--out", str(extended), "--resume"], capsys)
    assert "it was trained for 4 epochs, 2 asked" in err, err


def test_train_all_extends_the_finished_runs(fashion_like, tmp_path, capsys):
    argv = ["train-all", "--heads", "plain,hierarchy", "--data-root", str(fashion_like), *SMALL[:2], "--quiet", "--set",
            "data.train_subset=64", "--set", "data.batch_size=32", "--set", "engine.threads=1", "--out",
            str(tmp_path / "runs")]
    assert main([*argv, "--set", "optim.epochs=1"]) == 0
    capsys.readouterr()
    assert main([*argv, "--set", "optim.epochs=2", "--resume"]) == 0
    out = capsys.readouterr().out
    assert "continuing plain" in out and "continuing hierarchy" in out and "epoch 1/2" not in out, out
    for head in ("plain", "hierarchy"):
        assert json.loads((tmp_path / "runs" / head / "run.json").read_text())["segments"] == [1, 2]


def test_a_schedule_shaped_by_its_length_is_not_extended(fashion_like, tmp_path, capsys, monkeypatch):
    """A schedule whose rates depend on the epoch count (a cosine over ``optim.epochs``) would have
    given the epochs already trained other rates: the run is refused in one line saying so."""
    run = tmp_path / "run"
    argv = ["train", "--data-root", str(fashion_like), *SMALL[:2], "--quiet", "--set", "data.train_subset=64",
            "--set", "data.batch_size=32", "--set", "engine.threads=1", "--out", str(run)]
    monkeypatch.setattr(optim, "scheduler", lambda opt, config: torch.optim.lr_scheduler.CosineAnnealingLR(
        opt, T_max=config.epochs))
    assert main([*argv, "--set", "optim.epochs=2"]) == 0
    before = _files(run)
    err = _refused([*argv, "--set", "optim.epochs=4", "--resume"], capsys)
    assert "its learning-rate schedule depends on optim.epochs (epoch 2 trained at lr 0.025 would have 0.0426777 " \
        "with 4 epochs), so it cannot be extended; train it anew with --force" in err, err
    assert _files(run) == before


def test_a_finished_run_without_its_training_state_is_not_extended(fashion_like, tmp_path, capsys):
    run = tmp_path / "run"
    argv = ["train", "--data-root", str(fashion_like), *SMALL[:2], "--quiet", "--set", "data.train_subset=64",
            "--set", "data.batch_size=32", "--out", str(run)]
    assert main([*argv, "--set", "optim.epochs=1"]) == 0
    (run / "train_state.pt").unlink()
    err = _refused([*argv, "--set", "optim.epochs=2", "--resume"], capsys)
    assert "it was trained for 1 epochs and its training state (train_state.pt) is gone, so it cannot be extended " \
        "to 2" in err, err


HOLD = textwrap.dedent("""
    import sys, time
    from hseval.io.folders import locked
    with locked(sys.argv[1]):
        print("locked", flush=True)
        time.sleep(120)
""")


@pytest.mark.skipif(sys.platform == "win32", reason="flock")
@pytest.mark.parametrize("flags", [[], ["--resume"], ["--force"], ["--resume", "--force"]])
def test_the_process_writing_a_run_folder_is_named_whatever_the_flags(flags, fashion_like, tmp_path, capsys):
    """A second identical ``hseval train`` into a folder another process writes names that process
    (its pid and host, as the lock file says), with or without --resume or --force, and writes
    nothing: the folder is checked for its writer before anything else about it."""
    run = tmp_path / "run"
    argv = ["train", "--data-root", str(fashion_like), "--quiet", "--set", "optim.epochs=1", "--set",
            "data.train_subset=64", "--set", "data.batch_size=32", "--out", str(run)]
    assert main(argv) == 0
    (run / "run.json").unlink()  # an unfinished run, as while it trains
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(run)], stdout=subprocess.PIPE, text=True,
                              cwd=Path(__file__).parents[1])
    try:
        assert holder.stdout.readline().strip() == "locked"
        before = _files(run)
        err = _refused([*argv, *flags], capsys)
        assert err.endswith(f"run: another hseval process (pid {holder.pid} on {socket.gethostname()}) is writing "
                            "into it; wait until it finishes or choose another --out"), err
        assert _files(run) == before
    finally:
        holder.kill()
        holder.wait()


def test_a_requeued_job_continues_or_keeps_by_the_same_decision(fashion_like, tmp_path):
    """A Slurm job stopped by its time limit and requeued asks :func:`reuse` what its stopped attempt
    left: a finished run of its inputs is kept, one to extend is extended, a changed one refused."""
    from hseval.core.errors import ConfigError
    from hseval.train.launch import PlannedRun, train_planned

    settings = ["model.backbone=small-cnn", "data.train_subset=64", "engine.threads=1"]
    out = tmp_path / "run"
    train(quick(fashion_like, "plain", *settings, "optim.epochs=1"), out, log=lambda _: None)
    job = PlannedRun("run", quick(fashion_like, "plain", *settings, "optim.epochs=1"), out, resume=False, force=False)
    assert train_planned(job, requeued=True).state == "kept"
    longer = PlannedRun("run", quick(fashion_like, "plain", *settings, "optim.epochs=2"), out, resume=True, force=False)
    assert train_planned(longer, requeued=True).state == "trained"
    assert json.loads((out / "run.json").read_text())["segments"] == [1, 2]
    other = PlannedRun("run", quick(fashion_like, "plain", *settings, "optim.epochs=2", "optim.lr=0.01"), out,
                       resume=True, force=False)
    with pytest.raises(ConfigError, match=r"cannot reuse: it was trained with optim.lr=0.05, 0.01 asked"):
        train_planned(other, requeued=True)


def test_the_data_identity_covers_the_images_not_where_they_lie(tmp_path):
    """``LoadedDataset.describe`` carries the SHA-256 of the images as loaded (bytes and labels, in
    order), shared by what a run's settings derive from them: a copy of the folder elsewhere is the
    same data, one image rewritten is other data."""
    import shutil

    from PIL import Image

    from hseval.data import load_dataset
    from tests.fake_datasets import write_image
    from tests.helpers import image_folder

    root, tree = image_folder(tmp_path / "a")
    content = load_dataset("image-folder", root, hierarchy=tree).describe()["content_sha256"]
    copy = shutil.copytree(root, tmp_path / "b")  # other times, another root
    data = load_dataset("image-folder", copy, hierarchy=tree)
    assert data.describe()["content_sha256"] == content
    assert data.with_validation(0.5).describe()["content_sha256"] == content  # derived: the settings say how
    Image.new("RGB", (8, 8), (200, 10, 10)).save(copy / "train" / "husky" / "1.png")
    assert load_dataset("image-folder", copy, hierarchy=tree).describe()["content_sha256"] != content
    write_image(copy / "train" / "husky" / "1.png")  # the bytes back
    assert load_dataset("image-folder", copy, hierarchy=tree).describe()["content_sha256"] == content


@pytest.mark.parametrize("change", list(DATA_CHANGES))
def test_one_rule_says_what_the_same_data_is(change, fashion_like, tmp_path):
    """``data_changes`` is the one rule: resuming (``changed_inputs``), pooling (equal ``run_inputs``)
    and ``evaluate --split val`` (the data as loaded) answer as it does, for each way data changes;
    where the data or its tree file lay is not what it is."""
    from hseval.data import load_dataset
    from hseval.io.data_identity import data_changes
    from hseval.io.run_settings import changed_inputs, run_inputs

    then = load_dataset("fashion-mnist", fashion_like).with_validation(0.2).describe()
    data = changed_fashion_like(fashion_like, tmp_path / "data", change)
    now = load_dataset("fashion-mnist", data).with_validation(0.2).describe()
    same = DATA_CHANGES[change]
    assert (not data_changes(then, now)) is same and (not data_changes(then, now, derived=False)) is same
    assert (not changed_inputs(run_inputs({"dataset": then}), run_inputs({"dataset": now}))) is same
    assert (run_inputs({"dataset": then}) == run_inputs({"dataset": now})) is same
    assert not data_changes({**then, "hierarchy_file": "/a/tree.txt"}, {**then, "hierarchy_file": None})
