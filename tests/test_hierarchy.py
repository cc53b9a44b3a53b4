"""Hierarchy: the paper's Appendix A, paths and depths, LCAs against brute force, transforms."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hseval.core.errors import HierarchyError
from hseval.tree import read_hierarchy
from hseval.tree.builders import merge_single_child_chains, random_hierarchy
from hseval.tree.hierarchy import Hierarchy
from hseval.tree.naming import natural_key
from tests.helpers import FIXTURES, appendix_a, examples, fashion_tree, trees, unbalanced

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


@settings(max_examples=examples(50), deadline=None)
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


@settings(max_examples=examples(50), deadline=None)
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


def reference_natural_key(name: str) -> tuple:
    """The key as it was, for ASCII digits (int() of each digit run)."""
    import re

    return tuple((0, int(tok), "") if tok.isdigit() else (1, 0, tok) for tok in re.split(r"(\d+)", name) if tok)


@settings(max_examples=examples(300), deadline=None)
@given(names=st.lists(st.text(alphabet="ab0123456789 _-.", min_size=1, max_size=8), min_size=1, max_size=20))
def test_natural_sort_orders_as_before(names):
    assert sorted(names, key=natural_key) == sorted(names, key=reference_natural_key)


def test_natural_key_takes_any_digits():
    """int() refused '²' (str.isdigit but not a decimal) and digit runs past 4300 digits."""
    names = ["x²", "²", "1" * 5000, "2" * 4999, "٣", "n٣", "n10", "n2"]
    assert sorted(names, key=natural_key) == ["٣", "2" * 4999, "1" * 5000, "n2", "n٣", "n10", "x²", "²"]


def test_from_paths_messages_name_the_first_problem():
    with pytest.raises(HierarchyError, match=r"^paths: the path 'a' is given twice$"):
        Hierarchy.from_paths([("a",), ("b",), ("b",), ("a",)])
    with pytest.raises(HierarchyError, match=r"^paths: class 'x/y' is also a super-class of another class"):
        Hierarchy.from_paths([("x", "y", "z"), ("x", "y"), ("a",), ("a", "b")])
    with pytest.raises(HierarchyError, match=r"^f.txt: node name 'a\\tb' is empty or holds a tab or line break"):
        Hierarchy.from_paths([("a\tb",)], source="f.txt")


def test_from_paths_names_shared_names_by_their_paths_within_a_limit(monkeypatch):
    import hseval.tree.node_lists as node_lists

    paths = [("a", "x"), ("b", "x"), ("c", "root", "y")]  # 'x' twice, and 'root' is the root's name
    assert Hierarchy.from_paths(paths).node_names == ("a/x", "b/x", "y", "a", "b", "c", "c/root")
    monkeypatch.setattr(node_lists, "MAX_JOINED_NAMES", 11)
    with pytest.raises(HierarchyError, match=r"^paths: 3 nodes share their names with other nodes, and naming them by "
                                             r"their paths would take 12 characters \(limit 11\); give the nodes "
                                             r"distinct names$"):
        Hierarchy.from_paths(paths)


@settings(max_examples=examples(200), deadline=None)
@given(parents=st.lists(st.integers(-1, 11), min_size=1, max_size=12))
def test_depths_and_cycles_match_a_walk_up_the_tree(parents):
    """Depths by pointer doubling against walking up each node; a cycle is named by a node on it."""
    n = len(parents)
    parents = [p if p < n else -1 for p in parents]
    names = [f"n{i}" for i in range(n)]
    leaves = [i for i in range(n) if i not in parents]
    on_cycle = set()
    for start in range(n):
        seen, node = [], start
        while node >= 0 and node not in seen:
            seen.append(node)
            node = parents[node]
        if node >= 0:
            on_cycle.update(seen[seen.index(node):])
    order = leaves + [i for i in range(n) if i in parents]  # leaves first, as the constructor wants
    position = {old: k for k, old in enumerate(order)}
    renumbered = [position[parents[old]] if parents[old] >= 0 else -1 for old in order]
    if not leaves:
        return
    try:
        tree = Hierarchy([names[i] for i in order], renumbered, len(leaves))
    except HierarchyError as exc:
        assert on_cycle and any(str(exc).endswith(f"cycle through node {names[i]!r}") for i in on_cycle)
        return
    assert not on_cycle
    for old in order:
        depth, node = 0, old
        while node >= 0:
            depth, node = depth + 1, parents[node]
        assert tree.depth[tree.index(names[old])] == depth


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
    tree = read_hierarchy(FIXTURES / "hierarchies" / "TinyImagenet200_graph-wordnet.json")
    assert merge_single_child_chains(tree) == tree


def test_random_hierarchy_keeps_shape_and_shuffles_leaves():
    tree = read_hierarchy(FIXTURES / "hierarchies" / "cifar.parent-child.txt")
    shuffled = random_hierarchy(tree, seed=3)
    assert shuffled.leaf_names == tree.leaf_names
    assert shuffled.nodes_per_depth == tree.nodes_per_depth
    assert sorted(np.bincount(shuffled.parents[shuffled.parents >= 0])) == \
        sorted(np.bincount(tree.parents[tree.parents >= 0]))
    assert (shuffled.parents[: tree.num_leaves] != tree.parents[: tree.num_leaves]).mean() > 0.5
    assert random_hierarchy(tree, seed=3) == shuffled and random_hierarchy(tree, seed=4) != shuffled


@given(data=st.data())
@settings(max_examples=examples(30), deadline=None)
def test_reorder_leaves_permutes_the_leaves_only(data):
    """Any order of the classes gives the same tree (each class keeps its path of names), the
    super-classes keep their numbering, and the order the tree has already returns the tree itself."""
    tree = data.draw(trees())
    classes = data.draw(st.permutations(list(tree.leaf_names)))
    reordered = tree.reorder_leaves(classes)
    assert list(reordered.leaf_names) == classes
    assert reordered.node_names[tree.num_leaves:] == tree.node_names[tree.num_leaves:]
    for name in classes:
        assert reordered.path_names(reordered.index(name)) == tree.path_names(tree.index(name))
    assert tree.reorder_leaves(list(tree.leaf_names)) is tree
    assert reordered.reorder_leaves(list(tree.leaf_names)) == tree


def test_reorder_leaves_names_the_class_list_it_refuses():
    tree = fashion_tree()
    leaves = list(tree.leaf_names)
    with pytest.raises(HierarchyError, match=r"^list\.txt: class 'Bag' is listed twice"):
        tree.reorder_leaves([*leaves[:-1], "Bag", "Bag"][: len(leaves)], source="list.txt")
    with pytest.raises(HierarchyError, match=r"^list\.txt: class 'Shoes' is not a leaf"):
        tree.reorder_leaves(["Shoes", *leaves[1:]], source="list.txt")
