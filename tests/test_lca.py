"""The table of LCA depths against the ancestor-row comparison and brute-force ancestor sets."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hseval.tree.ancestry as ancestry
from hseval.metrics import hierarchical_prf
from hseval.tree.ancestry import LCA_TABLE_MAX_BYTES, lca_depth_by_rows
from hseval.tree.hierarchy import Hierarchy
from tests.helpers import examples, trees, unbalanced


def brute_lca_depth(tree: Hierarchy, a: int, b: int) -> int:
    """The number of common ancestors-or-self, from Python sets of parent-link walks."""
    def ancestors(node):
        out = set()
        while node >= 0:
            out.add(int(node))
            node = tree.parents[node]
        return out

    return len(ancestors(a) & ancestors(b))


def wide_tree(num_nodes: int, seed: int = 0, *, max_depth: int = 5) -> Hierarchy:
    """A random tree of exactly ``num_nodes`` nodes, leaves at several depths, in linear time: node k
    (k >= 1) hangs under a random earlier node that is not too deep; nodes without children are the
    leaves."""
    rng = np.random.default_rng(seed)
    parent = np.full(num_nodes, -1, dtype=np.int64)
    depth = np.ones(num_nodes, dtype=np.int64)
    for k in range(1, num_nodes):
        p = int(rng.integers(-1, k))
        while p >= 0 and depth[p] >= max_depth:
            p = int(parent[p])
        parent[k] = p
        depth[k] = depth[p] + 1 if p >= 0 else 1
    has_child = np.zeros(num_nodes, dtype=bool)
    has_child[parent[parent >= 0]] = True
    order = np.concatenate([np.flatnonzero(~has_child), np.flatnonzero(has_child)])  # leaves first
    new = np.empty(num_nodes, dtype=np.int64)
    new[order] = np.arange(num_nodes)
    parents = np.where(parent[order] >= 0, new[np.maximum(parent[order], 0)], -1)
    return Hierarchy([f"n{k}" for k in range(num_nodes)], parents, int((~has_child).sum()))


@settings(max_examples=examples(60), deadline=None)
@given(tree=trees(max_leaves=40), data=st.data())
def test_table_equals_row_comparison_on_random_trees(tree, data):
    n = tree.num_nodes
    table = tree.lca_depth_table
    assert table is not None and table.shape == (n, n) and not table.flags.writeable
    every = np.arange(n)
    rows = lca_depth_by_rows(tree.ancestor_table, every[:, None], every[None, :])
    np.testing.assert_array_equal(table, rows)
    np.testing.assert_array_equal(table, table.T)
    np.testing.assert_array_equal(np.diag(table), tree.depth)
    # any nodes, broadcasting shapes, scalars
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    for shape_a, shape_b in [((7,), (7,)), ((5, 3), (5, 1)), ((4, 1), (1, 6)), ((), (9,)), ((), ()), ((0,), (0,))]:
        a = rng.integers(0, n, shape_a)
        b = rng.integers(0, n, shape_b)
        got = tree.lca_depth(a, b)
        want = lca_depth_by_rows(tree.ancestor_table, a, b)
        assert got.dtype == np.int64 and got.shape == want.shape == np.broadcast_shapes(shape_a, shape_b)
        np.testing.assert_array_equal(got, want)
    a, b = data.draw(st.integers(0, n - 1)), data.draw(st.integers(0, n - 1))
    assert tree.lca_depth(a, b) == brute_lca_depth(tree, a, b)
    assert tree.lca_depth([a], [b]).tolist() == [brute_lca_depth(tree, a, b)]


def test_lists_negative_and_outside_indices_behave_as_before():
    tree = unbalanced()
    n = tree.num_nodes
    a, b = [0, 1, -1], [-2, 1, 3]
    assert tree.lca_depth(a, b).tolist() == lca_depth_by_rows(tree.ancestor_table, a, b).tolist()
    for a, b in [([n], [0]), ([0], [n]), ([-n - 1], [0])]:
        with pytest.raises(IndexError):
            tree.lca_depth(a, b)


def test_table_is_cached_and_read_only():
    tree = unbalanced()
    assert tree.lca_depth_table is tree.lca_depth_table
    with pytest.raises(ValueError):
        tree.lca_depth_table[0, 0] = 1


def test_a_tree_deeper_than_255_uses_two_byte_depths():
    chain = 300  # leaf "x" at depth 301 under a chain of 300 super-classes, leaf "y" at depth 1
    names = ["x", "y"] + [f"s{k}" for k in range(chain)]
    parents = [2 + chain - 1, -1, -1] + [2 + k for k in range(chain - 1)]
    tree = Hierarchy(names, parents, 2)
    assert tree.max_depth == chain + 1
    assert tree.lca_depth_table.dtype == np.uint16
    every = np.arange(tree.num_nodes)
    np.testing.assert_array_equal(tree.lca_depth(every[:, None], every[None, :]),
                                  lca_depth_by_rows(tree.ancestor_table, every[:, None], every[None, :]))
    assert tree.lca_depth(0, 0) == chain + 1 and tree.tree_distance([0], [1]).tolist() == [chain + 2]


@pytest.mark.parametrize("extra", [0, 1])
def test_trees_at_and_just_above_the_table_limit(extra):
    limit = int(np.sqrt(LCA_TABLE_MAX_BYTES))  # nodes at one byte a pair
    tree = wide_tree(limit + extra, seed=extra)
    assert tree.num_nodes == limit + extra and tree.max_depth > 2
    assert (tree.lca_depth_table is None) == bool(extra)
    rng = np.random.default_rng(extra)
    a = rng.integers(0, tree.num_nodes, 3000)
    b = np.where(rng.random(3000) < 0.5, tree.parents[a], rng.integers(0, tree.num_nodes, 3000))
    b = np.where(b >= 0, b, a)  # near pairs (a node and its parent) as well as random ones
    got = tree.lca_depth(a, b)
    np.testing.assert_array_equal(got, lca_depth_by_rows(tree.ancestor_table, a, b))
    assert got.tolist()[:200] == [brute_lca_depth(tree, x, y) for x, y in zip(a[:200], b[:200])]
    assert len(set(got.tolist())) > 2


@settings(max_examples=examples(30), deadline=None)
@given(tree=trees(max_leaves=40), seed=st.integers(0, 2**32 - 1))
def test_both_paths_give_the_same_hierarchical_prf(tree, seed):
    rng = np.random.default_rng(seed)
    target = rng.integers(0, tree.num_leaves, 50)
    pred = np.where(rng.random(50) < 0.3, target, rng.integers(0, tree.num_leaves, 50))
    with_table = hierarchical_prf(pred, target, tree)
    original = ancestry.LCA_TABLE_MAX_BYTES
    ancestry.LCA_TABLE_MAX_BYTES = 0
    try:
        fresh = Hierarchy(tree.node_names, tree.parents, tree.num_leaves)
        assert fresh.lca_depth_table is None
        without = hierarchical_prf(pred, target, fresh)
    finally:
        ancestry.LCA_TABLE_MAX_BYTES = original
    assert with_table == without
    overlap = sum(brute_lca_depth(tree, p, t) for p, t in zip(pred, target))
    precision = overlap / tree.depth[pred].sum()
    recall = overlap / tree.depth[target].sum()
    assert with_table["precision"] == pytest.approx(precision, abs=1e-12)
    assert with_table["recall"] == pytest.approx(recall, abs=1e-12)
