"""Micro hierarchical precision/recall/F1: hseval against hiclass (or brute-force sets), same run.

    python bench/metrics.py [--classes 1000] [--samples 20000,200000] [--repeats 20] [--baseline-repeats 3]
                            [--baseline auto|hiclass|sets]

A random tree with ``--classes`` leaves (about 1.5·|L| nodes, depth <= 4, leaves at every depth;
bench/heads.py's generator) and uniformly random targets, 30% of the predictions right and the
rest uniform, for each number of samples.

- hseval: :func:`hseval.metrics.hierarchical_prf` on the (N,) class indices; best of ``--repeats``
  calls after one warm-up call (the tree's table of LCA depths is built once, on first use, and
  cached; its build time on a fresh tree is shown in its own column and is not in the ratio).
- baseline (``auto``: hiclass where ``import hiclass`` works, else sets):
  ``hiclass``: ``hiclass.metrics.precision`` and ``recall`` with ``average="micro"`` (hF is
  computed from those two; ``f1`` would compute both again) on the (N, depth) arrays of label
  paths that hiclass takes, padded with "" for shallower classes; the arrays are built before
  timing. ``sets``: the definition in pure Python, a set of ancestors-or-self per sample for the
  truth and the prediction, summing ``|Ŷ ∩ Y|``, ``|Ŷ|`` and ``|Y|``.
  Best of ``--baseline-repeats`` runs.

The three values of both sides must agree to 1e-12, or the script fails. The ratio is baseline
time / hseval time, both from this run.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hseval.hierarchy import Hierarchy  # noqa: E402
from hseval.metrics.hierarchical import hierarchical_prf  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cpu_model, random_tree  # noqa: E402

TOLERANCE = 1e-12


def best_time(fn, repeats: int):
    best, out = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return out, best


def prf(overlap: float, predicted: float, true: float) -> dict[str, float]:
    precision, recall = overlap / predicted, overlap / true
    return {"precision": precision, "recall": recall,
            "f1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0}


def hiclass_baseline(tree: Hierarchy):
    """A function of (pred, target) running hiclass on label-path arrays built beforehand."""
    from hiclass.metrics import f1, precision, recall

    paths = np.full((tree.num_leaves, tree.max_depth), "", dtype=object)
    for c in range(tree.num_leaves):
        names = tree.path_names(c)
        paths[c, : len(names)] = names
    paths = paths.astype(str)

    def prepare(pred, target):
        y_pred, y_true = paths[pred], paths[target]

        def run():
            p = precision(y_true, y_pred, average="micro")
            r = recall(y_true, y_pred, average="micro")
            return {"precision": float(p), "recall": float(r),
                    "f1": float(2 * p * r / (p + r)) if p + r else 0.0}

        def check_f1(values):  # hiclass's own f1, once, outside the timing
            assert abs(float(f1(y_true, y_pred, average="micro")) - values["f1"]) <= TOLERANCE

        return run, check_f1

    return prepare


def sets_baseline(tree: Hierarchy):
    ancestors = [tree.path(c) for c in range(tree.num_leaves)]  # ancestor-or-self tuples, root excluded

    def prepare(pred, target):
        pred_list, target_list = pred.tolist(), target.tolist()

        def run():
            overlap = predicted = true = 0
            for p, t in zip(pred_list, target_list):
                y_hat, y = set(ancestors[p]), set(ancestors[t])
                overlap += len(y_hat & y)
                predicted += len(y_hat)
                true += len(y)
            return prf(overlap, predicted, true)

        return run, lambda values: None

    return prepare


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classes", type=int, default=1000, help="number of classes |L| (default 1000)")
    parser.add_argument("--samples", default="20000,200000", help="comma-separated numbers of samples")
    parser.add_argument("--repeats", type=int, default=20, help="hseval calls per size, best kept (default 20)")
    parser.add_argument("--baseline-repeats", type=int, default=3, help="baseline runs per size (default 3)")
    parser.add_argument("--baseline", choices=["auto", "hiclass", "sets"], default="auto",
                        help="hiclass where it imports (auto, the default), hiclass, or brute-force sets")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.samples.split(",") if s.strip()]

    baseline = args.baseline
    hiclass_version = None
    if baseline in ("auto", "hiclass"):
        try:
            from importlib.metadata import version

            import hiclass  # noqa: F401

            hiclass_version = version("hiclass")
            baseline = "hiclass"
        except ImportError:
            if baseline == "hiclass":
                raise
            baseline = "sets"

    tree = random_tree(args.classes, seed=args.classes)
    # the table's one-time cost, on an equal tree that has built nothing yet
    fresh = Hierarchy(tree.node_names, tree.parents, tree.num_leaves)
    start = time.perf_counter()
    table = fresh.lca_depth_table
    build_ms = 1e3 * (time.perf_counter() - start)
    prepare = hiclass_baseline(tree) if baseline == "hiclass" else sets_baseline(tree)
    name = f"hiclass {hiclass_version}" if baseline == "hiclass" else "brute-force sets"

    print(f"numpy {np.__version__}, python {platform.python_version()}, {cpu_model()}")
    print(f"tree: {tree.num_leaves:,} classes, {tree.num_nodes:,} nodes, depth {tree.max_depth}; table of LCA "
          f"depths: {'none (too large)' if table is None else f'{table.dtype} {table.shape}'}, built in "
          f"{build_ms:.1f} ms (ancestor table included), once per tree")
    print(f"baseline: {name}; hseval best of {args.repeats}, baseline best of {args.baseline_repeats}\n")
    header = f"{'samples':>9} {'hseval ms':>10} {'baseline ms':>12} {'ratio':>8}   {'hP':>8} {'hR':>8} {'hF':>8}"
    print(header)
    print("-" * len(header))
    for n in sizes:
        rng = np.random.default_rng(n)
        target = rng.integers(0, tree.num_leaves, n)
        pred = np.where(rng.random(n) < 0.3, target, rng.integers(0, tree.num_leaves, n))
        hierarchical_prf(pred, target, tree)  # warm-up (the table is built here on the first size)
        ours, t_ours = best_time(lambda p=pred, t=target: hierarchical_prf(p, t, tree), args.repeats)
        run, check = prepare(pred, target)
        theirs, t_theirs = best_time(run, args.baseline_repeats)
        check(theirs)
        for key in ("precision", "recall", "f1"):
            if abs(ours[key] - theirs[key]) > TOLERANCE:
                raise SystemExit(f"{key} differs at {n} samples: hseval {ours[key]!r}, {name} {theirs[key]!r}")
        print(f"{n:>9,} {1e3 * t_ours:>10.3f} {1e3 * t_theirs:>12.1f} {t_theirs / t_ours:>7.0f}×   "
              f"{ours['precision']:>8.5f} {ours['recall']:>8.5f} {ours['f1']:>8.5f}", flush=True)
    print(f"\nvalues agree to {TOLERANCE:g}; ratio = baseline time / hseval time")


if __name__ == "__main__":
    main()
