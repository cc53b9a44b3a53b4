"""Metrics benchmarks, each against its baseline in the same run.

    python bench/metrics.py [--classes 1000] [--samples 20000,200000] [--repeats 20] [--baseline-repeats 3]
                            [--baseline auto|hiclass|sets|both] [--readme]
    python bench/metrics.py --stream [--stream-classes 100,1000,10000,100000] [--batches 200,60,15,4]
                            [--rounds 3] [--reference REV] [--device cpu]

**Streaming** (``--stream``): :class:`hseval.metrics.HierarchicalMetrics` fed batches of 256 logits
(float32 torch tensors, as a loop gives them; topk (1, 5, 20), uniformly random targets) then
computed, against (a) the same class at git revision ``--reference`` (today's, before a change:
its hseval/metrics modules are read from git and imported under another package name) and (b)
a build on ``torchmetrics.Metric`` (needs ``pip install torchmetrics``): the same checks and
statistics, summed in tensor states (``add_state(..., dist_reduce_fx="sum")``), the confusion pairs
in two list states (``"cat"``) folded into one when they grow, computed by the same
``state_compute``. Each is timed on the same batches, in turn, ``--rounds`` times; the best is
kept. Prints ms per batch, the ratios, and the bytes of each state after the batches; the results
must be equal (exactly for the reference, whose arithmetic is the same), or the script fails.

**Hierarchical P/R/F** (the default): micro hierarchical precision/recall/F1 against hiclass (or
brute-force sets).

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
import importlib
import math
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hseval.metrics.hierarchical import hierarchical_prf  # noqa: E402
from hseval.tree.hierarchy import Hierarchy  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cpu_model, random_tree, require_quiet, stamp, write_block  # noqa: E402

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


def load_reference(rev: str):
    """hseval.metrics as it was at git revision ``rev``: its modules copied from git into a temporary
    package whose imports of hseval.metrics are renamed, so that both versions run in one process."""
    root = Path(__file__).resolve().parents[1]

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout

    package = "hseval_metrics_reference"
    folder = Path(tempfile.mkdtemp(prefix="hseval-bench-")) / package
    folder.mkdir()
    for name in git("ls-tree", "--name-only", rev, "hseval/metrics/").split():
        (folder / Path(name).name).write_text(git("show", f"{rev}:{name}").replace("hseval.metrics", package))
    sys.path.insert(0, str(folder.parent))
    return importlib.import_module(package)


def torchmetrics_build(tree: Hierarchy, ks: tuple[int, ...]):
    """A HierarchicalMetrics on ``torchmetrics.Metric``: an hseval shell checks each batch and gives
    its statistics; the sums live in tensor states and the confusion pairs in list states."""
    import torch
    from torchmetrics import Metric

    from hseval.metrics import HierarchicalMetrics, statistics
    from hseval.metrics.confusion import SparseConfusion

    class TorchmetricsHierarchical(Metric):
        full_state_update = False

        def __init__(self) -> None:
            super().__init__()
            self.shell = HierarchicalMetrics(tree, topk=ks)
            self.shell._stream.add = self.accumulate  # the shell's statistics go to this metric's states
            for name, value in self.shell._stream.sums.items():
                self.add_state(name, torch.from_numpy(value.copy()), dist_reduce_fx="sum")
            self.add_state("pair_keys", [], dist_reduce_fx="cat")
            self.add_state("pair_counts", [], dist_reduce_fx="cat")
            self.pending = 0

        def update(self, logits, targets) -> None:
            self.shell.update(logits, targets)

        def accumulate(self, batch: dict) -> None:
            for name, value in batch.items():
                if name != "pairs":
                    getattr(self, name).add_(torch.as_tensor(value))
            pairs = batch["pairs"]
            self.pair_keys.append(torch.from_numpy(pairs.target * tree.num_leaves + pairs.pred))
            self.pair_counts.append(torch.ones(len(pairs.target), dtype=torch.int64))
            self.pending += len(pairs.target)
            if self.pending > 1 << 20:  # fold: the state stays the distinct pairs
                confusion = self.confusion()
                self.pair_keys = [torch.from_numpy(confusion.keys)]
                self.pair_counts = [torch.from_numpy(confusion.counts)]
                self.pending = 0

        def confusion(self) -> SparseConfusion:
            confusion = SparseConfusion(tree.num_leaves)
            for keys, counts in zip(self.pair_keys, self.pair_counts):
                confusion.add_keys(keys.cpu().numpy(), counts.cpu().numpy())
            confusion.consolidate()
            return confusion

        def compute(self) -> dict:
            state = {name: getattr(self, name).cpu().numpy() for name in self.shell._stream.sums}
            return statistics.state_compute(state, self.confusion().pairs(), tree, self.shell.ks,
                                            shown=range(len(self.shell.ks)),
                                            levels=None, scored=True)

    return TorchmetricsHierarchical()


def state_bytes(metrics) -> int:
    """Bytes of a streaming metric's state: its arrays and tensors, confusion pairs (pending ones too) included."""
    def size(value) -> int:
        if isinstance(value, dict):
            return sum(size(v) for v in value.values())
        if isinstance(value, (list, tuple)):
            return sum(size(v) for v in value)
        return getattr(value, "nbytes", 0)

    if hasattr(metrics, "metric_state"):  # torchmetrics
        return size(metrics.metric_state)
    stream = metrics._stream  # the sums and the confusion pairs; the tree is not state
    return size(stream.sums) + size(vars(stream.confusion))


