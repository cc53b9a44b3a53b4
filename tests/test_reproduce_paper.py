"""``scripts/reproduce_paper.py``: a throughput that is not a positive, finite number is refused in
one line naming the argument (it printed "-1.5 GPU-h"), and a step that fails ends the script with
one line and that step's exit code (it printed a Python traceback)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
SCRIPT = ROOT / "scripts" / "reproduce_paper.py"


def _script(*argv: str, path: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=path if path is not None else os.environ.get("PATH", ""))
    return subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.parametrize("value", ["resnet18@32=-14000", "resnet18@32=0", "resnet18@32=nan", "resnet18@32=inf",
                                   "resnet18@32=1e999", "resnet18@0=14000", "resnet18@-32=14000", "resnet18@32=fast"])
def test_a_throughput_that_is_not_a_positive_finite_number_is_refused(value):
    done = _script("1", "--dry-run", "--throughput", value)
    assert done.returncode == 2 and done.stdout == "", done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("reproduce_paper.py: error: argument --throughput: "), done.stderr
    assert repr(value) in lines[0] and "GPU-h" not in done.stderr


def test_a_measured_throughput_gives_a_positive_estimate():
    done = _script("1", "--dry-run", "--throughput", "resnet18@224=2000")
    assert done.returncode == 0 and "# Table 1, cub200 / resnet18: 5 runs × 15 min = 1.2 GPU-h" in done.stdout


@pytest.mark.parametrize(("code", "table"), [(3, "5"), (1, "4")])
def test_a_failing_step_ends_the_script_with_one_line_and_its_exit_code(tmp_path, code, table):
    """A stand-in ``hseval`` that records each call and fails ``train-all`` with ``code``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "hseval"
    fake.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "calls"}\n[ "$1" = train-all ] && exit {code}\nexit 0\n')
    fake.chmod(0o755)
    done = _script(table, "--data-root", "/data", path=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    assert done.returncode == code, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith(f"reproduce_paper.py: error: step of Table {table} (") and \
        f"failed with exit code {code}: hseval train-all --recipe" in lines[0], lines[0]
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls[-1].startswith("train-all") and sum(c.startswith("train-all") for c in calls) == 1  # it stopped


def test_a_missing_hseval_is_one_line(tmp_path):
    done = _script("4", "--data-root", "/data", path=str(tmp_path))
    assert done.returncode == 127
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "failed with exit code 127 (hseval: No such file or directory; install hseval" \
        in lines[0], done.stderr
