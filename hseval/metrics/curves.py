"""Operating curves of the threshold rules: every trade-off between *correct* and *specific* that a
threshold t on the node probabilities gives (Valmadre, *Hierarchical classification at multiple
operating points*, NeurIPS 2022; jvlmdr/hiercls ``infer.pareto_optimal_predictions`` and
``metrics.operating_curve``).

A sample's answer under ``threshold:t`` changes only at the probabilities of the nodes on its
Pareto front: ordered from the most specific (the deepest depth, or the fewest classes below a
node for ``info-threshold``), a node is on the front when it is more probable than every more
specific candidate, and it is the answer for t in (the next one's probability, its own]. So the
curve over all t ∈ [0, 1] is exact: each sample's front gives its answer at t = 1 and the change
of each metric at each of its breakpoints; the changes of every sample, merged by threshold and
summed, give one row per distinct breakpoint (:meth:`OperatingCurves.table`). The row of
threshold τ holds for every t in (the next row's τ, τ] (the last row down to 0).

Summaries, as Valmadre's notebooks compute them: the area under ``correct`` against a recall on
[0, 1] with the curve made monotone (``metrics.pareto_integrate``), and the best recall at a given
share of correct answers (``metrics.pareto_intercept``; 0 where none reaches it).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from hseval.metrics.node_metrics import compare, node_metric
from hseval.metrics.nodes import NodeBlock, NodeLayout

__all__ = ["CURVE_METRICS", "OperatingCurves", "front", "area_under", "recall_at", "curve_summary", "CORRECT_LEVELS"]

CURVE_METRICS = ("correct", "depth_recall", "info_recall")
"""What an operating curve tracks: the share correct against two measures of specificity."""
CORRECT_LEVELS = (0.9, 0.95)
"""The shares of correct answers at which a curve's specificity is reported."""


