"""Is a difference between runs real? Paired tests on the same samples, and intervals over seeds.

Two runs evaluated on the same samples are compared sample by sample at every level (the leaf,
and each super-class level both ways, as :func:`hseval.reporting.summary.level_table` names them):

- the accuracy difference with a 95 % **paired bootstrap** interval: the samples are resampled
  with replacement and both runs are scored on the same resample. Only the samples on which the
  runs disagree move the difference, so a resample is drawn as multinomial counts of the three
  kinds of sample (only A right, only B right, both the same) — the same distribution as
  resampling indices, at a cost independent of the number of samples;
- the **exact McNemar** test's two-sided p-value: under "no difference" the samples only one run
  gets right are split between the runs as Binomial(only_a + only_b, 1/2) (``scipy.stats.binom``).

Runs that differ only by their seed form a **seed group** (:func:`seed_groups`): its accuracy is
the mean ± std over seeds with a t interval for the mean, and two groups are compared with a
t-test over seeds (paired when both have the same seeds).

Many tests at 5 % find a few "significant" differences by chance alone: every table of tests
against a baseline (:func:`against_baseline`, and the seed groups') also gives **Holm's** adjusted
p-values over the family of the tests it holds (:func:`holm`), and a difference is called
significant (a filled dot) when its adjusted p is below :data:`ALPHA`.
"""

from __future__ import annotations

import math
import os
import re
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from hseval.io.results import RunResult
from hseval.reporting.columns import WAYS
from hseval.reporting.summary import config_key
from hseval.tree.ancestry import same_tree

__all__ = [
           "CONFIDENCE", "RESAMPLES", "ALPHA", "holm", "against_baseline", "mcnemar_exact", "paired_bootstrap",
           "PairedDifference", "paired_difference", "correctness", "not_paired", "compare_runs", "SeedGroup",
           "seed_groups", "seed_interval", "group_levels", "compare_groups"]

CONFIDENCE = 0.95
RESAMPLES = 10_000
ALPHA = 0.05
"""The level at which a difference is called significant, after Holm's correction."""
COLUMNS = ["metric", "a", "b", "delta", "low", "high", "p_value", "samples", "only_a", "only_b", "test"]
MCNEMAR = "exact McNemar"


def holm(p_values) -> np.ndarray:
    """Holm's step-down adjusted p-values of a family of tests (NaN, a test not made, stays NaN and
    is not counted): the i-th smallest of m p-values becomes ``max_{j <= i} min(1, (m − j + 1)·p_(j))``.
    Calling the tests with adjusted p below α significant keeps the chance of any false call below α."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    made = np.flatnonzero(~np.isnan(p))
    order = made[np.argsort(p[made], kind="stable")]
    out[order] = np.minimum(1.0, np.maximum.accumulate((len(order) - np.arange(len(order))) * p[order]))
    return out


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts: the samples only run A gets
    right (``only_a``) and only run B gets right (``only_b``). 1.0 when they never disagree."""
    if only_a < 0 or only_b < 0:
        raise ValueError(f"discordant counts must be >= 0, got {only_a} and {only_b}")
    if only_a + only_b == 0:
        return 1.0
    # Binomial(n, 1/2) is symmetric: the two-sided p is twice the smaller tail (what binomtest
    # returns at p = 1/2, without its search over the other tail, which is slow at large n)
    return float(min(1.0, 2.0 * stats.binom.cdf(min(only_a, only_b), only_a + only_b, 0.5)))


def paired_bootstrap(only_a: int, only_b: int, samples: int, *, resamples: int = RESAMPLES,
                     confidence: float = CONFIDENCE, seed: int = 0) -> tuple[float, float]:
    """Percentile interval of accuracy(A) − accuracy(B) over ``resamples`` paired bootstrap
    resamples of ``samples`` samples, ``only_a`` / ``only_b`` of which only A / only B gets right."""
    if samples <= 0:
        return math.nan, math.nan
    if not 0 <= only_a + only_b <= samples:
        raise ValueError(f"{only_a} + {only_b} discordant samples out of {samples}")
    rng = np.random.default_rng(seed)
    p_a, p_b = only_a / samples, only_b / samples
    counts = rng.multinomial(samples, [p_a, p_b, max(0.0, 1.0 - p_a - p_b)], size=resamples)
    deltas = (counts[:, 0] - counts[:, 1]) / samples
    tail = (1 - confidence) / 2
    low, high = np.quantile(deltas, [tail, 1 - tail])
    return float(low), float(high)


