"""The node metrics of several decoding rules, streamed: for each rule of
:mod:`hseval.metrics.decisions` and each metric of :mod:`hseval.metrics.node_metrics`, a sum over
the samples (and, for a metric over the mistakes, how many there were). The state is two arrays,
(rules, metrics) and (rules,), added up over blocks and processes like every other sum of
:class:`~hseval.metrics.HierarchicalMetrics`, which holds one of these when given ``rules``; the
evaluation feeds one from the same blocks as its operating curves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from hseval.metrics.decisions import Rule, decode_block, rules
from hseval.metrics.node_metrics import compare, metric_names, node_metric
from hseval.metrics.nodes import NodeBlock, layout_of
from hseval.tree.hierarchy import Hierarchy

__all__ = ["DecisionMetrics", "SUMS", "MISTAKES", "NO_PROBABILITIES"]

SUMS, MISTAKES = "decision_sums", "decision_mistakes"
NO_PROBABILITIES = "the predictions give one class per sample, no probabilities to decode"
NO_MISTAKES = "no mistakes: every answer is correct, so the mean over the mistakes is undefined"


class DecisionMetrics:
    """The metrics of node predictions for the rules ``names`` (each once; ``leaf`` needs only the
    predicted class). Columns: every metric of :data:`~hseval.metrics.node_metrics.NODE_METRICS`,
    then the ``hf:<β>`` of an ``optimal:hf:<β>`` rule."""

    def __init__(self, tree: Hierarchy, names: Sequence[str]) -> None:
        self.tree, self.layout = tree, layout_of(tree)
        self.rules: list[Rule] = rules(names)
        extra = tuple(r.metric.name for r in self.rules if r.metric is not None)
        self.metrics = [node_metric(name) for name in metric_names(extra)]

    @property
    def names(self) -> list[str]:
        return [r.name for r in self.rules]

    def zeros(self) -> dict[str, np.ndarray]:
        return {SUMS: np.zeros((len(self.rules), len(self.metrics))), MISTAKES: np.zeros(len(self.rules), np.int64)}

    def _sums(self, nodes: np.ndarray, targets: np.ndarray, rows: Sequence[int]) -> dict[str, np.ndarray]:
        out = self.zeros()
        for k in rows:
            comparison = compare(self.layout, nodes[:, k], targets)
            wrong = ~comparison.correct
            out[MISTAKES][k] = wrong.sum()
            for j, metric in enumerate(self.metrics):
                values = metric.value(comparison)
                out[SUMS][k, j] = values[wrong].sum() if metric.over_mistakes else values.sum()
        return out

    def update(self, block: NodeBlock, targets: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """A block's sums and (B, rules) the node each rule chose (-1: the root)."""
        nodes = decode_block(block, self.rules)
        return self._sums(nodes, targets, range(len(self.rules))), nodes

    def update_labels(self, predictions: np.ndarray, targets: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """A block of predicted classes without probabilities: the ``leaf`` rule's sums only (the
        others' nodes are the root's -1, and their sums 0)."""
        nodes = np.full((len(targets), len(self.rules)), -1, np.int64)
        rows = [k for k, r in enumerate(self.rules) if r.kind == "leaf"]
        nodes[:, rows] = np.asarray(predictions, np.int64)[:, None]
        return self._sums(nodes, targets, rows), nodes

    def compute(self, state: Mapping[str, np.ndarray], samples: int, *, labels_only: bool = False
                ) -> tuple[dict[str, dict[str, float]], dict[str, str]]:
        """({rule: {metric: mean}}, {"rule" or "rule.metric": why it is undefined}) from summed state;
        NaN where undefined (no samples; no mistake, for a mean over the mistakes)."""
        out, why = {}, {}
        for k, found in enumerate(self.rules):
            if labels_only and found.kind != "leaf":
                why[found.name] = NO_PROBABILITIES
                out[found.name] = {m.name: float("nan") for m in self.metrics}
                continue
            row = {}
            for j, metric in enumerate(self.metrics):
                count = state[MISTAKES][k] if metric.over_mistakes else samples
                row[metric.name] = float(state[SUMS][k, j] / count) if count else float("nan")
                if not count:
                    why[f"{found.name}.{metric.name}"] = NO_MISTAKES if samples else "no samples were given"
            out[found.name] = row
        return out, why
