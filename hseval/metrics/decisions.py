"""Decoding rules: from a model's class probabilities to one node per sample.

Each rule is registered once in :data:`RULES` (:class:`RuleKind`: its help and how a block of
samples is decoded) and named as people write it: ``leaf``, ``top-down``, ``crm``, ``plurality``,
``threshold:0.7``, ``info-threshold:0.7``, ``optimal:hf1``. A rule reads a
:class:`~hseval.metrics.nodes.NodeBlock` (node probabilities and path sums, computed once per
block for every rule); ties go to the deeper node, then to the lower index.

- ``leaf``: the most probable class (today's prediction).
- ``top-down``: from the root, the most probable child at each step, down to a class.
- ``crm``: conditional risk minimisation (Karthik et al., ICLR 2021): the class of least expected
  Making Better Mistakes distance ``H − depth(LCA)``.
- ``threshold:t``: the deepest node with ``p(n) ≥ t``, ties by probability (Valmadre, NeurIPS
  2022, whose code takes ``p(n) > t``); at t = 1 the root unless a node has probability 1.
- ``info-threshold:t``: the most informative node (fewest classes below it) with ``p(n) ≥ t``.
- ``plurality``: Valmadre's plurality threshold: the deepest node more probable than the second
  most probable child of every family of two or more (jvlmdr/hiercls ``infer.plurality_threshold``).
- ``optimal:<metric>``: the node of greatest expected ``metric`` under ``p``,
  ``argmax_n Σ_l p(l)·m(n, l)`` (Plaud et al., ICML 2025, for single-node candidates), for every
  metric of :data:`~hseval.metrics.node_metrics.NODE_METRICS` that is a mean over the samples,
  exactly, from the path sums (no |N|×|L| table).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from hseval.core.arguments import Array, checked
from hseval.core.errors import ConfigError
from hseval.core.registry import Registry
from hseval.metrics import _checks
from hseval.metrics.node_metrics import NODE_METRICS, NodeMetric, node_metric
from hseval.metrics.nodes import NONE, NodeBlock, layout_of
from hseval.tree.hierarchy import Hierarchy

__all__ = ["RuleKind", "Rule", "RULES", "rule", "rules", "DEFAULT_RULES", "decode", "decode_block", "CURVES"]


@dataclass(frozen=True)
class RuleKind:
    """A kind of rule: its help, what follows its name's colon (``parameter``: "threshold" for a
    probability in [0, 1], "metric" for a node metric, None for none), and ``make``: the parameter
    (None, a float or a :class:`NodeMetric`) -> the decoder of a block, (B,) canonical nodes (-1: the root)."""

    help: str
    make: Callable[..., Callable[[NodeBlock], np.ndarray]]
    parameter: str | None = None
    own: bool = False
    """It reads node probabilities alone, so a model's own super-class scores can give them
    (:meth:`NodeBlock.with_levels`); the others read a distribution over the classes."""


@dataclass(frozen=True)
class Rule:
    """A rule as named (``threshold:0.5``): its kind's name, the parameter, and the decoder."""

    name: str
    kind: str
    decode: Callable[[NodeBlock], np.ndarray]
    metric: NodeMetric | None = None
    own: bool = False


RULES: Registry[RuleKind] = Registry("decoding rule")


def _deepest(node: np.ndarray, qualifies: np.ndarray) -> np.ndarray:
    """The node of the deepest column of ``qualifies`` (B, depths) (depth 0, the root, always does)."""
    qualifies[:, 0] = True
    deepest = qualifies.shape[1] - 1 - np.argmax(qualifies[:, ::-1], axis=1)
    return np.take_along_axis(node, deepest[:, None], axis=1)[:, 0]


def _leaf(_: None) -> Callable[[NodeBlock], np.ndarray]:
    return lambda block: np.argmax(block.probs, axis=1)