@dataclass(frozen=True)
class PairedDifference:
    """Accuracy of A and B on the same samples, A − B with its bootstrap interval, McNemar's p (the
    fields are :data:`COLUMNS` but the metric's: a row of :func:`compare_runs`)."""

    a: float
    b: float
    delta: float
    low: float
    high: float
    p_value: float
    samples: int
    only_a: int
    only_b: int
    test: str = MCNEMAR

    def text(self, digits: int = 4) -> str:
        """``+0.0030 [-0.0012, +0.0071], p = 0.16``"""
        if self.samples == 0:
            return "no samples"
        p = format_p(self.p_value)
        return (f"{self.delta:+.{digits}f} [{self.low:+.{digits}f}, {self.high:+.{digits}f}], "
                + (f"p {p}" if p.startswith("<") else f"p = {p}"))


def format_p(p: float) -> str:
    """A p-value as people read it: two significant digits, ``< 0.0001`` below that."""
    if p != p:
        return "–"
    return "< 0.0001" if p < 1e-4 else f"{p:.2g}" if p < 0.01 else f"{p:.2f}"


def paired_difference(correct_a: np.ndarray, correct_b: np.ndarray, *, resamples: int = RESAMPLES,
                      confidence: float = CONFIDENCE, seed: int = 0) -> PairedDifference:
    """Compare two runs from their per-sample correctness (two boolean arrays over the same samples)."""
    a, b = np.asarray(correct_a, dtype=bool), np.asarray(correct_b, dtype=bool)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"correctness arrays must be 1-d and of one length, got {a.shape} and {b.shape}")
    n = len(a)
    only_a, only_b = int((a & ~b).sum()), int((b & ~a).sum())
    low, high = paired_bootstrap(only_a, only_b, n, resamples=resamples, confidence=confidence, seed=seed)
    mean_a = float(a.mean()) if n else math.nan
    mean_b = float(b.mean()) if n else math.nan
    return PairedDifference(mean_a, mean_b, mean_a - mean_b, low, high, mcnemar_exact(only_a, only_b), n,
                            only_a, only_b)


def correctness(run: RunResult) -> dict[str, np.ndarray]:
    """Per-sample correctness of ``run`` at every level it has, keyed like the columns of
    :func:`hseval.reporting.summary.level_table`: "leaf", "level k (from leaf)" and "level k (parent δ /
    level head)". A level-k array covers the samples whose class has a depth-k ancestor (those
    the level's accuracy counts), in sample order."""
    tree = run.hierarchy
    targets, pred = run.targets, run.topk[:, 0]
    out = {"leaf": pred == targets}
    own = run.levels
    for depth in range(1, tree.max_depth):
        truth = tree.ancestor_at_depth(targets, depth)
        reached = truth >= 0
        out[f"level {depth} ({WAYS['superclass_acc']})"] = (tree.ancestor_at_depth(pred, depth) == truth)[reached]
        if (own[:, depth - 1] >= 0).any():
            out[f"level {depth} ({WAYS['superclass_acc_from_levels']})"] = (own[:, depth - 1] == truth)[reached]
    return out


def not_paired(a: RunResult, b: RunResult) -> str | None:
    """Why ``a`` and ``b`` cannot be compared sample by sample (None when they can): classes are
    their names, so one tree listed in two orders is one tree, and a sample's class is its name."""
    if not same_tree(a.hierarchy, b.hierarchy):
        return f"{a.name} and {b.name} use different trees"
    names_a, names_b = np.asarray(a.hierarchy.leaf_names), np.asarray(b.hierarchy.leaf_names)
    if len(a.targets) != len(b.targets) or not np.array_equal(names_a[a.targets], names_b[b.targets]):
        return (f"{a.name} and {b.name} were not evaluated on the same samples "
                f"({len(a.targets):,} and {len(b.targets):,} samples, or their classes differ)")
    return None


