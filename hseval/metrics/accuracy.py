"""Accuracy at the leaves and at every super-class level.

Conventions: level ``k`` holds the nodes of depth ``k``; a class shallower than ``k`` has no node
at level ``k`` (e.g. Fashion-MNIST's Bag at levels 2 and 3), so its samples are left out of that
level's accuracy, and a prediction with no node at that level counts as wrong. The super-class
levels are ``1..max_depth-1``; a tree whose classes all hang from the root has none.

A super-class prediction comes two ways: (b) the ancestor of the predicted class
(:func:`superclass_accuracy_from_leaf`), or (a) a head's own level logits, e.g. the argmax of the
Δ-heads' parent columns (:func:`superclass_accuracy_from_levels`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from hseval.metrics import _checks
from hseval.tree.hierarchy import Hierarchy

__all__ = ["topk_accuracy", "topk_predictions", "level_predictions_from_leaf", "level_predictions_from_logits",
           "level_prediction_matrix",
           "level_accuracy", "superclass_accuracy_from_leaf", "superclass_accuracy_from_levels", "level_agreement",
           "per_node_accuracy"]


def topk_accuracy(scores: np.ndarray, target: np.ndarray, k: int = 1) -> float:
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
    target = np.asarray(target)
    if len(target) == 0:
        return float("nan")
    top = topk_predictions(scores, k)
    return float((top == target[:, None]).any(axis=1).mean())


def topk_predictions(scores: np.ndarray, k: int) -> np.ndarray:
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
    scores = _checks.scores(scores, "scores")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return np.argsort(-scores, axis=1, kind="stable")[:, : min(k, scores.shape[1])]


def level_predictions_from_leaf(pred_leaf: np.ndarray, hierarchy: Hierarchy, depth: int) -> np.ndarray:
    """The node at ``depth`` above each predicted class (-1 where the class is shallower).

    Parameters
    ----------
    pred_leaf : (N,) array_like of int
        Predicted class indices.
    hierarchy : Hierarchy
        The tree whose leaves are the classes.
    depth : int
        The level, ``1..hierarchy.max_depth``.

    Returns
    -------
    (N,) ndarray of int64
        Canonical node indices of depth ``depth`` (a class of that depth is its own node), or -1.

    Raises
    ------
    HierarchyError
        (a ValueError) If ``depth`` is outside ``1..hierarchy.max_depth``.

    Examples
    --------
    >>> import numpy as np
    >>> from hseval.tree.hierarchy import Hierarchy
    >>> from hseval.metrics import level_predictions_from_leaf
    >>> tree = Hierarchy.from_paths([["animal", "cat"], ["animal", "dog"], ["car"]])
    >>> nodes = level_predictions_from_leaf(np.array([0, 1, 2]), tree, 1)
    >>> [tree.node_names[i] for i in nodes]
    ['animal', 'animal', 'car']
    >>> level_predictions_from_leaf(np.array([0, 2]), tree, 2).tolist()  # car has no node at level 2
    [0, -1]
    """
    return hierarchy.ancestor_at_depth(np.asarray(pred_leaf), depth)


def level_predictions_from_logits(level_logits: Mapping[int, np.ndarray],
                                  hierarchy: Hierarchy) -> dict[int, np.ndarray]:
    """Way (a): per level ``k``, the argmax of the (N, #nodes of depth k) logits (columns in the order
    of ``hierarchy.nodes_at_depth(k)``, as ``Head.level_logits`` gives them), as canonical node
    indices (N,) int64. Ties go to the first column.

    Parameters
    ----------
    level_logits : mapping of int to (N, #nodes of depth k) array_like
        ``{level k: logits}`` for some of the levels ``1..hierarchy.max_depth``.
    hierarchy : Hierarchy
        The tree.

    Returns
    -------
    dict of int to (N,) ndarray of int64
        ``{level k: canonical node indices of depth k}``, the predicted node of each sample.

    Raises
    ------
    ValueError
        If some logits are not 2-D or hold NaN or infinite values, a level is outside
        ``1..hierarchy.max_depth``, or the number of columns is not the number of nodes of that level.

    Examples
    --------
    >>> import numpy as np
    >>> from hseval.tree.hierarchy import Hierarchy
    >>> from hseval.metrics import level_predictions_from_logits
    >>> tree = Hierarchy.from_paths([["animal", "cat"], ["animal", "dog"], ["vehicle", "car"], ["vehicle", "bus"]])
    >>> [tree.node_names[i] for i in tree.nodes_at_depth(1)]  # the order of the columns
    ['animal', 'vehicle']
    >>> levels = level_predictions_from_logits({1: np.array([[2.0, 0.5], [0.1, 0.3]])}, tree)
    >>> {k: [tree.node_names[i] for i in nodes] for k, nodes in levels.items()}
    {1: ['animal', 'vehicle']}
    """
    out = {}
    for depth, logits in level_logits.items():
        logits = _checks.scores(logits, f"level_logits[{depth}]")
        if not 1 <= depth <= hierarchy.max_depth:
            raise ValueError(f"level {depth} is outside the tree's levels 1..{hierarchy.max_depth}")
        nodes = hierarchy.nodes_at_depth(depth)
        if logits.shape[1] != len(nodes):
            raise ValueError(f"level_logits[{depth}] has {logits.shape[1]} columns but level {depth} has "
                             f"{len(nodes)} nodes; give one column per node of hierarchy.nodes_at_depth({depth})")
        out[int(depth)] = nodes[logits.argmax(axis=1)]
    return out


def level_prediction_matrix(levels: Mapping[int, np.ndarray], hierarchy: Hierarchy, n: int) -> np.ndarray:
    """(n, max_depth - 1) int64: column ``k - 1`` holds the node predicted at depth ``k`` (from
    :func:`level_predictions_from_logits`), -1 in every row of a level without predictions. The
    form kept per sample in predictions.npz, from which paired tests between runs are computed.

    Parameters
    ----------
    levels : mapping of int to (n,) array_like of int
        ``{level k: predicted canonical node indices}``; levels outside ``1..max_depth-1`` are ignored.
    hierarchy : Hierarchy
        The tree.
    n : int
        Number of samples.

    Returns
    -------
    (n, max_depth - 1) ndarray of int64
        One row per sample, one column per super-class level.

    Examples
    --------
    >>> import numpy as np
    >>> from hseval.tree.hierarchy import Hierarchy
    >>> from hseval.metrics import level_prediction_matrix
    >>> tree = Hierarchy.from_paths([["animal", "cat"], ["animal", "dog"], ["vehicle", "car"], ["vehicle", "bus"]])
    >>> animal, vehicle = tree.index("animal"), tree.index("vehicle")
    >>> level_prediction_matrix({1: np.array([animal, vehicle])}, tree, 2).tolist()
    [[4], [5]]
    >>> level_prediction_matrix({}, tree, 2).tolist()  # no level predictions
    [[-1], [-1]]
    """
    out = np.full((n, max(hierarchy.max_depth - 1, 0)), -1, dtype=np.int64)
    for depth, nodes in levels.items():
        if 1 <= depth < hierarchy.max_depth:
            out[:, depth - 1] = nodes
    return out


def level_accuracy(pred_node: np.ndarray, target_leaf: np.ndarray, hierarchy: Hierarchy, depth: int) -> float:
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
    truth = hierarchy.ancestor_at_depth(np.asarray(target_leaf), depth)
    keep = truth >= 0
    if not keep.any():
        return float("nan")
    return float((np.asarray(pred_node)[keep] == truth[keep]).mean())


def superclass_accuracy_from_leaf(pred_leaf: np.ndarray, target: np.ndarray, hierarchy: Hierarchy) -> dict[int, float]:
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
    pred_leaf, target = _leaf_pair(pred_leaf, target, hierarchy)
    return {k: level_accuracy(hierarchy.ancestor_at_depth(pred_leaf, k), target, hierarchy, k)
            for k in range(1, hierarchy.max_depth)}


def superclass_accuracy_from_levels(level_pred: Mapping[int, np.ndarray], target: np.ndarray,
                                    hierarchy: Hierarchy) -> dict[int, float]:
    """Way (a): accuracy at each level of ``level_pred``, {level: (N,) canonical node indices of
    that depth} (see :func:`level_predictions_from_logits`); ``target`` (N,) class indices.
    Returns {level: accuracy}, NaN where no sample's class reaches the level.

    Parameters
    ----------
    level_pred : mapping of int to (N,) array_like of int
        ``{level: predicted canonical node indices of that depth}``, e.g. from the model's own
        level logits.
    target : (N,) array_like of int
        True class indices.
    hierarchy : Hierarchy
        The tree whose leaves are the classes.

    Returns
    -------
    dict of int to float
        {level: accuracy} for each level of ``level_pred``, in increasing order; NaN where no
        sample's class reaches the level.

    Raises
    ------
    ValueError
        If ``target`` is not valid class indices, a level is outside ``1..hierarchy.max_depth``,
        or a level's predictions are not one node of that depth per sample (positions within the
        level instead of node indices, say).

    Examples
    --------
    >>> import numpy as np
    >>> from hseval.tree.hierarchy import Hierarchy
    >>> from hseval.metrics import superclass_accuracy_from_levels
    >>> tree = Hierarchy.from_paths([["animal", "cat"], ["animal", "dog"], ["vehicle", "car"], ["vehicle", "bus"]])
    >>> animal, vehicle = tree.index("animal"), tree.index("vehicle")
    >>> level_pred = {1: np.array([animal, animal, vehicle, vehicle])}
    >>> superclass_accuracy_from_levels(level_pred, np.array([0, 1, 2, 0]), tree)  # the last one is wrong
    {1: 0.75}
    """
    target = _checks.leaves(target, "target", hierarchy)
    return {int(k): level_accuracy(_checks.level_nodes(level_pred[k], k, hierarchy, len(target)), target, hierarchy, k)
            for k in sorted(level_pred)}


def level_agreement(level_pred: Mapping[int, np.ndarray], pred_leaf: np.ndarray, target: np.ndarray,
                    hierarchy: Hierarchy) -> dict[int, float]:
    """Per level of ``level_pred`` (way (a), {level: (N,) node indices}), the share of samples where
    it names the same node as the ancestor of ``pred_leaf`` (way (b), (N,)), over the samples whose
    true class (``target``, (N,)) has a node at that level, the ones that level's accuracy counts.
    NaN where there is none.

    Parameters
    ----------
    level_pred : mapping of int to (N,) array_like of int
        ``{level: predicted canonical node indices of that depth}``.
    pred_leaf, target : (N,) array_like of int
        Predicted and true class indices.
    hierarchy : Hierarchy
        The tree whose leaves are the classes.

    Returns
    -------
    dict of int to float
        {level: agreement in [0, 1]} for each level of ``level_pred``, in increasing order.

    Raises
    ------
    ValueError
        If the class indices are invalid or differ in length, a level is outside
        ``1..hierarchy.max_depth``, or a level's predictions are not one node of that depth per sample.

    Examples
    --------
    >>> import numpy as np
    >>> from hseval.tree.hierarchy import Hierarchy
    >>> from hseval.metrics import level_agreement
    >>> tree = Hierarchy.from_paths([["animal", "cat"], ["animal", "dog"], ["vehicle", "car"], ["vehicle", "bus"]])
    >>> animal, vehicle = tree.index("animal"), tree.index("vehicle")
    >>> level_pred = {1: np.array([animal, animal, vehicle, vehicle])}
    >>> pred_leaf = np.array([0, 2, 2, 3])  # cat, car, car, bus: sample 1's ancestor is vehicle
    >>> level_agreement(level_pred, pred_leaf, np.array([0, 1, 2, 3]), tree)
    {1: 0.75}
    """
    pred_leaf, target = _leaf_pair(pred_leaf, target, hierarchy)
    out = {}
    for k in sorted(level_pred):
        nodes = _checks.level_nodes(level_pred[k], k, hierarchy, len(target))
        keep = hierarchy.ancestor_at_depth(target, k) >= 0
        same = nodes == hierarchy.ancestor_at_depth(pred_leaf, k)
        out[int(k)] = float(same[keep].mean()) if keep.any() else float("nan")
    return out


def per_node_accuracy(pred_leaf: np.ndarray, target: np.ndarray, hierarchy: Hierarchy) -> tuple[np.ndarray, np.ndarray]:
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
    pred_leaf, target = _leaf_pair(pred_leaf, target, hierarchy)
    P = hierarchy.num_nodes
    truth = hierarchy.ancestor_table[target]  # (N, max_depth), a column per level
    hit = truth == hierarchy.ancestor_table[pred_leaf]
    support = np.bincount(truth[truth >= 0], minlength=P)
    correct = np.bincount(truth[(truth >= 0) & hit], minlength=P)
    return support.astype(np.int64), correct.astype(np.int64)


def _leaf_pair(pred_leaf: np.ndarray, target: np.ndarray, hierarchy: Hierarchy) -> tuple[np.ndarray, np.ndarray]:
    pred_leaf = _checks.leaves(pred_leaf, "pred_leaf", hierarchy)
    target = _checks.leaves(target, "target", hierarchy)
    _checks.same_length(pred_leaf, target, "pred_leaf and target")
    return pred_leaf, target
