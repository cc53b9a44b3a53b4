"""Which method is best, on every metric that is a mean over the samples, with intervals and ties.

Each such metric is a ratio of two sums over the samples, ``Σ numerator / Σ denominator``
(:class:`SampleMetric`): an accuracy is a mean of 0/1 (the denominator 1, or 0 for a sample
whose class has no node at that level); mistake severity sums the LCA heights over the mistakes
(the denominator marks them); micro hierarchical F1 is ``Σ 2·depth(LCA) / Σ (depth(pred) +
depth(true))``; a decision metric (``hf1@optimal:hf1``) is the mean of the node metric of what
that rule chose. Every value is computed from the evaluation's per-sample arrays
(``predictions.npz``), so it equals metrics.json's and decisions.csv's.

The **paired bootstrap** (:func:`bootstrap`) draws each resample once, as multinomial counts of
the samples, and applies it to every entry and metric together: an entry's interval is the
percentile interval of its value over the resamples, and two entries' difference moves as it
would on a new draw of the same test. A difference's p-value is the exact McNemar test's where it
applies (an accuracy of two single runs: 0/1 values on the same samples), else the normal
approximation of the bootstrap's standard error. The **leaderboard** (:func:`leaderboard`) marks
the best entry of each metric and the entries not significantly different from it (Holm's
adjusted p ≥ :data:`~hseval.reporting.significance.ALPHA` over every test of the table) as tied.

An entry is a run, or a seed group (its runs' per-sample values summed: the value pooled over its
seeds, an accuracy the mean over them). ECE and the cross-entropy are not here: the evaluation
keeps no per-sample confidence.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from hseval.core.errors import ConfigError
from hseval.io.results import RunResult
from hseval.metrics.mistakes import hierarchical_distance
from hseval.metrics.node_metrics import compare, node_metric
from hseval.metrics.nodes import NodeLayout
from hseval.reporting.columns import display_name
from hseval.reporting.significance import (
    ALPHA,
    COLUMNS,
    CONFIDENCE,
    MCNEMAR,
    compare_runs,
    holm,
    mcnemar_exact,
    not_paired,
)

__all__ = ["SampleMetric", "sample_metric", "chosen_metrics", "DEFAULT_METRICS", "bootstrap",
           "entry_value", "leaderboard", "leaderboard_table", "RESAMPLES", "BASELINE_METRICS", "compare_all"]

RESAMPLES = 1000
Parts = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class SampleMetric:
    """A metric that is ``Σ numerator / Σ denominator`` over the samples: ``parts(run)`` gives the
    two (N,) arrays, or None where the run does not have the metric; ``lower``: lower is better;
    ``binary``: the numerator is 0/1 and the denominator depends on the samples only (McNemar applies)."""

    name: str
    parts: Callable[[RunResult], Parts | None]
    lower: bool = False
    binary: bool = False

    def label(self, tree=None) -> str:
        return display_name(self.name, tree) if "@" not in self.name else self.name.replace("@", " by ", 1)

    def value(self, run: RunResult) -> float:
        return entry_value([run], self)


def _ratio(numerator: float, denominator: float) -> float:
    return float(numerator / denominator) if denominator else math.nan


def _top(k: int) -> Callable[[RunResult], Parts | None]:
    def parts(run: RunResult) -> Parts | None:
        if run.topk.shape[1] < k:
            return None
        return (run.topk[:, :k] == run.targets[:, None]).any(1).astype(float), np.ones(len(run.targets))
    return parts


def _level(depth: int, own: bool) -> Callable[[RunResult], Parts | None]:
    def parts(run: RunResult) -> Parts | None:
        tree = run.hierarchy
        if depth >= tree.max_depth or (own and not (run.levels[:, depth - 1] >= 0).any()):
            return None
        truth = tree.ancestor_at_depth(run.targets, depth)
        said = run.levels[:, depth - 1] if own else tree.ancestor_at_depth(run.topk[:, 0], depth)
        reached = truth >= 0
        return ((said == truth) & reached).astype(float), reached.astype(float)
    return parts


def _severity(run: RunResult) -> Parts:
    distance = hierarchical_distance(run.topk[:, 0], run.targets, run.hierarchy).astype(float)
    return distance, (distance > 0).astype(float)


def _distance_at(k: int) -> Callable[[RunResult], Parts | None]:
    def parts(run: RunResult) -> Parts | None:
        if run.topk.shape[1] < k:
            return None
        top = run.topk[:, :k]
        distance = hierarchical_distance(top.ravel(), np.repeat(run.targets, k), run.hierarchy).reshape(top.shape)
        return distance.mean(1), np.ones(len(run.targets))
    return parts


def _hierarchical(which: str) -> Callable[[RunResult], Parts]:
    def parts(run: RunResult) -> Parts:
        tree, pred, true = run.hierarchy, run.topk[:, 0], run.targets
        overlap = tree.lca_depth(pred, true).astype(float)
        said, truth = tree.depth[pred].astype(float), tree.depth[true].astype(float)
        return {"precision": (overlap, said), "recall": (overlap, truth), "f1": (2 * overlap, said + truth)}[which]
    return parts


def _decision(metric_name: str, rule: str) -> Callable[[RunResult], Parts | None]:
    source = "own scores" if rule.endswith(" (own scores)") else "classes"
    rule_name = rule.removesuffix(" (own scores)")

    def parts(run: RunResult) -> Parts | None:
        rows = run.decisions
        at = np.flatnonzero((rows["rule"] == rule_name).to_numpy() & (rows["probabilities"] == source).to_numpy())
        if not len(at) or metric_name not in rows or pd.isna(rows[metric_name].iloc[at[0]]):
            return None  # not among this run's rules, or not available to it (decisions.csv says why)
        metric = node_metric(metric_name)
        comparison = compare(_layout(run.hierarchy), run.decided[:, at[0]], run.targets)
        value = metric.value(comparison).astype(float)
        if metric.over_mistakes:
            wrong = (~comparison.correct).astype(float)
            return value * wrong, wrong
        return value, np.ones(len(value))
    return parts


@functools.lru_cache(maxsize=4)
def _layout(tree) -> NodeLayout:
    return NodeLayout(tree)


_FIXED: dict[str, SampleMetric] = {m.name: m for m in (
    SampleMetric("mistake_severity", _severity, lower=True),
    *(SampleMetric(f"hierarchical_{w}", _hierarchical(w)) for w in ("precision", "recall", "f1")))}
_TOP = re.compile(r"top([1-9][0-9]{0,3})")
_LEVEL = re.compile(r"level([1-9][0-9]{0,3})_(from_leaf|own_scores)")
_DISTANCE = re.compile(r"avg_hdist@([1-9][0-9]{0,3})")
DEFAULT_METRICS = ("top1", "levels", "mistake_severity", "hierarchical_f1")
"""The leaderboard's columns unless chosen: leaf top-1, every super-class level from the leaf,
mistake severity and hierarchical F1 ("levels" stands for the levels of the tree)."""


def sample_metric(name: str) -> SampleMetric:
    """The metric called ``name``: ``top<k>``, ``level<d>_from_leaf`` or ``level<d>_own_scores``,
    ``mistake_severity``, ``avg_hdist@<k>``, ``hierarchical_precision``/``recall``/``f1``, or
    ``<node metric>@<rule>`` (a decision metric of decisions.csv, e.g. ``hf1@optimal:hf1``,
    ``correct@threshold:0.5``, a rule of the head's own scores with `` (own scores)``)."""
    name = name.strip()
    if name in _FIXED:
        return _FIXED[name]
    if match := _TOP.fullmatch(name):
        return SampleMetric(name, _top(int(match.group(1))), binary=True)
    if match := _LEVEL.fullmatch(name):
        return SampleMetric(name, _level(int(match.group(1)), match.group(2) == "own_scores"), binary=True)
    if match := _DISTANCE.fullmatch(name):
        return SampleMetric(name, _distance_at(int(match.group(1))), lower=True)
    if "@" in name:
        metric, rule = name.split("@", 1)
        try:
            found = node_metric(metric)
        except ConfigError:
            found = None
        if found is not None and rule:
            return SampleMetric(name, _decision(metric, rule), lower=found.lower, binary=metric in ("correct", "exact"))
    raise ConfigError(f"unknown metric {name!r}; choose top1, top5, level1_from_leaf, level1_own_scores, "
                      "mistake_severity, avg_hdist@1, hierarchical_f1 (or _precision, _recall), or METRIC@RULE of "
                      "decisions.csv such as hf1@optimal:hf1")


def chosen_metrics(names: Sequence[str] | None, runs: Sequence[RunResult]) -> list[SampleMetric]:
    """The metrics named (:data:`DEFAULT_METRICS` when None; "levels": every level from the leaf),
    each one that no run has refused in one line."""
    depth = max((r.hierarchy.max_depth for r in runs), default=1)
    out = []
    for name in names or DEFAULT_METRICS:
        expanded = [f"level{d}_from_leaf" for d in range(1, depth)] if name == "levels" else [name]
        for one in expanded:
            metric = sample_metric(one)
            if all(metric.parts(r) is None for r in runs):
                raise ConfigError(f"metric {one!r}: none of the {len(runs)} run(s) has it (e.g. a head without own "
                                  "super-class scores, or a decoding rule its evaluation did not run)")
            out.append(metric)
    return out


def bootstrap(numerators: np.ndarray, denominators: np.ndarray, *, resamples: int = RESAMPLES, seed: int = 0,
              block: int = 100) -> np.ndarray:
    """(resamples, M) values ``Σ num / Σ den`` of M columns of (N, M) per-sample parts, over paired
    bootstrap resamples of the N samples (each drawn once, as multinomial counts, for every column)."""
    n = len(numerators)
    rng, out = np.random.default_rng(seed), []
    for start in range(0, resamples, block):
        rows = min(block, resamples - start)
        drawn = rng.integers(0, n, size=(rows, n)) + (np.arange(rows) * n)[:, None]
        counts = np.bincount(drawn.ravel(), minlength=rows * n).reshape(rows, n).astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            out.append((counts @ numerators) / (counts @ denominators))
    return np.concatenate(out) if out else np.zeros((0, numerators.shape[1]))


def _entry_parts(runs: Sequence[RunResult], metric: SampleMetric) -> Parts | None:
    parts = [metric.parts(r) for r in runs]
    if any(p is None for p in parts):
        return None
    return sum(p[0] for p in parts), sum(p[1] for p in parts)


def entry_value(runs: Sequence[RunResult], metric: SampleMetric) -> float:
    """The value of an entry (a run, or a seed group pooled) on ``metric``; NaN where it lacks it."""
    parts = _entry_parts(runs, metric)
    return math.nan if parts is None else _ratio(parts[0].sum(), parts[1].sum())


def leaderboard(entries: Sequence[tuple[str, Sequence[RunResult]]], metrics: Sequence[SampleMetric], *,
                resamples: int = RESAMPLES, seed: int = 0, confidence: float = CONFIDENCE
                ) -> tuple[pd.DataFrame, dict[str, str]]:
    """Every entry (name, its runs: one, or a seed group's) on every metric: one row per (entry,
    metric) with value, its percentile interval low/high, best, the difference from the best with
    its p-value and test, Holm's p over the table, and tied (not significantly different from the
    best); and the entries left out because they were not evaluated on the first entry's samples."""
    first = entries[0][1][0]
    left_out = {name: reason for name, runs in entries for r in runs if (reason := not_paired(r, first))}
    entries = [(name, runs) for name, runs in entries if name not in left_out]
    columns, where = [], {}
    for m, metric in enumerate(metrics):
        for e, (_, runs) in enumerate(entries):
            if (parts := _entry_parts(runs, metric)) is not None:
                where[e, m] = len(columns)
                columns.append(parts)
    if not columns:
        return pd.DataFrame(), left_out
    num, den = np.stack([c[0] for c in columns], 1), np.stack([c[1] for c in columns], 1)
    drawn = bootstrap(num, den, resamples=resamples, seed=seed)
    point = np.array([_ratio(n, d) for n, d in zip(num.sum(0), den.sum(0))])
    tail = (1 - confidence) / 2
    with np.errstate(invalid="ignore"):
        low, high = np.nanquantile(drawn, [tail, 1 - tail], axis=0) if len(drawn) else (point, point)
    rows = []
    for m, metric in enumerate(metrics):
        present = [e for e in range(len(entries)) if (e, m) in where]
        values = {e: point[where[e, m]] for e in present if point[where[e, m]] == point[where[e, m]]}
        best = (min if metric.lower else max)(values, key=values.get) if values else None
        for e in present:
            c = where[e, m]
            row = {"entry": entries[e][0], "metric": metric.name, "value": point[c], "low": low[c], "high": high[c],
                   "best": e == best, "difference": math.nan, "p_value": math.nan, "test": ""}
            if best is not None and e != best and e in values:
                b = where[best, m]
                row.update(_against_best(metric, entries[e][1], entries[best][1], drawn[:, c] - drawn[:, b],
                                         point[c] - point[b]))
            rows.append(row)
    frame = pd.DataFrame(rows)
    frame["p_holm"] = holm(frame["p_value"].to_numpy(dtype=float))
    frame["tied"] = ~frame["best"] & (frame["p_holm"] >= ALPHA)
    return frame, left_out


BASELINE_METRICS = ("mistake_severity", "avg_hdist@1", "hierarchical_f1")
"""The metrics beyond the accuracies on which each run is tested against the baseline."""


def compare_all(a: RunResult, b: RunResult, *, resamples: int = RESAMPLES, seed: int = 0) -> pd.DataFrame:
    """``a`` against ``b`` on the same samples: every level's accuracy (the exact McNemar test of
    :func:`~hseval.reporting.significance.compare_runs`), then each of :data:`BASELINE_METRICS` both
    have, with the paired bootstrap's percentile interval of the difference and its p-value; rows
    of :data:`COLUMNS`."""
    rows = [compare_runs(a, b, seed=seed)]
    metrics = [m for m in map(sample_metric, BASELINE_METRICS) if m.parts(a) is not None and m.parts(b) is not None]
    if metrics:
        parts = [m.parts(r) for m in metrics for r in (a, b)]
        drawn = bootstrap(np.stack([p[0] for p in parts], 1), np.stack([p[1] for p in parts], 1),
                          resamples=resamples, seed=seed)
        tail = (1 - CONFIDENCE) / 2
        extra = []
        for k, metric in enumerate(metrics):
            value_a, value_b = metric.value(a), metric.value(b)
            if not (math.isfinite(value_a) and math.isfinite(value_b)):
                continue  # undefined for one of them (mistake severity without a mistake): no test to make
            deltas = drawn[:, 2 * k] - drawn[:, 2 * k + 1]
            finite = deltas[np.isfinite(deltas)]
            low, high = np.quantile(finite, [tail, 1 - tail]) if len(finite) else (math.nan, math.nan)
            p = _bootstrap_p(finite, value_a - value_b)
            extra.append([metric.name, value_a, value_b, value_a - value_b, float(low), float(high), p,
                          len(a.targets), math.nan, math.nan, "paired bootstrap"])
        rows.append(pd.DataFrame(extra, columns=COLUMNS).astype({"samples": int}))
    return pd.concat(rows, ignore_index=True)


def _bootstrap_p(deltas: np.ndarray, delta: float) -> float:
    """Two-sided p of a difference from its bootstrap draws: the normal approximation of their spread."""
    spread = float(deltas.std(ddof=1)) if len(deltas) > 1 else math.nan
    if not spread > 0:
        return 1.0 if delta == 0 else 0.0 if spread == 0 else math.nan
    return float(2 * stats.norm.sf(abs(delta) / spread))


def _against_best(metric: SampleMetric, runs: Sequence[RunResult], best: Sequence[RunResult], deltas: np.ndarray,
                  delta: float) -> dict:
    if metric.binary and len(runs) == 1 and len(best) == 1:
        (a, counted), (b, _) = metric.parts(runs[0]), metric.parts(best[0])
        kept = counted > 0
        only_a, only_b = int(((a > 0) & (b == 0) & kept).sum()), int(((b > 0) & (a == 0) & kept).sum())
        return {"difference": delta, "p_value": mcnemar_exact(only_a, only_b), "test": MCNEMAR}
    return {"difference": delta, "p_value": _bootstrap_p(deltas[np.isfinite(deltas)], delta),
            "test": "paired bootstrap"}


def leaderboard_table(frame: pd.DataFrame, metrics: Sequence[SampleMetric], tree=None, *, entry: str = "run",
                      digits: int = 4) -> pd.DataFrame:
    """The leaderboard as a table shows it: one row per entry (its column called ``entry``), best
    first by the first metric, one column per metric, each cell ``value [low, high]`` with ★ for
    the best and = for those tied with it."""
    if frame.empty:
        return pd.DataFrame()
    first = frame[frame["metric"] == metrics[0].name].set_index("entry")["value"]
    names = sorted(dict.fromkeys(frame["entry"]), key=lambda e: (
        math.inf if first.get(e, math.nan) != first.get(e, math.nan) else
        first[e] if metrics[0].lower else -first[e]))
    out = pd.DataFrame({entry: names})
    for metric in metrics:
        part = frame[frame["metric"] == metric.name].set_index("entry")
        label = metric.label(tree) + (" ↓" if metric.lower else "")
        out[label] = [_cell(part.loc[e], digits) if e in part.index else "n/a" for e in names]
    return out


def _cell(row: pd.Series, digits: int) -> str:
    if row["value"] != row["value"]:
        return "n/a"
    mark = " ★" if row["best"] else " =" if row["tied"] else ""
    return f"{row['value']:.{digits}f} [{row['low']:.{digits}f}, {row['high']:.{digits}f}]{mark}"
