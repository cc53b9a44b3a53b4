"""Confusion counts: the sufficient statistic of every top-1 metric, and the matrices that show them.

How often each (true class, predicted class) pair occurs determines the super-class accuracy of the
predicted class, the per-node recall, the mistake severity, hierarchical precision/recall/F1 and
the confusion matrices; each of those metrics is a ``_compute`` of :class:`Pairs`. A batch gives
its pairs one per sample (:func:`pairs_update`); :class:`SparseConfusion` folds repeats together,
so the state holds the distinct pairs seen (at most min(N, |L|²)), never a dense |L|×|L| matrix.

Matrices: rows are true classes, columns predicted ones (scikit-learn's convention), ordered by
the tree so that each super-class is a block.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from hseval.core.arguments import Array, Count, checked
from hseval.metrics import _checks
from hseval.tree.hierarchy import Hierarchy

__all__ = ["tree_order", "confusion_matrix", "most_confused", "Pairs", "pairs_update", "SparseConfusion"]

SHALLOWER = -1
"""Label of the extra last row/column of a level's matrix: "the class has no node at this level"."""
OUTSIDE = -1
"""Label of the extra last row/column of a super-class's matrix: "a class outside it"."""
_CONSOLIDATE = 1 << 20  # pending pairs folded into the sorted state beyond this many


class Pairs(NamedTuple):
    """Confusion counts as weighted pairs: entry ``i`` stands for ``count[i]`` samples of true class
    ``target[i]`` predicted as ``pred[i]`` (``count`` None: one sample each)."""

    target: np.ndarray
    pred: np.ndarray
    count: np.ndarray | None = None

    def total(self, where: np.ndarray | None = None, values: np.ndarray | None = None) -> int:
        """Σ over the entries (those of the boolean mask ``where``) of ``values`` (1 when None),
        each weighted by its count; exact integers."""
        count, n = self.count, len(self.target)
        if where is not None:
            values = None if values is None else values[where]
            count, n = (None, int(where.sum())) if count is None else (count[where], 0)
        if count is None:
            return n if values is None else int(values.sum())
        return int(count.sum()) if values is None else int((values * count).sum())


def pairs_update(pred: np.ndarray, target: np.ndarray) -> Pairs:
    """A batch's confusion counts, one pair per sample; ``pred``, ``target`` (N,) checked class indices."""
    return Pairs(target, pred)


