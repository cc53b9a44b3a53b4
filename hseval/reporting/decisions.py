"""What the report and the dashboard show of the runs' decisions, read from the evaluation's files
(decisions.csv, operating_curve.csv, metrics.json's curve summaries, predictions.npz's depth
fronts), never decoded again: the curves and rule points of every run, the summaries as a table,
where the answers stop at a threshold, and each run against the baseline at a matched operating
point.

A matched operating point: at a share of correct answers (90 %, 95 %), the best depth (or
information) recall each run's ``threshold`` curve reaches (Valmadre's ``pareto_intercept``), and
the difference run − baseline. Its standard error comes from a **paired bootstrap** over the test
samples (the same resamples for both runs, each run's whole curve rebuilt exactly on each: 200 of
them, as a standard error needs, not the thousands a percentile interval would); the 95 % interval
and the two-sided p-value are the normal ones of that standard error, so that p is never limited
by the number of resamples and Holm's adjustment over the table (every run, measure and level) can
call a difference.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from hseval.io.results import RunResult
from hseval.metrics.curves import CORRECT_LEVELS, CURVE_METRICS, OperatingCurves
from hseval.metrics.node_metrics import NODE_METRICS
from hseval.metrics.nodes import layout_of
from hseval.reporting.significance import CONFIDENCE, holm, not_paired
from hseval.reporting.summary import CURVE_COLUMNS, summary_table

__all__ = ["curve_frame", "point_frame", "curve_summaries", "decisions_summary", "best_rules", "rule_table",
           "answers_at", "stop_depth_frame",
           "matched_operating_points", "POINT_RULES", "OPERATING_RESAMPLES"]

POINT_RULES = ("leaf", "crm", "top-down", "plurality", "optimal")
"""The kinds of rule drawn as points beside the curves (those that give one answer, not a curve)."""
OPERATING_RESAMPLES = 200
def curve_frame(runs: list[RunResult], names: dict[str, str] | None = None, *,
                source: str = "classes") -> pd.DataFrame:
    """Every run's operating_curve.csv of one source of probabilities ("classes", "own scores"), with
    a ``run`` column (``names``: the run's entry name)."""
    parts = [r.curves[r.curves["probabilities"] == source].assign(run=(names or {}).get(r.name, r.name))
             for r in runs if (r.curves["probabilities"] == source).any()]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["run", "rule", "threshold",
                                                                                 *CURVE_METRICS])


def point_frame(runs: list[RunResult], names: dict[str, str] | None = None, *,
                source: str = "classes") -> pd.DataFrame:
    """The rows of each run's decisions.csv of the rules drawn as points (:data:`POINT_RULES`), of
    one source of probabilities, that were computed, with a ``run`` column."""
    parts = []
    for r in runs:
        table = r.decisions[r.decisions["rule"].str.split(":").str[0].isin(POINT_RULES)
                            & (r.decisions["probabilities"] == source)]
        table = table.dropna(subset=list(CURVE_METRICS))
        if not table.empty:
            parts.append(table[["rule", *CURVE_METRICS]].assign(run=(names or {}).get(r.name, r.name)))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["run", "rule", *CURVE_METRICS])


def curve_summaries(runs: list[RunResult]) -> pd.DataFrame:
    """One row per run: the summaries of its ``threshold`` curve, the summary table's curve columns
    (NaN where the run has none; ``metrics.json``'s ``unavailable`` says why)."""
    return summary_table(runs)[["run", "head", *CURVE_COLUMNS]]


def decisions_summary(runs: list[RunResult]) -> pd.DataFrame:
    """Every run's decisions.csv in one table (``decisions_summary.csv``): a ``run`` and a ``head``
    column, then the file's own."""
    parts = [r.decisions.assign(run=r.name, head=r.head) for r in runs if not r.decisions.empty]
    if not parts:
        return pd.DataFrame(columns=["run", "head", "rule", "probabilities"])
    frame = pd.concat(parts, ignore_index=True)
    return frame[["run", "head", *(c for c in frame.columns if c not in ("run", "head"))]]


