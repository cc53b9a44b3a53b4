"""CRM re-ranking (Karthik et al. 2021) against a brute force: for every sample, every class's
expected tree distance summed by hand from hierarchical_distance."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hseval.metrics import hierarchical_distance
from hseval.metrics.crm import MAX_CLASSES, class_distances, crm_scores, crm_summary, too_many_classes
from tests.helpers import random_tree


def brute_force_crm(probs: np.ndarray, tree) -> np.ndarray:
    leaves = np.arange(tree.num_leaves)
    risk = np.zeros_like(probs)
    for k in leaves:
        risk[:, k] = sum(probs[:, j] * hierarchical_distance(np.array([k]), np.array([j]), tree)[0] for j in leaves)
    return risk


def test_distances_are_the_hierarchical_distance(small_tree):
    d = class_distances(small_tree)
    leaves = np.arange(small_tree.num_leaves)
    expected = hierarchical_distance(leaves[:, None], leaves[None, :], small_tree)
    np.testing.assert_array_equal(d, expected)
    assert (np.diag(d) == 0).all() and (d == d.T).all()


@given(st.integers(0, 10_000), st.integers(3, 24))
@settings(max_examples=15, deadline=None)
def test_crm_is_the_brute_force_argmin(seed, leaves):
    tree = random_tree(leaves, seed)
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(12, tree.num_leaves)) * 3
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    scores = crm_scores(probs, class_distances(tree))
    risk = brute_force_crm(probs, tree)
    np.testing.assert_allclose(-scores, risk, rtol=1e-5, atol=1e-5)
    # the chosen class has the least risk (up to float32 ties)
    chosen = risk[np.arange(len(risk)), scores.argmax(axis=1)]
    np.testing.assert_allclose(chosen, risk.min(axis=1), rtol=1e-5, atol=1e-5)


def test_a_certain_model_keeps_its_prediction(small_tree):
    probs = np.eye(small_tree.num_leaves)
    assert (crm_scores(probs, class_distances(small_tree)).argmax(axis=1) == np.arange(small_tree.num_leaves)).all()


def test_crm_moves_an_unsure_prediction_towards_the_likely_subtree():
    """apple 0.4, cat 0.3, dog 0.3: the argmax says apple, but an animal costs less in expectation."""
    from tests.helpers import appendix_a

    tree = appendix_a()
    probs = np.zeros((1, tree.num_leaves))
    probs[0, [tree.index("apple"), tree.index("cat"), tree.index("dog")]] = [0.4, 0.3, 0.3]
    chosen = int(crm_scores(probs, class_distances(tree)).argmax())
    assert tree.node_names[chosen] in ("cat", "dog")


def test_wrong_shapes_and_too_many_classes_say_why(small_tree):
    with pytest.raises(ValueError, match="columns but the hierarchy has"):
        crm_scores(np.ones((2, small_tree.num_leaves + 1)), class_distances(small_tree))
    assert too_many_classes(small_tree) is None
    big = random_tree(MAX_CLASSES + 1, 0, branching=0.01)
    assert "not computed above 20,000 classes" in too_many_classes(big)


def test_summary_keeps_what_means_something_for_a_ranking():
    computed = {"top1": 0.5, "top5": 0.9, "superclass_acc": {"1": 0.8}, "superclass_acc_from_levels": {"1": 0.7},
                "mistake_severity": 1.2, "avg_hdist@1": 0.4, "hierarchical_f1": 0.8, "ece": 0.1,
                "cross_entropy": 2.0, "reliability": {}}
    assert set(crm_summary(computed)) == {"top1", "top5", "superclass_acc", "mistake_severity", "avg_hdist@1",
                                          "hierarchical_f1"}


def test_evaluation_scores_crm_beside_the_argmax(evaluated):
    from hseval.io.results import load_evaluation

    for run in load_evaluation(evaluated).runs:
        crm = run.metrics["crm"]
        assert 0 <= crm["top1"] <= 1 and "mistake_severity" in crm and "1" in crm["superclass_acc"]
        assert "ece" not in crm
