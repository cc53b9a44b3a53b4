"""Accuracy at the leaves and at every super-class level, from the predicted classes.

Conventions: level ``k`` holds the nodes of depth ``k``; a class shallower than ``k`` has no node
at level ``k`` (e.g. Fashion-MNIST's Bag at levels 2 and 3), so its samples are left out of that
level's accuracy, and a prediction with no node at that level counts as wrong. The super-class
levels are ``1..max_depth-1``; a tree whose classes all hang from the root has none.

A super-class prediction comes two ways: (b) the ancestor of the predicted class
(:func:`superclass_accuracy_from_leaf`, here), or (a) a head's own level logits
(:mod:`hseval.metrics.levels`). Each metric is a ``_compute`` of counts that a batch's ``_update``
gives (top-k hits; the confusion counts of :mod:`hseval.metrics.confusion`; per level, the samples
reached and hit), so :class:`~hseval.metrics.HierarchicalMetrics` streams the same functions.
"""

from __future__ import annotations

import numpy as np

from hseval.core.arguments import Array, Positive, checked
from hseval.metrics import _checks
from hseval.metrics.confusion import Pairs, pairs_update
from hseval.metrics.statistics import METRICS, Batch, Key, Metric, by_level
from hseval.tree.hierarchy import Hierarchy

__all__ = ["topk_accuracy", "topk_predictions", "level_accuracy", "superclass_accuracy_from_leaf",
           "per_node_accuracy"]


@checked
def topk_accuracy(scores: Array, target: Array, k: Positive = 1) -> float:
    """Share of rows whose target is among the ``k`` highest scores; ``scores`` (N, C), ``target`` (N,).

    Ties go to the lower class index: the top-k set is :func:`topk_predictions`'s, the one every
    other metric and the streaming accumulator use.

    Parameters
    ----------
    scores : (N, C) array_like
        Logits or probabilities, one column per class.
    target : (N,) array_like of int
        True class indices.
    k : int, default 1
        Size of the top-k set, at least 1; capped at C.

    Returns
    -------
    float
        The top-k accuracy in [0, 1]; NaN when N = 0.

    Raises
    ------
    ValueError
        If ``scores`` is not 2-D or holds NaN or infinite values, or ``k < 1``.

    Examples
    --------
    >>> import numpy as np
    >>> from hseval.metrics import topk_accuracy
    >>> scores = np.array([[0.1, 0.7, 0.2], [0.5, 0.3, 0.2], [0.2, 0.2, 0.6], [0.3, 0.3, 0.4]])
    >>> target = np.array([1, 1, 2, 0])
    >>> topk_accuracy(scores, target), topk_accuracy(scores, target, k=2)
    (0.5, 1.0)

    A tie goes to the lower class index, so class 1 is not the top-1 here:

    >>> topk_accuracy(np.array([[0.5, 0.5]]), np.array([1]))
    0.0
    """

    scores = _checks.scores(scores, "scores")
    target = _checks.indices(target, "target", num=scores.shape[1], what="class")
    _checks.same_length(scores, target, "scores and target")
    if len(target) == 0:
        return float("nan")
    return _checks.ratio(_topk_update(topk_predictions(scores, k), target, (k,))[0], len(target))


@checked
def topk_predictions(scores: Array, k: Positive) -> np.ndarray:
    """The ``k`` best classes of each row, best first.

    Parameters
    ----------
    scores : (N, C) array_like
        Logits or probabilities.
    k : int
        At least 1; capped at C.

    Returns
    -------
    (N, min(k, C)) ndarray of int64
        Class indices, best first. Ties go to the lower class index, as with ``argmax``, so
        column 0 is ``scores.argmax(1)``.

    Raises
    ------
    ValueError
        If ``scores`` is not 2-D or holds NaN or infinite values, or ``k < 1``.

    Examples
    --------
    >>> import numpy as np
    >>> from hseval.metrics import topk_predictions
    >>> scores = np.array([[0.1, 0.7, 0.2], [0.4, 0.2, 0.4]])
    >>> topk_predictions(scores, 2).tolist()  # the tie in row 1 goes to class 0
    [[1, 2], [0, 2]]
    >>> topk_predictions(scores, 10).shape  # k is capped at the number of classes
    (2, 3)
    """

    return _topk(_checks.scores(scores, "scores"), k)


