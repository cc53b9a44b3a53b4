"""A validation split (``data.val_fraction``, or a dataset's own): held out of the training split,
class-stratified and the same for every run; training tests on it after each epoch, ``hseval
evaluate --split val`` evaluates it, and no image is both trained on and validated on."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hseval.cli.main import main
from hseval.core.errors import ConfigError, DataError
from hseval.core.sampling import held_out, indices_sha256
from hseval.data import load_dataset
from hseval.io.results import load_evaluation
from tests.fake_datasets import write_image
from tests.helpers import DATA_CHANGES, changed_fashion_like, examples, write_fashion_like

TINY = ["--quiet", "--set", "optim.epochs=2", "--set", "optim.milestones=[5]", "--set", "data.batch_size=32",
        "--set", "engine.threads=1"]


@settings(max_examples=examples(50), deadline=None)
@given(per_class=st.lists(st.integers(2, 30), min_size=2, max_size=8), fraction=st.floats(0.05, 0.95))
def test_held_out_is_a_stratified_partition_the_same_for_every_run(per_class, fraction):
    labels = np.repeat(np.arange(len(per_class)), per_class)
    np.random.default_rng(1).shuffle(labels)
    kept, held = held_out(labels, fraction)
    assert not set(kept) & set(held) and sorted([*kept, *held]) == list(range(len(labels)))
    assert set(labels[kept]) == set(labels[held]) == set(labels)  # every class on both sides
    for c, n in enumerate(per_class):  # each class's share, rounded
        assert (labels[held] == c).sum() == min(max(round(fraction * n), 1), n - 1)
    again_kept, again_held = held_out(labels, fraction)
    assert np.array_equal(held, again_held) and np.array_equal(kept, again_kept)


def test_a_class_of_one_image_cannot_be_split():
    with pytest.raises(ConfigError, match=r"data.val_fraction=0.1: class 2 has a single training image"):
        held_out(np.array([0, 0, 1, 1, 2]), 0.1)
    with pytest.raises(ConfigError, match=r"data.val_fraction=0.1: class 'b' has a single training image"):
        held_out(np.array([0, 0, 1, 2, 2]), 0.1, class_names=["a", "b", "c"])


def test_messages_name_the_class_the_user_knows(tmp_path):
    """The issue's case: a class folder ``b`` of one image was "class 1"; and a run's classes against
    another copy's, by name and position, wherever a dataset meets a run's tree."""
    from hseval.data.base import check_classes
    from hseval.tree.hierarchy import Hierarchy
    from tests.fake_datasets import write_image

    for name, count in (("a", 3), ("b", 1), ("c", 3)):
        for k in range(count):
            write_image(tmp_path / "data" / "train" / name / f"{k}.jpg")
        write_image(tmp_path / "data" / "test" / name / "0.jpg")
    (tmp_path / "tree.txt").write_text("x/a\nx/b\ny/c\n")
    data = load_dataset("image-folder", tmp_path / "data", hierarchy=tmp_path / "tree.txt")
    with pytest.raises(ConfigError, match=r"data.val_fraction=0.2: class 'b' has a single training image"):
        data.with_validation(0.2)
    other = Hierarchy.from_edges([("r", "x"), ("r", "y"), ("x", "a"), ("x", "c"), ("y", "b")], classes=["a", "c", "b"])
    with pytest.raises(DataError, match=r"not the run's \(3 against 3 classes; class 2: 'c' in the run, 'b' there\)"):
        check_classes(data, other)


def test_training_validates_on_held_out_images_and_evaluate_reads_the_same(fashion_like, tmp_path, capsys):
    runs, out = tmp_path / "runs", tmp_path / "eval"
    assert main(["train-all", "--heads", "plain,hxe", "--data-root", str(fashion_like), *TINY, "--set",
                 "data.val_fraction=0.2", "--out", str(runs)]) == 0
    assert "val acc" in capsys.readouterr().out
    data = load_dataset("fashion-mnist", fashion_like)
    kept, held = held_out(data.train.labels, 0.2)
    for head in ("plain", "hxe"):
        meta = json.loads((runs / head / "run.json").read_text())
        record = meta["dataset"]["validation"]
        assert record["indices_sha256"] == indices_sha256(held) and record["samples"] == 120 == len(held)
        assert meta["dataset"]["train_size"] == 480 and meta["dataset"]["val_size"] == 120
        last = meta["history"][-1]
        assert last["val_samples"] == 120 and "test_acc" not in last  # the test split stays unseen
    # the images trained on are the kept ones: none of the held-out ones
    assert not set(kept) & set(held)
    trained = data.with_validation(0.2)
    assert np.array_equal(trained.train.images.numpy(), data.train.images.numpy()[kept])
    assert np.array_equal(trained.val.images.numpy(), data.train.images.numpy()[held])
    for split, samples in (("val", 120), ("train", 480), ("test", 200)):
        assert main(["evaluate", str(runs), "--data-root", str(fashion_like), "--split", split, "--projections", "pca",
                     "--quiet", "--out", str(out / split)]) == 0
        for run in load_evaluation(out / split).runs:
            assert run.metrics["split"] == split and run.metrics["samples"] == samples
            if split == "val":  # the images of training's last validation, scored again
                history = json.loads((runs / run.name / "run.json").read_text())["history"]
                assert run.metrics["top1"] == pytest.approx(history[-1]["val_acc"], abs=1e-9)


def test_the_validation_split_must_be_the_one_the_run_held_out(fashion_like, tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["train", "--head", "plain", "--data-root", str(fashion_like), *TINY, "--set",
                 "data.val_fraction=0.2", "--out", str(run)]) == 0
    other = write_fashion_like(tmp_path / "other", n_train=700)
    capsys.readouterr()
    assert main(["evaluate", str(run), "--data-root", str(other), "--split", "val", "--out", str(tmp_path / "e")]) == 2
    err = capsys.readouterr().err
    assert "--split val: the data under" in err and "its images or labels changed: SHA-256" in err, err
    assert not (tmp_path / "e").exists()


@pytest.fixture(scope="module")
def validated_run(tmp_path_factory, fashion_like):
    """A run that held out a validation split of the Fashion-MNIST-like data, trained for two epochs."""
    run = tmp_path_factory.mktemp("validated") / "run"
    assert main(["train", "--head", "plain", "--data-root", str(fashion_like), *TINY, "--set",
                 "data.val_fraction=0.2", "--out", str(run)]) == 0
    return run


@pytest.mark.parametrize("change", list(DATA_CHANGES))
def test_evaluate_split_val_reads_the_run_s_validation_images_only_on_the_same_data(change, validated_run,
                                                                                     fashion_like, tmp_path, capsys):
    """The validation images are held out of the training split: on data whose training split
    changed in any way (other pixels under the same count and labels included) they are not the
    run's, and ``--split val`` is refused in one line naming the run, the data and what changed; the
    same files under another root are the same data, and give the run's last validation accuracy."""
    data = changed_fashion_like(fashion_like, tmp_path / "data", change)
    out = tmp_path / "eval"
    capsys.readouterr()
    code = main(["evaluate", str(validated_run), "--data-root", str(data), "--split", "val", "--projections", "none",
                 "--quiet", "--out", str(out)])
    err = capsys.readouterr().err.strip()
    if DATA_CHANGES[change]:
        assert code == 0, err
        (result,) = load_evaluation(out).runs
        history = json.loads((validated_run / "run.json").read_text())["history"]
        assert result.metrics["top1"] == pytest.approx(history[-1]["val_acc"], abs=1e-9)
        return
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"{validated_run}: --split val: the data under " in err
    assert f"{data.name} is not the data the run was trained on" in err, err
    assert "its images or labels changed: SHA-256 " in err and "evaluate on the data it was trained on" in err, err
    assert not out.exists()


