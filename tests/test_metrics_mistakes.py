"""Making-Better-Mistakes metrics: distances against a brute-force walk of the paths and worked
examples by hand; top-k averages against direct loops."""

from __future__ import annotations

import lzma

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hseval.metrics import (
    avg_hierarchical_distance_at_k,
    best_hierarchical_distance_at_k,
    hierarchical_distance,
    mistake_metrics,
    mistake_severity,
    topk_predictions,
)
from hseval.tree import read_hierarchy
from tests.helpers import FIXTURES, examples, fashion_tree, flat_tree, random_tree, trees, unbalanced
from tests.metric_tester import brute_distance


@settings(max_examples=examples(40), deadline=None)
@given(tree=trees(), seed=st.integers(0, 2**16))
def test_hierarchical_distance_matches_a_walk_of_the_paths(tree, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, tree.num_nodes, (2, 25))
    got = hierarchical_distance(a, b, tree)
    assert got.tolist() == [brute_distance(tree, x, y) for x, y in zip(a, b)]
    lca = tree.lca(a, b)
    depth_of_lca = np.where(lca >= 0, tree.depth[np.maximum(lca, 0)], 0)
    one_above_the_other = (lca == a) | (lca == b)  # counted from the upper one's parent
    np.testing.assert_array_equal(got, np.where(a == b, 0, tree.max_depth - depth_of_lca + one_above_the_other))
    leaves = rng.integers(0, tree.num_leaves, (2, 25))
    wrong = leaves[0] != leaves[1]
    assert np.all(hierarchical_distance(*leaves, tree)[wrong] >= 1)


def test_every_pair_of_nodes_agrees_with_making_better_mistakes_distance_file():
    """The authors' tieredImageNet distances, all 355,746 pairs of its 843 nodes (issue 24: a node
    and one of its ancestors came out one less, 11 against 12)."""
    tree = read_hierarchy(FIXTURES / "hierarchies" / "tiered_imagenet_isa.txt")
    with lzma.open(FIXTURES / "hierarchies" / "tiered_imagenet_ilsvrc_distances.txt.xz", "rt") as f:
        rows = np.array(f.read().split()).reshape(-1, 3)
    assert len(rows) == 843 * 844 // 2
    at_root = (rows[:, 0] == tree.root_name) | (rows[:, 1] == tree.root_name)  # hseval's nodes exclude the root
    assert set(rows[at_root & (rows[:, 0] != rows[:, 1]), 2].tolist()) == {str(tree.max_depth)}
    a, b = (np.array([tree.index(n) for n in rows[~at_root, k]]) for k in (0, 1))
    got = hierarchical_distance(a, b, tree)
    np.testing.assert_array_equal(got, rows[~at_root, 2].astype(int))
    ancestor = tree.index("n00002684")  # object, depth 1, above the class n01440764 (tench)
    assert hierarchical_distance([ancestor], [tree.index("n01440764")], tree).tolist() == [12]


@pytest.mark.parametrize(("pred", "target", "distance"), [
    ("Shirt", "Coat", 1),     # LCA tops, depth 2, H = 3
    ("Trouser", "Coat", 2),   # LCA clothing, depth 1
    ("Sandal", "Coat", 3),    # LCA the root
    ("Coat", "Bag", 3),       # Bag hangs from the root
    ("Bag", "Bag", 0),        # correct: 0, though H - depth(Bag) = 2
    ("Sneaker", "Sandal", 2),
])
def test_worked_distances_on_fashion_mnist(pred, target, distance):
    tree = fashion_tree()
    assert tree.max_depth == 3
    assert hierarchical_distance([tree.index(pred)], [tree.index(target)], tree).tolist() == [distance]


@pytest.mark.parametrize(("pred", "target", "distance"), [
    ("y", "v", 1),   # a/b/c/y vs a/b/c/v: LCA c, depth 3, H = 4
    ("w", "y", 2),   # LCA b
    ("x", "y", 3),   # LCA a
    ("z", "x", 4),   # z is a child of the root
    ("z", "z", 0),   # a correct depth-1 leaf costs 0
    ("x", "x", 0),
])
def test_worked_distances_on_the_unbalanced_tree(pred, target, distance):
    tree = unbalanced()
    assert hierarchical_distance([tree.index(pred)], [tree.index(target)], tree).tolist() == [distance]


