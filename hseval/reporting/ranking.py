"""Which method is best, on every metric that is a function of sums over the samples, with intervals and ties.

Most such metrics are a ratio of two sums over the samples, ``Σ numerator / Σ denominator``
(:class:`SampleMetric`): an accuracy is a mean of 0/1 (the denominator 1, or 0 for a sample
whose class has no node at that level); mistake severity sums the LCA heights over the mistakes
(the denominator marks them); micro hierarchical F1 is ``Σ 2·depth(LCA) / Σ (depth(pred) +
depth(true))``; the cross-entropy is the mean of -log p(target); a decision metric
(``hf1@optimal:hf1``) is the mean of the node metric of what that rule chose. The ECE is
``Σ_b |Σ_{i in b} (confidence_i - correct_i)| / N`` over its bins: one sum per bin and the count.
Every value is computed from the evaluation's per-sample arrays (``predictions.npz``), so it
equals metrics.json's and decisions.csv's.

The **paired bootstrap** (:func:`bootstrap`) draws each resample once, as multinomial counts of
the samples, and applies it to every entry and metric together: an entry's interval is the
percentile interval of its value over the resamples, and two entries' difference moves as it
would on a new draw of the same test. A difference's p-value is the exact McNemar test's where it
applies (an accuracy of two single runs: 0/1 values on the same samples), else the normal
approximation of the bootstrap's standard error. The **leaderboard** (:func:`leaderboard`) marks
the best entry of each metric and the entries not significantly different from it (Holm's
adjusted p ≥ :data:`~hseval.reporting.significance.ALPHA` over every test of the table) as tied.

An entry is a run, or a seed group (its runs' per-sample values summed: the value pooled over its
seeds, an accuracy the mean over them).
"""

from __future__ import annotations

import functools
import math
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from hseval.core.errors import ConfigError
from hseval.io.results import RunResult
from hseval.metrics.calibration import bin_index
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

__all__ = ["SampleMetric", "sample_metric", "available_metrics", "chosen_metrics", "DEFAULT_METRICS", "bootstrap",
           "entry_value",
           "mistake_intervals", "leaderboard", "leaderboard_table", "RESAMPLES", "BASELINE_METRICS", "BASELINE_SAID",
           "compare_all"]

RESAMPLES = 1000
Parts = np.ndarray
"""(N, C) per-sample columns, whose sums over the samples give a metric's value."""