def best_rules(table: pd.DataFrame) -> dict[str, list[str]]:
    """{metric: the rows (rule names) with the best value of that column of decisions.csv (lowest for
    a distance, highest otherwise; equal to 12 digits all count as best)}."""
    out = {}
    for column in (c for c in table.columns if c not in ("rule", "probabilities", "unavailable")):
        values = pd.to_numeric(table[column], errors="coerce").round(12)
        if values.notna().any():
            lower = column in NODE_METRICS and NODE_METRICS.get(column).lower
            out[column] = table.loc[values == (values.min() if lower else values.max()), "rule"].tolist()
    return out


def rule_table(decisions: pd.DataFrame) -> pd.DataFrame:
    """A run's decisions.csv as the report and the dashboard show it: a rule per row (a head's own
    scores said beside the rule), the metrics with four decimals, ★ beside the best rule of each
    metric and a ↓ on the metrics where lower is better, "n/a" where a cell is empty and why beside
    the rule; the rules with no value at all for one reason share one row."""
    table = decisions.assign(rule=[rule if source == "classes" else f"{rule} ({source})"
                                   for rule, source in zip(decisions["rule"], decisions["probabilities"])])
    metrics = [c for c in table.columns if c not in ("rule", "probabilities", "unavailable")]
    empty = table[metrics].isna().all(axis=1).to_numpy() & table["unavailable"].notna().to_numpy()
    if empty.sum() > 1:
        shared = table[empty].groupby("unavailable", sort=False)["rule"].agg(", ".join).reset_index()
        table = pd.concat([table[~empty], shared], ignore_index=True)
    best = best_rules(table)
    out = {"rule": [rule if not isinstance(why, str) else f"{rule} — n/a: {why}"
                    for rule, why in zip(table["rule"], table["unavailable"])]}
    for column in metrics:
        lower = column in NODE_METRICS and NODE_METRICS.get(column).lower
        out[column.replace("_", " ") + (" ↓" if lower else "")] = [
            (f"{value:.4f}" + (" ★" if rule in best.get(column, []) else "")) if value == value else "n/a"
            for rule, value in zip(table["rule"], table[column])]
    return pd.DataFrame(out)


def answers_at(run: RunResult, t: float) -> np.ndarray:
    """(N,) the ``threshold:t`` rule's answer for each sample (-1: the root), from the run's depth
    fronts (empty when the run gave no probabilities): the deepest depth whose most probable node
    has probability at least t."""
    best, nodes = run.depth_front
    if not len(best):
        return np.zeros(0, np.int64)
    qualifies = best >= t
    qualifies[:, 0] = True
    deepest = best.shape[1] - 1 - np.argmax(qualifies[:, ::-1], axis=1)
    return nodes[np.arange(len(nodes)), deepest]


def stop_depth_frame(runs: list[RunResult], t: float, names: dict[str, str] | None = None) -> pd.DataFrame:
    """How many samples each run's ``threshold:t`` answer stops at each depth (run, depth, samples)."""
    rows = []
    for r in runs:
        answers = answers_at(r, t)
        if len(answers):
            depth = np.r_[r.hierarchy.depth, 0][answers]
            counts = np.bincount(depth, minlength=r.hierarchy.max_depth + 1)
            rows += [{"run": (names or {}).get(r.name, r.name), "depth": d, "samples": int(c)}
                     for d, c in enumerate(counts)]
    return pd.DataFrame(rows, columns=["run", "depth", "samples"])