def _topk(scores: np.ndarray, k: int) -> np.ndarray:
    """``np.argsort(-scores, axis=1, kind="stable")[:, :k]`` without sorting whole rows: the k-th
    largest value of a row bounds its top-k set, which is then sorted alone (stable, so ties go to
    the lower index); only rows tied across that bound are sorted whole."""
    n, c = scores.shape
    k = min(k, c)
    if n == 0 or 4 * k >= c:
        return np.argsort(-scores, axis=1, kind="stable")[:, :k]
    best = np.argpartition(scores, c - k, axis=1)[:, c - k:]  # each row's k largest, the k-th first
    plain = np.count_nonzero(scores >= np.take_along_axis(scores, best[:, :1], axis=1), axis=1) == k
    out = np.empty((n, k), np.int64)
    rows = np.flatnonzero(plain)
    if len(rows):
        part = scores if len(rows) == n else scores[rows]
        columns = np.sort(best if len(rows) == n else best[rows], axis=1)  # the top-k set, in column order
        order = np.argsort(-np.take_along_axis(part, columns, axis=1), axis=1, kind="stable")
        out[rows] = np.take_along_axis(columns, order, axis=1)
    tied = np.flatnonzero(~plain)
    if len(tied):
        out[tied] = np.argsort(-scores[tied], axis=1, kind="stable")[:, :k]
    return out


def _topk_update(top: np.ndarray, target: np.ndarray, ks: tuple[int, ...]) -> np.ndarray:
    """(len(ks),) int64: per k, the samples whose target is among the first k columns of ``top``."""
    hits = top == target[:, None]
    return np.array([int(hits[:, :k].any(axis=1).sum()) for k in ks], np.int64)


@checked
def level_accuracy(pred_node: Array, target_leaf: Array, hierarchy: Hierarchy, depth: int) -> float:
    """Accuracy at ``depth`` of predicted nodes ``pred_node`` (node indices of that depth, or -1),
    over the samples whose class has a node at that depth; NaN if none has.

    Parameters
    ----------
    pred_node : (N,) array_like of int
        Predicted canonical node indices of depth ``depth``, or -1 (counts as wrong).
    target_leaf : (N,) array_like of int
        True class indices.
    hierarchy : Hierarchy
        The tree.
    depth : int
        The level, ``1..hierarchy.max_depth``.

    Returns
    -------
    float
        The accuracy in [0, 1]; NaN when no sample's class reaches ``depth``.

    Raises
    ------
    HierarchyError
        (a ValueError) If ``depth`` is outside ``1..hierarchy.max_depth``.

    Examples
    --------
    >>> import numpy as np
    >>> from hseval.tree.hierarchy import Hierarchy
    >>> from hseval.metrics import level_accuracy
    >>> tree = Hierarchy.from_paths([["animal", "cat"], ["animal", "dog"], ["car"]])
    >>> level_accuracy(np.array([0, 0, -1]), np.array([0, 1, 2]), tree, 2)  # car is left out
    0.5
    >>> level_accuracy(np.array([-1]), np.array([2]), tree, 2)  # no class reaches level 2
    nan
    """

    pred_node = _checks.indices(pred_node, "pred_node", num=hierarchy.num_nodes, what="node", lowest=-1)
    target_leaf = _checks.leaves(target_leaf, "target_leaf", hierarchy)
    _checks.same_length(pred_node, target_leaf, "pred_node and target_leaf")
    return _checks.ratio(*_level_counts(pred_node, target_leaf, hierarchy, depth))


def _level_counts(pred_node: np.ndarray, target: np.ndarray, hierarchy: Hierarchy, depth: int, *,
                  reference: np.ndarray | None = None, count: np.ndarray | None = None) -> tuple[int, int]:
    """(hits, reached) at level ``depth``: the samples whose true class has a node there (each
    weighted by ``count``) and those of them whose ``pred_node`` is that node, or, with
    ``reference``, equals ``reference`` (the agreement of two predictions)."""
    truth = hierarchy.ancestor_at_depth(target, depth)
    reached = truth >= 0
    hit = reached & (pred_node == (truth if reference is None else reference))
    if count is None:
        return int(hit.sum()), int(reached.sum())
    return int(count[hit].sum()), int(count[reached].sum())


@checked
def superclass_accuracy_from_leaf(pred_leaf: Array, target: Array, hierarchy: Hierarchy) -> dict[int, float]:
    """Way (b): accuracy at each super-class level of the predicted class's ancestor.

    Parameters
    ----------
    pred_leaf, target : (N,) array_like of int
        Predicted and true class indices.
    hierarchy : Hierarchy
        The tree whose leaves are the classes.

    Returns
    -------
    dict of int to float
        {level: accuracy} for levels 1..max_depth-1 (empty when there is no super-class level); NaN
        where no sample's class reaches the level.

    Raises
    ------
    ValueError
        If ``pred_leaf`` or ``target`` is not 1-D, holds non-integers or indices outside the
        classes, or they differ in length.

    Examples
    --------
    A wrong class in the right super-class still counts at level 1: sample 0 (a cat taken for a
    dog) is wrong at the leaves but right at level 1, sample 2 (a car taken for a cat) is wrong at both.

    >>> import numpy as np
    >>> from hseval.tree.hierarchy import Hierarchy
    >>> from hseval.metrics import superclass_accuracy_from_leaf
    >>> tree = Hierarchy.from_paths([["animal", "cat"], ["animal", "dog"], ["vehicle", "car"], ["vehicle", "bus"]])
    >>> pred, target = np.array([1, 0, 0, 3]), np.array([0, 0, 2, 3])
    >>> float((pred == target).mean()), superclass_accuracy_from_leaf(pred, target, tree)
    (0.5, {1: 0.75})
    """

    return _superclass_compute(pairs_update(*_leaf_pair(pred_leaf, target, hierarchy)), hierarchy)