def compare_runs(a: RunResult, b: RunResult, *, resamples: int = RESAMPLES, seed: int = 0) -> pd.DataFrame:
    """One row per level both runs have, and one per level that ``a`` scores with its own super-class
    scores where ``b`` has none, against ``b``'s from its leaf ("level k (own scores vs from
    leaf)"); columns :data:`COLUMNS`: metric, accuracy of a and b,
    delta = a − b, the bootstrap interval low/high, McNemar's p_value, samples and the discordant
    counts only_a / only_b). Raises ValueError when the runs are not paired (:func:`not_paired`)."""
    reason = not_paired(a, b)
    if reason:
        raise ValueError(reason)
    ca, cb = correctness(a), correctness(b)
    pairs = [(m, m, m) for m in ca if m in cb]
    own, leaf = WAYS["superclass_acc_from_levels"], WAYS["superclass_acc"]
    # a head's own scores where b has none: against b's super-class from its leaf, said in the row's name
    pairs += [(m.replace(f"({own})", f"({own} vs {leaf})"), m, m.replace(own, leaf)) for m in ca
              if m.endswith(f"({own})") and m not in cb and m.replace(own, leaf) in cb]
    rows = []
    for metric, ma, mb in pairs:
        d = paired_difference(ca[ma], cb[mb], resamples=resamples, seed=seed)
        rows.append([metric, d.a, d.b, d.delta, d.low, d.high, d.p_value, d.samples, d.only_a, d.only_b, d.test])
    return pd.DataFrame(rows, columns=COLUMNS)


def against_baseline(runs: list[RunResult], baseline: RunResult, *, compare=compare_runs
                     ) -> tuple[pd.DataFrame, dict[str, str]]:
    """Every run of ``runs`` but ``baseline`` against it at every level both have (``compare``:
    :func:`compare_runs`, or a cached one): :data:`COLUMNS` with ``run`` first and ``p_holm``,
    Holm's adjustment over the family of every test in the frame; and why each run that could not
    be paired was not (run name -> reason)."""
    frames, unpaired = [], {}
    for run in runs:
        if run.name == baseline.name:
            continue
        reason = not_paired(run, baseline)
        if reason:
            unpaired[run.name] = reason
        else:
            frames.append(compare(run, baseline).assign(run=run.name))
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS + ["run"])
    frame = frame[["run", *COLUMNS]]
    return frame.assign(p_holm=holm(frame["p_value"].to_numpy(dtype=float))), unpaired


# ---------------------------------------------------------------------- seed groups
@dataclass
class SeedGroup:
    """Runs that differ only by their seed (one run alone is a group of one)."""

    name: str
    runs: list[RunResult]

    @property
    def seeds(self) -> list:
        return [r.metrics.get("seed") for r in self.runs]


_SEED_SUFFIX = re.compile(r"(?:[-_.]+(?:seed|s)?[-_.]*[0-9]*|[0-9]+)$")
"""A seed's mark at the end of a group's common name (``-s``, ``_seed``, ``-``, digits): a separator or
digits first, so that a name ending in "s" (``soft-labels``) keeps it."""


def _group_name(runs: list[RunResult]) -> str:
    if len(runs) == 1:
        return runs[0].name
    return _SEED_SUFFIX.sub("", os.path.commonprefix([r.name for r in runs])) or runs[0].head


def seed_groups(runs: list[RunResult]) -> list[SeedGroup]:
    """``runs`` grouped by everything but the seed (dataset, backbone, head, training settings),
    in order of first appearance; each group is named by its runs' common name (``plain-s1``,
    ``plain-s2`` -> ``plain``), made unique."""
    keys: dict[str, list[RunResult]] = {}
    for run in runs:
        keys.setdefault(config_key(run), []).append(run)
    groups, used = [], set()
    for members in keys.values():
        name = _group_name(members)
        if len(members) > 1:
            name = f"{name} ×{len(members)}"
        base, k = name, 2
        while name in used:
            name, k = f"{base} ({k})", k + 1
        used.add(name)
        groups.append(SeedGroup(name, members))
    return groups


