"""Faults: kill -9 at random points of ``train``, ``evaluate`` and ``report``, and a full disk.

- train: killed at delays drawn from a seeded RNG, then ``--resume``: the final weights are
  bit-identical (CPU) to an uninterrupted run's, and no temporary file is left;
- evaluate: after a kill the output folder holds only complete runs; the next evaluate cleans
  the hidden staging folders;
- report: after a kill each report file is the old one or the new one, never a mix;
- a full disk (``ENOSPC`` from the file system, simulated in :mod:`hseval.core.fileio`, and a real
  64 KiB tmpfs where this machine lets us mount one) gives one line, exit 2, and keeps the last
  good checkpoint (resumable) and every finished file.
"""

from __future__ import annotations

import errno
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from hseval.cli.main import main
from hseval.core import fileio
from hseval.io.evaluation_format import FILES as EVAL_FILES
from hseval.io.folders import LOCK, MARKER
from hseval.io.run_format import load_train_state

ROOT = Path(__file__).parents[2]
KILL_SEED = 20240611
TRAIN_KILLS = 2
EPOCHS = 4
RUN_NAMES = ("a", "b", "c")
REPORT_FILES = ("summary.csv", "summary_grouped.csv", "superclass_accuracy.csv", "superclass_accuracy.md",
                "report.md", "report.html")