def _superclass_compute(pairs: Pairs, hierarchy: Hierarchy) -> dict[int, float]:
    """{level: accuracy of the predicted class's ancestor} from confusion counts."""
    return {k: _checks.ratio(*_level_counts(hierarchy.ancestor_at_depth(pairs.pred, k), pairs.target, hierarchy, k,
                                            count=pairs.count))
            for k in range(1, hierarchy.max_depth)}


@checked
def per_node_accuracy(pred_leaf: Array, target: Array, hierarchy: Hierarchy) -> tuple[np.ndarray, np.ndarray]:
    """Recall of every non-root node.

    Parameters
    ----------
    pred_leaf, target : (N,) array_like of int
        Predicted and true class indices.
    hierarchy : Hierarchy
        The tree whose leaves are the classes.

    Returns
    -------
    support : (|P|,) ndarray of int64
        Number of samples whose true class is ``p`` or lies under ``p``.
    correct : (|P|,) ndarray of int64
        How many of those have the predicted class's ancestor at depth(p) equal to ``p`` (for a
        leaf, the ordinary per-class recall's numerator). ``correct / support`` is the recall.

    Raises
    ------
    ValueError
        If ``pred_leaf`` or ``target`` is not 1-D, holds non-integers or indices outside the
        classes, or they differ in length.

    Examples
    --------
    >>> import numpy as np
    >>> from hseval.tree.hierarchy import Hierarchy
    >>> from hseval.metrics import per_node_accuracy
    >>> tree = Hierarchy.from_paths([["animal", "cat"], ["animal", "dog"], ["vehicle", "car"], ["vehicle", "bus"]])
    >>> tree.node_names
    ('cat', 'dog', 'car', 'bus', 'animal', 'vehicle')
    >>> support, correct = per_node_accuracy(np.array([1, 0, 0, 3]), np.array([0, 0, 2, 3]), tree)
    >>> support.tolist(), correct.tolist()
    ([2, 0, 1, 1, 2, 2], [1, 0, 0, 1, 2, 1])
    """

    return _per_node_compute(pairs_update(*_leaf_pair(pred_leaf, target, hierarchy)), hierarchy)


def _per_node_compute(pairs: Pairs, hierarchy: Hierarchy) -> tuple[np.ndarray, np.ndarray]:
    """(support, correct) of every node from confusion counts."""
    truth = hierarchy.ancestor_table[pairs.target]  # (M, max_depth), a column per level
    reached = truth >= 0
    hit = reached & (truth == hierarchy.ancestor_table[pairs.pred])
    weights = None if pairs.count is None else np.broadcast_to(pairs.count[:, None], truth.shape)

    def per_node(mask: np.ndarray) -> np.ndarray:
        counted = np.bincount(truth[mask], weights=None if weights is None else weights[mask],
                              minlength=hierarchy.num_nodes)
        return counted.round().astype(np.int64)  # float weights: exact integers below 2**53

    return per_node(reached), per_node(hit)


def _leaf_pair(pred_leaf: np.ndarray, target: np.ndarray, hierarchy: Hierarchy) -> tuple[np.ndarray, np.ndarray]:
    pred_leaf = _checks.leaves(pred_leaf, "pred_leaf", hierarchy)
    target = _checks.leaves(target, "target", hierarchy)
    _checks.same_length(pred_leaf, target, "pred_leaf and target")
    return pred_leaf, target


def _topk_batch(batch: Batch) -> dict[str, np.ndarray]:
    kept = [k for k in batch.ks if k <= batch.top.shape[1]]  # the k above the batch's width add nothing
    return {"topk_hits": np.pad(_topk_update(batch.top, batch.targets, kept), (0, len(batch.ks) - len(kept)))}


METRICS.add("top-k", Metric(
    keys={"top{k}": Key("top-{k}", "Leaf top-{k} accuracy: the share of samples whose class is {the top k}.",
                        shown="headline", always=(1, 5))},
    state=lambda hierarchy, num_ks, n_bins: {"topk_hits": np.zeros(num_ks, np.int64)}, update=_topk_batch,
    compute=lambda sums: {f"top{sums.ks[i]}": _checks.ratio(sums.state["topk_hits"][i], sums.n) for i in sums.shown}))
METRICS.add("super-class accuracy", Metric(
    keys={"superclass_acc": Key(
        "super-class accuracy", "Super-class accuracy at each level 'from leaf': the share of samples whose predicted "
        "class has the true class's ancestor at that level (samples of a class shallower than the level are left "
        "out).", kind="levels", shown="headline")},
    compute=lambda sums: {"superclass_acc": by_level(_superclass_compute(sums.pairs, sums.hierarchy))}))
