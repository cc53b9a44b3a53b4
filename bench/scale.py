"""Evaluation and report at 1,000 to 100,000 classes: time, peak memory and size.

    python bench/scale.py [--classes 1000,10000,100000] [--keep DIR] [--repeat N] [--readme]

For each size a user with a large tree is imitated: a random 3-level tree, a prediction file
(``.npz``, as ``np.savez`` writes it) with float32 logits of about 55 % top-1, 64-d embeddings and
class weights, then ``hseval evaluate --predictions … --projections pca`` and ``hseval report``,
each in its own process. A row of the table holds

- evaluate: wall-clock and CPU seconds (user and system: what other work on the machine changes
  least) and the peak resident memory (the process's own ``ru_maxrss``: :data:`RUN_AND_WAIT`),
  and how far that peak lies above the same command's on a 100-class file of as many samples
  (what the libraries take);
- report: seconds and the size of ``report.html``;
- dashboard: the server's peak resident memory and the seconds each page takes to settle on a
  second visit in headless Chromium (``tests/browser.py``; Debian's ``chromium`` and playwright).

Each command measured is a :class:`Measurement` and its columns (:class:`Column`), so that another
command (the dashboard's pages) is one entry more in :data:`MEASUREMENTS`.

Each size is measured ``--repeat`` times (2 with ``--readme``) and the fastest row kept.
``--readme`` writes the table into README.md's ``bench-scale`` block, on a quiet machine only
(:func:`scripts.readme_blocks.require_quiet`): figures measured beside other work are not README's.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hseval.tree import write_hierarchy  # noqa: E402
from hseval.tree.hierarchy import Hierarchy  # noqa: E402
from tests.browser import PAGES, dashboard_page, settle  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import require_quiet, stamp, write_block  # noqa: E402

SAMPLES = {1_000: 20_000, 10_000: 20_000, 100_000: 10_000}
"""Samples of each size: 100,000 × 10,000 float32 logits are 4 GB."""
DIM = 64
BASELINE_CLASSES = 100


# ====================================================================== the inputs
def three_level_tree(classes: int, seed: int = 0) -> Hierarchy:
    """A random tree whose classes all lie at depth 3: about classes^(1/3) nodes at depth 1 and
    classes^(2/3) at depth 2, each class under a random depth-2 node (none left empty)."""
    rng = np.random.default_rng(seed)
    top = max(2, round(classes ** (1 / 3)))
    middle = max(top, round(classes ** (2 / 3)))
    middle_parent = np.concatenate([np.arange(top), rng.integers(0, top, middle - top)])
    leaf_parent = np.concatenate([np.arange(middle), rng.integers(0, middle, classes - middle)])
    parents = np.concatenate([classes + leaf_parent, classes + middle + middle_parent, np.full(top, -1)])
    names = [f"c{i}" for i in range(classes)] + [f"m{i}" for i in range(middle)] + [f"t{i}" for i in range(top)]
    return Hierarchy(names, parents, classes)


def _class_weights(tree: Hierarchy, rng: np.random.Generator) -> np.ndarray:
    """(|L|, DIM) vectors that follow the tree: each node its parent's vector plus noise."""
    vectors = np.zeros((tree.num_nodes + 1, DIM))  # the last row: the root
    parents = np.where(tree.parents >= 0, tree.parents, tree.num_nodes)
    for depth in range(1, tree.max_depth + 1):
        nodes = tree.nodes_at_depth(depth)
        vectors[nodes] = vectors[parents[nodes]] + rng.normal(0, 1.0, (len(nodes), DIM))
    return vectors[: tree.num_leaves]


def _noise_for(weights: np.ndarray, accuracy: float, rng: np.random.Generator) -> float:
    """The embedding noise that gives about ``accuracy`` top-1 (bisection on 1,000 samples)."""
    targets = rng.integers(0, len(weights), 1000)
    noise = rng.normal(size=(1000, DIM))
    low, high = 0.0, 10.0
    for _ in range(20):
        sigma = (low + high) / 2
        hits = ((weights[targets] + sigma * noise) @ weights.T).argmax(1) == targets
        low, high = (sigma, high) if hits.mean() > accuracy else (low, sigma)
    return (low + high) / 2


def _write_member(archive: zipfile.ZipFile, name: str, shape: tuple[int, ...], dtype: np.dtype,
                  blocks: Callable[[], object]) -> None:
    """An .npy member written block by block (``np.savez`` would need the whole array at once)."""
    with archive.open(f"{name}.npy", "w", force_zip64=True) as fh:
        np.lib.format.write_array_header_2_0(fh, {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
                                                  "fortran_order": False, "shape": shape})
        for block in blocks():
            fh.write(np.ascontiguousarray(block, dtype=dtype).tobytes())


