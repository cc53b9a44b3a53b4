"""Making Better Mistakes (Bertinetto et al., CVPR 2020) on the k best predictions: the mean and
the smallest hierarchical distance of a sample's top k (``avg_hdist@k``, ``best_hdist@k``), and
every one of the paper's metrics at once, with the mistake severity, from scores or a top-k list.

The distance is :mod:`hseval.metrics.mistakes`' (the height of the lowest common ancestor, as the
authors count it). Statistics: two sums per k over the samples' top-k lists
(:func:`_topk_distance_update`), from which both means are computed;
:class:`~hseval.metrics.HierarchicalMetrics` streams the same.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hseval.core.arguments import Array, Positive, checked
from hseval.metrics import _checks
from hseval.metrics.accuracy import topk_predictions
from hseval.metrics.mistakes import _distance, mistake_severity
from hseval.metrics.statistics import METRICS, Batch, Key, Metric, Sums
from hseval.tree.hierarchy import Hierarchy

__all__ = ["avg_hierarchical_distance_at_k", "best_hierarchical_distance_at_k", "mistake_metrics",
           "mistake_metrics_from_topk"]


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
