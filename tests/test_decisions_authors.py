"""The decisions against numbers computed with the two papers' own code (Valmadre, NeurIPS 2022,
jvlmdr/hiercls; Plaud et al., ICML 2025, RomanPlaud/hierarchical_decision_rules), run outside
hseval on an uneven tree with a single-child chain: ``tests/fixtures/peers/README.md`` says what
was run."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hseval.metrics.curves import OperatingCurves, curve_summary, front
from hseval.metrics.decisions import decode
from hseval.metrics.node_metrics import compare, node_metric
from hseval.metrics.nodes import NodeBlock, layout_of
from hseval.tree.hierarchy import Hierarchy
from tests.helpers import FIXTURES

AUTHORS = json.loads((FIXTURES / "peers" / "decisions.json").read_text())
TREE = Hierarchy.from_paths(AUTHORS["paths"])
PROBS = np.asarray(AUTHORS["probs"])
TARGETS = np.array([TREE.index(name) for name in AUTHORS["targets"]])


def _names(nodes) -> list[str]:
    return [TREE.node_names[n] if n >= 0 else "<root>" for n in np.asarray(nodes).tolist()]


@pytest.mark.parametrize("rule, key", [
    ("leaf", "leaf"), ("plurality", "plurality"), ("info-threshold:0.5", "info-threshold:0.5"),
    ("top-down", "top-down"),
    ("info-threshold:0.5", "info-threshold:0.5 (Plaud)"), ("optimal:tree_distance", "optimal:tree_distance"),
    ("optimal:wu_palmer", "optimal:wu_palmer")])
def test_rules_equal_the_authors_code(rule, key):
    assert _names(decode(PROBS, TREE, rule)) == AUTHORS[key]


def test_between_nodes_as_informative_the_info_threshold_takes_the_more_probable():
    """Plaud et al.'s ``ConfidenceThreshold`` takes the first in their node order of the most
    informative nodes above t (at t = 0.3, y before v for the first row); hseval takes the more
    probable, as its threshold rule does between nodes of one depth. Elsewhere they agree."""
    got, theirs = decode(PROBS, TREE, "info-threshold:0.3"), AUTHORS["info-threshold:0.3"]
    p = np.concatenate([np.ones((len(PROBS), 1)), PROBS @ TREE.H.T.toarray()], axis=1)  # the root, then each node
    for row, (ours, their) in enumerate(zip(_names(got), theirs)):
        if ours != their:
            a, b = TREE.index(ours), TREE.index(their)
            assert len(TREE.subtree_leaves(a)) == len(TREE.subtree_leaves(b)) and p[row, 1 + a] > p[row, 1 + b]
    assert sum(o != t for o, t in zip(_names(got), theirs)) == 1


def test_metrics_of_every_node_for_every_class_equal_valmadres_and_plauds():
    layout = layout_of(TREE)
    nodes = [-1, *range(TREE.num_nodes)]
    for class_name in TREE.leaf_names:
        comparison = compare(layout, nodes, [TREE.index(class_name)] * len(nodes))
        for name, table in [*AUTHORS["pairs"].items(), ("tree_distance", AUTHORS["distance"])]:
            got = node_metric(name).value(comparison)
            want = [table[class_name][node] for node in _names(nodes)]
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-12, err_msg=f"{name} of {class_name}")


def test_pareto_fronts_and_the_operating_curve_equal_valmadres():
    layout = layout_of(TREE)
    block = NodeBlock(layout, PROBS)
    rows, _, nodes = front(*block.count_front)
    assert [_names(nodes[rows == k]) for k in range(len(PROBS))] == AUTHORS["info_front"]
    curves = OperatingCurves(layout)
    curves.update(block, TARGETS)
    table = curves.table("info-threshold")
    # his totals: at the start, then after each group of equal breakpoints (his "p > t" is ours at t = the breakpoint)
    for k, tau in enumerate([1.0, *AUTHORS["curve_thresholds"]]):
        row = table[table["threshold"] >= tau - 1e-12].iloc[-1]
        for name, values in AUTHORS["curve"].items():
            assert row[name] == pytest.approx(values[k], abs=1e-12), (tau, name)
    summary = curve_summary(table)
    assert summary["auc_info"] == pytest.approx(AUTHORS["auc_info"], abs=1e-12)
    assert summary["info_recall_at_90"] == pytest.approx(AUTHORS["info_recall_at_90"], abs=1e-12)
