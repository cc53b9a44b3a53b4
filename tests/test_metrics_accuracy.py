"""Accuracy metrics: top-k against scikit-learn, super-class accuracy both ways against brute force
and constructed cases, per-node recall, and the input checks."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, top_k_accuracy_score

from hseval.metrics import (
    level_agreement,
    level_predictions_from_logits,
    per_node_accuracy,
    superclass_accuracy_from_leaf,
    superclass_accuracy_from_levels,
    topk_accuracy,
    topk_predictions,
)
from tests.helpers import examples, fashion_tree, flat_tree, random_tree, trees
from tests.metric_tester import brute_per_node, brute_superclass_accuracy, stable_topk


@pytest.mark.parametrize("k", [1, 2, 5])
def test_topk_predictions_and_accuracy_match_sklearn(k):
    rng = np.random.default_rng(k)
    scores, target = rng.normal(size=(200, 7)), rng.integers(0, 7, 200)
    top = topk_predictions(scores, k)
    assert top.shape == (200, k)
    np.testing.assert_array_equal(top[:, 0], scores.argmax(1))
    assert np.all(np.diff(np.take_along_axis(scores, top, 1), axis=1) <= 0)  # best first
    expected = top_k_accuracy_score(target, scores, k=k, labels=range(7))
    assert (top == target[:, None]).any(1).mean() == pytest.approx(expected)
    assert topk_accuracy(scores, target, k) == pytest.approx(expected)
    if k == 1:
        assert accuracy_score(target, top[:, 0]) == pytest.approx(expected)


def test_topk_predictions_caps_k_at_the_number_of_classes_and_breaks_ties_to_the_lower_index():
    scores = np.array([[0.0, 1.0, 1.0, 0.5]])
    assert topk_predictions(scores, 10).tolist() == [[1, 2, 3, 0]]
    with pytest.raises(ValueError, match="k must be >= 1"):
        topk_predictions(scores, 0)


@settings(max_examples=examples(60), deadline=None)
@given(seed=st.integers(0, 2**16), k=st.integers(1, 20), columns=st.integers(1, 300), values=st.integers(1, 6))
def test_topk_predictions_are_the_stable_sort_with_ties(seed, k, columns, values):
    """Scores with many ties (few distinct values), wide enough rows that the top-k set is found by
    partition: the k best are a stable sort's, ties to the lower index."""
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, values, size=(40, columns)).astype(float)
    scores[::3] = rng.normal(size=(len(scores[::3]), columns))  # rows without ties too
    assert topk_predictions(scores, k).tolist() == stable_topk(scores, min(k, columns))


@settings(max_examples=examples(40), deadline=None)
@given(tree=trees(), seed=st.integers(0, 2**16))
def test_superclass_accuracy_from_leaf_matches_brute_force(tree, seed):
    rng = np.random.default_rng(seed)
    target = rng.integers(0, tree.num_leaves, 30)
    pred = np.where(rng.random(30) < 0.4, target, rng.integers(0, tree.num_leaves, 30))
    got = superclass_accuracy_from_leaf(pred, target, tree)
    assert sorted(got) == list(range(1, tree.max_depth))
    for depth, value in got.items():
        np.testing.assert_allclose(value, brute_superclass_accuracy(pred, target, tree, depth))


def fashion_case():
    """Four samples of Fashion-MNIST: true class, predicted class, and a head's own level predictions."""
    tree = fashion_tree()
    idx = tree.index
    target = np.array([idx("Coat"), idx("Bag"), idx("Sandal"), idx("Trouser")])
    pred_leaf = np.array([idx("Shirt"), idx("Bag"), idx("Sneaker"), idx("Trouser")])
    level_pred = {1: np.array([idx("clothing"), idx("footwear"), idx("footwear"), idx("clothing")]),
                  2: np.array([idx("tops"), idx("tops"), idx("Sandal"), idx("Dress")])}
    return tree, target, pred_leaf, level_pred


def test_superclass_accuracy_from_levels_and_agreement_on_a_constructed_case():
    tree, target, pred_leaf, level_pred = fashion_case()
    # level 1: Coat->clothing ok, Bag->footwear wrong, Sandal->footwear ok, Trouser->clothing ok: 3/4
    # level 2: Bag has no level-2 node and is left out; tops ok, Sandal ok, Trouser->Dress wrong: 2/3
    assert superclass_accuracy_from_levels(level_pred, target, tree) == pytest.approx({1: 3 / 4, 2: 2 / 3})
    # way (b) from the leaves: level 1 [clothing, Bag, footwear, clothing], level 2 [tops, -, Sneaker, Trouser]
    assert superclass_accuracy_from_leaf(pred_leaf, target, tree) == pytest.approx({1: 1.0, 2: 2 / 3})
    # agreement: level 1 differs on the Bag only (3/4); level 2 over Coat, Sandal, Trouser: only tops agrees
    assert level_agreement(level_pred, pred_leaf, target, tree) == pytest.approx({1: 3 / 4, 2: 1 / 3})


