"""Induced trees: class vectors planted from a known tree give that tree back; the command on a
real run and on an evaluated run writes a tree that reads back with the run's classes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hseval.cli.main import main
from hseval.core.errors import ConfigError
from hseval.tree import read_hierarchy
from hseval.tree.hierarchy import Hierarchy
from hseval.tree.induce import default_clusters, induce_tree
from tests.helpers import examples, fashion_tree, random_tree

# names like those induce generates (g<level>.<cluster>, the root, their suffixed forms) among others
GENERATED_LOOKING = ["g1.1", "g1.2", "g1.3", "g2.1", "g2.2", "g2.3", "g3.1", "root", "root_1", "g1.1_1", "g2.1_1"]
class_lists = st.lists(st.one_of(st.sampled_from(GENERATED_LOOKING), st.from_regex(r"[a-z0-9_.]{1,5}", fullmatch=True)),
                       min_size=3, max_size=12, unique=True)


def planted_vectors(tree: Hierarchy, seed: int, dim: int = 64) -> np.ndarray:
    """Each node a random direction; a class vector sums its ancestors' with shrinking weights, so
    classes of one super-class point the same way."""
    rng = np.random.default_rng(seed)
    directions = rng.normal(size=(tree.num_nodes, dim))
    vectors = np.zeros((tree.num_leaves, dim))
    for leaf in range(tree.num_leaves):
        for depth, node in enumerate(tree.path(leaf), start=1):
            vectors[leaf] += directions[node] * 4.0 ** -(depth - 1)
    return vectors


@pytest.mark.parametrize("tree", [fashion_tree(), random_tree(40, 3, max_depth=3, branching=0.3)],
                         ids=["fashion", "random"])
def test_planted_tree_is_recovered(tree):
    """Every super-class of the given tree is a node of the induced one: the same set of classes."""
    induced = induce_tree(planted_vectors(tree, 0), tree.leaf_names, clusters=default_clusters(tree))
    assert induced.leaf_names == tree.leaf_names  # the classes keep their order

    def groups(t: Hierarchy) -> set[frozenset]:  # (a single-child chain groups one class: merged away)
        return {frozenset(t.subtree_leaves(n).tolist()) for n in range(t.num_leaves, t.num_nodes)
                if len(t.subtree_leaves(n)) > 1}

    assert groups(tree) <= groups(induced)


def test_default_cuts_count_the_classes_that_end_higher():
    assert default_clusters(fashion_tree()) == [3, 7]  # clothing, footwear, Bag; then 6 nodes + Bag


def test_no_super_class_has_a_single_child():
    tree = fashion_tree()
    induced = induce_tree(planted_vectors(tree, 1), tree.leaf_names, clusters=[2, 3, 6])
    assert all(len(induced.children[n]) != 1 for n in range(induced.num_leaves, induced.num_nodes))


@pytest.mark.parametrize("clusters, message", [([], "increasing numbers of groups"), ([6, 3], "increasing"),
                                               ([1], "between 2 and 9"), ([10], "between 2 and 9")])
def test_bad_cluster_counts_say_what_is_expected(clusters, message):
    tree = fashion_tree()
    with pytest.raises(ConfigError, match=message):
        induce_tree(planted_vectors(tree, 0), tree.leaf_names, clusters=clusters)


def test_the_command_on_a_run_and_on_an_evaluated_run(evaluated, tmp_path, capsys):
    run = evaluated.parent / "runs" / "riemann"
    assert main(["hierarchy", "induce", str(run), "--out", str(tmp_path / "a.txt")]) == 0
    assert "wrote" in capsys.readouterr().out
    from hseval.io.results import read_run

    a = read_hierarchy(tmp_path / "a.txt")
    assert a.leaf_names == read_run(evaluated / "riemann").hierarchy.leaf_names  # the run's classes, in order
    assert main(["hierarchy", "induce", str(evaluated / "plain"), "--out", str(tmp_path / "b.json"),
                 "--clusters", "2,4"]) == 0
    b = read_hierarchy(tmp_path / "b.json")
    assert b.num_leaves == 10 and len(b.nodes_at_depth(1)) == 2
    (tmp_path / "notes").mkdir()
    assert main(["hierarchy", "induce", str(tmp_path / "notes"), "--out", str(tmp_path / "c.txt")]) == 2
    assert "neither a run" in capsys.readouterr().err
    assert main(["hierarchy", "induce", str(run), "--out", str(tmp_path / "d.txt"), "--clusters", "x"]) == 2


def test_classes_named_like_the_generated_groups_keep_their_names(tmp_path):
    """Issue 24: classes g1.1 ... g2.3 came back as 'g1.2/g2.2/g1.1' and so on, 5 of 6 renamed."""
    classes = ["g1.1", "g1.2", "g1.3", "g2.1", "g2.2", "g2.3"]
    tree = Hierarchy.from_paths([("a", "x", c) for c in classes[:3]] + [("b", "y", c) for c in classes[3:]])
    induced = induce_tree(planted_vectors(tree, 0), classes, clusters=[2, 4])
    assert induced.leaf_names == tuple(classes)
    assert set(induced.node_names[induced.num_leaves:]).isdisjoint(classes) and induced.root_name not in classes


@settings(max_examples=examples(60), deadline=None)
@given(classes=class_lists, seed=st.integers(0, 2**16), two_levels=st.booleans())
def test_the_induced_leaves_are_the_classes_in_order(classes, seed, two_levels):
    vectors = np.random.default_rng(seed).normal(size=(len(classes), 8))
    clusters = [2, len(classes) - 1] if two_levels and len(classes) > 3 else [2]
    induced = induce_tree(vectors, classes, clusters=clusters)
    assert induced.leaf_names == tuple(classes)
    assert set(induced.node_names[induced.num_leaves:]).isdisjoint(classes) and induced.root_name not in classes
