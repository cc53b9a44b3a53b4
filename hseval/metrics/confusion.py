"""Confusion matrices whose rows and columns follow the tree, so each super-class is a block.

Rows are true classes, columns predicted ones (scikit-learn's convention).
"""

from __future__ import annotations

import numpy as np

from hseval.metrics import _checks
from hseval.tree.hierarchy import Hierarchy

__all__ = ["tree_order", "confusion_matrix"]

SHALLOWER = -1
"""Label of the extra last row/column of a level's matrix: "the class has no node at this level"."""


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


def confusion_matrix(pred: np.ndarray, target: np.ndarray, hierarchy: Hierarchy,
                     depth: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Confusion matrix of class predictions, at the leaves or at one super-class level.

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
        or they differ in length; or if ``depth`` is outside ``1..hierarchy.max_depth``.

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
