"""Evaluation at many classes takes the memory of its input, not a multiple of it.

``hseval evaluate --predictions`` of a 5,000-class file runs in a fresh process, after the same
command on a 10-class file has loaded every library: the growth of the peak resident memory
(``VmHWM``, which other work on the machine does not change) is what the large file costs. Not
``ru_maxrss``: Linux keeps the forking process's peak in it across ``exec``, so a child of a large
pytest worker would start as large as the worker and no growth below that could be seen.
The peak is made deterministic: one malloc arena and one thread (else each thread's arena keeps
freed blocks, by how the threads happened to interleave beside other work), and a fixed mmap
threshold, so that every freed large buffer goes back to the system at once (glibc's dynamic
threshold would keep it in the heap after the first free, where the next one adds to it).
The scores go through the metrics a block of rows at a time, so it stays below the logits' size;
reading the whole file, a copy of the logits, a softmax of every row or a |L|×|L| distance matrix would
each break the bound."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import prediction_file

ROOT = Path(__file__).resolve().parents[1]
DETERMINISTIC = {"MALLOC_ARENA_MAX": "1", "MALLOC_MMAP_THRESHOLD_": str(1 << 17),
                 "MALLOC_TRIM_THRESHOLD_": str(1 << 17),
                 **{name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                           "NUMBA_NUM_THREADS")}}
CLASSES, SAMPLES = 5000, 6000

MEASURE = """
import json, sys
from hseval.cli.main import main

def peak():  # this process's own peak since exec, in bytes
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))

small, big, out = sys.argv[1:4]
for name in (small, big):
    assert main(["evaluate", "--predictions", f"{name}.npz", "--hierarchy", f"{name}.txt", "--out", out,
                 "--projections", "pca", "--max-points", "500"]) == 0, name
    print(json.dumps({"peak": peak()}))
"""


@pytest.mark.slow  # seconds each: the fast lane keeps units and contracts
def test_evaluate_takes_the_memory_of_its_input_at_5000_classes(tmp_path):
    prediction_file(tmp_path / "small", 10, 200)
    logits = prediction_file(tmp_path / "big", CLASSES, SAMPLES)
    done = subprocess.run([sys.executable, "-c", MEASURE, str(tmp_path / "small"), str(tmp_path / "big"),
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=600, cwd=ROOT,
                          env={**os.environ, **DETERMINISTIC})
    assert done.returncode == 0, done.stderr[-3000:]
    small, big = (json.loads(line)["peak"] for line in done.stdout.splitlines() if line.startswith("{"))
    grown = big - small
    assert grown <= 1.25 * logits, f"evaluate grew by {grown / 2**20:.0f} MiB for {logits / 2**20:.0f} MiB of logits"
    metrics = json.loads((tmp_path / "out" / "big" / "metrics.json").read_text())
    assert metrics["samples"] == SAMPLES and 0 <= metrics["crm"]["top1"] <= 1


IMPORTS = """
import sys
from hseval.cli.main import main

assert main(["evaluate", "--predictions", sys.argv[1] + ".npz", "--hierarchy", sys.argv[1] + ".txt",
             "--out", sys.argv[2], "--projections", "pca"]) == 0
print(sorted(m for m in ("torch", "torchvision", "geoopt", "hseval.data") if m in sys.modules))
"""


@pytest.mark.slow  # seconds each: the fast lane keeps units and contracts
def test_evaluating_a_prediction_file_imports_neither_torch_nor_a_dataset(tmp_path):
    """Its fixed cost was 13 s of imports (a dataset module pulls in torchvision): a prediction file
    needs numpy, the metrics and scikit-learn's PCA only."""
    prediction_file(tmp_path / "p", 20, 100)
    done = subprocess.run([sys.executable, "-c", IMPORTS, str(tmp_path / "p"), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
