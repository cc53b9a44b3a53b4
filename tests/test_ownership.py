"""Folders hseval may write, replace or remove: markers, locks and distinct evaluation names.

The three ways trained runs used to be lost (an evaluation written over the runs, two trainings
into one folder, runs whose evaluation names collide) each have a test through the real CLI.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hseval.cli.main import main
from hseval.evaluation.runs import evaluation_names
from hseval.io import folders as ownership
from hseval.io.folders import LOCK, MARKER, OwnershipError


def tree_bytes(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def err_line(capsys) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hseval: error: "), lines
    return lines[0]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, fashion_like) -> Path:
    """Two trained runs under one folder (a train-all root)."""
    root = tmp_path_factory.mktemp("owned") / "runs"
    assert main(["train-all", "--heads", "plain,hierarchy", "--data-root", str(fashion_like), "--quiet", "--set",
                 "optim.epochs=1", "--set", "data.train_subset=100", "--set", "data.batch_size=32", "--out",
                 str(root)]) == 0
    return root


def evaluate(*runs: Path, out: Path, fashion: Path) -> int:
    return main(["evaluate", *map(str, runs), "--out", str(out), "--data-root", str(fashion), "--projections", "none",
                 "--quiet"])


# ---------------------------------------------------------------------------------- data loss
def test_evaluate_into_the_runs_folder_is_refused_and_deletes_nothing(runs, fashion_like, tmp_path, capsys):
    copy = Path(shutil.copytree(runs, tmp_path / "runs"))
    before = tree_bytes(copy)
    assert evaluate(copy, out=copy, fashion=fashion_like) == 2
    assert "is not empty and was not written by hseval as an evaluation folder" in err_line(capsys)
    assert tree_bytes(copy) == before
    # one run's folder as the output of another's evaluation: refused too
    assert evaluate(copy / "plain", out=copy / "hierarchy", fashion=fashion_like) == 2
    assert "holds a training run, not an evaluation folder" in err_line(capsys)
    assert tree_bytes(copy) == before


def test_an_evaluation_never_replaces_a_folder_it_did_not_write(runs, fashion_like, tmp_path, capsys):
    """An evaluation folder whose sub-folder named like a run is the user's (or a run) keeps it:
    the run's evaluation gets another name."""
    out = tmp_path / "eval"
    assert evaluate(runs / "plain", out=out, fashion=fashion_like) == 0
    capsys.readouterr()
    shutil.rmtree(out / "plain")
    (out / "plain").mkdir()
    (out / "plain" / "notes.txt").write_text("mine")
    assert evaluate(runs / "plain", out=out, fashion=fashion_like) == 0
    assert (out / "plain" / "notes.txt").read_text() == "mine"
    assert ownership.kind_of(out / "runs__plain") == "evaluation"  # the run's evaluation, under another name
    with pytest.raises(OwnershipError, match=r"was not written by hseval; hseval replaces only the evaluation of one "
                                             r"run it wrote, so it will not replace it"):
        ownership.replace_folder(out / "plain", out / "plain", "evaluation")


def test_train_force_refuses_a_folder_hseval_did_not_write(fashion_like, tmp_path, capsys, runs):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    argv = ["train", "--data-root", str(fashion_like), "--quiet", "--set", "optim.epochs=1", "--force", "--out"]
    assert main([*argv, str(mine)]) == 2
    assert "mine: is not empty and was not written by hseval as a training run" in err_line(capsys)
    assert (mine / "thesis.tex").read_text() == "years of work" and sorted(os.listdir(mine)) == ["thesis.tex"]
    evaluation = tmp_path / "eval"
    assert evaluate(runs / "plain", out=evaluation, fashion=fashion_like) == 0
    capsys.readouterr()
    assert main([*argv, str(evaluation / "plain")]) == 2
    assert "holds the evaluation of one run, not a training run" in err_line(capsys)


HOLD_LOCK = textwrap.dedent("""
    import fcntl, os, sys, time
    fd = os.open(os.path.join(sys.argv[1], ".hseval.lock"), os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, str(os.getpid()).encode())
    print("locked", flush=True)
    time.sleep(120)
""")


@pytest.fixture
def other_writer(tmp_path):
    """A second process holding the write lock of a folder, as a running hseval command does."""
    processes = []

    def hold(folder: Path) -> subprocess.Popen:
        folder.mkdir(parents=True, exist_ok=True)
        process = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(folder)], stdout=subprocess.PIPE, text=True)
        assert process.stdout.readline().strip() == "locked"
        processes.append(process)
        return process

    yield hold
    for process in processes:
        process.kill()
        process.wait()


@pytest.mark.skipif(sys.platform == "win32", reason="the test holds the lock with fcntl")
def test_a_second_writer_is_refused_at_once(fashion_like, tmp_path, capsys, runs, other_writer):
    run = tmp_path / "r"
    holder = other_writer(run)
    argv = ["train", "--data-root", str(fashion_like), "--quiet", "--set", "optim.epochs=1", "--set",
            "data.train_subset=100", "--set", "data.batch_size=32", "--out", str(run)]
    assert main(argv) == 2
    assert err_line(capsys).endswith(f"r: another hseval process (pid {holder.pid}) is writing into it; wait until "
                                     "it finishes or choose another --out")
    assert sorted(os.listdir(run)) == [LOCK]  # nothing trained, nothing written
    out = tmp_path / "eval"
    holder = other_writer(out)
    assert evaluate(runs / "plain", out=out, fashion=fashion_like) == 2
    assert f"another hseval process (pid {holder.pid}) is writing into it" in err_line(capsys)
    assert sorted(os.listdir(out)) == [LOCK]