def _ratio_of(sums: np.ndarray) -> np.ndarray:
    """``Σ numerator / Σ denominator`` from (..., 2) sums; NaN where the denominator is 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums[..., 0] / sums[..., 1]


def _pair(numerator: np.ndarray, denominator: np.ndarray) -> Parts:
    return np.stack([numerator, denominator], 1).astype(float)


@dataclass(frozen=True)
class SampleMetric:
    """A metric that is a function of sums over the samples: ``parts(run)`` gives its (N, C)
    per-sample columns, or None where the run does not have the metric; ``combine`` its value from
    their (..., C) sums (by default ``Σ numerator / Σ denominator`` of two columns); ``lower``:
    lower is better; ``binary``: the numerator is 0/1 and the denominator depends on the samples
    only (McNemar applies)."""

    name: str
    parts: Callable[[RunResult], Parts | None]
    lower: bool = False
    binary: bool = False
    combine: Callable[[np.ndarray], np.ndarray] = _ratio_of

    def label(self, tree=None) -> str:
        return display_name(self.name, tree) if "@" not in self.name else self.name.replace("@", " by ", 1)

    def value(self, run: RunResult) -> float:
        return entry_value([run], self)


def _top(k: int) -> Callable[[RunResult], Parts | None]:
    def parts(run: RunResult) -> Parts | None:
        if run.topk.shape[1] < k:
            return None
        return _pair((run.topk[:, :k] == run.targets[:, None]).any(1), np.ones(len(run.targets)))
    return parts


def _level(depth: int, own: bool) -> Callable[[RunResult], Parts | None]:
    def parts(run: RunResult) -> Parts | None:
        tree = run.hierarchy
        if depth >= tree.max_depth or (own and not (run.levels[:, depth - 1] >= 0).any()):
            return None
        truth = tree.ancestor_at_depth(run.targets, depth)
        said = run.levels[:, depth - 1] if own else tree.ancestor_at_depth(run.topk[:, 0], depth)
        reached = truth >= 0
        return _pair((said == truth) & reached, reached)
    return parts


def _severity(run: RunResult) -> Parts:
    distance = hierarchical_distance(run.topk[:, 0], run.targets, run.hierarchy).astype(float)
    return _pair(distance, distance > 0)


def _distance_at(k: int) -> Callable[[RunResult], Parts | None]:
    def parts(run: RunResult) -> Parts | None:
        if run.topk.shape[1] < k:
            return None
        top = run.topk[:, :k]
        distance = hierarchical_distance(top.ravel(), np.repeat(run.targets, k), run.hierarchy).reshape(top.shape)
        return _pair(distance.mean(1), np.ones(len(run.targets)))
    return parts


def _hierarchical(which: str) -> Callable[[RunResult], Parts]:
    def parts(run: RunResult) -> Parts:
        tree, pred, true = run.hierarchy, run.topk[:, 0], run.targets
        overlap = tree.lca_depth(pred, true).astype(float)
        said, truth = tree.depth[pred].astype(float), tree.depth[true].astype(float)
        sums = {"precision": (overlap, said), "recall": (overlap, truth), "f1": (2 * overlap, said + truth)}
        return _pair(*sums[which])
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
            return _pair(value * wrong, wrong)
        return _pair(value, np.ones(len(value)))
    return parts


@functools.lru_cache(maxsize=4)
def _layout(tree) -> NodeLayout:
    return NodeLayout(tree)


def _cross_entropy(run: RunResult) -> Parts | None:
    nll = run.calibration[1]
    return _pair(nll, np.ones(len(nll))) if len(nll) else None


def _ece(run: RunResult) -> Parts | None:
    """Per bin, ``confidence - correct`` of the samples in it; last, 1 per sample (the bins are
    metrics.json's reliability bins, binned as :func:`~hseval.metrics.calibration.bin_index`)."""
    confidence = run.calibration[0]
    if not len(confidence):
        return None
    bins = len(run.metrics["reliability"]["upper"])
    out = np.zeros((len(confidence), bins + 1))
    out[np.arange(len(confidence)), bin_index(confidence, n_bins=bins)] = confidence - (run.topk[:, 0] == run.targets)
    out[:, bins] = 1
    return out


def _ece_of(sums: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.abs(sums[..., :-1]).sum(-1) / sums[..., -1]


_FIXED: dict[str, SampleMetric] = {m.name: m for m in (
    SampleMetric("mistake_severity", _severity, lower=True),
    SampleMetric("cross_entropy", _cross_entropy, lower=True),
    SampleMetric("ece", _ece, lower=True, combine=_ece_of),
    *(SampleMetric(f"hierarchical_{w}", _hierarchical(w)) for w in ("precision", "recall", "f1")))}
_TOP = re.compile(r"top([1-9][0-9]{0,3})")
_LEVEL = re.compile(r"level([1-9][0-9]{0,3})_(from_leaf|own_scores)")
_DISTANCE = re.compile(r"avg_hdist@([1-9][0-9]{0,3})")
DEFAULT_METRICS = ("top1", "levels", "mistake_severity", "hierarchical_f1")
"""The leaderboard's columns unless chosen: leaf top-1, every super-class level from the leaf,
mistake severity and hierarchical F1 ("levels" stands for the levels of the tree)."""


def sample_metric(name: str) -> SampleMetric:
    """The metric called ``name``: ``top<k>``, ``level<d>_from_leaf`` or ``level<d>_own_scores``,
    ``mistake_severity``, ``avg_hdist@<k>``, ``hierarchical_precision``/``recall``/``f1``, ``ece``,
    ``cross_entropy``, or
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
                      "mistake_severity, avg_hdist@1, hierarchical_f1 (or _precision, _recall), ece, cross_entropy, or "
                      "METRIC@RULE of "
                      "decisions.csv such as hf1@optimal:hf1")


def available_metrics(runs: Sequence[RunResult]) -> list[str]:
    """Every metric name that at least one of ``runs`` has, in the order the report shows them;
    read from what each run holds (its top-k width, own levels, probabilities and decisions.csv's
    rows), nothing computed."""
    depth = max((r.hierarchy.max_depth for r in runs), default=1)
    width = max((r.topk.shape[1] for r in runs), default=0)
    own = {d for r in runs for d in range(1, r.hierarchy.max_depth) if (r.levels[:, d - 1] >= 0).any()}
    names = [f"top{k}" for k in (1, 5) if k <= width]
    names += [f"level{d}_from_leaf" for d in range(1, depth)] + [f"level{d}_own_scores" for d in sorted(own)]
    names += ["mistake_severity", *(f"avg_hdist@{k}" for k in (1, 5) if k <= width), "hierarchical_precision",
              "hierarchical_recall", "hierarchical_f1"]
    names += ["cross_entropy", "ece"] if any(len(r.calibration[0]) for r in runs) else []
    for r in runs:
        table = r.decisions
        for column in (c for c in table.columns if c not in ("rule", "probabilities", "unavailable")):
            names += [f"{column}@{row.rule}" + (" (own scores)" if row.probabilities == "own scores" else "")
                      for row in table[table[column].notna()].itertuples()]
    return list(dict.fromkeys(names))


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


def bootstrap(columns: np.ndarray, *, resamples: int = RESAMPLES, seed: int | tuple[int, ...] = 0,
              block: int = 100) -> np.ndarray:
    """(resamples, K) sums of the K columns of (N, K) per-sample parts over paired bootstrap
    resamples of the N samples (each drawn once, as multinomial counts, for every column)."""
    n = len(columns)
    rng, out = np.random.default_rng(seed), []
    for start in range(0, resamples, block):
        rows = min(block, resamples - start)
        drawn = rng.integers(0, n, size=(rows, n)) + (np.arange(rows) * n)[:, None]
        out.append(np.bincount(drawn.ravel(), minlength=rows * n).reshape(rows, n).astype(float) @ columns)
    return np.concatenate(out) if out else np.zeros((0, columns.shape[1]))


def _draws(blocks: Sequence[tuple[SampleMetric, Parts]], *, resamples: int, seed: int | tuple[int, ...]
           ) -> tuple[np.ndarray, np.ndarray]:
    """Each (metric, parts) block's value and its (resamples,) values over one paired bootstrap of all of them."""
    sums = bootstrap(np.concatenate([p for _, p in blocks], 1), resamples=resamples, seed=seed)
    edges = np.cumsum([0, *(p.shape[1] for _, p in blocks)])
    point = np.array([float(metric.combine(p.sum(0))) for metric, p in blocks])
    drawn = np.stack([metric.combine(sums[:, lo:hi]) for (metric, _), lo, hi in zip(blocks, edges, edges[1:])], 1)
    return point, drawn


def _intervals(point: np.ndarray, drawn: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """The percentile interval of each column of ``drawn``; NaN for a column NaN in every resample
    (no mistake to rate)."""
    tail = (1 - confidence) / 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "All-NaN slice": that column's interval is NaN
        return tuple(np.nanquantile(drawn, [tail, 1 - tail], axis=0)) if len(drawn) else (point, point)


def mistake_intervals(runs: Sequence[RunResult], *, resamples: int = RESAMPLES, confidence: float = CONFIDENCE,
                      seed: int = 0) -> pd.DataFrame:
    """Making Better Mistakes' Figure 1 as a table: each run's top-1 error and mistake severity (the
    mean LCA height of its mistakes) with their percentile intervals over :func:`bootstrap`
    resamples of its own samples (the same resamples for both, so that a run's two values move
    together; runs may have different samples). Columns: run, error, error_low, error_high,
    severity, severity_low, severity_high, samples, mistakes."""
    top1, severity = sample_metric("top1"), sample_metric("mistake_severity")
    rows = []
    for k, run in enumerate(runs):
        if not len(run.targets):
            continue
        mistakes = severity.parts(run)
        point, drawn = _draws([(top1, top1.parts(run)), (severity, mistakes)], resamples=resamples, seed=(seed, k))
        low, high = _intervals(point, drawn, confidence)
        rows.append({"run": run.name, "error": 1 - point[0], "error_low": 1 - high[0], "error_high": 1 - low[0],
                     "severity": point[1], "severity_low": low[1], "severity_high": high[1],
                     "samples": len(run.targets), "mistakes": int(mistakes[:, 1].sum())})
    return pd.DataFrame(rows, columns=["run", "error", "error_low", "error_high", "severity", "severity_low",
                                       "severity_high", "samples", "mistakes"])


def _entry_parts(runs: Sequence[RunResult], metric: SampleMetric) -> Parts | None:
    parts = [metric.parts(r) for r in runs]
    return None if any(p is None for p in parts) else sum(parts)


def entry_value(runs: Sequence[RunResult], metric: SampleMetric) -> float:
    """The value of an entry (a run, or a seed group pooled) on ``metric``; NaN where it lacks it."""
    parts = _entry_parts(runs, metric)
    return math.nan if parts is None else float(metric.combine(parts.sum(0)))


def leaderboard(entries: Sequence[tuple[str, Sequence[RunResult]]], metrics: Sequence[SampleMetric], *,
                resamples: int = RESAMPLES, seed: int = 0, confidence: float = CONFIDENCE
                ) -> tuple[pd.DataFrame, dict[str, str]]:
    """Every entry (name, its runs: one, or a seed group's) on every metric: one row per (entry,
    metric) with value, its percentile interval low/high, best, the difference from the best with
    its p-value and test, Holm's p over the table, and tied (not significantly different from the
    best), NaN where the entry lacks the metric; and the entries left out because they were not
    evaluated on the first entry's samples."""
    first = entries[0][1][0]
    left_out = {name: reason for name, runs in entries for r in runs if (reason := not_paired(r, first))}
    entries = [(name, runs) for name, runs in entries if name not in left_out]
    blocks, where = [], {}
    for m, metric in enumerate(metrics):
        for e, (_, runs) in enumerate(entries):
            if (parts := _entry_parts(runs, metric)) is not None:
                where[e, m] = len(blocks)
                blocks.append((metric, parts))
    if not blocks:
        return pd.DataFrame(), left_out
    point, drawn = _draws(blocks, resamples=resamples, seed=seed)
    low, high = _intervals(point, drawn, confidence)
    rows = []
    for m, metric in enumerate(metrics):
        present = [e for e in range(len(entries)) if (e, m) in where]
        values = {e: point[where[e, m]] for e in present if point[where[e, m]] == point[where[e, m]]}
        best = (min if metric.lower else max)(values, key=values.get) if values else None
        for e in range(len(entries)):
            row = {"entry": entries[e][0], "metric": metric.name, "value": math.nan, "low": math.nan,
                   "high": math.nan, "best": False, "difference": math.nan, "p_value": math.nan, "test": ""}
            if e not in present:  # the entry lacks the metric (no probabilities, no own scores): n/a
                rows.append(row)
                continue
            c = where[e, m]
            row.update(value=point[c], low=low[c], high=high[c], best=e == best)
            if best is not None and e != best and e in values:
                b = where[best, m]
                row.update(_against_best(metric, entries[e][1], entries[best][1], drawn[:, c] - drawn[:, b],
                                         point[c] - point[b]))
            rows.append(row)
    frame = pd.DataFrame(rows)
    frame["p_holm"] = holm(frame["p_value"].to_numpy(dtype=float))
    frame["tied"] = ~frame["best"] & (frame["p_holm"] >= ALPHA)
    return frame, left_out


BASELINE_METRICS = ("mistake_severity", "avg_hdist@1", "hierarchical_f1", "cross_entropy", "ece")
"""The metrics beyond the accuracies on which each run is tested against the baseline."""
BASELINE_SAID = ("mistake severity, hierarchical distance@1, hierarchical F1, cross-entropy and ECE (those two where "
                 "both runs' scores are probabilities)")
""":data:`BASELINE_METRICS` as the report, the pages and README say them."""


def compare_all(a: RunResult, b: RunResult, *, resamples: int = RESAMPLES, seed: int = 0) -> pd.DataFrame:
    """``a`` against ``b`` on the same samples: every level's accuracy (the exact McNemar test of
    :func:`~hseval.reporting.significance.compare_runs`), then each of :data:`BASELINE_METRICS` both
    have, with the paired bootstrap's percentile interval of the difference and its p-value; rows
    of :data:`COLUMNS`."""
    rows = [compare_runs(a, b, seed=seed)]
    metrics = [m for m in map(sample_metric, BASELINE_METRICS) if m.parts(a) is not None and m.parts(b) is not None]
    if metrics:
        point, drawn = _draws([(m, m.parts(r)) for m in metrics for r in (a, b)], resamples=resamples, seed=seed)
        tail = (1 - CONFIDENCE) / 2
        extra = []
        for k, metric in enumerate(metrics):
            value_a, value_b = point[2 * k], point[2 * k + 1]
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
        ours, theirs = metric.parts(runs[0]), metric.parts(best[0])
        a, b, kept = ours[:, 0], theirs[:, 0], ours[:, 1] > 0
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