def write_inputs(folder: Path, classes: int, samples: int, *, seed: int = 0,
                 accuracy: float = 0.55) -> tuple[Path, Path]:
    """The hierarchy file and the prediction file of one size, in ``folder`` (kept where both are there)."""
    hierarchy, path = folder / f"tree-{classes}-{samples}.txt", folder / f"predictions-{classes}-{samples}.npz"
    if hierarchy.exists() and path.exists():
        return hierarchy, path
    rng = np.random.default_rng(seed)
    tree = three_level_tree(classes, seed)
    write_hierarchy(tree, hierarchy)
    weights = _class_weights(tree, rng)
    sigma = _noise_for(weights, accuracy, rng)
    targets = rng.integers(0, classes, samples)
    embeddings = (weights[targets] + sigma * rng.normal(size=(samples, DIM))).astype(np.float32)
    scale = 1.2 / np.linalg.norm(weights, axis=1).mean()  # mean top probability near the accuracy
    rows = max(1, (1 << 24) // classes)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        _write_member(archive, "targets", (samples,), np.int64, lambda: [targets])
        _write_member(archive, "logits", (samples, classes), np.float32,
                      lambda: ((embeddings[lo: lo + rows] @ (scale * weights.T).astype(np.float32))
                               for lo in range(0, samples, rows)))
        _write_member(archive, "embeddings", embeddings.shape, np.float32, lambda: [embeddings])
        _write_member(archive, "class_weights", weights.shape, np.float32, lambda: [weights])
    return hierarchy, path


# ====================================================================== measuring a command
RUN_AND_WAIT = """
import json, os, sys, time
start = time.perf_counter()
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ)
_, status, usage = os.wait4(pid, 0)
print(json.dumps({"code": os.waitstatus_to_exitcode(status), "seconds": time.perf_counter() - start,
                  "cpu": usage.ru_utime + usage.ru_stime, "peak": usage.ru_maxrss * 1024}))
"""
"""Started by :func:`measured` to start the command and wait for it. A child's ``ru_maxrss`` counts
the resident memory of the process that forked it (Linux keeps the forking process's peak across
``exec``): started from this benchmark, which holds gigabytes while it writes the inputs, every
command would read as large as the benchmark. This small process (about 10 MB) starts it instead."""


def measured(command: list[str]) -> tuple[float, float, int]:
    """Run ``command`` (it must succeed): its wall-clock seconds, its CPU seconds (user and system,
    which other work on the machine changes far less) and its own peak resident memory in bytes."""
    done = subprocess.run([sys.executable, "-c", RUN_AND_WAIT, *command], capture_output=True, text=True)
    result = json.loads(done.stdout.splitlines()[-1]) if done.returncode == 0 and done.stdout else {"code": -1}
    if result["code"]:
        raise RuntimeError(f"{' '.join(command)} failed ({result['code']}): {done.stderr[-500:]}")
    return result["seconds"], result["cpu"], result["peak"]


def hseval(*args: str) -> list[str]:
    return [sys.executable, "-m", "hseval", *args]


def evaluate(hierarchy: Path, predictions: Path, out: Path) -> dict[str, float]:
    seconds, cpu, peak = measured(hseval("evaluate", "--predictions", str(predictions), "--hierarchy", str(hierarchy),
                                         "--projections", "pca", "--out", str(out)))
    return {"evaluate_s": seconds, "evaluate_cpu": cpu, "evaluate_peak": peak}


def report(hierarchy: Path, predictions: Path, out: Path) -> dict[str, float]:
    seconds, cpu, _ = measured(hseval("report", str(out)))
    return {"report_s": seconds, "report_cpu": cpu, "report_size": (out / "report.html").stat().st_size}


def dashboard(hierarchy: Path, predictions: Path, out: Path) -> dict[str, float]:
    """``hseval dashboard`` on the evaluation in headless Chromium: every page visited twice, the
    seconds for each to settle on the second visit (:func:`tests.browser.settle`), and the server's
    peak resident memory after both rounds."""
    with dashboard_page(out) as (server, page):
        page.goto(server.wait_ready())
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=120_000)
        for name in (*PAGES[1:], PAGES[0]):  # the first round: each page once, ending where the second starts
            settle(page, name)
        row = {f"page_{name}": settle(page, name) for name in PAGES[1:] + PAGES[:1]}
        row["server_peak"] = server.peak_memory()
    return row


@dataclass(frozen=True)
class Column:
    title: str
    show: Callable[[dict[str, float]], str]