class _Resampled:
    """A run's ``threshold`` curve rebuilt under resampling weights: its steps from its depth fronts."""

    def __init__(self, run: RunResult) -> None:
        curves = OperatingCurves(layout_of(run.hierarchy))
        curves.add(run.targets, *run.depth_front)
        thresholds, deltas, samples = curves.steps("threshold")
        order = np.argsort(-thresholds, kind="stable")
        self.thresholds, self.deltas, self.samples = thresholds[order], deltas[order], samples[order]
        self.starts = curves.starts("threshold")
        # a curve's points are the ends of the groups of equal thresholds
        self.ends = np.flatnonzero(np.r_[self.thresholds[1:] != self.thresholds[:-1], True])

    def best_recalls(self, weights: np.ndarray) -> np.ndarray:
        """(R, 2, levels): under each row of ``weights`` (R, N; each row sums to N), the largest depth
        and information recall among the curve's points with at least each share of
        :data:`CORRECT_LEVELS` correct."""
        n = len(self.starts)
        moved = weights[:, self.samples].astype(np.float32)            # counts: exact in float32
        start = weights @ self.starts                                   # (R, 3): the curve at t = 1
        sums = []
        for k in range(len(CURVE_METRICS)):                             # the curve's points as sums, not means
            curve = np.cumsum(moved * self.deltas[:, k].astype(np.float32), axis=1)
            curve = curve[:, self.ends] if len(self.ends) < curve.shape[1] else curve
            curve += start[:, k: k + 1]
            sums.append(curve)
        out = np.empty((len(weights), 2, len(CORRECT_LEVELS)))
        for j, level in enumerate(CORRECT_LEVELS):
            enough = level * n - 1e-9 * n
            reached = sums[0] >= enough
            at_one = start[:, 0] >= enough
            for m, recall in enumerate(sums[1:]):
                best = np.where(reached, recall, 0.0).max(axis=1, initial=0.0)  # a curve of no steps: its start
                out[:, m, j] = np.maximum(best, np.where(at_one, start[:, m + 1], 0.0)) / n
        return out


def matched_operating_points(runs: list[RunResult], base: RunResult, *, resamples: int = OPERATING_RESAMPLES,
                             seed: int = 0) -> pd.DataFrame:
    """Each run against ``base`` at each share of correct answers of :data:`CORRECT_LEVELS`: the
    best depth and information recall of each on the ``threshold`` curve, the difference, its 95 %
    paired bootstrap interval and p-value, and Holm's p over the table; runs without probabilities
    or not evaluated on the same samples are left out."""
    columns = ["run", "measure", "correct", "run recall", "baseline recall", "difference", "low", "high", "p_value"]
    others = [r for r in runs if r.name != base.name and len(r.depth_front[0]) and not not_paired(r, base)]
    if not len(base.depth_front[0]) or not others:
        return pd.DataFrame(columns=[*columns, "p_holm"])
    n = len(base.targets)
    weights = np.random.default_rng(seed).multinomial(n, np.full(n, 1 / n), size=resamples).astype(np.float64)
    curves = [_Resampled(run) for run in [base, *others]]
    observed = [c.best_recalls(np.ones((1, n)))[0] for c in curves]
    drawn = [[] for _ in curves]
    for part in np.array_split(weights, math.ceil(resamples / 25)):  # 25 resamples at a time: in the cache
        for k, curve in enumerate(curves):
            drawn[k].append(curve.best_recalls(part))
    drawn = [np.concatenate(d) for d in drawn]
    z = stats.norm.ppf(0.5 + CONFIDENCE / 2)
    rows = []
    for k, run in enumerate(others, start=1):
        spread = (drawn[k] - drawn[0]).std(axis=0, ddof=1)             # the difference's bootstrap standard error
        for m, measure in enumerate(("depth recall", "info recall")):
            for j, level in enumerate(CORRECT_LEVELS):
                a, b, se = observed[k][m, j], observed[0][m, j], spread[m, j]
                p = float(2 * stats.norm.sf(abs(a - b) / se)) if se > 0 else float(a == b)
                rows.append([run.name, measure, level, a, b, a - b, a - b - z * se, a - b + z * se, p])
    frame = pd.DataFrame(rows, columns=columns)
    return frame.assign(p_holm=holm(frame["p_value"].to_numpy(dtype=float)))
