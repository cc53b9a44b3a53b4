"""Confusion matrices whose rows and columns follow the tree, so each super-class is a block.

Rows are true classes, columns predicted ones (scikit-learn's convention).
"""

from __future__ import annotations

import numpy as np

from hseval.hierarchy import Hierarchy
from hseval.metrics import _checks

__all__ = ["tree_order", "confusion_matrix"]

SHALLOWER = -1
"""Label of the extra last row/column of a level's matrix: "the class has no node at this level"."""


def tree_order(hierarchy: Hierarchy) -> np.ndarray:
    """(|L|,) int64: the classes in depth-first order of the tree, children in canonical order, so
    the classes under any super-class are contiguous."""
    preorder = hierarchy.preorder()
    return preorder[preorder < hierarchy.num_leaves]


def confusion_matrix(pred: np.ndarray, target: np.ndarray, hierarchy: Hierarchy,
                     depth: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Confusion matrix of class predictions, at the leaves or at one super-class level.

    Parameters
    ----------
    pred, target : (N,) int class indices.
    depth : int or None
        None: leaf level, rows/columns are the classes in :func:`tree_order`. ``k``: the
        predicted and true classes are replaced by their ancestors at depth ``k``; rows/columns
        are the nodes of depth ``k`` in tree order. Samples whose true class is shallower than
        ``k`` are left out (as in the level accuracy); when some class of the tree is shallower
        than ``k``, a last label :data:`SHALLOWER` (-1) collects the predictions of such classes
        (wrong at that level), and its row is zero.

    Returns
    -------
    matrix : (M, M) int64, ``matrix[i, j]`` = samples of true label ``labels[i]`` predicted as ``labels[j]``.
    labels : (M,) int64 canonical node indices (and -1 as above).
    """
    from sklearn.metrics import confusion_matrix as sk_confusion_matrix

    pred = _checks.leaves(pred, "pred", hierarchy)
    target = _checks.leaves(target, "target", hierarchy)
    _checks.same_length(pred, target, "pred and target")
    if depth is None:
        labels = tree_order(hierarchy)
    else:
        if not 1 <= depth <= hierarchy.max_depth:
            raise ValueError(f"depth {depth} is outside the tree's levels 1..{hierarchy.max_depth}; "
                             "use depth=None for the classes")
        preorder = hierarchy.preorder()
        labels = preorder[hierarchy.depth[preorder] == depth]
        if (hierarchy.depth[: hierarchy.num_leaves] < depth).any():
            labels = np.append(labels, SHALLOWER)
        pred = hierarchy.ancestor_at_depth(pred, depth)
        target = hierarchy.ancestor_at_depth(target, depth)
        pred, target = pred[target >= 0], target[target >= 0]
    if len(target) == 0:  # sklearn refuses empty input
        return np.zeros((len(labels), len(labels)), dtype=np.int64), labels
    return sk_confusion_matrix(target, pred, labels=labels).astype(np.int64), labels
