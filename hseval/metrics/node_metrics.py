"""Metrics of node predictions: how good an answer is when a classifier may answer with any node.

Each metric is declared once in :data:`NODE_METRICS` (:class:`NodeMetric`): its help, its value
for each sample from a :class:`Comparison` of the predicted node with the true class, and, for a
metric that is a mean over the samples, its expectation under the model's probabilities for every
node at once (from the path sums of :class:`~hseval.metrics.nodes.NodeBlock`, never an |N|×|L|
table): the Bayes-optimal rule ``optimal:<metric>`` of :mod:`hseval.metrics.decisions` (Plaud et
al., ICML 2025) is its argmax.

Definitions (depth counts edges from the root, whose depth is 0; ``lca`` is the lowest common
ancestor of the predicted node ``n`` and the true class ``l``; information ``info(n) = log|L| −
log|leaves(n)|``):

- ``correct``: n is l or an ancestor of l; ``exact``: n is l;
- ``depth_precision`` = depth(lca) / depth(n), ``depth_recall`` = depth(lca) / depth(l), and
  ``info_precision``, ``info_recall`` the same with information (Valmadre, NeurIPS 2022,
  jvlmdr/hiercls ``metrics.LCAMetric``; a root prediction has precision 1);
- ``hf1`` and ``hf:<β>``: hierarchical F_β of the ancestor sets without the root,
  ``(1 + β²)·depth(lca) / (depth(n) + β²·depth(l))`` (0 for the root);
- ``tree_distance``: edges between n and l (Plaud et al.'s mistake severity of a node);
- ``mistake_severity``: ``H − depth(lca)`` over the predictions that are not correct (Making
  Better Mistakes' height of the LCA, as :mod:`hseval.metrics.mistakes` counts it for classes);
- ``wu_palmer``: ``2·(depth(lca) + 1) / (depth(n) + depth(l) + 2)``, depths counted in nodes with
  the root at 1, as WordNet's ``wup_similarity``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from hseval.core.errors import ConfigError
from hseval.core.registry import Registry
from hseval.metrics.nodes import NodeBlock, NodeLayout

__all__ = ["NodeMetric", "NODE_METRICS", "Comparison", "node_metric", "metric_names", "compare"]


@dataclass(frozen=True)
class Comparison:
    """Each sample's predicted node (canonical, -1: the root) against its true class, with what the
    metrics read; the arrays are (B,)."""

    layout: NodeLayout
    nodes: np.ndarray
    targets: np.ndarray

    @cached_property
    def lca(self) -> np.ndarray:
        tree, nodes = self.layout.tree, self.nodes
        return np.where(nodes >= 0, tree.lca(np.maximum(nodes, 0), self.targets), -1)

    @cached_property
    def lca_depth(self) -> np.ndarray:
        return self.layout.node_depth[self.lca]

    @property
    def depth(self) -> np.ndarray:
        return self.layout.node_depth[self.nodes]

    @property
    def truth_depth(self) -> np.ndarray:
        return self.layout.node_depth[self.targets]

    @property
    def correct(self) -> np.ndarray:
        return self.lca == self.nodes

    def info_ratio(self, of: np.ndarray) -> np.ndarray:
        """info(lca) / info(of), 1 where info(of) is 0 (the root, or a node above every class)."""
        info = self.layout.node_info
        below = info[of]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(below > 0, info[self.lca] / below, 1.0)


def compare(layout: NodeLayout, nodes: np.ndarray, targets: np.ndarray) -> Comparison:
    return Comparison(layout, np.asarray(nodes, np.int64), np.asarray(targets, np.int64))


@dataclass(frozen=True)
class NodeMetric:
    """A metric of node predictions: ``value`` (:class:`Comparison`) -> (B,) per sample;
    ``expected`` (:class:`NodeBlock`) -> (B, N + 1) its expectation under the block's
    probabilities for every node (the layout's columns), or None for a metric that is no mean over
    the samples; ``lower`` when lower is better; ``over_mistakes``: a mean over the samples whose
    prediction is not correct (undefined without one)."""

    name: str
    help: str
    value: Callable[[Comparison], np.ndarray]
    expected: Callable[[NodeBlock], np.ndarray] | None
    lower: bool = False
    over_mistakes: bool = False


NODE_METRICS: Registry[NodeMetric] = Registry("node metric")
"""Every metric of node predictions, in the order of decisions.csv's columns."""


def _ratio(numerator: np.ndarray, denominator: np.ndarray, *, empty: float) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, numerator / denominator, empty)


def _hf_value(beta: float) -> Callable[[Comparison], np.ndarray]:
    return lambda c: (1 + beta**2) * c.lca_depth / (c.depth + beta**2 * c.truth_depth)


