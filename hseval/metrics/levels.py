"""Super-class predictions of a head's own (way (a)): its level logits' argmax, scored against the
truth and against the ancestor of the predicted class (way (b), :mod:`hseval.metrics.accuracy`).

Per level, the statistic is three counts: the samples whose class reaches the level, those
predicted right, and those where both ways agree (:func:`_levels_update`); accuracy and agreement
are their ratios, computed the same way by the functions here and by
:class:`~hseval.metrics.HierarchicalMetrics`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from hseval.core.arguments import Array, Count, checked
from hseval.metrics import _checks
from hseval.metrics.accuracy import _leaf_pair, _level_counts
from hseval.metrics.statistics import METRICS, Key, Metric, Sums, by_level
from hseval.tree.hierarchy import Hierarchy

__all__ = ["level_predictions_from_leaf", "level_predictions_from_logits", "level_prediction_matrix",
           "superclass_accuracy_from_levels", "level_agreement"]


@checked
def level_predictions_from_leaf(pred_leaf: Array, hierarchy: Hierarchy, depth: int) -> np.ndarray:
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
    return hierarchy.ancestor_at_depth(_checks.leaves(pred_leaf, "pred_leaf", hierarchy), depth)


@checked
def level_predictions_from_logits(level_logits: _checks.Levels,
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
            raise ValueError(f"level_logits[{depth}]: level {depth} is outside the tree's levels "
                             f"1..{hierarchy.max_depth}")
        nodes = hierarchy.nodes_at_depth(depth)
        if logits.shape[1] != len(nodes):
            raise ValueError(f"level_logits[{depth}] has {logits.shape[1]} columns but level {depth} has "
                             f"{len(nodes)} nodes; give one column per node of hierarchy.nodes_at_depth({depth})")
        out[int(depth)] = nodes[logits.argmax(axis=1)]
    return out


@checked
def level_prediction_matrix(levels: _checks.Levels, hierarchy: Hierarchy, n: Count) -> np.ndarray:
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


@checked
def superclass_accuracy_from_levels(level_pred: _checks.Levels, target: Array,
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
    return {int(k): _checks.ratio(*_level_counts(_checks.level_nodes(level_pred[k], k, hierarchy, len(target)), target,
                                                 hierarchy, k))
            for k in sorted(level_pred)}


@checked
def level_agreement(level_pred: _checks.Levels, pred_leaf: Array, target: Array,
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
    return {int(k): _checks.ratio(*_level_counts(_checks.level_nodes(level_pred[k], k, hierarchy, len(target)), target,
                                                 hierarchy, k, reference=hierarchy.ancestor_at_depth(pred_leaf, k)))
            for k in sorted(level_pred)}


def _level_scores_update(level_scores: Mapping[int, Any] | None, hierarchy: Hierarchy,
                         n: int) -> dict[int, np.ndarray] | None:
    """A batch's predicted nodes per super-class level from a head's level scores (any array or
    tensor, ``n`` rows each), checked; None without level scores."""
    if level_scores is None:
        return None
    converted = {k: _checks.to_numpy(v, f"level_scores[{k}]", floating=True) for k, v in level_scores.items()}
    _check_superclass_levels(converted, hierarchy)
    levels = level_predictions_from_logits(converted, hierarchy)
    for k, nodes in levels.items():
        if len(nodes) != n:
            raise ValueError(f"level_scores[{k}] and targets hold {len(nodes)} and {n} samples; give one row "
                             "per sample")
    return levels


def _check_superclass_levels(levels: Mapping[int, Any], hierarchy: Hierarchy) -> None:
    top = hierarchy.max_depth - 1
    outside = [k for k in levels if not 1 <= k <= top]
    if outside:
        raise ValueError(f"level {outside[0]} is not a super-class level of the tree (1..{top}); the classes "
                         "themselves are scored by the logits")


def _levels_update(levels: Mapping[int, np.ndarray], pred_leaf: np.ndarray, target: np.ndarray,
                   hierarchy: Hierarchy) -> np.ndarray:
    """(max_depth - 1, 3) int64: per super-class level of ``levels`` ({level: predicted nodes}),
    the samples whose class reaches it, those predicted right, and those where the prediction is
    the ancestor of ``pred_leaf``; zeros for the other levels."""
    out = np.zeros((max(hierarchy.max_depth - 1, 0), 3), np.int64)
    for k, nodes in levels.items():
        correct, reached = _level_counts(nodes, target, hierarchy, k)
        agree, _ = _level_counts(nodes, target, hierarchy, k, reference=hierarchy.ancestor_at_depth(pred_leaf, k))
        out[k - 1] = reached, correct, agree
    return out


def _levels_compute(counts: np.ndarray, levels: tuple[int, ...]) -> tuple[dict[int, float], dict[int, float]]:
    """({level: accuracy}, {level: agreement}) from :func:`_levels_update`'s counts."""
    reached, correct, agree = counts.T
    return ({k: _checks.ratio(correct[k - 1], reached[k - 1]) for k in levels},
            {k: _checks.ratio(agree[k - 1], reached[k - 1]) for k in levels})


