"""Files hseval did not write, in folders it did, and a command's own inputs: never written over
or removed. The cases of data loss found on 2026-11-27 (issue 24), each through the real CLI: the
form reported (a folder of the user's, refused since markers came in) and the same class in a
folder hseval wrote (refused since markers record the files hseval wrote there).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np

from hseval.cli.main import main
from hseval.io import evaluation_format as eval_format
from hseval.io import folders as ownership
from hseval.tree import write_hierarchy
from tests.helpers import fashion_tree
from tests.test_ownership import err_line, tree_bytes


def train(out: Path, fashion: Path, *extra: str) -> int:
    return main(["train", "--data-root", str(fashion), "--quiet", "--set", "optim.epochs=1", "--set",
                 "data.train_subset=100", "--set", "data.batch_size=32", *extra, "--out", str(out)])


def test_train_keeps_a_users_tensorboard_logs(fashion_like, tmp_path, capsys):
    """``train --out exp1`` where exp1 holds only the user's ``tensorboard/`` logs; and the user's
    logs put into a run hseval trained (without TensorBoard), then ``--force``: refused, kept."""
    exp1 = tmp_path / "exp1"
    (exp1 / "tensorboard").mkdir(parents=True)
    (exp1 / "tensorboard" / "events.out.tfevents.1").write_text("my logs")
    before = tree_bytes(exp1)
    assert train(exp1, fashion_like) == 2
    assert "exp1: is not empty and was not written by hseval as a training run (it holds 'tensorboard')" in \
        err_line(capsys)
    assert tree_bytes(exp1) == before and sorted(os.listdir(exp1)) == ["tensorboard"]
    run = tmp_path / "run"
    assert train(run, fashion_like) == 0
    shutil.copytree(exp1 / "tensorboard", run / "tensorboard")
    capsys.readouterr()
    before = tree_bytes(run)
    assert train(run, fashion_like, "--force") == 2
    assert "run: holds 'tensorboard', which hseval did not write there, so it will not replace the folder" in \
        err_line(capsys)
    assert tree_bytes(run) == before
    assert set(ownership.read_marker(run).files) == {"run.json", "model.safetensors", "train_state.pt",
                                                     "history.csv"}  # what it wrote, not what it might have


def test_report_keeps_a_users_report(tmp_path, capsys):
    """``evaluate --predictions ... --out notes`` where notes holds the user's report.md; and the
    user's report.md written into an evaluation folder afterwards, then ``report``: refused, kept."""
    predictions, tree = tmp_path / "p.npz", tmp_path / "tree.json"
    np.savez(predictions, targets=np.arange(20) % 10, logits=np.random.default_rng(0).normal(size=(20, 10)))
    write_hierarchy(fashion_tree(), tree)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "report.md").write_text("# my notes")
    argv = ["evaluate", "--predictions", str(predictions), "--hierarchy", str(tree), "--projections", "none",
            "--out", str(notes)]
    assert main(argv) == 2
    assert "notes: is not empty and was not written by hseval as an evaluation folder" in err_line(capsys)
    assert sorted(os.listdir(notes)) == ["report.md"]
    (notes / "report.md").unlink()
    assert main(argv) == 0
    (notes / "report.md").write_text("# my notes")  # the user's, in hseval's folder
    (notes / "paper_tables.md").mkdir()  # and a folder where the report writes a file
    capsys.readouterr()
    before = tree_bytes(notes)
    assert main(["report", str(notes)]) == 2
    assert "notes: holds 'paper_tables.md', 'report.md', which hseval did not write there, so it will not write " \
           "over it" in err_line(capsys)
    assert tree_bytes(notes) == before and (notes / "paper_tables.md").is_dir()  # nothing written before refusing
    (notes / "paper_tables.md").rmdir()
    (notes / "report.md").unlink()
    assert main(["report", str(notes)]) == 0 and main(["report", str(notes)]) == 0  # its own: written over
    assert set(ownership.read_marker(notes).files) == set(eval_format.FOLDER_FILES)


def test_import_never_replaces_its_own_checkpoint(evaluated, tmp_path, capsys):
    """``import hf/model.safetensors --out hf``: hf the user's folder, or a run imported before
    (``--force``): refused, the checkpoint kept."""
    tree, runs = tmp_path / "tree.json", evaluated.parent / "runs"
    write_hierarchy(fashion_tree(), tree)
    hf = tmp_path / "hf"

    def imported(*extra: str) -> int:
        return main(["import", str(hf / "model.safetensors"), "--backbone", "small-cnn", "--head", "plain",
                     "--hierarchy", str(tree), "--dataset", "fashion-mnist", *extra, "--out", str(hf)])

    assert main(["import", str(runs / "plain" / "model.safetensors"), "--backbone", "small-cnn", "--head", "plain",
                 "--hierarchy", str(tree), "--dataset", "fashion-mnist", "--out", str(hf)]) == 0
    capsys.readouterr()
    before = tree_bytes(hf)
    assert imported("--force") == 2
    assert "model.safetensors, an input of this command, which writing the output would remove" in err_line(capsys)
    assert tree_bytes(hf) == before
    shutil.rmtree(hf)
    hf.mkdir()  # the user's folder of a checkpoint from elsewhere
    shutil.copy(runs / "plain" / "model.safetensors", hf / "model.safetensors")
    (hf / "config.json").write_text("{}")
    before = tree_bytes(hf)
    for extra in ((), ("--force",)):
        assert imported(*extra) == 2
        assert "model.safetensors, an input of this command, which writing the output would remove" in \
            err_line(capsys)
    assert tree_bytes(hf) == before


def test_a_re_export_keeps_the_users_files(evaluated, tmp_path, capsys):
    out = tmp_path / "tb"
    assert main(["export", str(evaluated), "--to", "tensorboard", str(out)]) == 0
    for mine in ("notes.md", "plain/notes.md"):
        (out / mine).write_text("mine")
        capsys.readouterr()
        before = tree_bytes(out)
        assert main(["export", str(evaluated), "--to", "tensorboard", str(out)]) == 2
        assert f"tb: holds '{mine}', which hseval did not write there, so it will not replace the folder" in \
            err_line(capsys)
        assert tree_bytes(out) == before
        (out / mine).unlink()
    assert main(["export", str(evaluated), "--to", "tensorboard", str(out)]) == 0
