"""Making Better Mistakes (Bertinetto et al., CVPR 2020): how bad the mistakes are.

The hierarchical distance between a predicted and a true class is the height of their lowest
common ancestor, counted as in the authors' code: ``d(a, b) = H - depth(LCA(a, b))`` with ``H`` the
tree's height (``hierarchy.max_depth``) and the root at depth 0, and ``d(a, a) = 0``.

Any two nodes: the authors' distance files (``*_ilsvrc_distances.pkl.xz``) hold every pair of
nodes, super-classes included, and where one node is an ancestor of the other they count from the
ancestor's parent: ``d(a, b) = H - depth(parent(a)) = H - depth(a) + 1`` for a strict ancestor
``a`` of ``b``. So ``d(a, b) = H - depth(c)`` with ``c`` the lowest common *strict* ancestor of
``a`` and ``b`` (the root where there is none), which is their LCA for any two classes. This
module follows it, so that every pair of nodes agrees with those files (tests check all 355,746
pairs of tieredImageNet's tree).

Leaves at different depths: the formula measures from the deepest level ``H`` whatever the leaves'
own depths, so a mistake always costs at least 1 (a strict ancestor of both classes is at most at
depth ``H - 1``) and one up to the root costs ``H``; a correct prediction costs 0 even for a leaf
shallower than ``H``, where the formula alone would give ``H - depth(leaf) > 0``.

Statistics: the severity is a ``_compute`` of the confusion counts
(:mod:`hseval.metrics.confusion`); :class:`~hseval.metrics.HierarchicalMetrics` streams the same.
The distances of the k best predictions, and every metric of the paper at once, are
:mod:`hseval.metrics.topk_mistakes`'.
"""

from __future__ import annotations

import numpy as np

from hseval.core.arguments import Array, checked
from hseval.metrics import _checks
from hseval.metrics.confusion import Pairs, pairs_update
from hseval.metrics.statistics import METRICS, Key, Metric
from hseval.tree.hierarchy import Hierarchy

__all__ = ["hierarchical_distance", "mistake_severity", "NO_MISTAKES"]

NO_MISTAKES = "no mistakes: every sample is right, so the mean severity of a mistake is undefined"
_DISTANCE = " Tree distance d(a, b) = tree height − depth of their lowest common ancestor (0 for the same class)."


@checked
def hierarchical_distance(pred: Array, target: Array, hierarchy: Hierarchy) -> np.ndarray:
    """``H - depth(LCA(pred, target))``, 0 where ``pred == target``: Making Better Mistakes' distance.

    Between two classes (leaves) it is the height of their LCA. Between any two non-root nodes it
    is counted as in the authors' shipped distance files: where one node is a strict ancestor of
    the other, from that ancestor's parent, i.e. ``H - depth(ancestor) + 1`` (see the module
    docstring), so a super-class predicted for one of its classes costs one more than the height
    of the super-class itself.

    Parameters
    ----------
    pred, target : int arrays of broadcastable shapes, e.g. (N,) and (N,), or (N, k) and (N, 1)
        Canonical node indices (classes, or any non-root node).
    hierarchy : Hierarchy
        The tree; ``H`` is ``hierarchy.max_depth``.

    Returns
    -------
    ndarray of int64
        The distances, of the broadcast shape.

    Raises
    ------
    ValueError
        If ``pred`` or ``target`` holds non-integers or indices outside the tree's nodes, or the
        shapes do not broadcast.

    Examples
    --------
    >>> import numpy as np
    >>> from hseval.tree.hierarchy import Hierarchy
    >>> from hseval.metrics import hierarchical_distance
    >>> tree = Hierarchy.from_paths([["animal", "cat"], ["animal", "dog"], ["vehicle", "car"], ["vehicle", "bus"]])
    >>> hierarchical_distance(np.array([0, 1, 2]), np.array([0, 0, 0]), tree).tolist()  # cat, dog, car for a cat
    [0, 1, 2]
    >>> topk = np.array([[1, 2], [3, 2]])  # top-2 predictions of two samples
    >>> hierarchical_distance(topk, np.array([0, 3])[:, None], tree).tolist()
    [[1, 2], [0, 1]]
    >>> animal = tree.index("animal")  # depth 1, the parent of cat: counted from the root
    >>> hierarchical_distance(np.array([animal]), np.array([0]), tree).tolist()
    [2]
    """
    pred = _checks.indices(pred, "pred", num=hierarchy.num_nodes, what="node", ndim=None)
    target = _checks.indices(target, "target", num=hierarchy.num_nodes, what="node", ndim=None)
    try:
        np.broadcast_shapes(pred.shape, target.shape)
    except ValueError:
        raise ValueError(f"pred of shape {pred.shape} and target of shape {target.shape} do not broadcast; "
                         "for top-k predictions (N, k) pass target[:, None]") from None
    return _distance(pred, target, hierarchy)


