"""Making Better Mistakes (Bertinetto et al., CVPR 2020): how bad the mistakes are.

The hierarchical distance between a predicted and a true class is the height of their lowest
common ancestor, counted as in the authors' code: ``d(a, b) = H - depth(LCA(a, b))`` with ``H`` the
tree's height (``hierarchy.max_depth``) and the root at depth 0, and ``d(a, a) = 0``.

Leaves at different depths: the formula measures from the deepest level ``H`` whatever the leaves'
own depths, so a mistake always costs at least 1 (a strict ancestor of both classes is at most at
depth ``H - 1``) and one up to the root costs ``H``; a correct prediction costs 0 even for a leaf
shallower than ``H``, where the formula alone would give ``H - depth(leaf) > 0``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hseval.hierarchy import Hierarchy
from hseval.metrics import _checks
from hseval.metrics.accuracy import topk_predictions

__all__ = ["hierarchical_distance", "mistake_severity", "avg_hierarchical_distance_at_k",
           "best_hierarchical_distance_at_k", "mistake_metrics", "mistake_metrics_from_topk"]


def hierarchical_distance(pred: np.ndarray, target: np.ndarray, hierarchy: Hierarchy) -> np.ndarray:
    """``H - depth(LCA(pred, target))``, 0 where ``pred == target``.

    Parameters
    ----------
    pred, target : int arrays of broadcastable shapes, e.g. (N,) and (N,), or (N, k) and (N, 1)
        Canonical node indices (classes, or any non-root node).

    Returns
    -------
    int64 array of the broadcast shape.
    """
    pred = _checks.indices(pred, "pred", num=hierarchy.num_nodes, what="node", ndim=None)
    target = _checks.indices(target, "target", num=hierarchy.num_nodes, what="node", ndim=None)
    try:
        np.broadcast_shapes(pred.shape, target.shape)
    except ValueError:
        raise ValueError(f"pred of shape {pred.shape} and target of shape {target.shape} do not broadcast; "
                         "for top-k predictions (N, k) pass target[:, None]") from None
    distance = hierarchy.max_depth - hierarchy.lca_depth(pred, target)
    return np.where(pred == target, 0, distance).astype(np.int64)


def mistake_severity(pred_top1: np.ndarray, target: np.ndarray, hierarchy: Hierarchy) -> float:
    """Mean hierarchical distance over the wrong top-1 predictions; ``pred_top1``, ``target`` (N,)
    class indices. NaN when no prediction is wrong (or N = 0)."""
    pred_top1 = _checks.leaves(pred_top1, "pred_top1", hierarchy)
    target = _checks.leaves(target, "target", hierarchy)
    _checks.same_length(pred_top1, target, "pred_top1 and target")
    wrong = pred_top1 != target
    if not wrong.any():
        return float("nan")
    return float(hierarchical_distance(pred_top1[wrong], target[wrong], hierarchy).mean())


def avg_hierarchical_distance_at_k(topk_pred: np.ndarray, target: np.ndarray, hierarchy: Hierarchy, k: int) -> float:
    """Mean over samples of the mean distance of the ``k`` best predictions (a correct one counts 0).

    Parameters
    ----------
    topk_pred : (N, k') int class indices, best first (see :func:`topk_predictions`).
    target : (N,) int class indices.
    k : int, 1 <= k; capped at the number of classes, then it must be <= k'.

    Returns
    -------
    float; NaN for N = 0.
    """
    distance = _topk_distance(topk_pred, target, hierarchy, k)
    return float(distance.mean()) if len(distance) else float("nan")


def best_hierarchical_distance_at_k(topk_pred: np.ndarray, target: np.ndarray, hierarchy: Hierarchy, k: int) -> float:
    """Mean over samples of the smallest distance among the ``k`` best predictions (0 when the
    target is among them); arguments as :func:`avg_hierarchical_distance_at_k`. NaN for N = 0."""
    distance = _topk_distance(topk_pred, target, hierarchy, k)
    return float(distance.min(axis=1).mean()) if len(distance) else float("nan")


def mistake_metrics_from_topk(topk_pred: np.ndarray, target: np.ndarray, hierarchy: Hierarchy, *,
                              ks: Sequence[int] = (1, 5, 20)) -> dict[str, float]:
    """``mistake_severity`` and ``avg_hdist@k``, ``best_hdist@k`` for each ``k`` of ``ks``.

    Keys name the requested ``k``; the value is computed with ``min(k, number of classes)``, so a
    key means the same on every dataset ("the whole top-k list"), and ``topk_pred`` (N, k') must
    hold ``k' >= min(max(ks), L)`` columns.
    """
    topk_pred = _checks.leaves(topk_pred, "topk_pred", hierarchy, ndim=2)
    if topk_pred.shape[1] == 0:
        raise ValueError("topk_pred has no column; give at least the top-1 prediction of each sample")
    out = {"mistake_severity": mistake_severity(topk_pred[:, 0], target, hierarchy)}
    for k in ks:
        out[f"avg_hdist@{k}"] = avg_hierarchical_distance_at_k(topk_pred, target, hierarchy, k)
        out[f"best_hdist@{k}"] = best_hierarchical_distance_at_k(topk_pred, target, hierarchy, k)
    return out


def mistake_metrics(scores: np.ndarray, target: np.ndarray, hierarchy: Hierarchy, *,
                    ks: Sequence[int] = (1, 5, 20)) -> dict[str, float]:
    """Every Making-Better-Mistakes metric from ``scores`` (N, L) logits or probabilities and
    ``target`` (N,); see :func:`mistake_metrics_from_topk` for the keys."""
    scores = _checks.scores(scores, "scores", hierarchy.num_leaves)
    if not ks:
        raise ValueError("ks is empty; give at least one k, e.g. ks=(1, 5)")
    return mistake_metrics_from_topk(topk_predictions(scores, max(ks)), target, hierarchy, ks=ks)


def _topk_distance(topk_pred: np.ndarray, target: np.ndarray, hierarchy: Hierarchy, k: int) -> np.ndarray:
    """(N, min(k, L)) distances of the first predictions."""
    topk_pred = _checks.leaves(topk_pred, "topk_pred", hierarchy, ndim=2)
    target = _checks.leaves(target, "target", hierarchy)
    _checks.same_length(topk_pred, target, "topk_pred and target")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    k = min(k, hierarchy.num_leaves)
    if k > topk_pred.shape[1]:
        raise ValueError(f"k={k} but topk_pred holds only {topk_pred.shape[1]} predictions per sample; "
                         f"compute topk_predictions(scores, {k}) or lower k")
    return hierarchical_distance(topk_pred[:, :k], target[:, None], hierarchy)
