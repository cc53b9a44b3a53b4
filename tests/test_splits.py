"""An evaluation folder holds one split: evaluating another split into it is refused in one line,
before anything is written, and every table names the split it reports."""

from __future__ import annotations

import pytest

from hseval.cli.main import main
from hseval.io.data_identity import split_label
from tests.helpers import prediction_file


def _listing(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


@pytest.fixture
def files(tmp_path):
    for name in ("a", "b"):
        prediction_file(tmp_path / name, 12, 60, seed=0)
    return tmp_path


def _evaluate(files, name, out, *split):
    return main(["evaluate", "--predictions", str(files / f"{name}.npz"), "--hierarchy", str(files / f"{name}.txt"),
                 "--projections", "none", "--out", str(out), *split])


@pytest.mark.parametrize(("first", "second"), [((), ("--split", "val")), (("--split", "val"), ()),
                                               (("--split", "train"), ("--split", "test"))])
def test_another_split_into_an_evaluation_folder_is_one_line_and_writes_nothing(files, tmp_path, capsys, first,
                                                                                 second):
    out = tmp_path / "eval"
    assert _evaluate(files, "a", out, *first) == 0
    before = _listing(out)
    capsys.readouterr()
    assert _evaluate(files, "b", out, *second) == 2
    err = capsys.readouterr().err.strip()
    named = [split_label((first or ("", "test"))[1]), split_label((second or ("", "test"))[1])]
    assert len(err.splitlines()) == 1 and all(f"the {n} split" in err for n in named), err
    assert "choose another --out" in err and str(out) in err, err
    assert _listing(out) == before
    assert _evaluate(files, "b", tmp_path / "other", *second) == 0  # the fix the line names works


def test_the_same_split_again_is_evaluated_beside(files, tmp_path):
    out = tmp_path / "eval"
    assert _evaluate(files, "a", out, "--split", "val") == 0
    assert _evaluate(files, "b", out, "--split", "val") == 0
    assert {"a", "b"} <= set(p.name for p in out.iterdir())


def test_a_split_that_does_not_exist_is_refused(files, tmp_path, capsys):
    assert _evaluate(files, "a", tmp_path / "eval", "--split", "dev") == 2
    assert "unknown split 'dev'; choose train, val or test" in capsys.readouterr().err
    assert not (tmp_path / "eval").exists()


@pytest.mark.parametrize(("split", "validation", "label"), [
    ("test", None, "test"), ("train", None, "training"), ("val", None, "validation"),
    ("val", {"source": "the dataset's own validation split", "samples": 4}, "validation (the dataset's own)"),
    ("val", {"fraction": 0.1, "seed": 0}, "validation (10 % of the training images, seed 0)"),
    ("val", {"fraction": 0.125, "seed": 0}, "validation (12.5 % of the training images, seed 0)")])
def test_a_split_is_named_as_people_name_it(split, validation, label):
    assert split_label(split, validation) == label
