"""CRM re-ranking (Karthik et al. 2021) against exact CRM by brute force: for every sample, every
class's expected tree distance summed over a distance matrix built by walking the paths
(``metric_tester.brute_distance``), at sizes where that matrix fits; and, through sparse
probabilities, at more classes than any |L|×|L| matrix would."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hseval.metrics import HierarchicalMetrics
from hseval.metrics.accuracy import _topk
from hseval.metrics.crm import CrmMetrics, crm_risk, crm_summary
from tests.helpers import examples, random_tree
from tests.metric_tester import brute_distance


def distance_matrix(tree) -> np.ndarray:
    """(|L|, |L|) tree distances, path by path (no hseval code)."""
    leaves = range(tree.num_leaves)
    return np.array([[brute_distance(tree, k, j) for j in leaves] for k in leaves], dtype=np.float64)


def softmax(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@given(st.integers(0, 10_000), st.integers(2, 40))
@settings(max_examples=examples(25), deadline=None)
def test_risk_is_the_expected_distance_of_every_class(seed, leaves):
    tree = random_tree(leaves, seed)  # classes at several depths
    rng = np.random.default_rng(seed)
    probs = softmax(rng.normal(size=(9, tree.num_leaves)) * rng.uniform(0.1, 8))
    np.testing.assert_allclose(crm_risk(probs, tree), probs @ distance_matrix(tree), rtol=1e-12, atol=1e-12)


def test_ranking_equals_exact_crm_where_both_run():
    """Every sample's 20 best classes, as exact CRM with a distance matrix ranks them."""
    tree = random_tree(250, 3, branching=0.2)
    rng = np.random.default_rng(3)
    probs = softmax(rng.normal(size=(300, tree.num_leaves)) * 4)
    exact = _topk(-(probs @ distance_matrix(tree)), 20)
    assert np.array_equal(_topk(-crm_risk(probs, tree), 20), exact)


def test_metrics_are_those_of_the_exact_ranking():
    tree = random_tree(80, 5)
    rng = np.random.default_rng(5)
    probs = softmax(rng.normal(size=(400, tree.num_leaves)) * 3)
    targets = rng.integers(0, tree.num_leaves, 400)
    crm = CrmMetrics(tree, topk=(1, 5, 20))
    crm.update(probs[:150], targets[:150])
    crm.update(probs[150:], targets[150:])
    reference = HierarchicalMetrics(tree, topk=(1, 5, 20))
    reference.update(-(probs @ distance_matrix(tree)), targets)
    got = crm.compute()
    assert got.pop("unavailable") == {} and got == crm_summary(reference.compute())


def test_an_undefined_value_says_why():
    """A ranking without mistakes has no mistake severity; compute says so beside the NaN."""
    tree = random_tree(12, 3)
    targets = np.arange(tree.num_leaves)
    crm = CrmMetrics(tree, topk=(1, 5))
    crm.update(np.eye(tree.num_leaves), targets)  # certain and right: CRM keeps every prediction
    got = crm.compute()
    assert np.isnan(got["mistake_severity"]) and got["unavailable"] == {
        "mistake_severity": "no mistakes: every sample is right, so the mean severity of a mistake is undefined"}


def test_crm_at_more_classes_than_a_distance_matrix_holds():
    """30,000 classes (a distance matrix of 3.6 GB): probabilities on a few classes make the exact
    risk a short sum, which the formula must give for every class."""
    tree = random_tree(30_000, 1, branching=0.05)
    rng = np.random.default_rng(1)
    support = rng.choice(tree.num_leaves, 3, replace=False)
    probs = np.zeros((2, tree.num_leaves))
    probs[:, support] = rng.dirichlet(np.ones(3), 2)
    every = np.arange(tree.num_leaves)
    exact = sum(probs[:, [j]] * np.array([brute_distance(tree, k, j) for k in every])[None, :] for j in support)
    np.testing.assert_allclose(crm_risk(probs, tree), exact, atol=1e-12)


def test_a_certain_model_keeps_its_prediction(small_tree):
    probs = np.eye(small_tree.num_leaves)
    assert (crm_risk(probs, small_tree).argmin(axis=1) == np.arange(small_tree.num_leaves)).all()


def test_crm_moves_an_unsure_prediction_towards_the_likely_subtree():
    """apple 0.4, cat 0.3, dog 0.3: the argmax says apple, but an animal costs less in expectation."""
    from tests.helpers import appendix_a

    tree = appendix_a()
    probs = np.zeros((1, tree.num_leaves))
    probs[0, [tree.index("apple"), tree.index("cat"), tree.index("dog")]] = [0.4, 0.3, 0.3]
    chosen = int(crm_risk(probs, tree).argmin())
    assert tree.node_names[chosen] in ("cat", "dog")


def test_wrong_shapes_say_why(small_tree):
    with pytest.raises(ValueError, match="columns but the hierarchy has"):
        crm_risk(np.ones((2, small_tree.num_leaves + 1)), small_tree)


def test_summary_keeps_what_means_something_for_a_ranking():
    computed = {"top1": 0.5, "top5": 0.9, "superclass_acc": {"1": 0.8}, "superclass_acc_from_levels": {"1": 0.7},
                "mistake_severity": 1.2, "avg_hdist@1": 0.4, "hierarchical_f1": 0.8, "ece": 0.1,
                "cross_entropy": 2.0, "reliability": {}}
    assert set(crm_summary(computed)) == {"top1", "top5", "superclass_acc", "mistake_severity", "avg_hdist@1",
                                          "hierarchical_f1"}


def test_evaluation_scores_crm_beside_the_argmax(evaluated):
    from hseval.io.results import load_evaluation

    for run in load_evaluation(evaluated).runs:
        if run.head == "barz-denzler":  # its scores are cosines: no probabilities to re-rank
            assert "crm" not in run.metrics and "no probability" in run.unavailable["crm"]
            continue
        crm = run.metrics["crm"]
        assert 0 <= crm["top1"] <= 1 and "mistake_severity" in crm and "1" in crm["superclass_acc"]
        assert "ece" not in crm
