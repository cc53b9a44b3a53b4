"""Tree-ordered confusion matrices against scikit-learn's, and the depth-first class order."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from sklearn.metrics import confusion_matrix as sk_confusion_matrix

from hseval.metrics import confusion_matrix, tree_order
from tests.helpers import examples, fashion_tree, flat_tree, random_tree, trees, unbalanced


@settings(max_examples=examples(60), deadline=None)
@given(tree=trees())
def test_tree_order_is_a_permutation_with_every_superclass_contiguous(tree):
    order = tree_order(tree)
    assert sorted(order.tolist()) == list(range(tree.num_leaves))
    position = np.empty(tree.num_leaves, dtype=int)
    position[order] = np.arange(tree.num_leaves)
    for node in range(tree.num_leaves, tree.num_nodes):
        where = position[tree.subtree_leaves(node)]
        assert where.max() - where.min() + 1 == len(where)


def test_tree_order_of_fashion_mnist():
    tree = fashion_tree()
    # the root's children in canonical order: Bag (a class, so first), clothing, footwear
    assert [tree.leaf_names[i] for i in tree_order(tree)] == [
        "Bag", "Trouser", "Dress", "T-shirt/top", "Pullover", "Coat", "Shirt", "Sandal", "Sneaker", "Ankle boot"]


@pytest.mark.parametrize("seed", range(3))
def test_leaf_matrix_is_sklearns_in_tree_order(seed):
    tree = random_tree(12, seed)
    rng = np.random.default_rng(seed)
    target, pred = rng.integers(0, 12, (2, 150))
    matrix, labels = confusion_matrix(pred, target, tree)
    order = tree_order(tree)
    np.testing.assert_array_equal(labels, order)
    np.testing.assert_array_equal(matrix, sk_confusion_matrix(target, pred, labels=range(12))[np.ix_(order, order)])


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_level_matrix_counts_ancestors_and_keeps_every_counted_sample(depth):
    tree = unbalanced()  # classes at depths 1, 2, 3, 4
    rng = np.random.default_rng(depth)
    target, pred = rng.integers(0, tree.num_leaves, (2, 200))
    matrix, labels = confusion_matrix(pred, target, tree, depth=depth)
    truth, guess = tree.ancestor_at_depth(target, depth), tree.ancestor_at_depth(pred, depth)
    counts = Counter(zip(truth[truth >= 0].tolist(), guess[truth >= 0].tolist()))
    expected = [[counts[(a, b)] for b in labels] for a in labels]
    assert matrix.tolist() == expected
    assert matrix.sum() == (truth >= 0).sum()  # nothing dropped but the samples shallower than the level
    nodes = labels[labels >= 0]
    assert sorted(nodes.tolist()) == tree.nodes_at_depth(depth).tolist()
    assert (labels[-1] == -1) == (depth > 1)


def test_edge_cases():
    tree = fashion_tree()
    matrix, labels = confusion_matrix([], [], tree, depth=2)
    assert matrix.shape == (len(labels), len(labels)) and matrix.sum() == 0
    matrix, labels = confusion_matrix([0, 1, 2], [0, 1, 1], flat_tree(3))
    assert labels.tolist() == [0, 1, 2] and matrix.tolist() == [[1, 0, 0], [0, 1, 1], [0, 0, 0]]
    with pytest.raises(ValueError, match="depth 4 is outside the tree's levels 1..3; use depth=None"):
        confusion_matrix([0], [0], tree, depth=4)
