"""Hierarchical precision/recall/F1: a worked example by hand and brute-force ancestor sets."""

from __future__ import annotations

import numpy as np
import pytest

from hseval.metrics import hierarchical_prf
from tests.helpers import fashion_tree, flat_tree, random_tree, unbalanced
from tests.metric_tester import brute_prf


def test_worked_three_level_example_on_fashion_mnist():
    tree = fashion_tree()
    idx = tree.index
    # sample             Y (truth, root excluded)     Ŷ (prediction)              |Y| |Ŷ| |Ŷ∩Y|
    # Coat  as Shirt     {clothing, tops, Coat}       {clothing, tops, Shirt}      3   3   2
    # Bag   as Bag       {Bag}                        {Bag}                        1   1   1
    # Trouser as Coat    {clothing, Trouser}          {clothing, tops, Coat}       2   3   1
    # Sandal as Sneaker  {footwear, Sandal}           {footwear, Sneaker}          2   2   1
    # sums                                                                         8   9   5
    # hP = 5/9, hR = 5/8, hF = 2·(5/9)(5/8) / (5/9 + 5/8) = (50/72) / (85/72) = 10/17
    target = [idx("Coat"), idx("Bag"), idx("Trouser"), idx("Sandal")]
    pred = [idx("Shirt"), idx("Bag"), idx("Coat"), idx("Sneaker")]
    assert hierarchical_prf(pred, target, tree) == pytest.approx({"precision": 5 / 9, "recall": 5 / 8, "f1": 10 / 17})


@pytest.mark.parametrize("seed", range(5))
def test_random_predictions_match_brute_force_sets(seed):
    tree = random_tree(20, seed) if seed else unbalanced()
    rng = np.random.default_rng(seed)
    target = rng.integers(0, tree.num_leaves, 100)
    pred = np.where(rng.random(100) < 0.3, target, rng.integers(0, tree.num_leaves, 100))
    assert hierarchical_prf(pred, target, tree) == pytest.approx(brute_prf(pred, target, tree))


def test_edge_cases():
    tree = fashion_tree()
    assert hierarchical_prf(np.arange(10), np.arange(10), tree) == {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    assert all(np.isnan(v) for v in hierarchical_prf([], [], tree).values())
    # every prediction in another top-level branch: no overlap, F1 = 0 rather than 0/0
    assert hierarchical_prf([tree.index("Bag")], [tree.index("Coat")], tree) == {"precision": 0.0, "recall": 0.0,
                                                                                 "f1": 0.0}
    # with all classes at depth 1, the hierarchical scores are the accuracy
    got = hierarchical_prf([0, 1, 2, 0], [0, 1, 1, 2], flat_tree(3))
    assert got == pytest.approx({"precision": 0.5, "recall": 0.5, "f1": 0.5})