class SparseConfusion:
    """The distinct (true, predicted) class pairs seen and their counts, kept sorted by
    ``target·|L| + pred``; new pairs wait in a list and are folded in when it grows large or the
    counts are read."""

    def __init__(self, num_classes: int) -> None:
        self.num_classes = num_classes
        self.keys = np.zeros(0, np.int64)
        self.counts = np.zeros(0, np.int64)
        self._pending: list[tuple[np.ndarray, np.ndarray | None]] = []
        self._pending_size = 0

    def add(self, pairs: Pairs) -> None:
        self.add_keys(pairs.target * self.num_classes + pairs.pred, pairs.count)

    def add_keys(self, keys: np.ndarray, counts: np.ndarray | None = None) -> None:
        self._pending.append((keys, counts))
        self._pending_size += len(keys)
        if self._pending_size > _CONSOLIDATE:
            self.consolidate()

    def consolidate(self) -> None:
        """Fold the pending pairs into the sorted distinct ones."""
        if not self._pending:
            return
        parts = [(self.keys, self.counts), *self._pending]
        self._pending, self._pending_size = [], 0
        keys = np.concatenate([k for k, _ in parts])
        counts = np.concatenate([np.ones(len(k), np.int64) if c is None else c for k, c in parts])
        unique, inverse = np.unique(keys, return_inverse=True)
        self.keys = unique
        self.counts = np.bincount(inverse.ravel(), weights=counts, minlength=len(unique)).round().astype(np.int64)

    def pairs(self) -> Pairs:
        self.consolidate()
        return Pairs(self.keys // self.num_classes, self.keys % self.num_classes, self.counts)


@checked
def tree_order(hierarchy: Hierarchy) -> np.ndarray:
    """(|L|,) int64: the classes in depth-first order of the tree, children in canonical order, so
    the classes under any super-class are contiguous.

    Parameters
    ----------
    hierarchy : Hierarchy
        The tree whose leaves are the classes.

    Returns
    -------
    (|L|,) ndarray of int64
        Every class index once, in tree order.

    Examples
    --------
    >>> from hseval.tree.hierarchy import Hierarchy
    >>> from hseval.metrics import tree_order
    >>> tree = Hierarchy.from_paths([["animal", "cat"], ["vehicle", "car"], ["animal", "dog"]])
    >>> order = tree_order(tree)
    >>> order.tolist(), [tree.leaf_names[i] for i in order]
    ([0, 2, 1], ['cat', 'dog', 'car'])
    """
    preorder = hierarchy.preorder()
    return preorder[preorder < hierarchy.num_leaves]


@checked
def confusion_matrix(pred: Array, target: Array, hierarchy: Hierarchy, depth: int | None = None, *,
                     within: Count | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Confusion matrix of class predictions, at the leaves or at one super-class level, or of the
    classes under one super-class.

    Parameters
    ----------
    pred, target : (N,) array_like of int
        Predicted and true class indices.
    hierarchy : Hierarchy
        The tree whose leaves are the classes.
    depth : int or None, default None
        None: leaf level, rows/columns are the classes in :func:`tree_order`. ``k``: the
        predicted and true classes are replaced by their ancestors at depth ``k``; rows/columns
        are the nodes of depth ``k`` in tree order. Samples whose true class is shallower than
        ``k`` are left out (as in the level accuracy); when some class of the tree is shallower
        than ``k``, a last label :data:`SHALLOWER` (-1) collects the predictions of such classes
        (wrong at that level), and its row is zero.
    within : int or None, default None
        A super-class (node index): the matrix of its classes in tree order, for the samples of
        those classes, with a last label :data:`OUTSIDE` (-1) for their predictions outside it
        (its row is zero); with the classes, not a level (``depth`` None).

    Returns
    -------
    matrix : (M, M) ndarray of int64
        ``matrix[i, j]`` = samples of true label ``labels[i]`` predicted as ``labels[j]``.
    labels : (M,) ndarray of int64
        Canonical node indices (and -1 as above).

    Raises
    ------
    ValueError
        If ``pred`` or ``target`` is not 1-D, holds non-integers or indices outside the classes,
        or they differ in length; if ``depth`` is outside ``1..hierarchy.max_depth``; or if
        ``within`` is not a super-class of the tree, or is given with ``depth``.

    Examples
    --------
    >>> import numpy as np
    >>> from hseval.tree.hierarchy import Hierarchy
    >>> from hseval.metrics import confusion_matrix
    >>> tree = Hierarchy.from_paths([["animal", "cat"], ["animal", "dog"], ["vehicle", "car"], ["vehicle", "bus"]])
    >>> pred, target = np.array([1, 0, 0, 3]), np.array([0, 0, 2, 3])
    >>> matrix, labels = confusion_matrix(pred, target, tree)
    >>> [tree.node_names[i] for i in labels], matrix.tolist()
    (['cat', 'dog', 'car', 'bus'], [[1, 1, 0, 0], [0, 0, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1]])
    >>> matrix, labels = confusion_matrix(pred, target, tree, depth=1)
    >>> [tree.node_names[i] for i in labels], matrix.tolist()
    (['animal', 'vehicle'], [[2, 0], [1, 1]])

    A class shallower than the level adds the label -1 (:data:`SHALLOWER`):

    >>> tree = Hierarchy.from_paths([["animal", "cat"], ["animal", "dog"], ["car"]])
    >>> matrix, labels = confusion_matrix(np.array([2, 1]), np.array([0, 1]), tree, depth=2)
    >>> labels.tolist(), matrix.tolist()  # the cat predicted as car is in the last column
    ([0, 1, -1], [[0, 0, 1], [0, 1, 0], [0, 0, 0]])

    The animals' block, and the animal predicted as a vehicle (:data:`OUTSIDE`):

    >>> tree = Hierarchy.from_paths([["animal", "cat"], ["animal", "dog"], ["vehicle", "car"]])
    >>> matrix, labels = confusion_matrix(np.array([1, 2, 2]), np.array([0, 1, 2]), tree, within=tree.index("animal"))
    >>> labels.tolist(), matrix.tolist()
    ([0, 1, -1], [[0, 1, 0], [0, 0, 1], [0, 0, 0]])
    """
    pred = _checks.leaves(pred, "pred", hierarchy)
    target = _checks.leaves(target, "target", hierarchy)
    _checks.same_length(pred, target, "pred and target")
    if depth is not None and not 1 <= depth <= hierarchy.max_depth:
        raise ValueError(f"depth {depth} is outside the tree's levels 1..{hierarchy.max_depth}; "
                         "use depth=None for the classes")
    if within is not None and (depth is not None or not hierarchy.num_leaves <= within < hierarchy.num_nodes):
        raise ValueError(f"within={within} must be a super-class of the tree ({hierarchy.num_leaves}.."
                         f"{hierarchy.num_nodes - 1}), with depth=None")
    return _matrix_compute(pairs_update(pred, target), hierarchy, depth, within)


def _matrix_compute(pairs: Pairs, hierarchy: Hierarchy, depth: int | None,
                    within: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The tree-ordered matrix and its labels from confusion counts (see :func:`confusion_matrix`)."""
    target, pred = pairs.target, pairs.pred
    position = np.full(hierarchy.num_nodes + 1, -1, np.int64)  # the last entry is SHALLOWER's (index -1)
    if within is not None:
        order = tree_order(hierarchy)
        labels = np.append(order[np.isin(order, hierarchy.subtree_leaves(within))], OUTSIDE)
        position[:] = len(labels) - 1  # every other class: outside
        target = np.where(np.isin(target, labels[:-1]), target, -1)  # samples of other classes are left out
    elif depth is None:
        labels = tree_order(hierarchy)
    else:
        preorder = hierarchy.preorder()
        labels = preorder[hierarchy.depth[preorder] == depth]
        if (hierarchy.depth[: hierarchy.num_leaves] < depth).any():
            labels = np.append(labels, SHALLOWER)
        target, pred = hierarchy.ancestor_at_depth(target, depth), hierarchy.ancestor_at_depth(pred, depth)
    position[labels] = np.arange(len(labels))
    kept = target >= 0  # samples of classes shallower than the level are left out
    count = np.ones(len(target), np.int64) if pairs.count is None else pairs.count
    matrix = np.zeros((len(labels), len(labels)), np.int64)
    np.add.at(matrix, (position[target[kept]], position[pred[kept]]), count[kept])
    return matrix, labels


PAIRS_SHOWN = 200
"""The most-confused pairs a table lists (sorted by count): the head of a long tail."""


def most_confused(pred: np.ndarray, target: np.ndarray, hierarchy: Hierarchy, *, depth: int | None = None,
                  under: int | None = None, k: int = PAIRS_SHOWN) -> pd.DataFrame:
    """The ``k`` most frequent mistakes, at the classes (``depth`` None) or between the super-classes
    of level ``depth``, among the samples whose true class lies under node ``under`` (None: all).
    Counted from the (true, predicted) pairs that occur, never a |L|×|L| matrix. Columns: true,
    predicted (a class shallower than the level: "(no level-d node)"), count, share (of the true
    label's samples), lca (their lowest common ancestor, "(root)" at the top), tree_distance (edges
    between the two) and, with ``under``, inside (whether the prediction still lies under it)."""
    target = np.asarray(target, dtype=np.int64)
    pred = np.asarray(pred, dtype=np.int64)
    if under is not None:
        kept = np.isin(target, hierarchy.subtree_leaves(under))
        target, pred = target[kept], pred[kept]
    if depth is not None:
        target, pred = hierarchy.ancestor_at_depth(target, depth), hierarchy.ancestor_at_depth(pred, depth)
        kept = target >= 0  # a class shallower than the level has no label there (as in the level accuracy)
        target, pred = target[kept], pred[kept]
    support = np.bincount(target, minlength=hierarchy.num_nodes)
    wrong = target != pred
    width = hierarchy.num_nodes + 1  # pred + 1: -1 (no node at this level) is a label too
    keys, counts = np.unique(target[wrong] * width + pred[wrong] + 1, return_counts=True)
    best = np.argsort(-counts, kind="stable")[:k]
    true, predicted, counts = keys[best] // width, keys[best] % width - 1, counts[best]
    known = predicted >= 0
    ancestor = np.full(len(best), -1, np.int64)
    ancestor[known] = hierarchy.lca(true[known], predicted[known])
    distance = np.full(len(best), np.nan)
    distance[known] = hierarchy.tree_distance(true[known], predicted[known])
    names = hierarchy.node_names
    frame = pd.DataFrame({"true": [names[t] for t in true.tolist()],
                          "predicted": [names[p] if p >= 0 else f"(no level-{depth} node)" for p in predicted.tolist()],
                          "count": counts.astype(np.int64), "share": counts / np.maximum(support[true], 1),
                          "lca": [names[a] if a >= 0 else "(root)" for a in ancestor.tolist()],
                          "tree_distance": distance})
    if under is not None:
        level = int(hierarchy.depth[under]) - 1
        frame["inside"] = known & (hierarchy.ancestor_table[np.maximum(predicted, 0), level] == under)
    return frame