def _levels_sums(sums: Sums) -> dict[str, dict[str, float]]:
    accuracy, agreement = _levels_compute(sums.state["level_counts"], sums.levels or ())
    return {"superclass_acc_from_levels": by_level(accuracy), "level_agreement": by_level(agreement)}


METRICS.add("own super-class scores", Metric(
    keys={"superclass_acc_from_levels": Key(
              "super-class accuracy (own scores)", "Super-class accuracy at each level from the head's own super-class "
              "scores (the parent δ columns of the hierarchical heads, the extra heads of multitask, NBDT's path "
              "probabilities of each level's nodes); n/a for a head without them.", kind="levels", shown="headline"),
          "level_agreement": Key("level agreement", "How often the head's own super-class prediction at a level is the "
                                 "ancestor of its leaf prediction.", kind="levels", shown="summary")},
    state=lambda hierarchy, num_ks, n_bins: {"level_counts": np.zeros((max(hierarchy.max_depth - 1, 0), 3),
                                                                      np.int64)},
    update=lambda batch: {"level_counts": _levels_update(batch.levels, batch.top[:, 0], batch.targets,
                                                         batch.hierarchy)},
    compute=_levels_sums, needs="levels", crm=False))


def _paths_update(levels: Mapping[int, np.ndarray], pred_leaf: np.ndarray, target: np.ndarray,
                  hierarchy: Hierarchy) -> np.ndarray:
    """(2,) int64: the samples whose every own level prediction (where the true class reaches the
    level) and predicted class are right, and those whose own level predictions lie on the path of
    the predicted class (at the levels that class reaches)."""
    full, consistent = pred_leaf == target, np.ones(len(target), bool)
    for k, nodes in levels.items():
        truth, above = hierarchy.ancestor_at_depth(target, k), hierarchy.ancestor_at_depth(pred_leaf, k)
        full &= (truth < 0) | (nodes == truth)
        consistent &= (above < 0) | (nodes == above)
    return np.array([full.sum(), consistent.sum()], np.int64)


METRICS.add("paths of the own scores", Metric(
    keys={"full_path_accuracy": Key(
              "full-path accuracy", "Share of samples whose predicted class and every own super-class prediction "
              "(at the levels the true class reaches) are right: every level at once (Park et al., ICLR 2025); "
              "n/a for a head without own super-class scores."),
          "consistency": Key(
              "consistency", "Share of samples whose own super-class predictions lie on the path of the predicted "
              "class (at the levels it reaches): the levels tell one story (Park et al., ICLR 2025).")},
    state=lambda hierarchy, num_ks, n_bins: {"path_counts": np.zeros(2, np.int64)},
    update=lambda batch: {"path_counts": _paths_update(batch.levels, batch.top[:, 0], batch.targets,
                                                       batch.hierarchy)},
    compute=lambda sums: dict(zip(("full_path_accuracy", "consistency"),
                                  (_checks.ratio(c, sums.n) for c in sums.state["path_counts"]))),
    needs="levels", crm=False))
