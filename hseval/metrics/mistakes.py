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
(:mod:`hseval.metrics.confusion`); the distances@k of two sums per k over the samples' top-k lists
(:func:`_topk_distance_update`). :class:`~hseval.metrics.HierarchicalMetrics` streams the same.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hseval.core.arguments import Array, Positive, checked
from hseval.metrics import _checks
from hseval.metrics.accuracy import topk_predictions
from hseval.metrics.confusion import Pairs, pairs_update
from hseval.metrics.statistics import METRICS, Batch, Key, Metric, Sums
from hseval.tree.hierarchy import Hierarchy

__all__ = ["hierarchical_distance", "mistake_severity", "avg_hierarchical_distance_at_k",
           "best_hierarchical_distance_at_k", "mistake_metrics", "mistake_metrics_from_topk", "NO_MISTAKES"]

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


@checked
def avg_hierarchical_distance_at_k(topk_pred: Array, target: Array, hierarchy: Hierarchy, k: Positive) -> float:
    """Mean over samples of the mean distance of the ``k`` best predictions (a correct one counts 0).

    Parameters
    ----------
    topk_pred : (N, k') array_like of int
        Class indices, best first (see :func:`topk_predictions`).
    target : (N,) array_like of int
        True class indices.
    hierarchy : Hierarchy
        The tree whose leaves are the classes.
    k : int
        1 <= k; capped at the number of classes, then it must be <= k'.

    Returns
    -------
    float
        The mean distance; NaN for N = 0.

    Raises
    ------
    ValueError
        If ``topk_pred`` is not 2-D or ``target`` not 1-D, either holds non-integers or indices
        outside the classes, they differ in length, ``k < 1``, or ``topk_pred`` holds fewer than
        ``min(k, number of classes)`` columns.

    Examples
    --------
    >>> import numpy as np
    >>> from hseval.tree.hierarchy import Hierarchy
    >>> from hseval.metrics import avg_hierarchical_distance_at_k
    >>> tree = Hierarchy.from_paths([["animal", "cat"], ["animal", "dog"], ["vehicle", "car"], ["vehicle", "bus"]])
    >>> topk = np.array([[1, 2], [3, 2]])  # distances [1, 2] and [0, 1]
    >>> target = np.array([0, 3])
    >>> avg_hierarchical_distance_at_k(topk, target, tree, 1), avg_hierarchical_distance_at_k(topk, target, tree, 2)
    (0.5, 1.0)
    """
    topk_pred, target, k = _topk_checked(topk_pred, target, hierarchy, k)
    return _topk_distance_compute(_topk_distance_update(topk_pred, target, hierarchy, (k,)), len(target), (k,))[0][0]


@checked
def best_hierarchical_distance_at_k(topk_pred: Array, target: Array, hierarchy: Hierarchy, k: Positive) -> float:
    """Mean over samples of the smallest distance among the ``k`` best predictions (0 when the
    target is among them).

    Parameters
    ----------
    topk_pred, target, hierarchy, k
        As :func:`avg_hierarchical_distance_at_k`, which also lists the errors.

    Returns
    -------
    float
        The mean smallest distance; NaN for N = 0.

    Examples
    --------
    >>> import numpy as np
    >>> from hseval.tree.hierarchy import Hierarchy
    >>> from hseval.metrics import best_hierarchical_distance_at_k
    >>> tree = Hierarchy.from_paths([["animal", "cat"], ["animal", "dog"], ["vehicle", "car"], ["vehicle", "bus"]])
    >>> topk = np.array([[2, 1], [3, 2]])  # distances [2, 1] and [0, 1]
    >>> target = np.array([0, 3])
    >>> best_hierarchical_distance_at_k(topk, target, tree, 1), best_hierarchical_distance_at_k(topk, target, tree, 2)
    (1.0, 0.5)
    """
    topk_pred, target, k = _topk_checked(topk_pred, target, hierarchy, k)
    return _topk_distance_compute(_topk_distance_update(topk_pred, target, hierarchy, (k,)), len(target), (k,))[1][0]


