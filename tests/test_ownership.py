"""Folders hseval may write, replace or remove: markers, locks and distinct evaluation names.

The three ways trained runs used to be lost (an evaluation written over the runs, two trainings
into one folder, runs whose evaluation names collide) each have a test through the real CLI; the
output transaction (:class:`hseval.io.output.OutputFolder`) has tests of its own below. Every
writing command against a user's folder and a path inside an hseval folder: ``test_outputs.py``.
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
from hseval.core.errors import RunFormatError
from hseval.evaluation.writer import evaluation_names
from hseval.io import folders as ownership
from hseval.io.folders import LOCK, MARKER, OwnershipError
from hseval.io.output import OutputFolder
from tests.helpers import examples


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
    assert "runs: holds a folder of training runs (hseval train-all), not an evaluation folder" in err_line(capsys)
    assert tree_bytes(copy) == before
    (copy / MARKER).unlink()  # the user's folder of runs: refused all the same, as a folder that is not empty
    assert evaluate(copy, out=copy, fashion=fashion_like) == 2
    assert "is not empty and was not written by hseval as an evaluation folder" in err_line(capsys)
    del before[MARKER]
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
    (out / "runs__plain" / "notes.txt").write_text("mine, in hseval's evaluation")
    assert evaluate(runs / "plain", out=out, fashion=fashion_like) == 2  # re-evaluated: replaced only if all ours
    assert "runs__plain: holds 'notes.txt', which hseval did not write there" in err_line(capsys)
    assert (out / "runs__plain" / "notes.txt").read_text() == "mine, in hseval's evaluation"


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


@settings(max_examples=examples(200), deadline=None)
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
def test_new_and_empty_folders_are_claimed_and_no_folder_is_adopted_by_its_file_names(tmp_path):
    with OutputFolder(tmp_path / "new", "evaluations") as new:
        assert ownership.read_marker(new.path).kind == "evaluations" and new.target == new.path
    (tmp_path / "empty").mkdir()
    with OutputFolder(tmp_path / "empty", "run"):
        pass
    assert ownership.kind_of(tmp_path / "empty") == "run"
    named = tmp_path / "named"  # a folder holding exactly the files a run holds, but no marker: the user's
    named.mkdir()
    for name in ("run.json", "model.safetensors", "history.csv"):
        (named / name).write_text("{}")
    for kind in ("run", "evaluations"):
        with pytest.raises(OwnershipError, match=rf"named: is not empty and was not written by hseval as "
                                                 rf"{ownership.KINDS[kind][:12]}.* \(it holds 'history.csv', "
                                                 r"'model.safetensors', 'run.json'\); choose a new or empty --out"):
            OutputFolder(named, kind)
    assert ownership.kind_of(named) is None and sorted(os.listdir(named)) == ["history.csv", "model.safetensors",
                                                                              "run.json"]
    with pytest.raises(OwnershipError, match=r"empty: holds a training run, not an evaluation folder \(one sub-folder "
                                             r"per evaluated run\); choose another --out"):
        OutputFolder(tmp_path / "empty", "evaluations")
    hidden = tmp_path / "hidden"  # hidden files are the user's too: a replaced folder would lose them
    (hidden / ".git").mkdir(parents=True)
    with pytest.raises(OwnershipError, match=r"hidden: is not empty .* \(it holds '.git'\)"):
        OutputFolder(hidden, "export")


def test_a_damaged_marker_is_one_line_naming_the_field(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    for text, message in (('{"kind": "nope"}', r"'kind' must be 'run', 'runs', 'evaluations'"),
                          ('{"kind": "run", "created_by": "me"}', r"no 'created_at'"),
                          ('[1]', r"expected a JSON object, got list"), ('{bad', r"not valid JSON")):
        (folder / MARKER).write_text(text)
        with pytest.raises(OwnershipError, match=rf"run/\.hseval-folder\.json: {message}"):
            OutputFolder(folder, "run")
        with pytest.raises(RunFormatError, match=r"the folder's marker is damaged"):
            ownership.read_marker(folder, error=RunFormatError)


def test_nothing_is_written_inside_another_hseval_folder_unless_it_holds_that_kind(tmp_path):
    with OutputFolder(tmp_path / "runs", "runs") as runs, OutputFolder(tmp_path / "runs" / "a", "run", parent=runs):
        pass
    OutputFolder(tmp_path / "runs" / "b", "run")  # a run in a folder of runs: checked, accepted
    OutputFolder(tmp_path / "runs" / "group" / "b", "run")
    for path, kind in ((tmp_path / "runs" / "a" / "x", "run"), (tmp_path / "runs" / "eval", "evaluations"),
                       (tmp_path / "runs" / "a" / "x" / "y", "export")):
        with pytest.raises(OwnershipError, match=rf"{path.name}: lies inside .*, which holds .* that hseval writes "
                                                 r"itself; write .* outside it \(choose another --out\)"):
            OutputFolder(path, kind)
    assert not (tmp_path / "runs" / "a" / "x").exists()


def test_the_transaction_leaves_no_trace_when_the_command_fails(tmp_path):
    folder = tmp_path / "out"
    with pytest.raises(RuntimeError), OutputFolder(folder, "evaluations"):
        assert ownership.read_marker(folder).kind == "evaluations"
        raise RuntimeError("refused before writing")
    assert not folder.exists()
    existing = tmp_path / "existing"
    existing.mkdir()
    with pytest.raises(RuntimeError), OutputFolder(existing, "evaluations"):
        raise RuntimeError
    assert os.listdir(existing) == []
    with pytest.raises(RuntimeError), OutputFolder(folder, "evaluations"):
        (folder / "index.json").write_text("{}")  # written in place (a run's checkpoint): it stays, with its marker
        raise RuntimeError
    assert sorted(os.listdir(folder)) == sorted([MARKER, LOCK, "index.json"])


def test_a_replaced_folder_stays_whole_until_the_new_one_is_complete(tmp_path):
    with OutputFolder(tmp_path / "tb", "export", replace=True, staged=True, source="s", format="f", runs=[]) as out:
        (out.target / "a.txt").write_text("first")
    assert ownership.read_marker(tmp_path / "tb").files.keys() == {"a.txt"}
    with pytest.raises(RuntimeError), OutputFolder(tmp_path / "tb", "export", replace=True, source="s", format="f",
                                                   runs=[]) as out:
        assert out.target != out.path
        (out.target / "b.txt").write_text("second")
        raise RuntimeError("failed half-way")
    assert sorted(os.listdir(tmp_path / "tb")) == [MARKER, "a.txt"]  # the previous export, whole
    assert sorted(os.listdir(tmp_path)) == ["tb"]  # no staging left
    # a kill between the two renames of a replacement: the next writer restores the old folder
    (tmp_path / "tb").rename(tmp_path / f"{ownership.OLD}tb-999999")
    with OutputFolder(tmp_path / "tb", "export", replace=True, source="s", format="f", runs=[]) as out:
        assert (tmp_path / "tb" / "a.txt").read_text() == "first"
        (out.target / "c.txt").write_text("third")
    assert sorted(os.listdir(tmp_path / "tb")) == [MARKER, "c.txt"] and sorted(os.listdir(tmp_path)) == ["tb"]


def test_the_lock_is_reentrant_within_a_process_and_released_on_exit(tmp_path):
    with ownership.locked(tmp_path), ownership.locked(tmp_path):
        pass
    code = subprocess.run([sys.executable, "-c", "from hseval.io import folders as ownership; import sys\n"
                           "with ownership.locked(sys.argv[1]): pass", str(tmp_path)], capture_output=True, text=True)
    assert code.returncode == 0, code.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_a_killed_writer_leaves_its_name_but_no_stale_lock(tmp_path):
    hold = "import sys, time\nfrom hseval.io.folders import locked\nwith locked(sys.argv[1]):\n" \
           "    print('locked', flush=True)\n    time.sleep(120)"
    holder = subprocess.Popen([sys.executable, "-c", hold, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                              cwd=Path(__file__).parents[1])
    assert holder.stdout.readline().strip() == "locked"
    with pytest.raises(OwnershipError, match=f"another hseval process \\(pid {holder.pid} on "):
        ownership.check_unlocked(tmp_path)
    holder.kill()
    holder.wait()
    assert (tmp_path / LOCK).read_text().startswith(f"{holder.pid} ")
    ownership.check_unlocked(tmp_path)
    with ownership.locked(tmp_path):
        assert (tmp_path / LOCK).read_text().startswith(f"{os.getpid()} ")


def test_a_folder_records_what_hseval_writes_in_place_and_writes_over_nothing_else(tmp_path):
    """``writes``: the names a command writes in place, refused where they are not hseval's, recorded
    before the first byte (a killed writer's files stay hseval's) and kept in the record only where
    they were written."""
    folder = tmp_path / "eval"
    with OutputFolder(folder, "evaluations", writes=["index.json", "report.md"]) as out:
        assert set(ownership.read_marker(folder).files) == {"index.json", "report.md"}
        (out.target / "index.json").write_text("{}")
    assert ownership.read_marker(folder).files == {"index.json": None}  # report.md was not written
    (folder / "report.md").write_text("mine")
    with pytest.raises(OwnershipError, match=r"eval: holds 'report.md', which hseval did not write there, so it will "
                                             r"not write over it; move it out or choose another --out"):
        OutputFolder(folder, "evaluations", writes=["report.md"])
    OutputFolder(folder, "evaluations", writes=["index.json"])  # what it wrote, it writes again
    OutputFolder(folder, "evaluations")  # and a command that writes neither name leaves both alone
    (folder / "report.md").unlink()
    with pytest.raises(RuntimeError), OutputFolder(folder, "evaluations", writes=["report.md"]) as out:
        (out.target / "report.md").write_text("half")
        raise RuntimeError("killed")
    assert set(ownership.read_marker(folder).files) == {"index.json", "report.md"}


def test_a_sub_folder_is_named_apart_from_its_folders_files(tmp_path):
    with OutputFolder(tmp_path / "eval", "evaluations", writes=["index.json"]) as root:
        for name in ("index.json", "group/x"):
            with pytest.raises(OwnershipError, match=r"an evaluation folder .* holds the evaluation of one run in a "
                                                     r"sub-folder of its own, named apart from its files "
                                                     r"\(index.json\)"):
                OutputFolder(root.path / name, "evaluation", lock=False, parent=root, replace=True, source="s",
                             inputs={}, schema_version=2)
    assert sorted(os.listdir(tmp_path / "eval")) == [MARKER, LOCK]


def test_an_input_is_recognised_through_a_link(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (tmp_path / "link").symlink_to(run)
    for path in (tmp_path / "link", tmp_path / "link" / "x"):
        with pytest.raises(OwnershipError, match=r"an input of this command"):
            OutputFolder(path, "evaluations", reads=[run])
    with pytest.raises(OwnershipError, match=r"holds .*ckpt.pt, an input of this command, which writing the output "
                                             r"would remove"):
        OutputFolder(tmp_path, "export", replace=True, reads=[tmp_path / "link" / "ckpt.pt"])
