"""Hierarchical precision, recall and F1 over ancestor sets (Kiritchenko et al., 2005), micro-averaged
as in ``hiclass.metrics`` (``precision``, ``recall``, ``f1`` with ``average="micro"``).

Each sample's label set is its class and the class's ancestors, root excluded; ``Y`` for the true
class, ``Ŷ`` for the predicted one. Summing over samples:

    hP = Σ|Ŷ ∩ Y| / Σ|Ŷ|,    hR = Σ|Ŷ ∩ Y| / Σ|Y|,    hF = 2 hP hR / (hP + hR).

On a tree, ``|Y| = depth(true class)``, ``|Ŷ| = depth(predicted class)`` and ``|Ŷ ∩ Y|`` is the
depth of their lowest common ancestor, so no set is built: for trees of up to a few thousand
nodes, one gather from the tree's cached table of LCA depths (:attr:`Hierarchy.lca_depth_table`)
and three sums. The three sums are a ``_compute`` of the confusion counts
(:mod:`hseval.metrics.confusion`), which :class:`~hseval.metrics.HierarchicalMetrics` streams.
"""

from __future__ import annotations

from hseval.core.arguments import Array, checked
from hseval.metrics import _checks
from hseval.metrics.confusion import Pairs, pairs_update
from hseval.metrics.statistics import METRICS, Key, Metric
from hseval.tree.hierarchy import Hierarchy

__all__ = ["hierarchical_prf"]


@checked
def hierarchical_prf(pred_leaf: Array, target: Array, hierarchy: Hierarchy) -> dict[str, float]:
    """Micro-averaged hierarchical precision, recall and F1.

    Parameters
    ----------
    pred_leaf, target : (N,) array_like of int
        Predicted and true class indices.
    hierarchy : Hierarchy
        The tree whose leaves are the classes.

    Returns
    -------
    dict of str to float
        {"precision", "recall", "f1"}: floats; all NaN when N = 0, and F1 = 0 when precision and
        recall are both 0 (every prediction in another top-level branch).

    Raises
    ------
    ValueError
        If ``pred_leaf`` or ``target`` is not 1-D, holds non-integers or indices outside the classes, or
        they differ in length.

    Examples
    --------
    A dog for a cat shares one of its two labels (animal), a cat for a car none; with nothing
    shared at all, F1 is 0:

    >>> import numpy as np
    >>> from hseval.tree.hierarchy import Hierarchy
    >>> from hseval.metrics import hierarchical_prf
    >>> tree = Hierarchy.from_paths([["animal", "cat"], ["animal", "dog"], ["vehicle", "car"], ["vehicle", "bus"]])
    >>> hierarchical_prf(np.array([1, 0, 0, 3]), np.array([0, 0, 2, 3]), tree)
    {'precision': 0.625, 'recall': 0.625, 'f1': 0.625}
    >>> hierarchical_prf(np.array([2]), np.array([0]), tree)
    {'precision': 0.0, 'recall': 0.0, 'f1': 0.0}
    """
    pred_leaf = _checks.leaves(pred_leaf, "pred_leaf", hierarchy)
    target = _checks.leaves(target, "target", hierarchy)
    _checks.same_length(pred_leaf, target, "pred_leaf and target")
    return _prf_compute(pairs_update(pred_leaf, target), hierarchy)


def _prf_compute(pairs: Pairs, hierarchy: Hierarchy) -> dict[str, float]:
    """Micro hP, hR and hF from confusion counts."""
    if not pairs.total():
        return {"precision": float("nan"), "recall": float("nan"), "f1": float("nan")}
    overlap = pairs.total(values=hierarchy.lca_depth(pairs.pred, pairs.target))
    precision = overlap / pairs.total(values=hierarchy.depth[pairs.pred])
    recall = overlap / pairs.total(values=hierarchy.depth[pairs.target])
    f1 = 2 * precision * recall / (precision + recall) if overlap else 0.0
    return {"precision": float(precision), "recall": float(recall), "f1": float(f1)}


METRICS.add("hierarchical precision, recall and F1", Metric(
    keys={"hierarchical_precision": Key(
              "hier. precision", "Hierarchical precision: the share of the predicted class's ancestors (root excluded, "
              "the class included) that are the true class's, micro-averaged over the samples."),
          "hierarchical_recall": Key(
              "hier. recall", "Hierarchical recall: the share of the true class's ancestors (root excluded, the class "
              "included) that the prediction's ancestors cover, micro-averaged over the samples."),
          "hierarchical_f1": Key(
              "hier. F1", "Hierarchical F1: the harmonic mean of hierarchical precision and recall; 1 for a perfect "
              "head, partial credit for a mistake inside the right super-class.", shown="headline")},
    compute=lambda sums: {f"hierarchical_{key}": value
                          for key, value in _prf_compute(sums.pairs, sums.hierarchy).items()}))