@dataclass(frozen=True)
class Measurement:
    """A command measured at each size: ``run(hierarchy, predictions, out)`` gives its figures (it
    may read what earlier measurements wrote in ``out``), ``columns`` show them in the table."""

    run: Callable[[Path, Path, Path], dict[str, float]]
    columns: tuple[Column, ...]


GB = 1024 ** 3


def _above(row: dict[str, float]) -> str:
    """The peak memory above the 100-class file's, and how many logits files that is."""
    above = row["evaluate_peak"] - row["baseline_peak"]
    return f"{above / GB:.2f} GB ({above / row['logits_bytes']:.2f}× the logits)"


MEASUREMENTS = (
    Measurement(evaluate, (
        Column("evaluate: time", lambda r: f"{r['evaluate_s']:.1f} s"),
        Column("evaluate: CPU", lambda r: f"{r['evaluate_cpu']:.1f} s"),
        Column("evaluate: peak memory", lambda r: f"{r['evaluate_peak'] / GB:.2f} GB"),
        Column("above the 100-class file", _above))),
    Measurement(report, (
        Column("report: time", lambda r: f"{r['report_s']:.1f} s"),
        Column("report.html", lambda r: f"{r['report_size'] / 1e6:.1f} MB"))),
    Measurement(dashboard, (
        Column("dashboard server: peak memory", lambda r: f"{r['server_peak'] / GB:.2f} GB"),
        *(Column(f"{name} (s)", lambda r, name=name: f"{r[f'page_{name}']:.1f}") for name in PAGES))),
)
"""What is measured of each size, in order; a command more (the dashboard) is one more entry."""
COLUMNS = (Column("classes × samples", lambda r: f"{r['classes']:,} × {r['samples']:,} "
                                                f"(logits {r['logits_bytes'] / GB:.2f} GB)"),
           *(c for m in MEASUREMENTS for c in m.columns))


def markdown(rows: list[dict[str, float]]) -> str:
    lines = ["| " + " | ".join(c.title for c in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(c.show(r) for c in COLUMNS) + " |" for r in rows]
    return "\n".join(lines)


def measure(classes: int, samples: int, root: Path) -> dict[str, float]:
    """One row: ``hseval evaluate`` of a 100-class file of as many samples (what the libraries take),
    then every measurement at ``classes``."""
    folder = root / str(classes)
    folder.mkdir(parents=True, exist_ok=True)
    base_tree, base_file = write_inputs(folder, BASELINE_CLASSES, samples)
    baseline = evaluate(base_tree, base_file, folder / "eval-baseline")
    tree, file = write_inputs(folder, classes, samples)
    row = {"classes": classes, "samples": samples, "logits_bytes": 4 * classes * samples,
           "baseline_peak": baseline["evaluate_peak"], "baseline_s": baseline["evaluate_s"],
           "baseline_cpu": baseline["evaluate_cpu"]}
    for measurement in MEASUREMENTS:
        row.update(measurement.run(tree, file, folder / "eval"))
    print(" | ".join(c.show(row) for c in COLUMNS), f"| 100-class file: {row['baseline_s']:.1f} s, CPU "
          f"{row['baseline_cpu']:.1f} s, {row['baseline_peak'] / GB:.2f} GB", flush=True)
    return row


def _seconds(row: dict[str, float]) -> float:
    """What the fastest of several measurements of a size is chosen by: every wall-clock figure summed."""
    return row["evaluate_s"] + row["report_s"] + sum(row[f"page_{name}"] for name in PAGES)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classes", default=",".join(str(c) for c in SAMPLES),
                        help=f"comma-separated sizes among {', '.join(map(str, SAMPLES))}")
    parser.add_argument("--samples", type=int, help="samples of every size (default: the table's)")
    parser.add_argument("--keep", type=Path, help="write the inputs and outputs here and keep them (inputs "
                        "found there are used again)")
    parser.add_argument("--readme", action="store_true", help="write the table into README.md (bench-scale)")
    parser.add_argument("--repeat", type=int, default=None, help="measure each size this many times and keep the "
                        "fastest (evaluate + report + every page; default 2 with --readme, else 1)")
    args = parser.parse_args()
    repeat = args.repeat or (2 if args.readme else 1)
    sizes = [int(c) for c in args.classes.split(",")]
    if args.readme:
        require_quiet("python bench/scale.py --readme")  # a README figure: only on a quiet machine
    with tempfile.TemporaryDirectory(prefix="hseval-scale-") as scratch:
        rows = [min((measure(c, args.samples or SAMPLES.get(c, 10_000), args.keep or Path(scratch))
                     for _ in range(repeat)), key=_seconds) for c in sizes]
    print(markdown(rows))
    if args.readme:
        write_block("bench-scale", markdown(rows) + f"\n\n({stamp('python bench/scale.py --readme')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
