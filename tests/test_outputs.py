"""Every command that writes, pointed at what is not its to write: refused before any work with one
line (exit 2) and every byte left as it was.

Every command plans the paths it will write (a folder, a file and its companions such as a pairs
file's names) and hands them with its inputs to the one output transaction
(:mod:`hseval.io.output`), which refuses, for each writing command:

- a user's folder that holds files with hseval's own names (``run.json``, ``model.safetensors``,
  ``report.md``, ``metrics.json``, ``tensorboard/``...) beside other files, hidden ones included:
  a folder without hseval's marker is the user's, whatever its files are called;
- a path inside another hseval folder: a trained run, an evaluated run, an evaluation folder
  (``RUN/run.json`` as a tree file would break the run);
- one of the command's inputs, a path inside an input folder (a run that has lost its marker), a
  companion of an input (a tree's names sidecar) and a folder that holds an input it would replace;
- a name hseval keeps for its own bookkeeping (the marker, the lock, a staging folder);
- a folder where a file's companion is written.

The runs and the evaluation are copies of the session's ``evaluated`` fixture; every refusal
happens before any training, so the cases take a second each.
"""

from __future__ import annotations

import argparse
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from safetensors.torch import save_file

from hseval.cli.main import main
from hseval.cli.train_plan import plan_runs
from hseval.io.evaluation_format import FILES as EVALUATED_FILES
from hseval.io.evaluation_format import FOLDER_FILES, REPORT_FILES, SCHEMA_VERSION
from hseval.io.folders import LOCK, MARKER, STAGING, new_marker
from hseval.io.output import OutputFolder
from hseval.io.records import write_record
from hseval.io.run_format import RUN_FILES, load_run
from hseval.nn.heads import list_heads
from hseval.tree import write_hierarchy
from tests.conftest import EVALUATED_RUNS
from tests.helpers import fashion_tree

QUICK = ["--quiet", "--set", "optim.epochs=1", "--set", "data.train_subset=100", "--set", "data.batch_size=32"]


@dataclass
class Inputs:
    fashion: Path
    run: Path
    evaluation: Path
    tree: Path
    pairs: Path
    checkpoint: Path
    predictions: Path
    bare_run: Path
    evaluated_runs: Path  # the runs the evaluation evaluated (read only)


@pytest.fixture
def inputs(evaluated, fashion_like, tmp_path) -> Inputs:
    """Copies of a trained run and of an evaluation folder, tree files (NBDT, and pairs with its
    names sidecar), a checkpoint, a prediction file and a run that has lost its marker (the inputs
    of the commands)."""
    run = Path(shutil.copytree(evaluated.parent / "runs" / "plain", tmp_path / "run"))
    bare_run = Path(shutil.copytree(evaluated.parent / "runs" / "riemann", tmp_path / "bare-run"))
    (bare_run / MARKER).unlink()
    evaluation = Path(shutil.copytree(evaluated, tmp_path / "eval"))
    tree, pairs = tmp_path / "tree.json", tmp_path / "tree.txt"
    write_hierarchy(fashion_tree(), tree)
    write_hierarchy(fashion_tree(), pairs)
    checkpoint = tmp_path / "model.safetensors"
    save_file({k: v.contiguous() for k, v in load_run(run).model.state_dict().items()}, str(checkpoint))
    predictions = tmp_path / "p.npz"
    rng = np.random.default_rng(0)
    np.savez(predictions, targets=np.arange(20) % 10, logits=rng.normal(size=(20, 10)))
    return Inputs(fashion_like, run, evaluation, tree, pairs, checkpoint, predictions, bare_run,
                  evaluated.parent / "runs")


def _import(i: Inputs, out: str, checkpoint: Path | None = None) -> list[str]:
    return ["import", str(checkpoint or i.checkpoint), "--backbone", "small-cnn", "--head", "plain", "--hierarchy",
            str(i.tree), "--dataset", "fashion-mnist", "--data-root", str(i.fashion), "--force", "--out", out]


@dataclass(frozen=True)
class Command:
    argv: object  # (inputs, output path) -> argv
    file: bool = False  # the output is a file (else a folder)
    reads: object = lambda i: {}  # inputs -> {what: path} the command reads
    tree: bool = False  # the output is a hierarchy file, written with its names sidecar


