"""Hierarchy: the paper's Appendix A, paths and depths, LCAs against brute force, transforms."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings

from hseval.errors import HierarchyError
from hseval.hierarchies import merge_single_child_chains, random_hierarchy
from hseval.hierarchy import Hierarchy
from tests.conftest import FIXTURES, appendix_a, fashion_tree, trees, unbalanced

PAPER_H = {  # Appendix A, rows in the paper's order of P, columns in the order of L
    "fruit": [1, 1, 0, 0], "animal": [0, 0, 1, 1], "apple": [1, 0, 0, 0],
    "orange": [0, 1, 0, 0], "cat": [0, 0, 1, 0], "dog": [0, 0, 0, 1],
}


def test_appendix_a_gives_exactly_the_papers_H():
    tree = appendix_a()
    H = tree.H.toarray()
    assert H.shape == (6, 4)
    assert tree.leaf_names == ("apple", "orange", "cat", "dog")
    for name, row in PAPER_H.items():
        assert H[tree.index(name)].tolist() == row
    assert (tree.num_leaves, tree.num_nodes, tree.max_depth) == (4, 6, 2)


def test_fashion_mnist_tree_shape():
    tree = fashion_tree()
    assert (tree.num_leaves, tree.num_nodes, tree.max_depth) == (10, 13, 3)
    assert tree.nodes_per_depth == [3, 6, 4]
    assert tree.path_names(tree.index("Coat")) == ("clothing", "tops", "Coat")
    assert tree.path_names(tree.index("Bag")) == ("Bag",)
    assert tree.leaf_names[0] == "T-shirt/top"


def test_canonical_order_leaves_first_then_superclasses_by_depth():
    tree = unbalanced()
    assert tree.leaf_names == ("x", "y", "z", "w", "v")
    assert list(tree.depth[tree.num_leaves:]) == sorted(tree.depth[tree.num_leaves:])
    assert tree.parents[tree.index("y")] == tree.index("c")
    assert tree.parents[tree.index("a")] == -1


@settings(max_examples=50, deadline=None)
@given(tree=trees())
def test_paths_depths_and_matrices_agree(tree):
    A = tree.ancestor_matrix.toarray()
    for node in range(tree.num_nodes):
        path = tree.path(node)
        assert path[-1] == node and len(path) == tree.depth[node]
        assert all(tree.parents[path[k + 1]] == path[k] for k in range(len(path) - 1))
        assert tree.parents[path[0]] == -1
        assert set(np.flatnonzero(A[:, node])) == set(path)
    np.testing.assert_array_equal(tree.H.toarray(), A[:, : tree.num_leaves])
    assert sum(tree.nodes_per_depth) == tree.num_nodes
    leaves_below = [set(tree.subtree_leaves(n).tolist()) for n in range(tree.num_nodes)]
    for node in range(tree.num_nodes):
        assert leaves_below[node] == {j for j in range(tree.num_leaves) if node in tree.path(j)}


def _brute_lca(tree, a, b):
    pa, pb = tree.path(a), tree.path(b)
    common = [x for x, y in zip(pa, pb) if x == y]
    return common[-1] if common else -1


@settings(max_examples=50, deadline=None)
@given(tree=trees(max_leaves=15))
def test_lca_and_tree_distance_match_brute_force(tree):
    pairs = np.array(list(itertools.product(range(tree.num_nodes), repeat=2)))
    lca = tree.lca(pairs[:, 0], pairs[:, 1])
    dist = tree.tree_distance(pairs[:, 0], pairs[:, 1])
    for (a, b), got, d in zip(pairs, lca, dist):
        want = _brute_lca(tree, a, b)
        assert got == want
        want_depth = 0 if want < 0 else tree.depth[want]
        assert d == tree.depth[a] + tree.depth[b] - 2 * want_depth


def test_ancestor_at_depth_pads_shallow_nodes():
    tree = fashion_tree()
    got = tree.ancestor_at_depth([tree.index("Coat"), tree.index("Bag"), tree.index("Trouser")], 2)
    assert got.tolist() == [tree.index("tops"), -1, tree.index("Trouser")]


def test_to_dict_round_trip_and_equality(small_tree):
    again = Hierarchy.from_dict(small_tree.to_dict())
    assert again == small_tree and hash(again) == hash(small_tree)


def test_arrays_are_read_only():
    tree = fashion_tree()
    with pytest.raises(ValueError):
        tree.parents[0] = 3
    with pytest.raises(ValueError):
        tree.depth[0] = 3


@pytest.mark.parametrize(("names", "parents", "leaves", "message"), [
    (["a", "b"], [1, 0], 1, r"cycle through node"),
    (["a", "b", "c"], [2, 2, 1], 1, r"cycle through node"),
    (["a", "a", "r"], [2, 2, -1], 2, r"two nodes are called 'a'"),
    (["a", "b"], [-1], 1, r"2 node names but 1 parent"),
    (["a", "b", "s"], [2, 0, -1], 2, r"class 'a' has children"),
    (["a", "s", "t"], [1, -1, -1], 1, r"leaf 't' is not a dataset class"),
    (["a", "b"], [-1, 7], 1, r"parent index 7, outside -1..1"),
    (["a\tb"], [-1], 1, r"empty or holds a tab or line break"),
    (["a"], [-1], 0, r"num_leaves=0 must be between 1"),
])
def test_constructor_rejects_bad_trees(names, parents, leaves, message):
    with pytest.raises(HierarchyError, match=message):
        Hierarchy(names, parents, leaves)


def test_a_million_node_chain_is_refused_quickly():
    n = 1_000_000
    with pytest.raises(HierarchyError, match=r"levels deep \(limit 1000\)"):
        Hierarchy([f"n{i}" for i in range(n)], [i + 1 for i in range(n - 1)] + [-1], 1)


@pytest.mark.parametrize(("edges", "classes", "message"), [
    ([("r", "a"), ("s", "a")], None, r"node 'a' has two parents \('r' and 's'\)"),
    ([("r", "a"), ("s", "b")], None, r"2 roots \('r', 's'\)"),
    ([("a", "b"), ("b", "a")], None, r"every node has a parent, so the edges contain a cycle"),
    ([("a", "a")], None, r"node 'a' is its own parent"),
    ([("r", "a"), ("r", "b")], ["a", "c"], r"class 'c' is not in the hierarchy"),
    ([("r", "a"), ("a", "b")], ["a"], r"class 'a' is an internal node of the hierarchy"),
    ([("r", "a"), ("r", "b")], ["a"], r"leaf 'b' is not a dataset class"),
])
def test_from_edges_rejects_bad_inputs(edges, classes, message):
    with pytest.raises(HierarchyError, match=message):
        Hierarchy.from_edges(edges, classes=classes)


def test_natural_leaf_order_without_classes():
    tree = Hierarchy.from_edges([("r", "n10"), ("r", "n9"), ("r", "n100")])
    assert tree.leaf_names == ("n9", "n10", "n100")


# ------------------------------------------------------------------ transforms
def test_merge_single_child_chains():
    chain = Hierarchy.from_paths([("r1", "r2", "x"), ("r1", "r2", "y"), ("s", "t", "u", "z"), ("s", "q")])
    merged = merge_single_child_chains(chain)
    # r1 has one child (r2), t one child (u), u one child (z): all three go
    assert merged.path_names(merged.index("z")) == ("s", "z")
    assert merged.path_names(merged.index("x")) == ("r2", "x")
    assert merged.num_leaves == 4 and merged.leaf_names == chain.leaf_names
    assert merge_single_child_chains(unbalanced()) == unbalanced()  # no super-class with a single child


def test_merge_removes_lone_child_of_root_and_is_idempotent():
    tree = Hierarchy.from_paths([("top", "a", "x"), ("top", "a", "y"), ("top", "b", "z"), ("top", "b", "w")])
    merged = merge_single_child_chains(tree)
    assert "top" not in merged.node_names and merged.max_depth == 2
    assert merge_single_child_chains(merged) == merged


def test_merge_on_nbdt_wordnet_tree_keeps_it_unchanged():
    """NBDT's WordNet trees already had their single-child nodes removed."""
    tree = Hierarchy.read(FIXTURES / "hierarchies" / "TinyImagenet200_graph-wordnet.json")
    assert merge_single_child_chains(tree) == tree


def test_random_hierarchy_keeps_shape_and_shuffles_leaves():
    tree = Hierarchy.read(FIXTURES / "hierarchies" / "cifar.parent-child.txt")
    shuffled = random_hierarchy(tree, seed=3)
    assert shuffled.leaf_names == tree.leaf_names
    assert shuffled.nodes_per_depth == tree.nodes_per_depth
    assert sorted(np.bincount(shuffled.parents[shuffled.parents >= 0])) == \
        sorted(np.bincount(tree.parents[tree.parents >= 0]))
    assert (shuffled.parents[: tree.num_leaves] != tree.parents[: tree.num_leaves]).mean() > 0.5
    assert random_hierarchy(tree, seed=3) == shuffled and random_hierarchy(tree, seed=4) != shuffled