def front(best: np.ndarray, node: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Pareto fronts of a block: ``best`` and ``node`` (B, groups), the most probable node of
    each group of candidates, most specific group first. Returns (rows, thresholds, nodes) of the
    front's entries, each sample's from the least specific (threshold 1) to the most."""
    general_first = best[:, ::-1]
    # an entry is on the front when more probable than every more specific candidate
    beyond = np.maximum.accumulate(best, axis=1)[:, ::-1]
    more_specific = np.concatenate([beyond[:, 1:], np.full((len(best), 1), -np.inf)], axis=1)
    rows, columns = np.nonzero(general_first > more_specific)
    return rows, general_first[rows, columns], node[:, ::-1][rows, columns]


class OperatingCurves:
    """The exact operating curves of ``threshold`` (by depth) and ``info-threshold`` (by number of
    classes), fed block by block; the state grows with the samples (each one's front, a few entries)."""

    RULES = ("threshold", "info-threshold")

    def __init__(self, layout: NodeLayout) -> None:
        self.layout = layout
        self.samples = 0
        self._start = {rule: np.zeros(len(CURVE_METRICS)) for rule in self.RULES}
        self._steps: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {rule: [] for rule in self.RULES}
        self._first: dict[str, list[np.ndarray]] = {rule: [] for rule in self.RULES}
        self._metrics = [node_metric(name) for name in CURVE_METRICS]

    def update(self, block: NodeBlock, targets: np.ndarray) -> None:
        """A block of samples and their (B,) true classes."""
        self.add(targets, *block.depth_front, block.count_front)

    def add(self, targets: np.ndarray, best: np.ndarray, node: np.ndarray,
            by_count: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        """Samples' fronts: the (B, max_depth + 1) most probable node of each depth from the root's
        down and its probability (:attr:`NodeBlock.depth_front`), and, for ``info-threshold``, of
        each number of classes (:attr:`NodeBlock.count_front`; None: that curve is not fed)."""
        fronts = {"threshold": (best[:, ::-1], node[:, ::-1])}        # the deepest (most specific) first
        if by_count is not None:
            fronts["info-threshold"] = by_count
        for rule, (best, node) in fronts.items():
            rows, thresholds, nodes = front(best, node)
            comparison = compare(self.layout, nodes, targets[rows])
            values = np.stack([metric.value(comparison) for metric in self._metrics], axis=1)
            first = np.r_[True, rows[1:] != rows[:-1]]
            self._start[rule] += values[first].sum(axis=0)
            self._first[rule].append(values[first])
            later = ~first
            deltas = values[later] - values[np.flatnonzero(later) - 1]
            self._steps[rule].append((thresholds[later], deltas, self.samples + rows[later]))
        self.samples += len(targets)

    def starts(self, rule: str) -> np.ndarray:
        """(samples, 3) each sample's :data:`CURVE_METRICS` at t = 1, in the order fed."""
        parts = self._first[rule]
        return np.concatenate(parts) if parts else np.zeros((0, len(CURVE_METRICS)))

    def steps(self, rule: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every sample's steps on ``rule``'s curve: (thresholds, changes (k, 3) of
        :data:`CURVE_METRICS`, samples), in the order fed."""
        parts = self._steps[rule]
        if not parts:
            return np.zeros(0), np.zeros((0, len(CURVE_METRICS))), np.zeros(0, np.int64)
        return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
                np.concatenate([p[2] for p in parts]))

    def table(self, rule: str) -> pd.DataFrame:
        """``rule``'s curve: one row per breakpoint from t = 1 down, columns threshold and the means
        of :data:`CURVE_METRICS` when decoding at that threshold (rows equal to the one before
        left out: the row above holds for them)."""
        if not self.samples:
            return pd.DataFrame(columns=["threshold", *CURVE_METRICS])
        thresholds, deltas, _ = self.steps(rule)
        order = np.argsort(-thresholds, kind="stable")
        thresholds, deltas = thresholds[order], deltas[order]
        last = np.r_[thresholds[1:] != thresholds[:-1], True] if len(thresholds) else np.zeros(0, bool)
        totals = self._start[rule] + np.cumsum(deltas, axis=0)[last] if len(thresholds) else np.zeros((0, 3))
        # means of values in [0, 1], summed as changes over many steps: rounding may carry them a few ulps out
        values = np.clip(np.vstack([self._start[rule], totals]) / self.samples, 0.0, 1.0)
        taus = np.r_[1.0, thresholds[last]]
        keep = np.r_[True, (values[1:] != values[:-1]).any(axis=1)]
        return pd.DataFrame({"threshold": taus[keep], **{name: values[keep, k] for k, name in
                                                         enumerate(CURVE_METRICS)}})


def area_under(recall: Sequence[float], correct: Sequence[float]) -> float:
    """The area under ``correct`` against ``recall`` on [0, 1], each point counting for every
    recall up to its own (the curve made monotone): jvlmdr/hiercls ``metrics.pareto_integrate``."""
    recall, correct = np.asarray(recall, float), np.asarray(correct, float)
    order = np.argsort(recall, kind="stable")
    recall, correct = recall[order], correct[order]
    correct = np.maximum.accumulate(correct[::-1])[::-1]
    return float(min(1.0, np.sum(np.diff(np.r_[0.0, recall]) * correct)))  # at most 1 but for rounding


def recall_at(correct: Sequence[float], recall: Sequence[float], level: float) -> float:
    """The largest ``recall`` among the points with at least ``level`` correct (0 when none has):
    jvlmdr/hiercls ``metrics.pareto_intercept``."""
    correct, recall = np.asarray(correct, float), np.asarray(recall, float)
    reached = correct >= level
    return float(recall[reached].max()) if reached.any() else 0.0


def curve_summary(table: pd.DataFrame) -> dict[str, float]:
    """A curve's summaries: ``auc_depth`` and ``auc_info`` (:func:`area_under` of correct against
    depth and information recall) and ``depth_recall_at_90`` ... (:func:`recall_at` each of
    :data:`CORRECT_LEVELS`)."""
    out = {}
    for recall in ("depth_recall", "info_recall"):
        out[f"auc_{recall.split('_')[0]}"] = area_under(table[recall], table["correct"])
    for recall in ("depth_recall", "info_recall"):
        for level in CORRECT_LEVELS:
            out[f"{recall}_at_{round(level * 100)}"] = recall_at(table["correct"], table[recall], level)
    return out