def same(a, b, path: str = "") -> None:
    """``a`` and ``b`` equal to the last bit (NaN equal to NaN), over the keys of ``b``."""
    if isinstance(b, dict):
        for key in b:
            same(a[key], b[key], f"{path}.{key}")
    elif isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            same(x, y, f"{path}[{i}]")
    elif not (a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b))):
        raise SystemExit(f"results differ at {path}: {a!r} against {b!r}")


def stream(args) -> None:
    """The streaming comparison; see the module's docstring."""
    import torch

    from hseval.metrics import HierarchicalMetrics

    ks = (1, 5, 20)
    builds = {"hseval": lambda tree: HierarchicalMetrics(tree, topk=ks)}
    if args.reference:
        reference = load_reference(args.reference)
        builds = {f"today ({args.reference})": lambda tree: reference.HierarchicalMetrics(tree, topk=ks), **builds}
    try:
        import torchmetrics

        builds["torchmetrics"] = lambda tree: torchmetrics_build(tree, ks).to(args.device)
    except ImportError:
        print("torchmetrics is not installed (pip install torchmetrics): its column is left out")
        torchmetrics = None
    device = torch.device(args.device)
    print(f"torch {torch.__version__}, numpy {np.__version__}, torchmetrics "
          f"{torchmetrics.__version__ if torchmetrics else '-'}, {cpu_model()}, logits on {device}; "
          f"best of {args.rounds} rounds\n")
    names = list(builds)
    header = f"{'classes':>8} {'batches':>7}" + "".join(f" {name + ' ms':>20}" for name in names) + \
        "".join(f" {b + '/' + a:>24}" for a, b in zip(names, names[1:])) + \
        (f" {names[-1] + '/' + names[0]:>24}" if len(names) > 2 else "")
    print(header + "   state bytes (" + ", ".join(names) + ")")
    for classes, batches in zip(args.stream_classes, args.batches):
        tree = random_tree(classes, seed=classes)
        rng = np.random.default_rng(classes)
        distinct = [(torch.as_tensor(rng.normal(size=(256, classes)).astype(np.float32) * 3, device=device),
                     torch.as_tensor(rng.integers(0, classes, 256), device=device)) for _ in range(min(batches, 8))]
        data = [distinct[i % len(distinct)] for i in range(batches)]
        best = dict.fromkeys(names, float("inf"))
        results, sizes = {}, {}
        for _ in range(args.rounds):
            for name in names:
                metrics = builds[name](tree)
                start = time.perf_counter()
                for logits, target in data:
                    metrics.update(logits, target)
                results[name] = metrics.compute()
                best[name] = min(best[name], time.perf_counter() - start)
                sizes[name] = state_bytes(metrics)
        for name in names[:-1] if "torchmetrics" in names else names:
            same(results[name], results["hseval"])
        if "torchmetrics" in names:
            same(results["torchmetrics"], {k: v for k, v in results["hseval"].items() if k != "unavailable"})
        per = [1e3 * best[n] / batches for n in names]
        ratios = [best[b] / best[a] for a, b in zip(names, names[1:])] + \
            ([best[names[-1]] / best[names[0]]] if len(names) > 2 else [])
        print(f"{classes:>8,} {batches:>7}" + "".join(f" {t:>20.2f}" for t in per) +
              "".join(f" {r:>24.3f}" for r in ratios) + "   " + ", ".join(f"{sizes[n]:,}" for n in names), flush=True)
    print("\nresults equal; a ratio is the second's time over the first's, both from this run")


def _ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


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
    parser.add_argument("--stream", action="store_true",
                        help="time HierarchicalMetrics instead (against --reference and torchmetrics)")
    parser.add_argument("--stream-classes", type=_ints, default=[100, 1000, 10_000, 100_000],
                        help="with --stream: the numbers of classes (default 100,1000,10000,100000)")
    parser.add_argument("--batches", type=_ints, default=[200, 60, 15, 4],
                        help="with --stream: batches of 256 per number of classes (default 200,60,15,4)")
    parser.add_argument("--rounds", type=int, default=3, help="with --stream: timed rounds, best kept (default 3)")
    parser.add_argument("--reference", help="with --stream: a git revision whose HierarchicalMetrics is 'today'")
    parser.add_argument("--device", default="cpu", help="with --stream: where the logits (and torchmetrics' state) are")
    args = parser.parse_args(argv)
    if args.readme:
        require_quiet("python bench/metrics.py --readme")  # a README figure: only on a quiet machine
    if args.stream:
        if len(args.batches) != len(args.stream_classes):
            parser.error("give one --batches entry per --stream-classes entry")
        stream(args)
        return
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