def test_two_evaluations_into_one_folder_are_both_indexed(runs, fashion_like, tmp_path, capsys):
    out = tmp_path / "eval"
    assert evaluate(runs / "plain", out=out, fashion=fashion_like) == 0
    assert evaluate(runs / "hierarchy", out=out, fashion=fashion_like) == 0
    index = json.loads((out / "index.json").read_text())
    assert [e["run"] for e in index["runs"]] == ["hierarchy", "plain"]
    assert {e["path"] for e in index["runs"]} == {str((runs / "plain").resolve()), str((runs / "hierarchy").resolve())}


def test_runs_whose_names_collide_get_distinct_evaluations(runs, fashion_like, tmp_path, capsys):
    root = tmp_path / "runs"
    for where in ("a/x", "a__x", "b/x"):
        shutil.copytree(runs / "plain", root / where)
    out = tmp_path / "eval"
    assert evaluate(root, out=out, fashion=fashion_like) == 0
    evaluated = {p.name: json.loads((p / "metrics.json").read_text())["run_path"]
                 for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")}
    assert sorted(evaluated.values()) == sorted(str((root / w).resolve()) for w in ("a/x", "a__x", "b/x"))
    # evaluated again one by one: each replaces its own evaluation, never another's
    for where in ("b/x", "a/x"):
        assert evaluate(root / where, out=out, fashion=fashion_like) == 0
    again = {p.name: json.loads((p / "metrics.json").read_text())["run_path"]
             for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")}
    assert again == evaluated


paths = st.lists(st.lists(st.sampled_from(["a", "b", "x", "a__x", "x-2", "runs"]), min_size=1, max_size=4),
                 min_size=1, max_size=8, unique_by=tuple)


@settings(max_examples=200, deadline=None)
@given(batch=paths, earlier=paths)
def test_evaluation_names_are_distinct_by_construction(batch, earlier):
    """Whatever the paths, and whatever an earlier evaluation in the folder used: distinct runs get
    distinct names, and a name already used by another run is never reused."""
    root = Path("/data")
    runs = [root.joinpath(*p) for p in batch]
    taken = dict(zip(evaluation_names([root.joinpath(*p) for p in earlier]), (str(root.joinpath(*p)) for p in earlier)))
    names = evaluation_names(runs, taken)
    assert len(set(names)) == len(names)
    for run, name in zip(runs, names):
        assert taken.get(name, str(run)) == str(run)
        assert "/" not in name and name and not name.startswith(".")


# ---------------------------------------------------------------------------------- the mechanism
def test_claim_new_empty_legacy_and_foreign_folders(tmp_path):
    new = ownership.claim(tmp_path / "new", "evaluations")
    assert ownership.read_marker(new)["kind"] == "evaluations"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert ownership.kind_of(ownership.claim(empty, "run")) == "run"
    legacy = tmp_path / "legacy"  # a run written before markers existed
    legacy.mkdir()
    for name in ("run.json", "model.safetensors", "history.csv"):
        (legacy / name).write_text("{}")
    assert ownership.kind_of(legacy) == "run" and ownership.read_marker(legacy) is None
    ownership.claim(legacy, "run")
    assert ownership.read_marker(legacy)["kind"] == "run"
    with pytest.raises(OwnershipError, match=r"legacy: holds a training run, not an evaluation folder \(one sub-folder "
                                             r"per evaluated run\); choose another --out"):
        ownership.claim(legacy, "evaluations")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "run.json").write_text("{}")
    (foreign / "notes.txt").write_text("x")
    with pytest.raises(OwnershipError, match=r"foreign: is not empty and was not written by hseval as a training run "
                                             r"\(it holds 'notes.txt', 'run.json'\); choose a new or empty --out"):
        ownership.claim(foreign, "run")
    with pytest.raises(OwnershipError, match=r"foreign: was not written by hseval; .* will not remove it"):
        ownership.remove_owned(foreign, "run")
    assert sorted(os.listdir(foreign)) == ["notes.txt", "run.json"]


def test_output_folder_leaves_no_trace_when_the_command_fails_first(tmp_path):
    folder = tmp_path / "out"
    with pytest.raises(RuntimeError), ownership.output_folder(folder, "evaluations"):
        assert ownership.read_marker(folder)["kind"] == "evaluations"
        raise RuntimeError("refused before writing")
    assert not folder.exists()
    existing = tmp_path / "existing"
    existing.mkdir()
    with pytest.raises(RuntimeError), ownership.output_folder(existing, "evaluations"):
        raise RuntimeError
    assert os.listdir(existing) == []
    with pytest.raises(RuntimeError), ownership.output_folder(folder, "evaluations"):
        (folder / "index.json").write_text("{}")  # work was done: it stays, with its marker
        raise RuntimeError
    assert sorted(os.listdir(folder)) == sorted([MARKER, LOCK, "index.json"])


def test_the_lock_is_reentrant_within_a_process_and_released_on_exit(tmp_path):
    with ownership.locked(tmp_path), ownership.locked(tmp_path):
        pass
    code = subprocess.run([sys.executable, "-c", "from hseval.io import folders as ownership; import sys\n"
                           "with ownership.locked(sys.argv[1]): pass", str(tmp_path)], capture_output=True, text=True)
    assert code.returncode == 0, code.stderr
