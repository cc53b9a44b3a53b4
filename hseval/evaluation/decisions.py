"""The decisions of an evaluation (:mod:`hseval.metrics.decisions`): what every decoding rule
answers for each sample and how good that is, the operating curves, and the files they go to
(decisions.csv, operating_curve.csv, metrics.json's curve summaries, predictions.npz's decisions
and depth fronts).

Two sources of node probabilities, said in each row's ``probabilities`` column:

- ``classes``: a node's probability is the sum over its classes (every rule);
- ``own scores``: for a head with super-class scores of its own (multitask's level heads, NBDT's
  path probabilities, the Δ-heads' parent columns), each scored level's softmax gives its
  super-classes' probabilities (:meth:`~hseval.metrics.nodes.NodeBlock.with_levels`) and the rules
  that read node probabilities alone (top-down, the thresholds, plurality) decode them; the rules
  that need a distribution over the classes (leaf, CRM, optimal) have no such row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from hseval.io import evaluation_format as eval_format
from hseval.io.decision_tables import SOURCES
from hseval.metrics.curves import CURVE_METRICS, OperatingCurves, curve_summary
from hseval.metrics.decision_metrics import DecisionMetrics
from hseval.metrics.nodes import NodeBlock, softmax
from hseval.tree.hierarchy import Hierarchy

__all__ = ["SOURCES", "Decider", "undecided", "NO_SAMPLES_TO_DECIDE"]

NO_SAMPLES_TO_DECIDE = "no samples were evaluated"
NOT_ASKED = "no decisions were asked for (--rules none)"
_DIGITS = 12
"""Decimals a mean over the samples is written with: what it carries, not the sum's rounding noise."""


def _carried(value: float) -> float:
    return round(value, _DIGITS) if value == value else value


class Decider:
    """The decisions of ``rules`` fed block by block, from the class probabilities and, when a
    block comes with the model's own level scores, from those too."""

    def __init__(self, tree: Hierarchy, rules: Sequence[str]) -> None:
        self.tree = tree
        classes = DecisionMetrics(tree, rules)
        self.metrics = {"classes": classes,
                        "own scores": DecisionMetrics(tree, [r.name for r in classes.rules if r.own])}
        self.layout = classes.layout
        self.sums = {source: metrics.zeros() for source, metrics in self.metrics.items()}
        self.curves = {source: OperatingCurves(self.layout) for source in SOURCES}
        self.decided: dict[str, list[np.ndarray]] = {source: [] for source in SOURCES}
        self.fronts: list[tuple[np.ndarray, np.ndarray]] = []

    @property
    def rules(self) -> list:
        return self.metrics["classes"].rules

    def update(self, block: NodeBlock, targets: np.ndarray, levels: Mapping[int, np.ndarray] | None = None) -> None:
        """A block of samples through the tree, their (B,) true classes and the model's own level
        scores {depth: (B, nodes of that depth) logits} or None."""
        if not self.rules:
            return
        self._add("classes", *self.metrics["classes"].update(block, targets))
        self.curves["classes"].update(block, targets)
        self.fronts.append(block.depth_front)
        if levels and self.metrics["own scores"].rules:
            own = block.with_levels({d: softmax(np.asarray(v, dtype=np.float64)) for d, v in levels.items()})
            self._add("own scores", *self.metrics["own scores"].update(own, targets))
            self.curves["own scores"].update(own, targets)

    def update_labels(self, predictions: np.ndarray, targets: np.ndarray) -> None:
        """A block of predicted classes without scores: the ``leaf`` rule's sums alone."""
        self._add("classes", *self.metrics["classes"].update_labels(predictions, targets))

    def _add(self, source: str, sums: dict[str, np.ndarray], nodes: np.ndarray) -> None:
        for name, value in sums.items():
            self.sums[source][name] += value
        self.decided[source].append(nodes)

    def write(self, evaluation, *, probabilities: str, labels_only: str | None) -> None:
        """decisions.csv, operating_curve.csv, their summaries in metrics.json (``probabilities``:
        "softmax" or "given") and predictions.npz's decisions and depth fronts; ``labels_only``:
        why the samples had no probabilities (predicted classes alone), or None."""
        metrics, samples = evaluation.metrics, evaluation.metrics["samples"]
        rows, decided, curves = [], [], []
        for source in SOURCES:
            if source == "own scores" and not self.decided[source]:
                continue                                                # no level scores of its own
            values, why = self.metrics[source].compute(self.sums[source], samples, labels_only=labels_only is not None)
            for name, row in values.items():
                reasons = [why[name]] if name in why else [f"{key[len(name) + 1:]}: {reason}" for key, reason
                                                          in why.items() if key.startswith(f"{name}.")]
                rows.append({"rule": name, "probabilities": source, **{k: _carried(v) for k, v in row.items()},
                             "unavailable": "; ".join(reasons) or np.nan})
            decided.append(np.concatenate(self.decided[source]) if self.decided[source]
                           else np.zeros((samples, len(values)), np.int64))
            if self.curves[source].samples:
                curves += [(source, rule, self.curves[source].table(rule).round({m: _DIGITS for m in CURVE_METRICS}))
                           for rule in OperatingCurves.RULES]            # a threshold is a probability: exact
        columns = ["rule", "probabilities", *(m.name for m in self.metrics["classes"].metrics), "unavailable"]
        evaluation.tables[eval_format.DECISIONS] = pd.DataFrame(rows, columns=columns)
        evaluation.tables[eval_format.CURVES] = pd.concat(
            [table.assign(rule=rule, probabilities=source) for source, rule, table in curves] or
            [pd.DataFrame(columns=["rule", "probabilities", "threshold", *CURVE_METRICS])], ignore_index=True)
        if curves:
            metrics["operating_curve"] = {rule + ("" if source == "classes" else f" ({source})"): curve_summary(table)
                                          for source, rule, table in curves}
            metrics["probabilities"] = probabilities
        else:
            metrics["unavailable"]["operating_curve"] = labels_only or (NO_SAMPLES_TO_DECIDE if self.rules
                                                                        else NOT_ASKED)
        width = self.tree.max_depth + 1
        best = [b for b, _ in self.fronts] or [np.zeros((0, width))]
        nodes = [n for _, n in self.fronts] or [np.zeros((0, width), np.int64)]
        evaluation.arrays[eval_format.PREDICTIONS].update(
            decisions=np.concatenate(decided, axis=1), depth_front=np.concatenate(best),
            depth_front_nodes=np.concatenate(nodes))


def undecided(evaluation, why: str) -> None:
    """Every rule's decisions but ``leaf``'s marked unavailable (``why``), and no curves, for scores
    whose softmax is no probability."""
    table = evaluation.tables[eval_format.DECISIONS]
    table["unavailable"] = table["unavailable"].astype(object)
    decoded = (table["rule"] != "leaf").to_numpy()
    table.loc[decoded, [c for c in table.columns if c not in ("rule", "probabilities", "unavailable")]] = np.nan
    table.loc[decoded, "unavailable"] = why
    evaluation.tables[eval_format.CURVES] = evaluation.tables[eval_format.CURVES].iloc[:0]
    arrays = evaluation.arrays[eval_format.PREDICTIONS]
    arrays["decisions"][:, decoded] = -1
    arrays["depth_front"], arrays["depth_front_nodes"] = arrays["depth_front"][:0], arrays["depth_front_nodes"][:0]
