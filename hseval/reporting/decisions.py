"""What the report and the dashboard show of the runs' decisions, read from the evaluation's files
(decisions.csv, operating_curve.csv, metrics.json's curve summaries, predictions.npz's depth
fronts), never decoded again: the curves and rule points of every run, the summaries as a table,
where the answers stop at a threshold, and each run against the baseline at a matched operating
point.

A matched operating point: at a share of correct answers (90 %, 95 %), the best depth (or
information) recall each run's ``threshold`` curve reaches (Valmadre's ``pareto_intercept``), the
difference run − baseline with a 95 % **paired bootstrap** interval over the test samples (the
same resamples for both runs; 1,000 of them, each run's whole curve rebuilt on each) and its
two-sided bootstrap p-value, Holm's adjustment over the family of every such test in the table.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from hseval.io.results import RunResult
from hseval.metrics.curves import CORRECT_LEVELS, CURVE_METRICS, OperatingCurves
from hseval.metrics.nodes import layout_of
from hseval.reporting.significance import CONFIDENCE, holm, not_paired

__all__ = ["curve_frame", "point_frame", "curve_summaries", "answers_at", "stop_depth_frame",
           "matched_operating_points", "POINT_RULES", "OPERATING_RESAMPLES"]

POINT_RULES = ("leaf", "crm", "top-down", "plurality", "optimal")
"""The kinds of rule drawn as points beside the curves (those that give one answer, not a curve)."""
OPERATING_RESAMPLES = 1000
_SUMMARY_COLUMNS = {"auc_depth": "AUC (depth)", "auc_info": "AUC (info)",
                    **{f"{m}_recall_at_{round(c * 100)}": f"{m} recall at {round(c * 100)} % correct"
                       for m in ("depth", "info") for c in CORRECT_LEVELS}}


def curve_frame(runs: list[RunResult], names: dict[str, str] | None = None) -> pd.DataFrame:
    """Every run's operating_curve.csv with a ``run`` column (``names``: the run's entry name)."""
    parts = [r.curves.assign(run=(names or {}).get(r.name, r.name)) for r in runs if not r.curves.empty]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["run", "rule", "threshold",
                                                                                 *CURVE_METRICS])


def point_frame(runs: list[RunResult], names: dict[str, str] | None = None) -> pd.DataFrame:
    """The rows of each run's decisions.csv of the rules drawn as points (:data:`POINT_RULES`) that
    were computed, with a ``run`` column."""
    parts = []
    for r in runs:
        table = r.decisions[r.decisions["rule"].str.split(":").str[0].isin(POINT_RULES)]
        table = table.dropna(subset=list(CURVE_METRICS))
        if not table.empty:
            parts.append(table[["rule", *CURVE_METRICS]].assign(run=(names or {}).get(r.name, r.name)))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["run", "rule", *CURVE_METRICS])


def curve_summaries(runs: list[RunResult]) -> pd.DataFrame:
    """One row per run: the summaries of its ``threshold`` curve (metrics.json), "n/a — reason"
    where the run has none."""
    rows = []
    for r in runs:
        summary = (r.metrics.get("operating_curve") or {}).get("threshold")
        why = r.unavailable.get("operating_curve", "no operating curve")
        rows.append({"run": r.name, "head": r.head, **{label: summary[key] if summary else f"n/a — {why}"
                                                       for key, label in _SUMMARY_COLUMNS.items()}})
    return pd.DataFrame(rows)


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

    def best_recall(self, weights: np.ndarray, measure: int, level: float) -> np.ndarray:
        """(R,) the largest recall (column ``measure`` of :data:`CURVE_METRICS`) among the points of
        correct ≥ ``level`` of the curve under each row of ``weights`` (R, N)."""
        n = weights.sum(axis=1, keepdims=True)
        out = []
        for k in (0, measure):
            start = weights @ self.starts[:, k]
            moved = np.cumsum(weights[:, self.samples] * self.deltas[:, k], axis=1)[:, self.ends]
            out.append(np.concatenate([start[:, None], start[:, None] + moved], axis=1) / n)
        correct, recall = out
        return np.where(correct >= level - 1e-12, recall, 0.0).max(axis=1)


def matched_operating_points(runs: list[RunResult], base: RunResult, *, resamples: int = OPERATING_RESAMPLES,
                             seed: int = 0) -> pd.DataFrame:
    """Each run against ``base`` at each share of correct answers of :data:`CORRECT_LEVELS`: the
    best depth and information recall of each on the ``threshold`` curve, the difference, its 95 %
    paired bootstrap interval and p-value, and Holm's p over the table; runs without probabilities
    or not evaluated on the same samples are left out."""
    columns = ["run", "measure", "correct", "run recall", "baseline recall", "difference", "low", "high", "p_value"]
    if not len(base.depth_front[0]):
        return pd.DataFrame(columns=[*columns, "p_holm"])
    weights = np.random.default_rng(seed).multinomial(len(base.targets), np.full(len(base.targets),
                                                                                 1 / len(base.targets)),
                                                      size=resamples).astype(np.float64)
    whole = np.ones((1, len(base.targets)))
    home = _Resampled(base)
    rows = []
    for run in runs:
        if run.name == base.name or not len(run.depth_front[0]) or not_paired(run, base):
            continue
        other = _Resampled(run)
        for measure, name in ((1, "depth recall"), (2, "info recall")):
            for level in CORRECT_LEVELS:
                a, b = other.best_recall(whole, measure, level)[0], home.best_recall(whole, measure, level)[0]
                deltas = np.concatenate([other.best_recall(part, measure, level) - home.best_recall(part, measure,
                                                                                                     level)
                                         for part in np.array_split(weights, math.ceil(resamples / 100))])
                tail = (1 - CONFIDENCE) / 2
                low, high = np.quantile(deltas, [tail, 1 - tail])
                p = min(1.0, 2 * min((deltas <= 0).mean(), (deltas >= 0).mean()))
                rows.append([run.name, name, level, a, b, a - b, low, high, max(p, 1 / resamples)])
    frame = pd.DataFrame(rows, columns=columns)
    return frame.assign(p_holm=holm(frame["p_value"].to_numpy(dtype=float)))