@pytest.mark.parametrize(("argv", "message"), [
    (["--set", "data.val_fraction=0.2", "--set", "data.test_subset=50"], "data.test_subset cuts the test split"),
    (["--set", "data.val_fraction=1.5"], "data.val_fraction must be < 1"),
])
def test_a_validation_setting_that_cannot_work_is_one_line_before_training(fashion_like, tmp_path, capsys, argv,
                                                                           message):
    assert main(["train-all", "--heads", "plain", "--data-root", str(fashion_like), *TINY, *argv, "--out",
                 str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "runs").exists()


def test_a_run_without_validation_has_no_val_split(fashion_like, tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["train", "--head", "plain", "--data-root", str(fashion_like), *TINY, "--out", str(run)]) == 0
    capsys.readouterr()
    assert main(["evaluate", str(run), "--data-root", str(fashion_like), "--split", "val", "--out",
                 str(tmp_path / "e")]) == 2
    assert "the run was trained without a validation split; evaluate it on --split test" in capsys.readouterr().err


@pytest.mark.slow  # trains a run: not in the fast lane
def test_an_image_folder_validates_on_its_own_val_folder(tmp_path, capsys):
    root = tmp_path / "images"
    for split, n in (("train", 4), ("val", 2), ("test", 2)):
        for name in ("a", "b"):
            for k in range(n):
                write_image(root / split / name / f"{k}.jpg")
    (tmp_path / "tree.txt").write_text("things/a\nthings/b\n")
    common = ["--dataset", "image-folder", "--data-root", str(root), "--hierarchy", str(tmp_path / "tree.txt"),
              "--backbone", "small-cnn", "--set", "data.batch_size=4", "--set", "optim.epochs=1", "--quiet"]
    assert main(["train", "--head", "plain", *common, "--out", str(tmp_path / "run")]) == 0
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["history"][-1]["val_samples"] == 4 and meta["dataset"]["validation"]["source"].startswith("the data")
    assert main(["evaluate", str(tmp_path / "run"), "--split", "val", "--projections", "pca", "--quiet", "--out",
                 str(tmp_path / "e")]) == 0
    capsys.readouterr()
    assert main(["train", "--head", "plain", *common, "--set", "data.val_fraction=0.5", "--out",
                 str(tmp_path / "r2")]) == 2
    assert "has a validation split of its own (4 images); leave data.val_fraction unset" in capsys.readouterr().err
