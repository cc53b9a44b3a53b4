"""The paper's trees built from class names alone: shapes, the rules behind them, agreement with
the published trees (NBDT's WordNet tree for Tiny-ImageNet), and write/read round trips."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hseval.core.errors import DataError, HierarchyError
from hseval.tree import read_hierarchy, write_hierarchy
from hseval.tree.builders import BUILDERS
from hseval.tree.builders.cifar100 import cifar100_hierarchy, cifar100_official
from hseval.tree.builders.cub200 import cub200_classes, cub200_hierarchy
from hseval.tree.builders.stanford_cars import BODY_TYPES, stanford_cars_classes, stanford_cars_hierarchy
from hseval.tree.builders.stanford_dogs import stanford_dogs_classes, stanford_dogs_family, stanford_dogs_hierarchy
from hseval.tree.builders.tiny_imagenet import tiny_imagenet_hierarchy, tiny_imagenet_wnids
from hseval.tree.builders.wordnet import find_wordnet, wordnet_hierarchy
from hseval.tree.hierarchy import Hierarchy
from tests.fake_datasets import builder_inputs, cifar100_lists, fixture_rows
from tests.helpers import FIXTURES, examples

needs_wordnet = pytest.mark.skipif(find_wordnet() is None, reason="no WordNet 3.0 data installed (apt install "
                                                                  "wordnet-base, or python -m nltk.downloader wordnet)")
PUBLIC = FIXTURES / "hierarchies"


def test_shipped_class_lists_are_the_official_ones():
    assert list(cifar100_official()) == list(cifar100_lists())
    assert cub200_classes() == [row[1] for row in fixture_rows("cub200_classes.txt", sep=" ")]
    assert stanford_cars_classes() == [row[1] for row in fixture_rows("stanford_cars_classes.txt")]
    assert stanford_dogs_classes() == [row[1] for row in fixture_rows("stanford_dogs_classes.txt")]
    assert tiny_imagenet_wnids() == [row[0] for row in fixture_rows("tiny_imagenet_wnids.tsv")]


@pytest.mark.parametrize(("builder", "leaves", "nodes", "groups"), [
    (cifar100_hierarchy, 100, 120, 20), (cub200_hierarchy, 200, 270, 70), (stanford_cars_hierarchy, 196, 205, 9),
    (stanford_dogs_hierarchy, 120, 198, 78)])
def test_two_level_trees_have_the_papers_sizes(builder, leaves, nodes, groups):
    tree = builder()
    assert (tree.num_leaves, tree.num_nodes, tree.nodes_per_depth) == (leaves, nodes, [groups, leaves])


def test_group_rules():
    cars = stanford_cars_hierarchy()
    assert cars.node_names[196:] == BODY_TYPES
    ram = "Ram C/V Cargo Van Minivan 2012"
    assert cars.path_names(cars.index(ram)) == ("Minivan", ram)
    dogs = stanford_dogs_hierarchy()
    setters = dogs.subtree_leaves(dogs.index("setter"))
    assert [dogs.node_names[i] for i in setters] == ["n02100735-English_setter", "n02100877-Irish_setter",
                                                     "n02101006-Gordon_setter"]
    assert len(dogs.subtree_leaves(dogs.index("terrier"))) == 18
    assert stanford_dogs_family("n02085620-Chihuahua") == "chihuahua"  # one-breed families are kept
    assert stanford_dogs_family("n02095314-wire-haired_fox_terrier") == "terrier"
    small = cifar100_hierarchy(["a", "b", "c"], ["x", "y"], [1, 0, 1])
    assert small.path_names(0) == ("y", "a") and small.node_names[3:] == ("x", "y")


def test_builder_input_errors():
    with pytest.raises(HierarchyError, match=r"coarse class 'z' has no fine class"):
        cifar100_hierarchy(["a", "b"], ["x", "z"], [0, 0])
    with pytest.raises(HierarchyError, match=r"coarse label 2 is outside 0\.\.1"):
        cifar100_hierarchy(["a", "b"], ["x", "z"], [0, 2])
    with pytest.raises(HierarchyError, match=r"give all of fine_names, coarse_names and fine_to_coarse"):
        cifar100_hierarchy(["a"])
    with pytest.raises(HierarchyError, match=r"class 'Flying Car 2031' is not in the model → body-type map"):
        stanford_cars_hierarchy(["Flying Car 2031"])
    with pytest.raises(HierarchyError, match=r"CUB class name '001\.' has no last word"):
        cub200_hierarchy(["001."])


@needs_wordnet
def test_tiny_imagenet_tree_equals_nbdts_edge_for_edge():
    tree = tiny_imagenet_hierarchy()
    assert (tree.num_leaves, tree.num_nodes, tree.max_depth) == (200, 294, 11)
    nbdt = json.loads((PUBLIC / "TinyImagenet200_graph-wordnet.json").read_text())
    names = [*tree.node_names, tree.root_name]
    ours = {(names[p], names[c]) for c, p in enumerate(tree.parents.tolist())}
    assert ours == {(link["source"], link["target"]) for link in nbdt["links"]}
    assert list(tree.leaf_names) == (PUBLIC / "wnids_TinyImagenet200.txt").read_text().split()


@needs_wordnet
def test_wordnet_rules_on_a_small_set():
    # Egyptian cat and tabby share domestic_cat; reel is an artifact: the top chain is cut to their LCA's
    # nearest branching ancestor, and single-child chains are merged
    tree = wordnet_hierarchy(["n02124075", "n02123045", "n04067472"])
    assert tree.nodes_per_depth[0] == 2
    cat = tree.parents[tree.index("n02124075")]
    assert tree.node_names[cat] == "n02121808" and tree.parents[tree.index("n02123045")] == cat  # domestic_cat
    with pytest.raises(HierarchyError, match=r"class 'banana' is not a WordNet noun id"):
        wordnet_hierarchy(["banana"])
    with pytest.raises(HierarchyError, match=r"class 'n00000001' is not a WordNet 3.0 noun synset"):
        wordnet_hierarchy(["n00000001", "n02124075"])


def test_missing_wordnet_says_how_to_install(tmp_path, monkeypatch):
    import nltk

    monkeypatch.setattr("hseval.tree.builders.wordnet.DEBIAN_WORDNET", tmp_path / "none")
    monkeypatch.setattr(nltk.data, "find", lambda *a, **k: (_ for _ in ()).throw(LookupError("no")))
    monkeypatch.delenv("WNSEARCHDIR", raising=False)
    with pytest.raises(DataError, match=r"^no WordNet data found \(looked in \$WNSEARCHDIR, .*none\); install "
                                        r"WordNet 3.0 \(apt install wordnet-base"):
        tiny_imagenet_hierarchy()
    with pytest.raises(DataError, match=r"elsewhere: not a WordNet folder \(no data.noun/index.noun\)"):
        tiny_imagenet_hierarchy(wordnet=tmp_path / "elsewhere")


def _round_trip(tree: Hierarchy, folder) -> None:
    for name, fmt in (("tree.txt", "pairs"), ("tree.json", "nbdt"), ("tree.paths", "paths")):
        write_hierarchy(tree, folder / name, format=fmt)
        again = read_hierarchy(folder / name, format=fmt)
        assert again == tree.with_labels(None) if fmt == "pairs" else again.stats() == tree.stats()
        assert again.labels == (tree.labels if fmt == "nbdt" else {})  # only nbdt holds NBDT's labels
        assert [again.path_names(j) for j in range(tree.num_leaves)] == \
            [tree.path_names(j) for j in range(tree.num_leaves)]


@pytest.mark.parametrize("name", ["CIFAR100_graph-wordnet.json", "CIFAR100_graph-induced-ResNet18.json",
                                  "TinyImagenet200_graph-wordnet.json", "imagenet_isa.txt", "tiered_imagenet_isa.txt",
                                  "inaturalist19_isa.txt", "cifar.parent-child.txt"])
def test_public_trees_write_and_read_back(tmp_path, name):
    _round_trip(read_hierarchy(PUBLIC / name), tmp_path)


@pytest.mark.parametrize("name", BUILDERS.names())
def test_builder_outputs_write_and_read_back(tmp_path, name):
    if "wordnet" in BUILDERS.options(name) and find_wordnet() is None:  # the WordNet trees
        pytest.skip("no WordNet 3.0 data installed")
    _round_trip(BUILDERS.get(name)(*builder_inputs(name)), tmp_path)


# class names whose groups (the last word) are also class names, or the root's name
GROUP_LIKE = ["Albatross", "Black_footed_Albatross", "root", "x_root", "setter", "English_setter",
              "n02100735-setter", "Setter", "Albatross_1", "root_1", "a_b", "b"]


@settings(max_examples=examples(60), deadline=None)
@given(classes=st.lists(st.one_of(st.sampled_from(GROUP_LIKE), st.from_regex(r"[A-Za-z]{1,3}(_[A-Za-z]{1,3})?",
                                                                               fullmatch=True)),
                        min_size=1, max_size=10, unique=True))
def test_builders_that_name_groups_never_rename_a_class(classes):
    """A group (or the root) named like a class used to rename both to their paths ('b/b'); the
    generated name takes a suffix instead, and the leaves are the classes in order."""
    for builder in (cub200_hierarchy, stanford_dogs_hierarchy):
        tree = builder(classes)
        assert tree.leaf_names == tuple(classes)
        assert set(tree.node_names[tree.num_leaves:]).isdisjoint(classes) and tree.root_name not in classes


def test_a_cub_class_named_as_its_group():
    tree = cub200_hierarchy(["Albatross", "Black_footed_Albatross", "root"])
    assert tree.leaf_names == ("Albatross", "Black_footed_Albatross", "root")
    assert tree.node_names[3:] == ("Albatross_1", "root_1") and tree.root_name == "root_2"