def _top_down(_: None) -> Callable[[NodeBlock], np.ndarray]:
    def decode(block: NodeBlock) -> np.ndarray:
        layout = block.layout
        child, _ = block.siblings
        rows = np.arange(len(child))
        column = np.full(len(child), layout.columns - 1)               # the root's
        for _step in range(layout.max_depth):
            group = layout.sibling_group[column]
            column = np.where(group >= 0, child[rows, np.maximum(group, 0)], column)
        return block.nodes[rows, column]
    return decode


def _crm(_: None) -> Callable[[NodeBlock], np.ndarray]:
    def decode(block: NodeBlock) -> np.ndarray:  # R(k) = H·(1 − p_k) − S(k) + depth(k)·p_k, for each class k
        F = block.layout.families
        p, sums = block.p[:, :F], block.depth_sums[:, :F]
        risk = block.layout.max_depth * (1 - p) - sums + block.layout.depth[:F] * p
        least = risk == risk.min(axis=1, keepdims=True)               # ties to the lower class index
        return np.where(least, block.nodes[:, :F], NONE).min(axis=1)
    return decode


def _threshold(t: float) -> Callable[[NodeBlock], np.ndarray]:
    def decode(block: NodeBlock) -> np.ndarray:
        best, node = block.depth_front
        return _deepest(node, best >= t)
    return decode


def _info_threshold(t: float) -> Callable[[NodeBlock], np.ndarray]:
    def decode(block: NodeBlock) -> np.ndarray:
        best, node = block.count_front
        first = np.argmax(best >= t, axis=1)                           # the root's group (the last) always is
        return np.take_along_axis(node, first[:, None], axis=1)[:, 0]
    return decode


def _plurality(_: None) -> Callable[[NodeBlock], np.ndarray]:
    def decode(block: NodeBlock) -> np.ndarray:
        _, second = block.siblings
        tau = second.max(axis=1)                                       # -inf: no family of two (a chain)
        best, node = block.depth_front
        return _deepest(node, best > tau[:, None])
    return decode


def _optimal(metric: NodeMetric) -> Callable[[NodeBlock], np.ndarray]:
    def decode(block: NodeBlock) -> np.ndarray:
        return block.pick(metric.expected(block), lowest=metric.lower)
    return decode


RULES.add("leaf", RuleKind("The most probable class: the usual prediction.", _leaf))
RULES.add("top-down", RuleKind("From the root, the most probable child at each step, down to a class.", _top_down,
                                own=True))
RULES.add("crm", RuleKind("The class of least expected Making Better Mistakes distance (CRM; Karthik et al., ICLR "
                          "2021).", _crm))
RULES.add("plurality", RuleKind("Valmadre's plurality threshold: the deepest node more probable than the second most "
                                "probable child of every family.", _plurality, own=True))
RULES.add("threshold", RuleKind("The deepest node whose probability is at least t (Valmadre, NeurIPS 2022).",
                                _threshold, "threshold", own=True))
RULES.add("info-threshold", RuleKind("The most informative node (fewest classes below it) whose probability is at "
                                     "least t.", _info_threshold, "threshold", own=True))
RULES.add("optimal", RuleKind("The node of greatest expected metric under the model's probabilities (Plaud et al., "
                              "ICML 2025): Bayes-optimal for that metric.", _optimal, "metric"))

CURVES = ("threshold", "info-threshold")
"""The rules whose parameter sweeps an operating curve (:mod:`hseval.metrics.curves`)."""


