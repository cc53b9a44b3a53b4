"""Every benchmark of ``bench/`` still runs: each script at its smallest size, in its own process,
as a user types it. A benchmark reads the library's internals (a shell's state, an output folder's
plan), so a change there breaks it without any other test noticing; the numbers are not checked
here (they are measured on a quiet machine, never in the suite)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SMALLEST = {
    "metrics.py": ["--classes", "50", "--samples", "300", "--repeats", "1", "--baseline-repeats", "1"],
    "metrics.py --stream": ["--stream", "--stream-classes", "100,1000", "--batches", "3,2", "--rounds", "1"],
    "decisions.py": ["--sizes", "50x300", "--repeat", "1"],
    "heads.py": ["--sizes", "100", "--heads", "plain,riemann", "--repeats", "1", "--malloc", "default"],
    "train_step.py": ["--steps", "2", "--rounds", "1", "--skip-engine", "--batch", "8"],
    "evaluate.py": ["--samples", "300", "--tsne-points", "500", "--skip-umap"],
    "probe.py": ["--train", "300", "--test", "100", "--epochs", "1", "--batch", "64"],
    "predict.py": ["--images", "8", "--batch", "4", "--workers", "0", "--repeat", "1"],
}
"""Each benchmark's arguments for its smallest run (the key: the script, and a mode of it)."""

NOT_HERE = {
    "scale.py": "times evaluate, report and every dashboard page in a browser: 40 s at its smallest",
    "demo_profile.py": "runs a whole demo; tests/test_demo.py runs the demo",
    "_common.py": "helpers of the others",
}
"""The scripts not run here, and why."""


def test_every_bench_script_is_run_here_or_said_why_not():
    scripts = {p.name for p in (ROOT / "bench").glob("*.py")}
    assert scripts == {key.split()[0] for key in SMALLEST} | set(NOT_HERE)


@pytest.mark.slow  # seconds each: imports torch, trains or evaluates a little
@pytest.mark.parametrize("key", SMALLEST)
def test_a_bench_runs_at_its_smallest_size(key, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", TMPDIR=str(tmp_path))
    done = subprocess.run([sys.executable, str(ROOT / "bench" / key.split()[0]), *SMALLEST[key]], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr
