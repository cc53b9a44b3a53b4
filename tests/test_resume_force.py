"""``--resume`` and ``--force`` have one meaning each, alone or together, in ``train`` and
``train-all``: ``--resume`` continues an unfinished run (``train-all``: and keeps the finished
ones), ``--force`` trains anew over what is there, both: an unfinished run is continued and a
finished one trained again."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hseval.cli.main import main
from hseval.io.run_format import META_FILE, read_run_meta

QUICK = ["--quiet", "--set", "data.train_subset=100", "--set", "data.batch_size=32"]


@pytest.fixture(scope="module")
def finished(tmp_path_factory, fashion_like) -> Path:
    """A folder of runs holding one finished run, ``plain``, trained for one epoch."""
    root = tmp_path_factory.mktemp("resume") / "runs"
    assert main(["train-all", "--heads", "plain", "--data-root", str(fashion_like), *QUICK, "--set", "optim.epochs=1",
                 "--out", str(root)]) == 0
    return root


def trained(argv: list[str], capsys) -> str:
    """Run the command (exit 0) and return what it printed."""
    capsys.readouterr()
    assert main(argv) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def test_train_resume_force(finished, fashion_like, tmp_path, capsys):
    run = Path(shutil.copytree(finished, tmp_path / "runs")) / "plain"
    argv = ["train", "--data-root", str(fashion_like), *QUICK, "--out", str(run)]
    capsys.readouterr()
    assert main([*argv, "--set", "optim.epochs=1", "--resume"]) == 2
    assert "the run is already finished with these settings; nothing to resume (use --force to retrain" in \
        capsys.readouterr().err
    out = trained([*argv, "--set", "optim.epochs=1", "--resume", "--force"], capsys)
    assert "plain epoch 1/1" in out  # the finished run trained again, as the advice said
    (run / META_FILE).unlink()  # unfinished: a training state of epoch 1, no run.json
    out = trained([*argv, "--set", "optim.epochs=2", "--resume", "--force"], capsys)
    assert "plain epoch 2/2" in out and "epoch 1/2" not in out  # continued, not started over
    assert [h["epoch"] for h in read_run_meta(run)["history"]] == [1, 2]
    out = trained([*argv, "--set", "optim.epochs=2", "--resume", "--force", "--out", str(tmp_path / "new")], capsys)
    assert "plain epoch 1/2" in out  # nothing there: trained


def test_train_all_resume_force(finished, fashion_like, tmp_path, capsys):
    root = Path(shutil.copytree(finished, tmp_path / "runs"))
    argv = ["train-all", "--heads", "plain", "--data-root", str(fashion_like), *QUICK, "--set", "optim.epochs=1",
            "--out", str(root)]
    assert "finished with these settings; reusing it" in trained([*argv, "--resume"], capsys)
    out = trained([*argv, "--resume", "--force"], capsys)
    assert "reusing it" not in out and "training plain" in out and "plain epoch 1/1" in out
