"""Which method is best, on every metric that is a function of sums over the samples
(:mod:`hseval.reporting.sample_metrics`), with intervals and ties.

The **paired bootstrap** (:func:`bootstrap`) draws each resample once, as multinomial counts of
the samples, and applies it to every entry and metric together: an entry's interval is the
percentile interval of its value over the resamples, and two entries' difference moves as it
would on a new draw of the same test. A difference's p-value is the exact McNemar test's where it
applies (an accuracy of two single runs: 0/1 values on the same samples), else the normal
approximation of the bootstrap's standard error. The **leaderboard** (:func:`leaderboard`) marks
the best entry of each metric and the entries not significantly different from it (Holm's
adjusted p ≥ :data:`~hseval.reporting.significance.ALPHA` over every test of the table) as tied.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from hseval.io.results import RunResult
from hseval.reporting.sample_metrics import Parts, SampleMetric, entry_parts, sample_metric
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

__all__ = ["bootstrap", "mistake_intervals", "leaderboard", "leaderboard_table", "RESAMPLES", "BASELINE_METRICS",
           "BASELINE_SAID", "compare_all"]

RESAMPLES = 1000


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
            if (parts := entry_parts(runs, metric)) is not None:
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
    both = [(m, m.parts(a), m.parts(b)) for m in map(sample_metric, BASELINE_METRICS)]
    both = [(m, pa, pb) for m, pa, pb in both if pa is not None and pb is not None]  # each run's parts, once
    metrics = [m for m, *_ in both]
    if metrics:
        point, drawn = _draws([(m, p) for m, pa, pb in both for p in (pa, pb)], resamples=resamples, seed=seed)
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
