"""Every command that writes, pointed at what is not its to write: refused with one line (exit 2)
and every byte left as it was.

The kinds of wrong output, for each writing command:

- a user's folder that holds files with hseval's own names (``run.json``, ``model.safetensors``,
  ``report.md``, ``metrics.json``, ``tensorboard/``...) beside other files, hidden ones included:
  a folder without hseval's marker is the user's, whatever its files are called;
- a path inside another hseval folder: a trained run, an evaluated run, an evaluation folder
  (``RUN/run.json`` as a tree file would break the run).

The runs and the evaluation are copies of the session's ``evaluated`` fixture; every refusal
happens before any training, so the cases take a second each.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from safetensors.torch import save_file

from hseval.cli.main import main
from hseval.io.run_format import load_run
from hseval.tree import write_hierarchy
from tests.helpers import fashion_tree

QUICK = ["--quiet", "--set", "optim.epochs=1", "--set", "data.train_subset=100", "--set", "data.batch_size=32"]


@dataclass
class Inputs:
    fashion: Path
    run: Path
    evaluation: Path
    tree: Path
    checkpoint: Path
    predictions: Path


@pytest.fixture
def inputs(evaluated, fashion_like, tmp_path) -> Inputs:
    """Copies of a trained run and of an evaluation folder, a tree file, a checkpoint and a
    prediction file (the inputs of the commands)."""
    run = Path(shutil.copytree(evaluated.parent / "runs" / "plain", tmp_path / "run"))
    evaluation = Path(shutil.copytree(evaluated, tmp_path / "eval"))
    tree = tmp_path / "tree.json"
    write_hierarchy(fashion_tree(), tree)
    checkpoint = tmp_path / "model.safetensors"
    save_file({k: v.contiguous() for k, v in load_run(run).model.state_dict().items()}, str(checkpoint))
    predictions = tmp_path / "p.npz"
    rng = np.random.default_rng(0)
    np.savez(predictions, targets=np.arange(20) % 10, logits=rng.normal(size=(20, 10)))
    return Inputs(fashion_like, run, evaluation, tree, checkpoint, predictions)


COMMANDS = {  # name -> (argv for an output path, whether the output is a file)
    "train": (lambda i, out: ["train", "--data-root", str(i.fashion), *QUICK, "--out", out], False),
    "train --force": (lambda i, out: ["train", "--data-root", str(i.fashion), *QUICK, "--force", "--out", out], False),
    "train-all": (lambda i, out: ["train-all", "--heads", "plain", "--data-root", str(i.fashion), *QUICK, "--out",
                                  out], False),
    "import --force": (lambda i, out: ["import", str(i.checkpoint), "--backbone", "small-cnn", "--head", "plain",
                                       "--hierarchy", str(i.tree), "--dataset", "fashion-mnist", "--data-root",
                                       str(i.fashion), "--force", "--out", out], False),
    "evaluate": (lambda i, out: ["evaluate", str(i.run), "--data-root", str(i.fashion), "--projections", "none",
                                 "--quiet", "--out", out], False),
    "evaluate --predictions": (lambda i, out: ["evaluate", "--predictions", str(i.predictions), "--hierarchy",
                                               str(i.tree), "--projections", "none", "--out", out], False),
    "export": (lambda i, out: ["export", str(i.evaluation), "--to", "tensorboard", out], False),
    "demo": (lambda i, out: ["demo", "--quick", "--quiet", "--data-root", str(i.fashion), "--out", out], False),
    "report --out": (lambda i, out: ["report", str(i.evaluation), "--out", out], True),
    "hierarchy convert": (lambda i, out: ["hierarchy", "convert", str(i.tree), out, "--to", "pairs"], True),
    "hierarchy induce": (lambda i, out: ["hierarchy", "induce", str(i.run), "--out", out], True),
    "hierarchy build": (lambda i, out: ["hierarchy", "build", "fashion-mnist", "--out", out], True),
    "hierarchy random": (lambda i, out: ["hierarchy", "random", str(i.tree), "--seed", "0", "--out", out], True),
}

USER_FILES = {"run.json": "{}", "model.safetensors": "not tensors", "train_state.pt": "x", "history.csv": "epoch\n",
              "report.md": "# my report", "report.html": "<p>mine</p>", "metrics.json": '{"top1": 1}',
              "index.json": '{"runs": []}', "summary.csv": "run\n", "projector_config.pbtxt": "",
              "tensorboard/events.out.tfevents.1": "my logs", "plain/metrics.json": "{}", "notes.md": "years of work",
              ".git/HEAD": "ref: refs/heads/main"}


def user_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "mine"
    for name, text in USER_FILES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def snapshot(*folders: Path) -> dict[str, bytes | None]:
    """Every file and folder under ``folders`` (and their parents' entries: no staging left)."""
    found: dict[str, bytes | None] = {}
    for folder in folders:
        for path in [folder, *sorted(folder.rglob("*"))]:
            found[str(path)] = path.read_bytes() if path.is_file() else None
        for sibling in folder.parent.iterdir():
            found.setdefault(str(sibling), None)
    return found


def refused(argv: list[str], capsys) -> str:
    capsys.readouterr()
    assert main(argv) == 2, argv
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hseval: error: "), lines
    return lines[0]


def targets(i: Inputs, tmp_path: Path, is_file: bool) -> dict[str, tuple[Path, str]]:
    """The wrong outputs of a command: (path, a fragment of the refusal)."""
    mine = user_folder(tmp_path)
    folder_refusal = "is a folder" if is_file else "is not empty and was not written by hseval"
    inside = "lies inside"
    cases = {"the user's folder": (mine, folder_refusal)}
    if is_file:  # a file inside an hseval folder, where it would replace or sit beside hseval's own files
        cases.update({"run.json of a run": (i.run / "run.json", inside),
                      "metrics.json of an evaluated run": (i.evaluation / "plain" / "metrics.json", inside),
                      "a new file in an evaluation folder": (i.evaluation / "tree.txt", inside)})
    else:
        cases.update({"a folder in a run": (i.run / "out", inside),
                      "a folder in an evaluated run": (i.evaluation / "plain" / "out", inside),
                      "an evaluated run": (i.evaluation / "plain", "holds the evaluation of one run")})
    return cases


@pytest.mark.parametrize("command", COMMANDS)
def test_every_writing_command_refuses_what_is_not_its_own(command, inputs, tmp_path, capsys):
    argv, is_file = COMMANDS[command]
    for what, (out, fragment) in targets(inputs, tmp_path, is_file).items():
        if command == "evaluate --predictions" and what == "an evaluated run":
            fragment = "holds the evaluation of one run, not an evaluation folder"
        before = snapshot(tmp_path)
        line = refused(argv(inputs, str(out)), capsys)
        assert fragment in line, (what, line)
        assert snapshot(tmp_path) == before, what


def test_an_evaluation_folder_without_its_marker_is_not_reported_into(inputs, tmp_path, capsys):
    """``report DIR`` writes into DIR: a copy of evaluated runs in a folder of the user's (no
    marker of an evaluation folder) is read, never written."""
    folder = user_folder(tmp_path)
    shutil.copytree(inputs.evaluation / "plain", folder / "evaluated")
    before = snapshot(folder)
    assert "mine: is not empty and was not written by hseval as an evaluation folder" in refused(
        ["report", str(folder)], capsys)
    assert snapshot(folder) == before
    assert "mine: is a folder; --out names the file to write" in refused(
        ["report", str(inputs.evaluation), "--out", str(folder)], capsys)


def test_a_file_output_that_is_an_input_is_refused(inputs, tmp_path, capsys):
    before = inputs.tree.read_bytes()
    assert "tree.json: is an input of this command" in refused(
        ["hierarchy", "convert", str(inputs.tree), str(inputs.tree), "--to", "nbdt"], capsys)
    assert inputs.tree.read_bytes() == before
