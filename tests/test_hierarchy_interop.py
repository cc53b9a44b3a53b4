"""Files from the tools hseval reads and writes for (issue 24's Interoperability): NBDT's trees keep
their ids and labels and load the way NBDT's own ``Tree.load_hierarchy`` loads them; a
``child parent`` file (cvjena's NAB tree) is read with ``--format child-parent``, and one read
with its columns the wrong way round is refused with that advice; nodes the pairs sidecar leaves
unnamed never take a given name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from networkx.readwrite.json_graph import node_link_graph

from hseval.cli.main import main
from hseval.core.errors import HierarchyError
from hseval.io.records import TreeRecord
from hseval.tree import read_hierarchy, write_hierarchy
from hseval.tree.formats.common import header_line
from hseval.tree.formats.pairs import names_sidecar
from hseval.tree.hierarchy import Hierarchy
from hseval.tree.transforms import merge_single_child_chains, random_hierarchy
from tests.helpers import FIXTURES, examples, trees

PUBLIC = FIXTURES / "hierarchies"
NBDT = [("CIFAR100_graph-wordnet.json", "wnids_CIFAR100.txt"),
        ("TinyImagenet200_graph-wordnet.json", "wnids_TinyImagenet200.txt"),
        ("CIFAR100_graph-induced-ResNet18.json", "wnids_CIFAR100.txt")]
PROPERTY = settings(max_examples=examples(60), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


# ------------------------------------------------------------------ NBDT
def nbdt_load(graph: Path, wnids: Path):
    """What NBDT's ``Tree.load_hierarchy`` does with a graph file and a wnids file (nbdt/tree.py and
    nbdt/thirdparty/{nx,wn}.py at a7a2ee6): ``read_graph`` (networkx node-link, links), ``get_wnids``,
    a ``Node`` per graph node (``wnid_to_synset`` parses ``int(wnid[1:])``), every node's class
    mappings (each leaf below each child looked up by id in the wnids list: ``list.index``), one
    root (``get_root``), and the leaves by id (``wnid_to_node[wnid]``). Returns the graph."""
    G = node_link_graph(json.loads(graph.read_text(encoding="utf-8")), edges="links")
    wnids_leaves = [wnid.strip() for wnid in wnids.read_text().splitlines(keepends=True)]
    for wnid in G:
        int(wnid[1:])  # a word for an id: ValueError, as in NBDT
        for child in G.succ[wnid]:
            below = {child} | set(_descendants(G, child))
            for leaf in (n for n in below if not G.succ[n]):
                wnids_leaves.index(leaf)
    assert len([n for n in G if not G.pred[n]]) == 1
    wnid_to_node = {wnid: wnid for wnid in G}
    [wnid_to_node[wnid] for wnid in wnids_leaves]  # noqa: B018 (a KeyError where a class is not a node)
    return G


def _descendants(G, node):
    stack = list(G.succ[node])
    while stack:
        n = stack.pop()
        yield n
        stack.extend(G.succ[n])


@pytest.mark.parametrize(("graph", "wnids"), NBDT)
def test_converted_nbdt_trees_keep_ids_and_labels_and_load_in_nbdt(tmp_path, capsys, graph, wnids):
    """Issue 24: `convert --to nbdt` wrote {"id": "apple", "label": "apple"}; NBDT could not load it."""
    original = nbdt_load(PUBLIC / graph, PUBLIC / wnids)
    out = tmp_path / "out.json"
    assert main(["hierarchy", "convert", str(PUBLIC / graph), str(out), "--to", "nbdt"]) == 0
    capsys.readouterr()
    ours = nbdt_load(out, PUBLIC / wnids)
    assert set(ours.nodes) == set(original.nodes) and set(ours.edges) == set(original.edges)
    for node, data in original.nodes(data=True):  # a node without a label gets its id
        assert ours.nodes[node]["label"] == (data.get("label") or node)
    leaves = [n for n in original if not original.succ[n]]
    assert [n for n in ours if not ours.succ[n]] == leaves  # the class order
    again = tmp_path / "again.json"
    assert main(["hierarchy", "convert", str(out), str(again), "--to", "nbdt"]) == 0
    assert again.read_bytes() == out.read_bytes()  # hseval's own output round-trips byte for byte


def test_nbdt_ids_survive_other_formats_and_labels_come_back_only_from_nbdt(tmp_path):
    tree = read_hierarchy(PUBLIC / "TinyImagenet200_graph-wordnet.json")
    assert tree.labels["n02124075"] == "egyptian_cat" and tree.labels[tree.root_name] == "physical_entity"
    for fmt in ("pairs", "isa", "paths", "child-parent"):
        write_hierarchy(tree, tmp_path / f"t.{fmt}", format=fmt)
        assert read_hierarchy(tmp_path / f"t.{fmt}") == tree.with_labels(None)  # the names are the ids
    write_hierarchy(tree, tmp_path / "t.json")
    assert read_hierarchy(tmp_path / "t.json") == tree


def test_labels_are_kept_by_every_transform_and_by_the_run_record():
    tree = read_hierarchy(PUBLIC / "CIFAR100_graph-wordnet.json")
    assert Hierarchy.from_dict(json.loads(json.dumps(tree.to_dict()))) == tree
    assert random_hierarchy(tree, seed=1).labels == tree.labels
    assert merge_single_child_chains(tree) is tree  # NBDT's trees have no single-child chains
    chain = Hierarchy.from_edges([("r", "a"), ("a", "b"), ("b", "x"), ("b", "y")],
                                 labels={"a": "A", "b": "B", "x": "X", "r": "R"})
    merged = merge_single_child_chains(chain)
    assert dict(merged.labels) == {"x": "X", "b": "B", "r": "R"}
    assert dict(chain.reorder_leaves(["y", "x"]).labels) == dict(chain.labels)
    assert "labels" not in Hierarchy.from_edges([("r", "x"), ("r", "y")]).to_dict()  # run.json as before
    assert TreeRecord.model_validate(tree.to_dict()).tree == tree


@pytest.mark.parametrize(("labels", "message"), [
    ({"zzz": "Z"}, r"a label is given for 'zzz', which is not a node of the tree"),
    ({"x": ""}, r"the label of node 'x' is ''; a label is a non-empty string"),
    ({"x": 3}, r"the label of node 'x' is 3; a label is a non-empty string"),
    (["x"], r"labels must map node names to labels, got list"),
])
def test_bad_labels_are_refused(labels, message):
    with pytest.raises(HierarchyError, match=message):
        Hierarchy.from_edges([("r", "x"), ("r", "y")], labels=labels)


def test_show_prints_each_id_with_its_label(tmp_path, capsys):
    assert main(["hierarchy", "show", str(PUBLIC / "CIFAR100_graph-wordnet.json"), "--max-depth", "1"]) == 0
    assert capsys.readouterr().out.splitlines()[:2] == ["n00001740 [entity]",
                                                        "├── n00001930 [physical_entity]  (98 classes)"]


# ------------------------------------------------------------------ columns the wrong way round
NAB = PUBLIC / "nab_hierarchy.txt"


def test_the_nab_tree_is_refused_with_the_advice_and_read_with_it(tmp_path, capsys):
    """cvjena's NAB hierarchy.txt is `child parent`; it was refused with "node '0' has two parents" only."""
    with pytest.raises(HierarchyError, match=r"^\S*nab_hierarchy.txt: node '0' has two parents \('1' and '2'\); a "
                                             r"hierarchy must be a tree; the columns look swapped \(child parent\): "
                                             r"pass --format child-parent$"):
        read_hierarchy(NAB)
    tree = read_hierarchy(NAB, format="child-parent")
    assert (tree.num_leaves, tree.num_nodes, tree.max_depth, tree.root_name) == (555, 1010, 4, "0")
    out = tmp_path / "nab.txt"
    assert main(["hierarchy", "convert", str(NAB), str(out), "--to", "isa"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.endswith("pass --format child-parent\n") and not out.exists()
    assert main(["hierarchy", "convert", str(NAB), str(out), "--format", "child-parent", "--to", "child-parent"]) == 0
    assert read_hierarchy(out) == tree


def edges_of(tree: Hierarchy) -> set[tuple[str, str]]:
    names = [*tree.node_names, tree.root_name]
    return {(names[p], names[c]) for c, p in enumerate(tree.parents.tolist())}


@PROPERTY
@given(tree=trees(max_leaves=15).filter(lambda t: t.num_leaves >= 2))
def test_a_file_with_its_columns_swapped_is_never_read_as_a_tree(tmp_path_factory, tree):
    """With two classes or more some node has two children, so the swapped file gives it two
    parents; the error always says the columns look swapped. (One class in a chain reads either
    way: nothing can tell the two orders apart.)"""
    folder = tmp_path_factory.mktemp("swapped")
    edges = sorted(edges_of(tree))
    child_parent = folder / "child_parent.txt"
    child_parent.write_text("".join(f"{c} {p}\n" for p, c in edges))
    with pytest.raises(HierarchyError, match=r"; the columns look swapped \(child parent\): pass --format "
                                             r"child-parent$"):
        read_hierarchy(child_parent)  # detected as isa
    assert edges_of(read_hierarchy(child_parent, format="child-parent")) == edges_of(tree)
    parent_child = folder / "parent_child.txt"  # said to be child-parent by its header
    parent_child.write_text(header_line({"format": "child-parent"}) + "".join(f"{p} {c}\n" for p, c in edges))
    with pytest.raises(HierarchyError, match=r"; the columns look swapped \(parent child\): pass --format isa$"):
        read_hierarchy(parent_child)
    pairs = folder / "pairs.txt"
    write_hierarchy(tree, pairs, format="pairs")
    count, *rows = pairs.read_text().splitlines()
    pairs.write_text("\n".join([count, *(" ".join(row.split()[::-1]) for row in rows)]) + "\n")
    with pytest.raises(HierarchyError, match=r"; the columns look swapped \(parent child\): swap them, as pairs "
                                             r"lines are 'child parent'$"):
        read_hierarchy(pairs)


def test_a_tree_error_that_swapping_does_not_fix_gets_no_advice(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("root a\nroot b\na x\nb x\n")  # x has two parents either way round
    with pytest.raises(HierarchyError) as caught:
        read_hierarchy(path)
    assert str(caught.value).endswith("a hierarchy must be a tree")


# ------------------------------------------------------------------ generated names
def test_pairs_nodes_without_a_name_never_take_a_given_one(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("3\n0 2\n1 2\n2 3\n")
    names_sidecar(path).write_text("0\t2\n1\t3\n")  # the classes are called "2" and "3", like nodes 2 and 3
    tree = read_hierarchy(path)
    assert tree.leaf_names == ("2", "3") and tree.node_names[2] == "2_1" and tree.root_name == "3_1"
    by_classes = read_hierarchy(tmp_path / "t.txt", classes=["2", "3"])
    assert by_classes == tree