def hseval_process(*argv: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    return subprocess.Popen([sys.executable, "-m", "hseval", *argv], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def seconds_to_run(*argv: str) -> float:
    """Wall time of an uninterrupted ``python -m hseval ...``: the window the kills are drawn in."""
    start = time.monotonic()
    process = hseval_process(*argv)
    assert process.wait(timeout=300) == 0, process.stderr.read()
    return time.monotonic() - start


def wait_for(path: Path, process: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)


def kill_9(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.kill(process.pid, signal.SIGKILL)
    process.wait()


def leftovers(folder: Path) -> list[str]:
    """Temporary files and staging folders that a killed writer leaves (hidden names; the markers
    and lock files that say who owns a folder are meant to stay)."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob(".*") if p.name not in (MARKER, LOCK))


def tensors_equal(a: Path, b: Path) -> bool:
    x, y = load_file(str(a / "model.safetensors")), load_file(str(b / "model.safetensors"))
    return x.keys() == y.keys() and all(torch.equal(x[k], y[k]) for k in x)


def train_args(fashion: Path, out: Path, *extra: str) -> list[str]:
    return ["train", "--head", "riemann", "--data-root", str(fashion), "--quiet", "--set", f"optim.epochs={EPOCHS}",
            "--set", "optim.milestones=[2]", "--set", "data.train_subset=null", "--set", "data.batch_size=32",
            "--set", "engine.threads=1", "--out", str(out), *extra]


# ====================================================================== train
def test_kill_9_at_random_points_then_resume_gives_the_uninterrupted_weights(fashion_like, tmp_path, capsys):
    full = tmp_path / "full"
    assert main(train_args(fashion_like, full)) == 0
    epoch_seconds = sum(h["seconds"] for h in json.loads((full / "run.json").read_text())["history"]) / EPOCHS
    rng = random.Random(KILL_SEED)
    # after the first checkpoint, anywhere in the remaining epochs (checkpoint writes included)
    delays = [rng.uniform(0, (EPOCHS - 1) * epoch_seconds) for _ in range(TRAIN_KILLS)]
    report = []
    for k, delay in enumerate(delays):
        out = tmp_path / f"killed-{k}"
        victim = hseval_process(*train_args(fashion_like, out))
        wait_for(out / "train_state.pt", victim)
        time.sleep(delay)
        kill_9(victim)
        finished = (out / "run.json").exists()
        epoch = load_train_state(out)["epoch"]
        report.append(f"kill {k}: +{delay:.2f} s after the first checkpoint, at epoch {epoch}/{EPOCHS}"
                      f"{' (finished)' if finished else ''}")
        if not finished:
            assert main(train_args(fashion_like, out, "--resume")) == 0, capsys.readouterr().err
        assert tensors_equal(full, out), report[-1]
        assert leftovers(out) == [], leftovers(out)  # a temporary file of the killed process is removed
    print("\n".join(report))


# ====================================================================== evaluate
def complete_runs(folder: Path) -> list[str]:
    """Names of the visible run folders of an evaluation; each must hold every file, readable."""
    names = []
    for run in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
        missing = [name for name in EVAL_FILES if not (run / name).is_file()]
        assert not missing, f"{run} is incomplete: no {missing}"
        json.loads((run / "metrics.json").read_text())
        names.append(run.name)
    return names


@pytest.fixture(scope="module")
def three_runs(good, tmp_path_factory) -> Path:
    runs = tmp_path_factory.mktemp("three-runs")
    for name in RUN_NAMES:
        shutil.copytree(good.run, runs / name)
    return runs


def test_kill_9_during_evaluate_leaves_only_complete_runs(good, three_runs, tmp_path, capsys):
    argv = ["evaluate", str(three_runs), "--data-root", str(good.fashion), "--projections", "pca", "--quiet"]
    timed = hseval_process(*argv, "--out", str(tmp_path / "timed"))
    wait_for(tmp_path / "timed", timed)  # the folder appears when the first run is written
    start = time.monotonic()
    assert timed.wait(timeout=300) == 0
    window = time.monotonic() - start  # writing the runs one after the other (and exiting)
    rng = random.Random(KILL_SEED + 1)
    seen = []
    for k in range(2):
        out = tmp_path / f"eval-{k}"
        victim = hseval_process(*argv, "--out", str(out))
        wait_for(out, victim)
        time.sleep(rng.uniform(0, 0.8) * window)
        kill_9(victim)
        names = complete_runs(out) if out.exists() else []
        index = json.loads((out / "index.json").read_text()) if (out / "index.json").exists() else {"runs": []}
        assert {e["run"] for e in index["runs"]} <= set(names)
        seen.append((len(names), leftovers(out) if out.exists() else []))
    # what a kill leaves at the worst moments: a staging folder, a swapped-out run, a temporary file
    out = tmp_path / "eval-0"
    for stale in (".hseval-staging-a-999999", ".hseval-old-b-999999"):
        shutil.copytree(good.evaluation / "run", out / stale)
    (out / ".index.json.abcd1234.tmp").write_text('{"runs": [')
    assert main([*argv, "--out", str(out)]) == 0, capsys.readouterr().err
    assert complete_runs(out) == list(RUN_NAMES) and leftovers(out) == []
    print("evaluate kills (complete runs, hidden leftovers):", seen)


# ====================================================================== report
KILLED_AT_REPLACE = """
import os, signal, sys
kill_at, replaced, real = int(sys.argv[1]), [0], os.replace
def replace(*args, **kwargs):  # SIGKILL just before the kill_at-th file replacement
    replaced[0] += 1
    if replaced[0] == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
    return real(*args, **kwargs)
os.replace = replace
from hseval.cli.main import main
raise SystemExit(main(sys.argv[2:]))
"""


def hseval_killed_at(replacement: int, *argv: str) -> subprocess.CompletedProcess:
    """``hseval *argv`` killed with SIGKILL just before its ``replacement``-th ``os.replace`` (the
    moment an atomic write becomes visible)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-c", KILLED_AT_REPLACE, str(replacement), *argv], env=env,
                          capture_output=True, text=True, timeout=300)


def test_kill_9_during_report_leaves_the_old_or_the_new_file(good, tmp_path, capsys, monkeypatch):
    """A report stopped just before each of its file replacements in turn (every moment at which a
    non-atomic writer would leave a cut file): every file is the old one or the new one, whole.
    Each moment's files are read in one report (what a SIGKILL there leaves: the files as the OS
    holds them, no process buffer); the first and the last moment are also killed for real, and
    must leave the same."""
    folder = Path(shutil.copytree(good.evaluation, tmp_path / "eval"))
    assert main(["report", str(folder)]) == 0
    old = {name: (folder / name).read_bytes() for name in REPORT_FILES}
    run = next(p for p in folder.iterdir() if p.is_dir())
    shutil.copytree(run, folder / "copy")  # the new report has one more run
    moments, real = [], os.replace

    def replace(*args, **kwargs):
        moments.append({name: (folder / name).read_bytes() for name in REPORT_FILES})
        return real(*args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(os, "replace", replace)
        assert main(["report", str(folder)]) == 0
    new = {name: (folder / name).read_bytes() for name in REPORT_FILES}
    assert all(old[n] != new[n] for n in ("summary.csv", "report.md"))
    assert len(moments) >= len(REPORT_FILES)

    def outcome(files: dict[str, bytes], moment: int) -> str:
        state = ""
        for name in REPORT_FILES:
            data = files[name]
            if name == "report.html":  # plotly gives each figure a random id: complete, old or not
                assert data == old[name] or data.rstrip().endswith(b"</body></html>"), moment
            else:
                assert data in (old[name], new[name]), (moment, name)
            state += "o" if data == old[name] else "n"
        return state

    outcomes = [outcome(files, k) for k, files in enumerate(moments, 1)]
    assert outcomes[0] == "o" * len(REPORT_FILES)  # stopped before the first file was replaced
    for kill_at in (1, len(moments)):
        for name in REPORT_FILES:  # back to the old files before each kill
            (folder / name).write_bytes(old[name])
        killed = hseval_killed_at(kill_at, "report", str(folder))
        assert killed.returncode == -signal.SIGKILL, (kill_at, killed.stderr)
        assert outcome({name: (folder / name).read_bytes() for name in REPORT_FILES}, kill_at) == outcomes[kill_at - 1]
    assert main(["report", str(folder)]) == 0
    assert [p for p in leftovers(folder) if not p.startswith("copy/")] == []  # stale temporaries removed
    print("report stopped before each replacement (o: old file, n: new):", outcomes)


# ====================================================================== a full disk
class FullDisk:
    """Makes the ``n``-th file-system call ``name`` of :mod:`hseval.core.fileio` fail with ENOSPC."""

    def __init__(self, monkeypatch, name: str, n: int) -> None:
        self.calls, self.n, self.real = 0, n, getattr(os, name)
        monkeypatch.setattr(fileio.os, name, self)

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.calls >= self.n:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return self.real(*args, **kwargs)


def one_error_line(capsys) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hseval: error: ") and "Traceback" not in lines[0], lines
    return lines[0]


@pytest.mark.parametrize("call", ["fsync", "replace"])
def test_full_disk_during_training_keeps_the_last_checkpoint(fashion_like, tmp_path, monkeypatch, capsys, call):
    args = ["train", "--head", "plain", "--data-root", str(fashion_like), "--quiet", "--set", "optim.epochs=2",
            "--set", "data.train_subset=200", "--set", "data.batch_size=32", "--set", "engine.threads=1"]
    full = tmp_path / "full"
    assert main([*args, "--out", str(full)]) == 0
    out = tmp_path / "run"
    # the folder's marker; epoch 1: train_state.pt, history.csv; epoch 2: train_state.pt fails
    disk = FullDisk(monkeypatch, call, 4)
    assert main([*args, "--out", str(out)]) == 2
    line = one_error_line(capsys)
    assert f"cannot write {out / 'train_state.pt'}: No space left on device" in line
    assert disk.calls >= 4  # the undo may try to settle the marker's record; its own failure is not reported
    assert load_train_state(out)["epoch"] == 1 and not (out / "run.json").exists()
    assert leftovers(out) == []
    monkeypatch.undo()
    assert main([*args, "--out", str(out), "--resume"]) == 0
    assert tensors_equal(full, out)


def test_full_disk_during_evaluate_keeps_the_previous_evaluation(good, tmp_path, monkeypatch, capsys):
    out = Path(shutil.copytree(good.evaluation, tmp_path / "eval"))
    before = {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    run_before = {p.name: p.read_bytes() for p in good.run.iterdir()}
    FullDisk(monkeypatch, "fsync", 2)  # metrics.json is written, per_node.csv is not
    argv = ["evaluate", str(good.run), "--out", str(out), "--data-root", str(good.fashion), "--projections", "none",
            "--quiet"]
    assert main(argv) == 2
    assert "No space left on device" in one_error_line(capsys)
    assert {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert {p.name: p.read_bytes() for p in good.run.iterdir()} == run_before  # the finished run is untouched
    assert leftovers(out) == []


def test_full_disk_during_report_keeps_whole_files(good, tmp_path, monkeypatch, capsys):
    folder = Path(shutil.copytree(good.evaluation, tmp_path / "eval"))
    assert main(["report", str(folder)]) == 0
    old = {name: (folder / name).read_bytes() for name in REPORT_FILES}
    (folder / "summary.csv").write_bytes(b"stale\n")
    old["summary.csv"] = b"stale\n"
    FullDisk(monkeypatch, "replace", 3)
    assert main(["report", str(folder)]) == 2
    assert "No space left on device" in one_error_line(capsys)
    assert (folder / "summary.csv").read_bytes() != b"stale\n"  # written before the disk filled
    assert all((folder / n).read_bytes() == old[n] for n in REPORT_FILES[2:])  # the rest: old, whole
    assert leftovers(folder) == []


@pytest.fixture
def tiny_tmpfs(tmp_path):
    mount = tmp_path / "tiny"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", str(mount)], check=False)


def test_a_real_full_disk(tiny_tmpfs, good, tmp_path, capsys):
    """A 64 KiB tmpfs: a hierarchy too big for it, and a report, fail with one line and leave the
    files that were there whole; no temporary file is left."""
    big = tmp_path / "big.txt"
    big.write_text("".join(f"group{k % 50}/class{k}\n" for k in range(5000)))
    small = tiny_tmpfs / "tree.txt"
    assert main(["hierarchy", "convert", str(big), str(small), "--to", "paths"]) == 2
    assert "No space left on device" in one_error_line(capsys)
    assert leftovers(tiny_tmpfs) == [] and not small.exists()
    (tmp_path / "two.txt").write_text("g/a\ng/b\n")
    assert main(["hierarchy", "convert", str(tmp_path / "two.txt"), str(small), "--to", "paths"]) == 0
    good_text = small.read_text()
    assert main(["hierarchy", "convert", str(big), str(small), "--to", "paths"]) == 2
    assert "No space left on device" in one_error_line(capsys)
    assert small.read_text() == good_text and leftovers(tiny_tmpfs) == []
    evaluation = shutil.copytree(good.evaluation, tmp_path / "eval")
    assert main(["report", str(evaluation), "--out", str(tiny_tmpfs / "report.html")]) == 2
    assert "No space left on device" in one_error_line(capsys)
    assert leftovers(tiny_tmpfs) == [] and not (tiny_tmpfs / "report.html").exists()