def rule(name: str) -> Rule:
    """The rule called ``name`` (``leaf``, ``threshold:0.5``, ``optimal:hf:2`` ...); a one-line
    :class:`~hseval.core.errors.ConfigError` for an unknown rule or metric, a threshold outside
    [0, 1], or a metric that has no optimal rule."""
    kind_name, colon, parameter = str(name).partition(":")
    kind = RULES.get(kind_name)
    if kind.parameter is None:
        if colon:
            raise ConfigError(f"rule {name!r}: {kind_name} takes no parameter; write {kind_name}")
        return Rule(kind_name, kind_name, kind.make(None), own=kind.own)
    if not parameter:
        example = "threshold:0.5" if kind.parameter == "threshold" else "optimal:hf1"
        raise ConfigError(f"rule {name!r}: {kind_name} needs a {kind.parameter}, e.g. "
                          f"{example.replace('threshold', kind_name, 1)}")
    if kind.parameter == "threshold":
        try:
            t = float(parameter)
        except ValueError:
            t = float("nan")
        if not 0 <= t <= 1:
            raise ConfigError(f"rule {name!r}: the threshold must be a probability in [0, 1], e.g. {kind_name}:0.5")
        return Rule(f"{kind_name}:{parameter}", kind_name, kind.make(t), own=kind.own)
    metric = node_metric(parameter)
    if metric.expected is None:
        raise ConfigError(f"rule {name!r}: {metric.name} is not a mean over the samples, so no rule maximises it "
                          f"sample by sample; choose one of {', '.join(optimal_metrics())}")
    return Rule(f"optimal:{metric.name}", kind_name, kind.make(metric), metric)


def optimal_metrics() -> list[str]:
    """The metrics an ``optimal:`` rule can maximise: those that are a mean over the samples."""
    return [name for name in NODE_METRICS if NODE_METRICS.get(name).expected is not None]


DEFAULT_RULES = ("leaf", "top-down", "crm", "plurality", "threshold:0.5", "info-threshold:0.5",
                 *(f"optimal:{name}" for name in optimal_metrics()))
"""The rules ``hseval evaluate`` writes into decisions.csv unless told others."""


def rules(names: Sequence[str]) -> list[Rule]:
    """The rules called ``names``, each once (the first of two names of one rule is kept)."""
    out: dict[str, Rule] = {}
    for name in names:
        found = rule(name)
        out.setdefault(found.name, found)
    return list(out.values())


def decode_block(block: NodeBlock, chosen: Sequence[Rule]) -> np.ndarray:
    """(B, len(chosen)) the node each rule picks for each sample of ``block`` (-1: the root)."""
    out = np.empty((len(block.probs), len(chosen)), np.int64)
    for k, found in enumerate(chosen):
        out[:, k] = found.decode(block)
    return out


@checked
def decode(probs: Array, tree: Hierarchy, rule_name: str) -> np.ndarray:
    """The node that the rule ``rule_name`` picks for each row of class probabilities.

    Parameters
    ----------
    probs : (N, |L|) array_like
        Class probabilities (rows summing to 1), columns in the tree's class order.
    tree : Hierarchy
    rule_name : str
        ``leaf``, ``top-down``, ``crm``, ``plurality``, ``threshold:t``, ``info-threshold:t`` or
        ``optimal:<metric>`` (:mod:`hseval.metrics.node_metrics`).

    Returns
    -------
    (N,) ndarray of int64
        Canonical node indices; -1 is the root.

    Raises
    ------
    ValueError
        If ``probs`` is not (N, |L|) rows of probabilities (each in [0, 1], summing to 1 within 0.01).
    ConfigError
        If ``rule_name`` is no rule, or a threshold or metric it names is not one it takes.

    Examples
    --------
    Unsure between two animals, the threshold rule answers "animal":

    >>> import numpy as np
    >>> from hseval.tree.hierarchy import Hierarchy
    >>> from hseval.metrics import decode
    >>> tree = Hierarchy.from_paths([["animal", "cat"], ["animal", "dog"], ["car"]])
    >>> probs = np.array([[0.45, 0.4, 0.15]])
    >>> [tree.node_names[decode(probs, tree, name)[0]] for name in ("leaf", "threshold:0.5")]
    ['cat', 'animal']
    """
    found = rule(rule_name)
    array = _checks.scores(probs, "probs", tree.num_leaves)
    _checks.probabilities(array, fix="pass softmax outputs", rows_sum_to_one=True)
    return found.decode(NodeBlock(layout_of(tree), array))
