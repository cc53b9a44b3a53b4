"""Micro hierarchical precision/recall/F1: hseval against hiclass (or brute-force sets), same run.

    python bench/metrics.py [--classes 1000] [--samples 20000,200000] [--repeats 20] [--baseline-repeats 3]
                            [--baseline auto|hiclass|sets|both] [--readme]

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
time / hseval time, both from this run. ``--readme`` writes the table into README.md's
``bench-metrics`` block, with the machine and the date.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hseval.metrics.hierarchical import hierarchical_prf  # noqa: E402
from hseval.tree.hierarchy import Hierarchy  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cpu_model, random_tree, stamp, write_block  # noqa: E402

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


def baselines(choice: str) -> dict[str, object]:
    """The baselines asked for: name -> prepare(pred, target) -> (run, check). ``auto``: hiclass where
    it imports, else brute-force sets; ``both``: hiclass (required) and sets."""
    chosen: dict[str, object] = {}
    if choice in ("auto", "hiclass", "both"):
        try:
            from importlib.metadata import version

            import hiclass  # noqa: F401

            chosen[f"hiclass {version('hiclass')}"] = hiclass_baseline
        except ImportError as err:
            if choice != "auto":
                raise SystemExit("hiclass is not installed (pip install hiclass), or use --baseline sets") from err
    if choice in ("sets", "both") or not chosen:
        chosen["brute-force sets"] = sets_baseline
    return chosen


def compare(tree: Hierarchy, sizes: list[int], chosen: dict, repeats: int, baseline_repeats: int) -> list[dict]:
    """For each number of samples: hseval's best time and each baseline's, with the values checked equal."""
    prepared = {name: make(tree) for name, make in chosen.items()}
    rows = []
    for n in sizes:
        rng = np.random.default_rng(n)
        target = rng.integers(0, tree.num_leaves, n)
        pred = np.where(rng.random(n) < 0.3, target, rng.integers(0, tree.num_leaves, n))
        hierarchical_prf(pred, target, tree)  # warm-up (the table is built here on the first size)
        ours, t_ours = best_time(lambda p=pred, t=target: hierarchical_prf(p, t, tree), repeats)
        row = {"samples": n, "hseval": t_ours, "values": ours, "baselines": {}}
        for name, prepare in prepared.items():
            run, check = prepare(pred, target)
            theirs, t_theirs = best_time(run, baseline_repeats)
            check(theirs)
            for key in ("precision", "recall", "f1"):
                if abs(ours[key] - theirs[key]) > TOLERANCE:
                    raise SystemExit(f"{key} differs at {n} samples: hseval {ours[key]!r}, {name} {theirs[key]!r}")
            row["baselines"][name] = t_theirs
        rows.append(row)
        times = "".join(f" {1e3 * t:>12.1f} {t / t_ours:>7.0f}×" for t in row["baselines"].values())
        print(f"{n:>9,} {1e3 * t_ours:>10.3f}{times}   {ours['precision']:>8.5f} {ours['recall']:>8.5f} "
              f"{ours['f1']:>8.5f}", flush=True)
    return rows


def markdown(rows: list[dict], tree: Hierarchy, build_ms: float, command: str) -> str:
    """README's table of times and ratios, with the tree and where and when it was measured."""
    names = list(rows[0]["baselines"])
    lines = ["| samples | hseval | " + " | ".join(f"{name} | ratio" for name in names) + " |",
             "|---|---|" + "---|---|" * len(names)]
    for row in rows:
        cells = "".join(f" {1e3 * t:,.1f} ms | {t / row['hseval']:,.0f}× |" for t in row["baselines"].values())
        lines.append(f"| {row['samples']:,} | {1e3 * row['hseval']:.2f} ms |{cells}")
    return ("\n".join(lines) + f"\n\n{tree.num_leaves:,} classes ({tree.num_nodes:,} nodes, depth {tree.max_depth}); "
            f"the table of LCA depths took {build_ms:.0f} ms to build, once per tree, and is not in the ratios "
            f"({stamp(command, versions={'numpy': np.__version__})}).\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classes", type=int, default=1000, help="number of classes |L| (default 1000)")
    parser.add_argument("--samples", default="20000,200000", help="comma-separated numbers of samples")
    parser.add_argument("--repeats", type=int, default=20, help="hseval calls per size, best kept (default 20)")
    parser.add_argument("--baseline-repeats", type=int, default=3, help="baseline runs per size (default 3)")
    parser.add_argument("--baseline", choices=["auto", "hiclass", "sets", "both"], default="auto",
                        help="hiclass where it imports (auto, the default), hiclass, brute-force sets, or both")
    parser.add_argument("--readme", action="store_true",
                        help="write the table into README.md (its bench-metrics block)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.samples.split(",") if s.strip()]
    chosen = baselines(args.baseline)

    tree = random_tree(args.classes, seed=args.classes)
    # the table's one-time cost, on an equal tree that has built nothing yet
    fresh = Hierarchy(tree.node_names, tree.parents, tree.num_leaves)
    start = time.perf_counter()
    table = fresh.lca_depth_table
    build_ms = 1e3 * (time.perf_counter() - start)

    print(f"numpy {np.__version__}, python {platform.python_version()}, {cpu_model()}")
    print(f"tree: {tree.num_leaves:,} classes, {tree.num_nodes:,} nodes, depth {tree.max_depth}; table of LCA "
          f"depths: {'none (too large)' if table is None else f'{table.dtype} {table.shape}'}, built in "
          f"{build_ms:.1f} ms (ancestor table included), once per tree")
    print(f"baselines: {', '.join(chosen)}; hseval best of {args.repeats}, baselines best of {args.baseline_repeats}\n")
    header = f"{'samples':>9} {'hseval ms':>10}" + "".join(f" {'baseline ms':>12} {'ratio':>8}" for _ in chosen) \
        + f"   {'hP':>8} {'hR':>8} {'hF':>8}"
    print(header)
    print("-" * len(header))
    rows = compare(tree, sizes, chosen, args.repeats, args.baseline_repeats)
    print(f"\nvalues agree to {TOLERANCE:g}; ratio = baseline time / hseval time")
    if args.readme:
        write_block("bench-metrics", markdown(rows, tree, build_ms, "python bench/metrics.py --baseline both --readme"))


if __name__ == "__main__":
    main()