def seed_interval(values: np.ndarray | list[float], *, confidence: float = CONFIDENCE) -> dict[str, float]:
    """mean, std (ddof 1) and the t interval for the mean over seeds (NaN for one seed)."""
    x = np.asarray([v for v in values if v == v], dtype=float)
    n = len(x)
    if n == 0:
        return {"mean": math.nan, "std": math.nan, "low": math.nan, "high": math.nan, "seeds": 0}
    mean = float(x.mean())
    if n == 1:
        return {"mean": mean, "std": math.nan, "low": math.nan, "high": math.nan, "seeds": 1}
    std = float(x.std(ddof=1))
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * std / math.sqrt(n)
    return {"mean": mean, "std": std, "low": mean - half, "high": mean + half, "seeds": n}


def group_levels(groups: list[SeedGroup], long: pd.DataFrame) -> pd.DataFrame:
    """Accuracy per group, level and way from :func:`hseval.reporting.summary.level_long` of their runs:
    columns run (the group's name), level, depth, way, accuracy (mean), std, low, high, seeds."""
    rows = []
    for group in groups:
        names = [r.name for r in group.runs]
        part = long[long["run"].isin(names)]
        for (level, depth, way), cell in part.groupby(["level", "depth", "way"], sort=False):
            stats = seed_interval(cell["accuracy"].to_numpy())
            rows.append({"run": group.name, "level": level, "depth": depth, "way": way,
                         "accuracy": stats["mean"], "std": stats["std"], "low": stats["low"], "high": stats["high"],
                         "seeds": stats["seeds"]})
    return pd.DataFrame(rows, columns=["run", "level", "depth", "way", "accuracy", "std", "low", "high", "seeds"])


def compare_groups(a: SeedGroup, b: SeedGroup, table: pd.DataFrame, *,
                   confidence: float = CONFIDENCE) -> pd.DataFrame:
    """Two seed groups at every level both have, from a :func:`hseval.reporting.summary.level_table` of their
    runs: mean ± std of each, the difference of the means with its t interval over seeds and the
    t-test's p-value (paired by seed when both groups have the same seeds, Welch's otherwise)."""
    rows_a = table.set_index("run").loc[[r.name for r in a.runs]]
    rows_b = table.set_index("run").loc[[r.name for r in b.runs]]
    paired = sorted(map(str, a.seeds)) == sorted(map(str, b.seeds)) and len(set(map(str, a.seeds))) == len(a.seeds)
    if paired:
        order_b = {str(r.metrics.get("seed")): r.name for r in b.runs}
        rows_b = rows_b.loc[[order_b[str(r.metrics.get("seed"))] for r in a.runs]]
    out = []
    for metric in (c for c in rows_a.columns if c != "head" and pd.api.types.is_numeric_dtype(rows_a[c])):
        x, y = rows_a[metric].to_numpy(dtype=float), rows_b[metric].to_numpy(dtype=float)
        if np.isnan(x).all() or np.isnan(y).all():
            continue
        sa, sb = seed_interval(x), seed_interval(y)
        row = {"metric": metric, "a_mean": sa["mean"], "a_std": sa["std"], "b_mean": sb["mean"], "b_std": sb["std"],
               "delta": sa["mean"] - sb["mean"], "low": math.nan, "high": math.nan, "p_value": math.nan,
               "test": "paired t over seeds" if paired else "Welch t over seeds"}
        if len(x) > 1 and len(y) > 1 and not (np.isnan(x).any() or np.isnan(y).any()):
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # identical seeds: scipy's precision note
                result = stats.ttest_rel(x, y) if paired else stats.ttest_ind(x, y, equal_var=False)
                ci = result.confidence_interval(confidence)
            row.update(low=float(ci.low), high=float(ci.high), p_value=float(result.pvalue))
        out.append(row)
    return pd.DataFrame(out)