def test_level_predictions_from_logits_convert_positions_to_node_indices():
    tree, _, _, level_pred = fashion_case()
    logits = {}
    for depth, nodes in level_pred.items():
        positions = np.searchsorted(tree.nodes_at_depth(depth), nodes)
        logits[depth] = np.eye(tree.nodes_per_depth[depth - 1])[positions]
    got = level_predictions_from_logits(logits, tree)
    for depth in level_pred:
        np.testing.assert_array_equal(got[depth], level_pred[depth])
    with pytest.raises(ValueError, match=r"level_logits\[2\] has 3 columns but level 2 has 6 nodes"):
        level_predictions_from_logits({2: np.zeros((4, 3))}, tree)


def test_level_predictions_must_be_node_indices_of_their_level():
    tree, target, _, _ = fashion_case()
    with pytest.raises(ValueError, match=r"level_pred\[2\] holds node 'T-shirt/top' \(index 0\) of depth 3, "
                                         "not a node of depth 2"):
        superclass_accuracy_from_levels({2: np.zeros(4, dtype=int)}, target, tree)
    with pytest.raises(ValueError, match=r"level_pred\[1\] holds 2 predictions for 4 samples"):
        superclass_accuracy_from_levels({1: np.array([tree.index("Bag")] * 2)}, target, tree)
    with pytest.raises(ValueError, match="level 4 is outside the tree's levels 1..3"):
        superclass_accuracy_from_levels({4: np.zeros(4, dtype=int)}, target, tree)


@pytest.mark.parametrize("seed", range(4))
def test_per_node_accuracy_matches_brute_force_and_leaf_accuracy(seed):
    tree = random_tree(12, seed)
    rng = np.random.default_rng(seed)
    target = rng.integers(0, 12, 80)
    pred = np.where(rng.random(80) < 0.5, target, rng.integers(0, 12, 80))
    support, correct = per_node_accuracy(pred, target, tree)
    want = brute_per_node(pred, target, tree)
    np.testing.assert_array_equal(support, want[0])
    np.testing.assert_array_equal(correct, want[1])
    leaves = slice(0, tree.num_leaves)
    assert support[leaves].sum() == 80 and correct[leaves].sum() == (pred == target).sum()
    for depth, value in superclass_accuracy_from_leaf(pred, target, tree).items():
        nodes = tree.nodes_at_depth(depth)
        assert correct[nodes].sum() / support[nodes].sum() == pytest.approx(value)


def test_empty_input_gives_nan_and_a_flat_tree_has_no_superclass_level():
    tree, _, _, _ = fashion_case()
    empty = np.zeros(0, dtype=np.int64)
    got = superclass_accuracy_from_leaf(empty, empty, tree)
    assert sorted(got) == [1, 2] and all(np.isnan(v) for v in got.values())
    assert np.isnan(superclass_accuracy_from_levels({1: empty}, empty, tree)[1])
    assert np.isnan(level_agreement({1: empty}, empty, empty, tree)[1])
    support, correct = per_node_accuracy([], [], tree)
    assert support.shape == correct.shape == (tree.num_nodes,) and support.sum() == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "mean of empty slice"
        assert superclass_accuracy_from_leaf([0, 1], [1, 1], flat_tree()) == {}


@pytest.mark.parametrize(("pred", "target", "message"), [
    (np.array([0.2, 0.8]), np.array([0, 1]), "pred_leaf must hold integer class indices, got dtype float64"),
    (np.array([0, 10]), np.array([0, 1]), "pred_leaf holds 10, outside the class indices 0..9"),
    (np.array([0, 1, 2]), np.array([0, 1]), "pred_leaf and target hold 3 and 2 samples"),
    (np.array([[0, 1]]), np.array([0, 1]), r"pred_leaf must be a 1-D array of class indices, got shape \(1, 2\)"),
])
def test_bad_input_is_refused_with_a_message(pred, target, message):
    with pytest.raises(ValueError, match=message):
        superclass_accuracy_from_leaf(pred, target, fashion_tree())