COMMANDS = {
    "train": Command(lambda i, out: ["train", "--data-root", str(i.fashion), "--hierarchy", str(i.tree), *QUICK,
                                     "--out", out], reads=lambda i: {"its tree": i.tree}),
    "train --force": Command(lambda i, out: ["train", "--data-root", str(i.fashion), *QUICK, "--force", "--out", out]),
    "train-all": Command(lambda i, out: ["train-all", "--heads", "plain", "--data-root", str(i.fashion), "--hierarchy",
                                         str(i.tree), *QUICK, "--out", out], reads=lambda i: {"its tree": i.tree}),
    "import --force": Command(_import, reads=lambda i: {"its checkpoint": i.checkpoint, "its tree": i.tree}),
    "evaluate": Command(lambda i, out: ["evaluate", str(i.run), str(i.bare_run), "--data-root", str(i.fashion),
                                        "--projections", "none", "--quiet", "--out", out],
                        reads=lambda i: {"its run": i.run, "its run without a marker": i.bare_run}),
    "evaluate --predictions": Command(lambda i, out: ["evaluate", "--predictions", str(i.predictions), "--hierarchy",
                                                      str(i.pairs), "--projections", "none", "--out", out],
                                      reads=lambda i: {"its predictions": i.predictions, "its tree": i.pairs}),
    "export": Command(lambda i, out: ["export", str(i.evaluation), "--to", "tensorboard", out],
                      reads=lambda i: {"its evaluation": i.evaluation}),
    "demo": Command(lambda i, out: ["demo", "--quick", "--quiet", "--data-root", str(i.fashion), "--out", out]),
    "report --out": Command(lambda i, out: ["report", str(i.evaluation), "--out", out], file=True,
                            reads=lambda i: {"its evaluation": i.evaluation}),
    "hierarchy convert": Command(lambda i, out: ["hierarchy", "convert", str(i.pairs), out, "--to", "pairs"],
                                 file=True, tree=True, reads=lambda i: {"its tree": i.pairs}),
    "hierarchy induce": Command(lambda i, out: ["hierarchy", "induce", str(i.bare_run), "--out", out], file=True,
                                tree=True, reads=lambda i: {"its run without a marker": i.bare_run}),
    "hierarchy build": Command(lambda i, out: ["hierarchy", "build", "fashion-mnist", "--out", out], file=True,
                               tree=True),
    "hierarchy random": Command(lambda i, out: ["hierarchy", "random", str(i.pairs), "--seed", "0", "--out", out],
                                file=True, tree=True, reads=lambda i: {"its tree": i.pairs}),
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


INPUT = "is an input of this command"
INSIDE_INPUT = "an input of this command; write the output outside it"
OWN_NAME = "is the name of hseval's own bookkeeping files"


def owned_paths(i: Inputs) -> list[Path]:
    """Every file hseval writes in a run, an evaluation folder, an evaluated run and an export, and
    a new name in each."""
    export = i.evaluation.parent / "tb"
    if not export.exists():
        assert main(["export", str(i.evaluation), "--to", "tensorboard", str(export)]) == 0
    folders = {i.run: RUN_FILES, i.evaluation: FOLDER_FILES, i.evaluation / "plain": EVALUATED_FILES,
               export: [p.relative_to(export).as_posix() for p in export.rglob("*") if p.is_file()]}
    return [folder / name for folder, names in folders.items() for name in (*names, MARKER, "new.txt")]


def targets(i: Inputs, tmp_path: Path, command: Command) -> dict[str, tuple[Path, str]]:
    """The wrong outputs of a command: (path, a fragment of the refusal)."""
    mine = user_folder(tmp_path)
    cases = {"the user's folder": (mine, "is a folder" if command.file else "is not empty and was not written by "
                                                                           "hseval")}
    for path in owned_paths(i):  # hseval's own files, and new ones beside them, in every kind of hseval folder
        cases[f"{path.relative_to(tmp_path)}"] = (path, "is a file, not a folder" if path.is_file() and not command.file
                                                  else OWN_NAME if path.name == MARKER else "lies inside")
    if not command.file:
        cases["an evaluated run"] = (i.evaluation / "plain", "holds the evaluation of one run")
    for name in (MARKER, LOCK, f"{STAGING}out-1"):  # hseval's bookkeeping, in a folder of the user's
        cases[f"a path named {name}"] = (tmp_path / "new" / name, OWN_NAME)
    for what, path in command.reads(i).items():
        kind_refused = ("is a folder" if command.file else None) if path.is_dir() else \
            (None if command.file else "is a file, not a folder")  # refused as the wrong kind of path first
        cases[what] = (path, kind_refused or INPUT)
        if path.is_dir():
            inside = "out" if not command.file else "run.json" if (path / "run.json").is_file() else "x.txt"
            cases[f"{inside} inside {what}"] = (path / inside, "lies inside")
    if command.tree:
        (tmp_path / "names-folder.txt.names.tsv").mkdir()
        cases["a file whose names sidecar is a folder"] = (tmp_path / "names-folder.txt", "is a folder, where hseval "
                                                                                          "writes a file beside")
        if "its tree" in command.reads(i):
            cases["the names sidecar of its tree"] = (Path(f"{i.pairs}.names.tsv"), INPUT)
    return cases


@pytest.mark.parametrize("command", COMMANDS)
def test_every_writing_command_refuses_what_is_not_its_own(command, inputs, tmp_path, capsys):
    spec = COMMANDS[command]
    for what, (out, fragment) in targets(inputs, tmp_path, spec).items():
        if command == "evaluate --predictions" and what == "an evaluated run":
            fragment = "holds the evaluation of one run, not an evaluation folder"
        if command == "export" and what == "an evaluated run":
            fragment = INSIDE_INPUT  # the export's own input: refused for that first
        before = snapshot(tmp_path)
        line = refused(spec.argv(inputs, str(out)), capsys)
        assert fragment in line, (what, line)
        assert snapshot(tmp_path) == before, what


@pytest.mark.parametrize("command", ["import --force", "export"])
def test_a_folder_that_holds_an_input_is_not_replaced(command, inputs, tmp_path, capsys):
    """``import hf/model.safetensors --out hf --force`` over an imported run, an export over a folder
    that holds the evaluation it reads: replacing the folder would remove the input."""
    if command == "import --force":
        out = tmp_path / "hf"
        assert main(_import(inputs, str(out))) == 0
        argv = _import(inputs, str(out), checkpoint=out / "model.safetensors")
    else:
        out = tmp_path / "tb"
        assert main(["export", str(inputs.evaluation), "--to", "tensorboard", str(out)]) == 0
        shutil.copytree(inputs.evaluation, out / "eval")
        argv = ["export", str(out / "eval"), "--to", "tensorboard", str(out)]
    before = snapshot(tmp_path)
    assert "an input of this command, which writing the output would remove" in refused(argv, capsys)
    assert snapshot(tmp_path) == before


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


def test_a_hidden_file_name_is_written(inputs, tmp_path, capsys):
    """A file whose name starts with a dot is an output like any other (it used to be reported
    written and left in the staging folder, then removed)."""
    out = tmp_path / "trees" / ".tree.json"
    assert main(["hierarchy", "convert", str(inputs.tree), str(out), "--to", "nbdt"]) == 0
    assert out.read_bytes() == inputs.tree.read_bytes()
    assert sorted(p.name for p in out.parent.iterdir()) == [".tree.json"]


# ---------------------------------------------------------------------------------- refused before writing
def test_hseval_files_of_an_input_run_are_never_a_tree_output(inputs, tmp_path, capsys):
    """``hierarchy induce RUN --out RUN/run.json``, the run with or without its marker: refused, the
    run still loads."""
    for run in (inputs.run, inputs.bare_run):
        before = snapshot(run)
        assert "run.json: lies inside" in refused(["hierarchy", "induce", str(run), "--out", str(run / "run.json")],
                                                  capsys)
        assert snapshot(run) == before
        load_run(run)


def test_a_tree_is_never_written_over_its_own_input_or_a_folder(inputs, tmp_path, capsys):
    """``hierarchy convert TREE DIR`` where DIR is a folder, and ``convert TREE TREE.names.tsv`` (the
    input's own names): refused before anything is written, ``DIR.names.tsv`` included."""
    folder = tmp_path / "trees"
    folder.mkdir()
    before = snapshot(tmp_path)
    assert "trees: is a folder; OUTPUT names the file to write" in refused(
        ["hierarchy", "convert", str(inputs.pairs), str(folder), "--to", "pairs"], capsys)
    assert "tree.txt.names.tsv: is an input of this command" in refused(
        ["hierarchy", "convert", str(inputs.pairs), f"{inputs.pairs}.names.tsv", "--to", "nbdt"], capsys)
    assert snapshot(tmp_path) == before


def test_a_report_into_its_own_folder_writes_nothing(inputs, capsys):
    before = snapshot(inputs.evaluation)
    assert "eval: is a folder; --out names the file to write" in refused(
        ["report", str(inputs.evaluation), "--out", str(inputs.evaluation)], capsys)
    assert snapshot(inputs.evaluation) == before


def test_no_evaluation_takes_the_name_of_a_file_of_its_folder(inputs, tmp_path, capsys):
    """``--name index.json`` or ``--name report.md`` used to make a folder where the index or the
    report is written, breaking every later evaluate or report; a run in a folder named like one
    of those files gets a name of its own."""
    out = tmp_path / "ev"
    argv = ["evaluate", "--predictions", str(inputs.predictions), "--hierarchy", str(inputs.tree), "--projections",
            "none", "--out", str(out)]
    for name in ("report.md", "summary.csv", "index.json"):
        assert f"--name '{name}' is the name of" in refused([*argv, "--name", name], capsys)
        assert not out.exists()
    runs = tmp_path / "runs"
    for name in ("index.json", "report.html"):
        shutil.copytree(inputs.run, runs / name)
    assert main(["evaluate", str(runs / "index.json"), str(runs / "report.html"), "--data-root", str(inputs.fashion),
                 "--projections", "none", "--quiet", "--out", str(out)]) == 0
    assert main([*argv, "--name", "p"]) == 0 and main(["report", str(out)]) == 0
    evaluated = sorted(p.name for p in out.iterdir() if p.is_dir())
    assert evaluated == ["p", "runs__index.json", "runs__report.html"]


def test_a_sweep_value_that_holds_a_path_names_one_folder(tmp_path):
    plan = plan_runs(argparse.Namespace(heads="plain", seeds=None, sweep=["data.hierarchy=trees/a.txt,b\\c.txt"]))
    assert [name for _, _, name in plan] == ["plain-hierarchy=trees_a.txt", "plain-hierarchy=b_c.txt"]


# ---------------------------------------------------------------------------------- every output planned
def _demo_output(i: Inputs, out: Path) -> None:
    """A demo's output with its evaluation folder and its last run's evaluation (by the name and the
    source the demo gives it), made through the transactions: what a demo that stopped leaves."""
    with OutputFolder(out, "demo") as demo, OutputFolder(out / "eval", "evaluations", parent=demo, lock=False):
        pass
    last = out / "eval" / list_heads()[-1]
    last.mkdir()
    write_record(last / MARKER, new_marker("evaluation", source=str((out / "runs" / last.name).resolve()), inputs={},
                                           schema_version=SCHEMA_VERSION))


@dataclass(frozen=True)
class Multi:
    argv: object  # (inputs, out) -> argv
    make: object  # (inputs, out) -> None: the output as an earlier command left it
    last: object  # out -> the path of a file of the user's in the output the command writes last


_EVALUATE_RUNS = Multi(lambda i, out: ["evaluate", str(i.evaluated_runs), "--data-root", str(i.fashion),
                                       "--projections", "none", "--quiet", "--out", str(out)],
                       lambda i, out: shutil.copytree(i.evaluation, out),
                       lambda out: out / EVALUATED_RUNS[-1] / "notes.txt")
_DEMO = ["demo", "--quick", "--quiet", "--out"]
MULTI = {
    "evaluate RUNS": _EVALUATE_RUNS,
    "train-all --force": Multi(lambda i, out: ["train-all", "--heads", "plain,riemann", "--data-root", str(i.fashion),
                                               *QUICK, "--force", "--out", str(out)],
                               lambda i, out: shutil.copytree(i.evaluated_runs, out),
                               lambda out: out / "riemann" / "notes.txt"),
    "train-all --probe": Multi(lambda i, out: ["train-all", "--probe", "--heads", "hierarchy", "--data-root",
                                               str(i.fashion), *QUICK, "--out", str(out)],
                               lambda i, out: shutil.copytree(i.evaluated_runs, out),
                               lambda out: out / "features"),  # where the probe writes its features files
    "report": Multi(lambda i, out: ["report", str(out)], _EVALUATE_RUNS.make, lambda out: out / REPORT_FILES[-1]),
    "export": Multi(lambda i, out: ["export", str(i.evaluation), "--to", "tensorboard", str(out)],
                    lambda i, out: main(["export", str(i.evaluation), "--to", "tensorboard", str(out)]),
                    lambda out: out / EVALUATED_RUNS[-1] / "notes.txt"),
    "demo": Multi(lambda i, out: [*_DEMO, str(out), "--data-root", str(i.fashion)], _demo_output,
                  lambda out: out / "eval" / list_heads()[-1] / "notes.txt"),
    "demo (its report)": Multi(lambda i, out: [*_DEMO, str(out), "--data-root", str(i.fashion)], _demo_output,
                               lambda out: out / "eval" / REPORT_FILES[-1]),
}


@pytest.mark.parametrize("command", MULTI)
def test_a_multi_output_command_checks_its_last_output_before_writing_the_first(command, inputs, tmp_path, capsys):
    """The issue's example: a user's notes.txt in ``eval/riemann`` was refused after the runs before
    it had been evaluated and their evaluations replaced. Every command that writes several outputs
    (evaluations, runs, report files, an export's runs, a demo's all) checks them all first."""
    spec = MULTI[command]
    out = tmp_path / "out"
    spec.make(inputs, out)
    planted = spec.last(out)
    planted.write_text("mine")
    before = {**snapshot(tmp_path), **snapshot(inputs.evaluated_runs)}
    line = refused(spec.argv(inputs, out), capsys)
    assert f"{planted.name}', which hseval did not write there" in line, line
    assert {**snapshot(tmp_path), **snapshot(inputs.evaluated_runs)} == before