def _distance(pred: np.ndarray, target: np.ndarray, hierarchy: Hierarchy) -> np.ndarray:
    """:func:`hierarchical_distance` of checked node indices."""
    depth = hierarchy.depth
    # the lowest common strict ancestor: the LCA, or the parent of the LCA where it is one of the two
    common = np.minimum(hierarchy.lca_depth(pred, target), np.minimum(depth[pred], depth[target]) - 1)
    return np.where(pred == target, 0, hierarchy.max_depth - common).astype(np.int64)


@checked
def mistake_severity(pred_top1: Array, target: Array, hierarchy: Hierarchy) -> float:
    """Mean hierarchical distance over the wrong top-1 predictions; ``pred_top1``, ``target`` (N,)
    class indices. NaN when no prediction is wrong (or N = 0).

    Parameters
    ----------
    pred_top1, target : (N,) array_like of int
        Predicted (top-1) and true class indices.
    hierarchy : Hierarchy
        The tree whose leaves are the classes.

    Returns
    -------
    float
        The mean distance of the mistakes, at least 1; NaN when there is none.

    Raises
    ------
    ValueError
        If ``pred_top1`` or ``target`` is not 1-D, holds non-integers or indices outside the classes, or
        they differ in length.

    Examples
    --------
    A mistake within a super-class (a dog for a cat) costs less than one across super-classes
    (a car for a cat); correct predictions do not count:

    >>> import numpy as np
    >>> from hseval.tree.hierarchy import Hierarchy
    >>> from hseval.metrics import mistake_severity
    >>> tree = Hierarchy.from_paths([["animal", "cat"], ["animal", "dog"], ["vehicle", "car"], ["vehicle", "bus"]])
    >>> mistake_severity(np.array([1]), np.array([0]), tree), mistake_severity(np.array([2]), np.array([0]), tree)
    (1.0, 2.0)
    >>> mistake_severity(np.array([1, 2, 3]), np.array([0, 0, 3]), tree)
    1.5
    >>> mistake_severity(np.array([0, 3]), np.array([0, 3]), tree)  # no mistake
    nan
    """
    pred_top1 = _checks.leaves(pred_top1, "pred_top1", hierarchy)
    target = _checks.leaves(target, "target", hierarchy)
    _checks.same_length(pred_top1, target, "pred_top1 and target")
    return _severity_compute(pairs_update(pred_top1, target), hierarchy)


def _severity_compute(pairs: Pairs, hierarchy: Hierarchy) -> float:
    """Mean distance of the mistakes among confusion counts; NaN without mistakes."""
    distance = _distance(pairs.pred, pairs.target, hierarchy)  # 0 where right
    return _checks.ratio(pairs.total(values=distance), pairs.total(pairs.pred != pairs.target))


METRICS.add("mistake severity", Metric(
    keys={"mistake_severity": Key(
        "mistake severity", "Mean tree distance between the predicted and the true class over the mistakes only "
        "(Making Better Mistakes); lower: the mistakes are milder." + _DISTANCE, kind="nonnegative", shown="headline",
        undefined=NO_MISTAKES)},
    compute=lambda sums: {"mistake_severity": _severity_compute(sums.pairs, sums.hierarchy)}))
