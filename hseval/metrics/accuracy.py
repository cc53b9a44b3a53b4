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

from hseval.hierarchy import Hierarchy
from hseval.metrics import _checks

__all__ = ["topk_accuracy", "topk_predictions", "level_predictions_from_leaf", "level_predictions_from_logits",
           "level_prediction_matrix",
           "level_accuracy", "superclass_accuracy_from_leaf", "superclass_accuracy_from_levels", "level_agreement",
           "per_node_accuracy"]


def topk_accuracy(scores: np.ndarray, target: np.ndarray, k: int = 1) -> float:
    """Share of rows whose target is among the ``k`` highest scores; ``scores`` (N, C), ``target`` (N,).

    Ties go to the lower class index: the top-k set is :func:`topk_predictions`'s, the one every
    other metric and the streaming accumulator use.
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
    scores : (N, C) array of logits or probabilities.
    k : int >= 1; capped at C.

    Returns
    -------
    (N, min(k, C)) int64. Ties go to the lower class index, as with ``argmax``, so column 0 is
    ``scores.argmax(1)``.
    """
    scores = _checks.scores(scores, "scores")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return np.argsort(-scores, axis=1, kind="stable")[:, : min(k, scores.shape[1])]


def level_predictions_from_leaf(pred_leaf: np.ndarray, hierarchy: Hierarchy, depth: int) -> np.ndarray:
    """The node at ``depth`` above each predicted class (-1 where the class is shallower)."""
    return hierarchy.ancestor_at_depth(np.asarray(pred_leaf), depth)


def level_predictions_from_logits(level_logits: Mapping[int, np.ndarray],
                                  hierarchy: Hierarchy) -> dict[int, np.ndarray]:
    """Way (a): per level ``k``, the argmax of the (N, #nodes of depth k) logits (columns in the order
    of ``hierarchy.nodes_at_depth(k)``, as ``Head.level_logits`` gives them), as canonical node
    indices (N,) int64. Ties go to the first column."""
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
    form kept per sample in predictions.npz, from which paired tests between runs are computed."""
    out = np.full((n, max(hierarchy.max_depth - 1, 0)), -1, dtype=np.int64)
    for depth, nodes in levels.items():
        if 1 <= depth < hierarchy.max_depth:
            out[:, depth - 1] = nodes
    return out


def level_accuracy(pred_node: np.ndarray, target_leaf: np.ndarray, hierarchy: Hierarchy, depth: int) -> float:
    """Accuracy at ``depth`` of predicted nodes ``pred_node`` (node indices of that depth, or -1),
    over the samples whose class has a node at that depth; NaN if none has."""
    truth = hierarchy.ancestor_at_depth(np.asarray(target_leaf), depth)
    keep = truth >= 0
    if not keep.any():
        return float("nan")
    return float((np.asarray(pred_node)[keep] == truth[keep]).mean())


def superclass_accuracy_from_leaf(pred_leaf: np.ndarray, target: np.ndarray, hierarchy: Hierarchy) -> dict[int, float]:
    """Way (b): accuracy at each super-class level of the predicted class's ancestor.

    Parameters
    ----------
    pred_leaf, target : (N,) int class indices.

    Returns
    -------
    {level: accuracy} for levels 1..max_depth-1 (empty when there is no super-class level); NaN
    where no sample's class reaches the level.
    """
    pred_leaf, target = _leaf_pair(pred_leaf, target, hierarchy)
    return {k: level_accuracy(hierarchy.ancestor_at_depth(pred_leaf, k), target, hierarchy, k)
            for k in range(1, hierarchy.max_depth)}


def superclass_accuracy_from_levels(level_pred: Mapping[int, np.ndarray], target: np.ndarray,
                                    hierarchy: Hierarchy) -> dict[int, float]:
    """Way (a): accuracy at each level of ``level_pred``, {level: (N,) canonical node indices of
    that depth} (see :func:`level_predictions_from_logits`); ``target`` (N,) class indices.
    Returns {level: accuracy}, NaN where no sample's class reaches the level."""
    target = _checks.leaves(target, "target", hierarchy)
    return {int(k): level_accuracy(_checks.level_nodes(level_pred[k], k, hierarchy, len(target)), target, hierarchy, k)
            for k in sorted(level_pred)}


def level_agreement(level_pred: Mapping[int, np.ndarray], pred_leaf: np.ndarray, target: np.ndarray,
                    hierarchy: Hierarchy) -> dict[int, float]:
    """Per level of ``level_pred`` (way (a), {level: (N,) node indices}), the share of samples where
    it names the same node as the ancestor of ``pred_leaf`` (way (b), (N,)), over the samples whose
    true class (``target``, (N,)) has a node at that level, the ones that level's accuracy counts.
    NaN where there is none."""
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
    pred_leaf, target : (N,) int class indices.

    Returns
    -------
    support : (|P|,) int64
        Number of samples whose true class is ``p`` or lies under ``p``.
    correct : (|P|,) int64
        How many of those have the predicted class's ancestor at depth(p) equal to ``p`` (for a
        leaf, the ordinary per-class recall's numerator). ``correct / support`` is the recall.
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