@checked
def mistake_metrics_from_topk(topk_pred: Array, target: Array, hierarchy: Hierarchy, *,
                              ks: Sequence[Positive] = (1, 5, 20)) -> dict[str, float]:
    """``mistake_severity`` and ``avg_hdist@k``, ``best_hdist@k`` for each ``k`` of ``ks``.

    Keys name the requested ``k``; the value is computed with ``min(k, number of classes)``, so a
    key means the same on every dataset ("the whole top-k list"), and ``topk_pred`` (N, k') must
    hold ``k' >= min(max(ks), L)`` columns.

    Parameters
    ----------
    topk_pred : (N, k') array_like of int
        Class indices, best first (see :func:`topk_predictions`); column 0 is the top-1.
    target : (N,) array_like of int
        True class indices.
    hierarchy : Hierarchy
        The tree whose leaves are the classes.
    ks : sequence of int, default (1, 5, 20)
        The k of the distances@k.

    Returns
    -------
    dict of str to float
        "mistake_severity", then "avg_hdist@k" and "best_hdist@k" for each k of ``ks``.

    Raises
    ------
    ValueError
        If ``topk_pred`` is not 2-D or has no column, ``target`` is not 1-D, either holds
        non-integers or indices outside the classes, they differ in length, some k of ``ks`` is
        below 1, or ``topk_pred`` has too few columns for a k.

    Examples
    --------
    >>> import numpy as np
    >>> from hseval.tree.hierarchy import Hierarchy
    >>> from hseval.metrics import mistake_metrics_from_topk
    >>> tree = Hierarchy.from_paths([["animal", "cat"], ["animal", "dog"], ["vehicle", "car"], ["vehicle", "bus"]])
    >>> topk = np.array([[1, 2], [3, 2]])
    >>> mistake_metrics_from_topk(topk, np.array([0, 3]), tree, ks=(1, 2))
    {'mistake_severity': 1.0, 'avg_hdist@1': 0.5, 'best_hdist@1': 0.5, 'avg_hdist@2': 1.0, 'best_hdist@2': 0.5}
    """
    topk_pred = _checks.leaves(topk_pred, "topk_pred", hierarchy, ndim=2)
    if topk_pred.shape[1] == 0:
        raise ValueError("topk_pred has no column; give at least the top-1 prediction of each sample")
    out = {"mistake_severity": mistake_severity(topk_pred[:, 0], target, hierarchy)}
    capped = [_topk_checked(topk_pred, target, hierarchy, k)[2] for k in ks]
    target = _checks.leaves(target, "target", hierarchy)
    average, best = _topk_distance_compute(_topk_distance_update(topk_pred, target, hierarchy, capped), len(target),
                                           capped)
    for i, k in enumerate(ks):
        out[f"avg_hdist@{k}"], out[f"best_hdist@{k}"] = average[i], best[i]
    return out


@checked
def mistake_metrics(scores: Array, target: Array, hierarchy: Hierarchy, *,
                    ks: Sequence[Positive] = (1, 5, 20)) -> dict[str, float]:
    """Every Making-Better-Mistakes metric from ``scores`` (N, L) logits or probabilities and
    ``target`` (N,); see :func:`mistake_metrics_from_topk` for the keys.

    Parameters
    ----------
    scores : (N, L) array_like
        Logits or probabilities, one column per class; ties go to the lower class index.
    target : (N,) array_like of int
        True class indices.
    hierarchy : Hierarchy
        The tree whose leaves are the classes.
    ks : sequence of int, default (1, 5, 20)
        The k of the distances@k; not empty.

    Returns
    -------
    dict of str to float
        "mistake_severity", then "avg_hdist@k" and "best_hdist@k" for each k of ``ks``.

    Raises
    ------
    ValueError
        If ``scores`` is not 2-D with one column per class or holds NaN or infinite values,
        ``ks`` is empty or holds a k below 1, or ``target`` is not valid class indices of the
        same length.

    Examples
    --------
    >>> import numpy as np
    >>> from hseval.tree.hierarchy import Hierarchy
    >>> from hseval.metrics import mistake_metrics
    >>> tree = Hierarchy.from_paths([["animal", "cat"], ["animal", "dog"], ["vehicle", "car"], ["vehicle", "bus"]])
    >>> scores = np.array([[0.1, 0.6, 0.2, 0.1], [0.0, 0.1, 0.3, 0.6]])  # a dog for a cat, a bus
    >>> result = mistake_metrics(scores, np.array([0, 3]), tree, ks=(1, 2))
    >>> result["mistake_severity"], result["avg_hdist@2"], result["best_hdist@2"]
    (1.0, 1.0, 0.5)
    """
    scores = _checks.scores(scores, "scores", hierarchy.num_leaves)
    if not ks:
        raise ValueError("ks is empty; give at least one k, e.g. ks=(1, 5)")
    return mistake_metrics_from_topk(topk_predictions(scores, max(ks)), target, hierarchy, ks=ks)