def _hf_expected(beta: float) -> Callable[[NodeBlock], np.ndarray]:
    def expected(block: NodeBlock) -> np.ndarray:
        depth = block.layout.depth
        return (1 + beta**2) * sum(sums / (depth + beta**2 * d) for d, _, sums in block.by_class_depth)
    return expected


def _expected_distance(block: NodeBlock) -> np.ndarray:
    mean_depth = sum(d * total for d, total, _ in block.by_class_depth)
    return block.layout.depth + mean_depth[:, None] - 2 * block.depth_sums


def _expected_wu_palmer(block: NodeBlock) -> np.ndarray:
    depth = block.layout.depth
    return sum(2 * (total[:, None] + sums) / (depth + d + 2) for d, total, sums in block.by_class_depth)


def _add(name: str, help: str, value: Callable, expected: Callable | None, **kwargs) -> None:
    NODE_METRICS.add(name, NodeMetric(name, help, value, expected, **kwargs))


_add("correct", "Share of samples whose predicted node is the true class or one of its ancestors (the root is "
     "always correct).", lambda c: c.correct.astype(float), lambda b: b.p)
_add("exact", "Share of samples whose predicted node is the true class itself.",
     lambda c: (c.nodes == c.targets).astype(float), lambda b: b.p * b.layout.is_class)
_add("depth_precision", "Mean depth of the lowest common ancestor of prediction and truth ÷ depth of the prediction "
     "(Valmadre, NeurIPS 2022); 1 for the root: how much of what is said is right.",
     lambda c: _ratio(c.lca_depth, c.depth, empty=1.0),
     lambda b: _ratio(b.depth_sums, b.layout.depth.astype(float), empty=1.0))
_add("depth_recall", "Mean depth of the lowest common ancestor of prediction and truth ÷ depth of the true class "
     "(Valmadre, NeurIPS 2022): how specific the answer is, counted in levels.",
     lambda c: c.lca_depth / c.truth_depth, lambda b: sum(sums / d for d, _, sums in b.by_class_depth))
_add("info_precision", "As depth precision, with information log|L| − log|leaves(n)| in place of depth.",
     lambda c: c.info_ratio(c.nodes), lambda b: _ratio(b.info_sums, b.layout.info, empty=1.0))
_add("info_recall", "As depth recall, with information log|L| − log|leaves(n)| in place of depth: how specific the "
     "answer is, counted in how few classes it leaves open.",
     lambda c: c.info_ratio(c.targets),
     lambda b: b.info_sums / np.log(b.layout.num_leaves) if b.layout.num_leaves > 1 else np.ones_like(b.p))
_add("hf1", "Hierarchical F1 of the prediction's and the truth's ancestor sets (root excluded), per sample: 0 for "
     "the root, 1 for the true class.", _hf_value(1.0), _hf_expected(1.0))
_add("tree_distance", "Mean number of edges between the predicted node and the true class (Plaud et al.'s mistake "
     "severity of a node); lower is better.",
     lambda c: (c.depth + c.truth_depth - 2 * c.lca_depth).astype(float), _expected_distance, lower=True)
_add("mistake_severity", "Mean height H − depth(LCA) of the lowest common ancestor over the predictions that are not "
     "correct (Making Better Mistakes); lower is better.",
     lambda c: (c.layout.max_depth - c.lca_depth).astype(float), None, lower=True, over_mistakes=True)
_add("wu_palmer", "Wu & Palmer's similarity 2·depth(LCA) ÷ (depth(n) + depth(l)), depths counted in nodes with the "
     "root at 1 (WordNet's wup_similarity).",
     lambda c: 2 * (c.lca_depth + 1) / (c.depth + c.truth_depth + 2.0), _expected_wu_palmer)

_HF = re.compile(r"hf:([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)")


def node_metric(name: str) -> NodeMetric:
    """The metric called ``name``: one of :data:`NODE_METRICS`, or ``hf:<β>`` (hierarchical F_β, β > 0)."""
    match = _HF.fullmatch(name)
    if match is None:
        return NODE_METRICS.get(name)
    beta = float(match.group(1))
    if not 0 < beta < float("inf"):
        raise ConfigError(f"metric {name!r}: β must be a positive number, e.g. hf:0.5 or hf:2")
    if beta == 1:
        return NODE_METRICS.get("hf1")
    return NodeMetric(f"hf:{match.group(1)}", f"Hierarchical F_β with β = {beta:g} of the ancestor sets (root "
                      "excluded), per sample; β > 1 weighs recall more.", _hf_value(beta), _hf_expected(beta))


def metric_names(extra: tuple[str, ...] = ()) -> list[str]:
    """decisions.csv's metric columns: every registered metric, then ``extra`` (``hf:<β>``) not among them."""
    names = list(NODE_METRICS)
    return names + [name for name in extra if name not in names]
