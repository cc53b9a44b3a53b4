"""Accuracy at the leaves and at every super-class level.

Conventions: level ``k`` holds the nodes of depth ``k``; a class shallower than ``k`` has no node
at level ``k`` (e.g. Fashion-MNIST's Bag at levels 2 and 3), so its samples are left out of that
level's accuracy, and a prediction with no node at that level counts as wrong.
"""

from __future__ import annotations

import numpy as np

from hseval.hierarchy import Hierarchy

__all__ = ["topk_accuracy", "level_predictions_from_leaf", "level_accuracy"]


def topk_accuracy(scores: np.ndarray, target: np.ndarray, k: int = 1) -> float:
    """Share of rows whose target is among the ``k`` highest scores; ``scores`` (N, C), ``target`` (N,).

    Ties are broken like ``np.argsort`` (stable, lower index first among equals after negation).
    """
    scores = np.asarray(scores)
    target = np.asarray(target)
    if len(target) == 0:
        return float("nan")
    k = min(k, scores.shape[1])
    top = np.argpartition(-scores, k - 1, axis=1)[:, :k] if k < scores.shape[1] else np.arange(scores.shape[1])[None]
    return float((top == target[:, None]).any(axis=1).mean())


def level_predictions_from_leaf(pred_leaf: np.ndarray, hierarchy: Hierarchy, depth: int) -> np.ndarray:
    """The node at ``depth`` above each predicted class (-1 where the class is shallower)."""
    return hierarchy.ancestor_at_depth(np.asarray(pred_leaf), depth)


def level_accuracy(pred_node: np.ndarray, target_leaf: np.ndarray, hierarchy: Hierarchy, depth: int) -> float:
    """Accuracy at ``depth`` of predicted nodes ``pred_node`` (node indices of that depth, or -1),
    over the samples whose class has a node at that depth; NaN if none has."""
    truth = hierarchy.ancestor_at_depth(np.asarray(target_leaf), depth)
    keep = truth >= 0
    if not keep.any():
        return float("nan")
    return float((np.asarray(pred_node)[keep] == truth[keep]).mean())