def test_mistake_severity_by_hand():
    tree = fashion_tree()
    idx = tree.index
    pred = [idx("Shirt"), idx("Sandal"), idx("Coat"), idx("Trouser")]
    target = [idx("Coat"), idx("Coat"), idx("Bag"), idx("Trouser")]
    assert mistake_severity(pred, target, tree) == pytest.approx((1 + 3 + 3) / 3)  # the correct one is left out
    assert np.isnan(mistake_severity(target, target, tree))
    assert np.isnan(mistake_severity([], [], tree))


@pytest.mark.parametrize("seed", range(3))
def test_topk_distances_match_direct_loops(seed):
    tree = random_tree(15, seed)
    rng = np.random.default_rng(seed)
    scores, target = rng.normal(size=(60, 15)), rng.integers(0, 15, 60)
    top = topk_predictions(scores, 20)
    for k in (1, 3, 15):
        rows = [[brute_distance(tree, p, t) for p in top[i, :k]] for i, t in enumerate(target)]
        average, best = np.mean([np.mean(r) for r in rows]), np.mean([min(r) for r in rows])
        assert avg_hierarchical_distance_at_k(top, target, tree, k) == pytest.approx(average)
        assert best_hierarchical_distance_at_k(top, target, tree, k) == pytest.approx(best)
    got = mistake_metrics(scores, target, tree, ks=(1, 3))
    wrong = [brute_distance(tree, p, t) for p, t in zip(top[:, 0], target) if p != t]
    assert got == pytest.approx({"mistake_severity": np.mean(wrong),
                                 "avg_hdist@1": avg_hierarchical_distance_at_k(top, target, tree, 1),
                                 "best_hdist@1": avg_hierarchical_distance_at_k(top, target, tree, 1),
                                 "avg_hdist@3": avg_hierarchical_distance_at_k(top, target, tree, 3),
                                 "best_hdist@3": best_hierarchical_distance_at_k(top, target, tree, 3)})


def test_k_larger_than_the_number_of_classes_is_capped():
    tree = unbalanced()  # 5 classes
    rng = np.random.default_rng(0)
    scores, target = rng.normal(size=(30, 5)), rng.integers(0, 5, 30)
    got = mistake_metrics(scores, target, tree, ks=(1, 5, 20))
    assert got["avg_hdist@20"] == got["avg_hdist@5"]
    assert got["best_hdist@20"] == got["best_hdist@5"] == 0.0  # every class is in the list
    top = topk_predictions(scores, 3)
    with pytest.raises(ValueError, match=r"k=5 but topk_pred holds only 3 predictions per sample"):
        avg_hierarchical_distance_at_k(top, target, tree, 20)


def test_edge_cases_empty_input_and_flat_tree():
    tree = fashion_tree()
    got = mistake_metrics(np.zeros((0, 10)), [], tree)
    assert set(got) == {"mistake_severity", *(f"{m}_hdist@{k}" for m in ("avg", "best") for k in (1, 5, 20))}
    assert all(np.isnan(v) for v in got.values())
    flat = flat_tree(3)  # H = 1: every mistake costs 1
    assert hierarchical_distance([0, 1, 2], [0, 2, 1], flat).tolist() == [0, 1, 1]


def test_bad_input_is_refused_with_a_message():
    tree = fashion_tree()
    with pytest.raises(ValueError, match=r"scores has 9 columns but the hierarchy has 10 classes"):
        mistake_metrics(np.zeros((2, 9)), [0, 1], tree)
    with pytest.raises(ValueError, match=r"pred of shape \(2, 3\) and target of shape \(2,\) do not broadcast; "
                                         r"for top-k predictions \(N, k\) pass target\[:, None\]"):
        hierarchical_distance(np.zeros((2, 3), dtype=int), np.zeros(2, dtype=int), tree)
    with pytest.raises(ValueError, match="scores holds NaN or infinite values"):
        mistake_metrics(np.full((1, 10), np.nan), [0], tree)