def _topk_checked(topk_pred: np.ndarray, target: np.ndarray, hierarchy: Hierarchy,
                  k: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The checked predictions and targets, and ``min(k, L)``, which ``topk_pred`` must have columns for."""
    topk_pred = _checks.leaves(topk_pred, "topk_pred", hierarchy, ndim=2)
    target = _checks.leaves(target, "target", hierarchy)
    _checks.same_length(topk_pred, target, "topk_pred and target")
    k = min(k, hierarchy.num_leaves)
    if k > topk_pred.shape[1]:
        raise ValueError(f"k={k} but topk_pred holds only {topk_pred.shape[1]} predictions per sample; "
                         f"compute topk_predictions(scores, {k}) or lower k")
    return topk_pred, target, k


def _topk_distance_update(top: np.ndarray, target: np.ndarray, hierarchy: Hierarchy,
                          ks: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Per k of ``ks`` (each at most ``top``'s width), over the samples: the sum of the distances of
    the first k predictions, and the sum of the smallest of them; (len(ks),) int64 each."""
    distance = _distance(top, target[:, None], hierarchy)
    total = [int(distance[:, :k].sum()) for k in ks]
    best = [int(distance[:, :k].min(axis=1, initial=hierarchy.max_depth).sum()) for k in ks]
    return np.array(total, np.int64), np.array(best, np.int64)


def _topk_distance_compute(sums: tuple[np.ndarray, np.ndarray], n: int,
                           ks: Sequence[int]) -> tuple[list[float], list[float]]:
    """([avg_hdist@k], [best_hdist@k]) for the (capped) ``ks`` over ``n`` samples; NaN for none."""
    total, best = sums
    return ([_checks.ratio(total[i], n * k) for i, k in enumerate(ks)],
            [_checks.ratio(best[i], n) for i in range(len(ks))])


def _distance_batch(batch: Batch) -> dict[str, np.ndarray]:
    kept = [k for k in batch.ks if k <= batch.top.shape[1]]  # the k above the batch's width add nothing
    total, best = _topk_distance_update(batch.top, batch.targets, batch.hierarchy, kept)
    pad = (0, len(batch.ks) - len(kept))
    return {"hdist_total": np.pad(total, pad), "hdist_best": np.pad(best, pad)}


def _distance_sums(sums: Sums) -> dict[str, float]:
    shown = list(sums.shown)
    average, best = _topk_distance_compute((sums.state["hdist_total"][shown], sums.state["hdist_best"][shown]), sums.n,
                                           [min(sums.ks[i], sums.hierarchy.num_leaves) for i in shown])
    out = {}
    for i, avg, low in zip(shown, average, best):
        out[f"avg_hdist@{sums.ks[i]}"], out[f"best_hdist@{sums.ks[i]}"] = avg, low
    return out


METRICS.add("mistake severity", Metric(
    keys={"mistake_severity": Key(
        "mistake severity", "Mean tree distance between the predicted and the true class over the mistakes only "
        "(Making Better Mistakes); lower: the mistakes are milder." + _DISTANCE, kind="nonnegative", shown="headline",
        undefined=NO_MISTAKES)},
    compute=lambda sums: {"mistake_severity": _severity_compute(sums.pairs, sums.hierarchy)}))
METRICS.add("tree distance@k", Metric(
    keys={"avg_hdist@{k}": Key("mean tree distance@{k}", "Mean tree distance from the true class to {each of the top "
                               "k}, over all samples (Making Better Mistakes); lower: the predictions stay near the "
                               "true class.", kind="nonnegative"),
          "best_hdist@{k}": Key("best tree distance@{k}", "Tree distance from the true class to {the nearest of the "
                                "top k}, averaged over the samples; lower is better.", kind="nonnegative",
                                shown="summary")},
    state=lambda hierarchy, num_ks, n_bins: {"hdist_total": np.zeros(num_ks, np.int64),
                                             "hdist_best": np.zeros(num_ks, np.int64)},
    update=_distance_batch, compute=_distance_sums))
