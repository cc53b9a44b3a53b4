"""Decoding rules and node metrics (:mod:`hseval.metrics.decisions`, :mod:`hseval.metrics.node_metrics`)
against brute force over every node (``tests/decision_reference.py``) on random trees with uneven
depths, single-child chains and classes under the root."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from hseval.core.errors import ConfigError
from hseval.metrics import HierarchicalMetrics
from hseval.metrics.curves import CURVE_METRICS, OperatingCurves, area_under, curve_summary, recall_at
from hseval.metrics.decisions import DEFAULT_RULES, decode, optimal_metrics, rule
from hseval.metrics.node_metrics import NODE_METRICS, compare, node_metric
from hseval.metrics.nodes import NodeBlock, layout_of, node_probabilities
from tests.decision_reference import ROOT, Reference
from tests.helpers import appendix_a, examples, trees, unbalanced


def SETTINGS(n: int):
    return settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=examples(n))


def _probabilities(tree, seed: int, rows: int = 4, *, dyadic: bool = False) -> np.ndarray:
    """Rows of class probabilities: continuous ones (no ties but the tree's own), or multiples of
    1/64 (every sum exact, so ties between nodes are real ties)."""
    rng = np.random.default_rng(seed)
    if dyadic:
        counts = rng.multinomial(64, np.full(tree.num_leaves, 1 / tree.num_leaves), size=rows)
        return counts / 64.0
    raw = rng.gamma(0.3, size=(rows, tree.num_leaves))
    raw[rng.random(raw.shape) < 0.2] = 0.0                            # classes of no probability at all
    raw[raw.sum(axis=1) == 0, 0] = 1.0
    return raw / raw.sum(axis=1, keepdims=True)


@given(tree=trees(max_leaves=12), seed=st.integers(0, 2**31 - 1))
@SETTINGS(60)
def test_node_probabilities_are_sums_over_the_classes(tree, seed):
    probs = _probabilities(tree, seed)
    ref = Reference(tree)
    got = node_probabilities(probs, tree)
    want = np.array([[ref.p(row, n) for n in range(tree.num_nodes)] for row in probs])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    below = tree.parents >= 0
    assert (got[:, below] <= got[:, tree.parents[below]]).all()   # exactly monotone down every path


@pytest.mark.parametrize("dyadic", [False, True], ids=["continuous", "dyadic ties"])
@given(tree=trees(max_leaves=12), seed=st.integers(0, 2**31 - 1), t=st.floats(0, 1))
@SETTINGS(60)
def test_rules_equal_their_definitions(dyadic, tree, seed, t):
    probs = _probabilities(tree, seed, dyadic=dyadic)
    ref = Reference(tree)
    if dyadic:
        t = round(t * 64) / 64                                          # thresholds on the probabilities
    else:  # a node's probability is a sum, rounded by its order: one within rounding of t is either side of it
        assume(all(abs(ref.p(row, n) - t) > 1e-9 for row in probs for n in ref.nodes if n >= 0))
    for name in ["leaf", "top-down", "crm", "plurality", f"threshold:{t!r}", f"info-threshold:{t!r}"]:
        got = decode(probs, tree, name)
        want = [ref.decode(name, row) for row in probs]
        assert got.tolist() == want, name


@given(tree=trees(max_leaves=10), seed=st.integers(0, 2**31 - 1))
@SETTINGS(50)
def test_optimal_rules_maximise_the_expected_metric_over_every_node(tree, seed):
    probs = _probabilities(tree, seed, rows=3)
    ref = Reference(tree)
    for name in [*optimal_metrics(), "hf:0.5", "hf:2"]:
        metric = node_metric(name)
        got = decode(probs, tree, f"optimal:{name}")
        for row, node in zip(probs, got.tolist()):
            best, values = ref.optimal(name, row, lower=metric.lower)
            sign = -1 if metric.lower else 1
            assert sign * values[node] >= sign * values[best] - 1e-12, (name, node, best)
            if abs(values[node] - values[best]) > 1e-12:
                assert node == best, name


@given(tree=trees(max_leaves=10), seed=st.integers(0, 2**31 - 1))
@SETTINGS(50)
def test_metrics_of_any_node_equal_their_definitions(tree, seed):
    ref = Reference(tree)
    rng = np.random.default_rng(seed)
    nodes = rng.integers(-1, tree.num_nodes, size=40)
    targets = rng.integers(0, tree.num_leaves, size=40)
    comparison = compare(layout_of(tree), nodes, targets)
    for name in [*NODE_METRICS, "hf:0.5", "hf:3"]:
        got = node_metric(name).value(comparison)
        want = [ref.metric(name, int(n), int(l)) for n, l in zip(nodes, targets)]
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12, err_msg=name)


@given(tree=trees(max_leaves=12), seed=st.integers(0, 2**31 - 1))
@SETTINGS(40)
def test_the_tree_distance_optimum_is_the_threshold_at_one_half(tree, seed):
    """Plaud et al.: the expected tree distance is least at the weighted median, the deepest node of
    probability at least 1/2."""
    probs = _probabilities(tree, seed, rows=6)
    got = decode(probs, tree, "optimal:tree_distance")
    median = decode(probs, tree, "threshold:0.5")
    ref = Reference(tree)
    for row, a, b in zip(probs, got.tolist(), median.tolist()):
        assert a == b or abs(ref.expected("tree_distance", row, a) - ref.expected("tree_distance", row, b)) < 1e-12


@given(tree=trees(max_leaves=12), seed=st.integers(0, 2**31 - 1), ts=st.lists(st.floats(0.5, 1.0, exclude_min=True),
                                                                                 min_size=2, max_size=6))
@SETTINGS(40)
def test_above_one_half_the_predictions_lie_on_one_path_and_rise_as_t_grows(tree, seed, ts):
    probs = _probabilities(tree, seed, rows=5)
    ts = sorted(ts)
    picks = np.stack([decode(probs, tree, f"threshold:{t!r}") for t in ts], axis=1)
    ref = Reference(tree)
    for row in picks.tolist():
        for deeper, shallower in zip(row, row[1:]):
            assert ref.ancestors[shallower] <= ref.ancestors[deeper]   # an ancestor-or-self, never a cousin


def test_at_one_the_threshold_rule_answers_the_root_unless_a_class_is_certain():
    tree = unbalanced()
    probs = np.full((2, tree.num_leaves), 1 / tree.num_leaves)
    probs[1] = 0.0
    probs[1, 2] = 1.0
    got = decode(probs, tree, "threshold:1")
    assert got.tolist() == [ROOT, 2]


def test_unsure_between_two_animals_the_thresholds_say_animal_and_the_leaf_a_cat():
    tree = appendix_a()                                                 # apple, orange, cat, dog
    probs = np.array([[0.05, 0.05, 0.46, 0.44]])
    names = {n: tree.node_names[n] for n in range(tree.num_nodes)}
    assert names[decode(probs, tree, "leaf")[0]] == "cat"
    assert names[decode(probs, tree, "threshold:0.5")[0]] == "animal"
    assert names[decode(probs, tree, "plurality")[0]] == "cat"        # 0.46 > every family's second, 0.44
    assert names[decode(np.array([[0.05, 0.05, 0.45, 0.45]]), tree, "plurality")[0]] == "animal"  # a tie: no child
    assert names[decode(probs, tree, "optimal:hf1")[0]] == "cat"      # 0.46·1 + 0.44·0.5 beats 0.9·(2/3)


@pytest.mark.parametrize("name, fragment", [
    ("threshold:1.5", "in [0, 1]"), ("threshold:-0.1", "in [0, 1]"), ("threshold:x", "in [0, 1]"),
    ("threshold", "needs a threshold"), ("nearest", "unknown decoding rule 'nearest'"),
    ("optimal:height", "unknown node metric 'height'"), ("optimal:hf:0", "β must be a positive"),
    ("optimal:hf:-1", "unknown node metric"), ("optimal:mistake_severity", "not a mean over the samples"),
    ("leaf:2", "takes no parameter")])
def test_bad_rules_are_one_line(name, fragment):
    with pytest.raises(ConfigError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        rule(name)


def test_every_default_rule_is_a_rule_once():
    names = [rule(name).name for name in DEFAULT_RULES]
    assert len(names) == len(set(names)) and names[0] == "leaf"


# ---------------------------------------------------------------------- operating curves
def _curves(tree, probs, targets, blocks: int = 2) -> OperatingCurves:
    layout = layout_of(tree)
    curves = OperatingCurves(layout)
    for part, part_targets in zip(np.array_split(probs, blocks), np.array_split(targets, blocks)):
        curves.update(NodeBlock(layout, part), part_targets)
    return curves


@pytest.mark.parametrize("dyadic", [False, True], ids=["continuous", "dyadic ties"])
@given(tree=trees(max_leaves=12), seed=st.integers(0, 2**31 - 1), ts=st.lists(st.floats(0, 1), min_size=1,
                                                                                 max_size=8))
@SETTINGS(50)
def test_a_curve_at_any_threshold_is_decoding_at_that_threshold(dyadic, tree, seed, ts):
    probs = _probabilities(tree, seed, rows=9, dyadic=dyadic)
    targets = np.random.default_rng(seed).integers(0, tree.num_leaves, len(probs))
    curves = _curves(tree, probs, targets)
    layout = layout_of(tree)
    for rule_name in OperatingCurves.RULES:
        table = curves.table(rule_name)
        assert table["threshold"].iloc[0] == 1.0 and (np.diff(table["threshold"]) < 0).all()
        for t in [*ts, 0.0, 1.0, *table["threshold"]]:
            if dyadic:
                t = round(t * 64) / 64
            row = table[table["threshold"] >= t].iloc[-1]
            nodes = decode(probs, tree, f"{rule_name}:{t!r}")
            comparison = compare(layout, nodes, targets)
            for name in CURVE_METRICS:
                assert row[name] == pytest.approx(node_metric(name).value(comparison).mean(), abs=1e-12), (rule_name, t)


def test_a_curve_starts_at_the_root_and_ends_at_the_most_probable_deepest_node():
    tree = appendix_a()
    probs = np.array([[0.1, 0.2, 0.3, 0.4], [0.7, 0.1, 0.1, 0.1]])
    table = _curves(tree, probs, np.array([3, 1]), blocks=1).table("threshold")
    # t = 1: the root for both (correct, no recall); 0.8 and 0.7: fruit, then animal (0.7) for the
    # first; 0.7 the apple for the second; 0.4 the dog, right for the first
    assert table["threshold"].tolist() == pytest.approx([1.0, 0.8, 0.7, 0.4])
    assert table["correct"].tolist() == [1.0, 1.0, 0.5, 0.5]
    assert table["depth_recall"].tolist() == [0.0, 0.25, 0.5, 0.75]


def test_summaries_follow_valmadres_integral_and_intercept():
    table = pd.DataFrame({"threshold": [1.0, 0.6, 0.3], "correct": [1.0, 0.9, 0.6],
                          "depth_recall": [0.0, 0.5, 0.8], "info_recall": [0.0, 0.4, 0.9]})
    summary = curve_summary(table)
    assert summary["auc_depth"] == pytest.approx(0.5 * 0.9 + 0.3 * 0.6)     # 0 → 0.5 at 0.9, 0.5 → 0.8 at 0.6
    assert summary["auc_info"] == pytest.approx(0.4 * 0.9 + 0.5 * 0.6)
    assert summary["depth_recall_at_90"] == 0.5 and summary["depth_recall_at_95"] == 0.0
    assert area_under([0.5, 0.2], [0.5, 0.9]) == pytest.approx(0.2 * 0.9 + 0.3 * 0.5)
    assert recall_at([0.95, 0.97], [0.3, 0.2], 0.95) == 0.3


# ---------------------------------------------------------------------- streamed
@pytest.mark.parametrize("tree", [appendix_a(), unbalanced()], ids=["appendix_a", "unbalanced"])
def test_streamed_decisions_are_the_means_of_the_samples_metrics(tree):
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(90, tree.num_leaves)) * 2
    targets = rng.integers(0, tree.num_leaves, 90)
    rules = ["leaf", "top-down", "crm", "threshold:0.7", "info-threshold:0.3", "plurality", "optimal:hf:2"]
    whole = HierarchicalMetrics(tree, rules=rules)
    halves = HierarchicalMetrics(tree, rules=rules), HierarchicalMetrics(tree, rules=rules)
    for lo, hi in ((0, 7), (7, 50), (50, 90)):
        whole.update(logits[lo:hi], targets[lo:hi])
        halves[lo >= 50].update(logits[lo:hi], targets[lo:hi])
    merged = halves[0].merge(halves[1]).compute()["decisions"]
    got = whole.compute()["decisions"]
    probs = np.exp(logits - logits.max(1, keepdims=True))
    probs /= probs.sum(1, keepdims=True)
    layout = layout_of(tree)
    for name in rules:
        comparison = compare(layout, decode(probs, tree, name), targets)
        for metric in [*NODE_METRICS, "hf:2"]:
            values = node_metric(metric).value(comparison)
            if metric == "mistake_severity":
                values = values[~comparison.correct]
            assert got[name][metric] == pytest.approx(values.mean(), abs=1e-12, nan_ok=True), (name, metric)
            assert merged[name][metric] == pytest.approx(got[name][metric], abs=1e-12, nan_ok=True)


def test_predicted_classes_alone_give_the_leaf_rule_and_say_why_not_the_others():
    tree = appendix_a()
    metrics = HierarchicalMetrics(tree, rules=["leaf", "threshold:0.5"])
    metrics.update_labels(np.array([0, 2, 3]), np.array([0, 3, 3]))
    result = metrics.compute()
    assert result["decisions"]["leaf"]["exact"] == pytest.approx(2 / 3)
    assert result["decisions"]["leaf"]["mistake_severity"] == 1.0
    assert np.isnan(result["decisions"]["threshold:0.5"]["correct"])
    assert "no probabilities" in result["unavailable"]["decisions.threshold:0.5"]
    with pytest.raises(ValueError, match="same decoding rules"):
        metrics.merge(HierarchicalMetrics(tree, rules=["leaf"]))
