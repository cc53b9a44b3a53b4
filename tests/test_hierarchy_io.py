"""Reading and writing every hierarchy format, the public trees, and every malformed input."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings

from hseval.core.errors import ConfigError, HierarchyError
from hseval.tree import FORMATS, read_hierarchy, write_hierarchy
from hseval.tree.formats import detect_format
from hseval.tree.formats.pairs import names_sidecar
from hseval.tree.hierarchy import Hierarchy
from tests.helpers import FIXTURES, examples, fashion_tree, trees, unbalanced

PUBLIC = FIXTURES / "hierarchies"


@pytest.mark.parametrize(("name", "leaves", "nodes", "depth"), [
    ("CIFAR100_graph-wordnet.json", 100, 148, 11),       # NBDT: 149 nodes with the root
    ("TinyImagenet200_graph-wordnet.json", 200, 294, 11),  # NBDT: 295 nodes with the root
    ("CIFAR100_graph-induced-ResNet18.json", 100, 198, 10),
    ("imagenet_isa.txt", 1000, 1371, 15),                 # MBM: 1372 nodes with the root
    ("tiered_imagenet_isa.txt", 608, 842, 12),
    ("inaturalist19_isa.txt", 1010, 1189, 7),
    ("cifar.parent-child.txt", 100, 162, 8),              # cvjena: 163 nodes with the root
])
def test_public_trees_read_with_their_published_sizes(name, leaves, nodes, depth):
    tree = read_hierarchy(PUBLIC / name)
    assert (tree.num_leaves, tree.num_nodes, tree.max_depth) == (leaves, nodes, depth)


def test_nbdt_names_are_the_ids_unless_the_class_list_names_the_labels():
    """NBDT's id is a node's name (issue 24: the labels were the names, and the ids were lost); a
    class list of labels still names the nodes by their labels."""
    wnids = (PUBLIC / "wnids_CIFAR100.txt").read_text().split()
    by_id = read_hierarchy(PUBLIC / "CIFAR100_graph-wordnet.json", classes=wnids)
    assert by_id.leaf_names == tuple(wnids)
    assert read_hierarchy(PUBLIC / "CIFAR100_graph-wordnet.json") == by_id
    assert by_id.labels["n07739125"] == "apple" and by_id.root_name == "n00001740"
    assert by_id.labels[by_id.root_name] == "entity"
    words = [by_id.labels[w] for w in wnids]
    by_label = read_hierarchy(PUBLIC / "CIFAR100_graph-wordnet.json", classes=words)
    assert by_label.leaf_names == tuple(words) and by_label.root_name == "entity" and not by_label.labels


def test_cvjena_tree_with_cifar_class_order():
    rows = [line.split() for line in (PUBLIC / "cifar.class_names.txt").read_text().splitlines()]
    assert rows[0] == ["0", "apple"]
    ids = [i for i, _ in rows[:100]]
    tree = read_hierarchy(PUBLIC / "cifar.parent-child.txt", classes=ids[::-1])
    assert tree.leaf_names == tuple(ids[::-1])


@pytest.mark.parametrize("fmt", FORMATS.names())
def test_every_format_round_trips(tmp_path, small_tree, fmt):
    path = tmp_path / ("tree.json" if fmt == "nbdt" else "tree.txt")
    if fmt in ("isa", "child-parent") and any(" " in n for n in small_tree.node_names):
        # isa separates names by whitespace: such a tree is refused, not written wrongly
        with pytest.raises(HierarchyError, match=r"contains whitespace; use --to pairs"):
            write_hierarchy(small_tree, path, format=fmt)
        assert not path.exists()
        return
    write_hierarchy(small_tree, path, format=fmt)
    assert detect_format(path) == fmt
    assert read_hierarchy(path) == small_tree  # names, class order, super-class order, root
    assert read_hierarchy(path, classes=small_tree.leaf_names) == small_tree


@settings(max_examples=examples(30), deadline=None)
@given(tree=trees(max_leaves=20))
def test_pairs_round_trip_is_exact(tmp_path_factory, tree):
    path = tmp_path_factory.mktemp("pairs") / "tree_child_parent_pairs.txt"
    write_hierarchy(tree, path, format="pairs")
    assert read_hierarchy(path) == tree


def test_pairs_file_layout_matches_the_paper(tmp_path):
    path = tmp_path / "fmnist_child_parent_pairs.txt"
    write_hierarchy(fashion_tree(), path, format="pairs")
    lines = path.read_text().splitlines()
    assert lines[0] == "13" and len(lines) == 14
    pairs = [tuple(map(int, line.split())) for line in lines[1:]]
    assert {child for child, _ in pairs} == set(range(13)) and {p for _, p in pairs} <= set(range(14))
    assert names_sidecar(path).read_text().splitlines()[13] == "13\troot"


def test_pairs_without_names_get_index_names(tmp_path):
    path = tmp_path / "p.txt"
    path.write_text("5\n0 3\n1 3\n2 4\n3 5\n4 5\n")
    tree = read_hierarchy(path)
    assert tree.leaf_names == ("0", "1", "2") and tree.root_name == "5"
    tree = read_hierarchy(path, classes=["a", "b", "c"])
    assert tree.leaf_names == ("a", "b", "c")


def test_paths_escape_slashes(tmp_path):
    path = tmp_path / "paths.txt"
    write_hierarchy(fashion_tree(), path, format="paths")
    assert "clothing/tops/T-shirt\\/top" in path.read_text().splitlines()


def _write(tmp_path, text, name="tree.txt", mode="w"):
    path = tmp_path / name
    if mode == "wb":
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


@pytest.mark.parametrize(("text", "fmt", "message"), [
    ("", None, r"tree.txt: is empty"),
    ("   \n\n", None, r"tree.txt: is empty"),
    (b"\x00\x01\x02binary", None, r"tree.txt: is a binary file"),
    (b"\xff\xfe\xfa oops", None, r"tree.txt: is not UTF-8 text"),
    ("3\n0 2\n1 2\n", None, r"line 1: the count line says 3 entries but the file has 2"),
    ("2\n0 2\nx 2\n", None, r"line 3: 'x' is not a non-negative integer index"),
    ("2\n0 2\n1 2 7\n", None, r"line 3: expected 'child parent' \(two integers\)"),
    ("2\n0 2\n0 1\n", None, r"line 3: node 0 has two parents \(2 on line 2 and 1\)"),
    ("2\n0 1\n1 0\n", None, r"every node has a parent, so the pairs contain a cycle"),
    ("2\n0 2\n1 3\n", None, r"2 roots \(nodes 2, 3 have no parent\)"),
    ("2\n0 3\n1 3\n", None, r"index 2 is missing; node indices must run 0..3 without gaps"),
    ("3\n0 3\n2 3\n3 1\n", None, r"node 1 is a super-class, but indices 0..1 must be the 2 classes"),
    ("1\n0 0\n", None, r"line 2: node 0 is its own parent"),
    ("a b c\nd e f\n", None, r"cannot tell the hierarchy format; pass --format"),
    ("r a\nr a b\n", "isa", r"line 2: expected 'parent child' \(two names\)"),
    ("r a\ns a\n", None, r"node 'a' has two parents \('r' and 's'\)"),
    ("a/b\na//c\n", None, r"line 2: empty component in the path 'a//c'"),
    ("a/b\na/b\n", None, r"the path 'a/b' is given twice"),
    ("a\na/b\n", None, r"class 'a' is also a super-class of another class"),
])
def test_bad_hierarchy_files_have_clear_errors(tmp_path, text, fmt, message):
    path = _write(tmp_path, text, mode="wb" if isinstance(text, bytes) else "w")
    with pytest.raises(HierarchyError, match=message):
        read_hierarchy(path, format=fmt)


def test_an_unknown_format_is_refused_by_the_registry(tmp_path):
    path = _write(tmp_path, "2\n0 2\n1 2\n")
    message = r"^unknown hierarchy format 'nope'; choose one of pairs, nbdt, paths, isa, child-parent$"
    with pytest.raises(ConfigError, match=message):
        read_hierarchy(path, format="nope")
    with pytest.raises(ConfigError, match=message):
        write_hierarchy(fashion_tree(), tmp_path / "out.txt", format="nope")
    assert not (tmp_path / "out.txt").exists()


@pytest.mark.parametrize(("data", "message"), [
    ("{not json", r"line 1: not valid JSON"),
    (json.dumps([1, 2]), r"expected node-link JSON with 'nodes' and 'links'"),
    (json.dumps({"nodes": [{"label": "x"}], "links": []}), r"nodes\[0\] has no 'id'"),
    (json.dumps({"nodes": [{"id": "a"}, {"id": "b"}], "links": [{"source": "a"}]}),
     r"links\[0\] needs 'source' and 'target'"),
    (json.dumps({"nodes": [{"id": "a"}], "links": [{"source": "a", "target": "zz"}]}),
     r"links\[0\] refers to 'zz', which is not in 'nodes'"),
    (json.dumps({"nodes": [{"id": "a"}, {"id": "b"}, {"id": "c"}], "links": [{"source": "a", "target": "b"}]}),
     r"node 'c' has no links"),
])
def test_bad_nbdt_files_have_clear_errors(tmp_path, data, message):
    path = _write(tmp_path, data, name="tree.json")
    with pytest.raises(HierarchyError, match=message):
        read_hierarchy(path)


def test_class_list_mismatches(tmp_path):
    path = _write(tmp_path, "r a\nr b\n")
    with pytest.raises(HierarchyError, match=r"class 'c' is not in the hierarchy"):
        read_hierarchy(path, classes=["a", "c"])
    with pytest.raises(HierarchyError, match=r"leaf 'b' is not a dataset class"):
        read_hierarchy(path, classes=["a"])
    pairs = _write(tmp_path, "2\n0 2\n1 2\n", name="p.txt")
    with pytest.raises(HierarchyError, match=r"2 leaves but 3 dataset classes"):
        read_hierarchy(pairs, classes=["a", "b", "c"])
    paths = _write(tmp_path, "x/a\nx/b\n", name="paths.txt")
    with pytest.raises(HierarchyError, match=r"class 'c' is not in the hierarchy"):
        read_hierarchy(paths, classes=["a", "c"])
    with pytest.raises(HierarchyError, match=r"leaf 'b' is not a dataset class"):
        read_hierarchy(paths, classes=["a"])


def test_a_paths_file_in_another_order_follows_the_dataset_classes(tmp_path):
    """One behaviour for the library and the CLI: the leaves take the dataset's class order."""
    shuffled = read_hierarchy(_write(tmp_path, "y/c\nx/a\nx/b\n", name="paths.txt"), classes=["a", "b", "c"])
    ordered = read_hierarchy(_write(tmp_path, "x/a\nx/b\ny/c\n", name="ordered.txt"), classes=["a", "b", "c"])
    assert shuffled.leaf_names == ("a", "b", "c")
    parent = [shuffled.node_names[shuffled.parents[i]] for i in range(3)]
    assert parent == ["x", "x", "y"] == [ordered.node_names[ordered.parents[i]] for i in range(3)]


def test_bad_names_sidecar(tmp_path):
    path = _write(tmp_path, "2\n0 2\n1 2\n", name="p.txt")
    names_sidecar(path).write_text("0\tzero\n9\tnine\n")
    with pytest.raises(HierarchyError, match=r"p.txt.names.tsv, line 2: index 9 is not a node of p.txt"):
        read_hierarchy(path)
    names_sidecar(path).write_text("0 zero\n")
    with pytest.raises(HierarchyError, match=r"line 1: expected 'index<TAB>name'"):
        read_hierarchy(path)


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(HierarchyError, match=r"nothere.txt: no such file"):
        read_hierarchy(tmp_path / "nothere.txt")
    with pytest.raises(HierarchyError, match=r"is a folder, expected a hierarchy file"):
        read_hierarchy(tmp_path)


def test_isa_writer_refuses_names_with_spaces(tmp_path):
    with pytest.raises(HierarchyError, match=r"node name 'Ankle boot' contains whitespace; use --to pairs"):
        write_hierarchy(fashion_tree(), tmp_path / "t.txt", format="isa")
    # whitespace only at an end used to pass the check, and the name came back trimmed
    with pytest.raises(HierarchyError, match=r"^cannot write isa format: node name 'x\\x0c' contains whitespace"):
        write_hierarchy(Hierarchy.from_edges([("r", "x\x0c"), ("r", "y")]), tmp_path / "t.txt", format="isa")
    assert not (tmp_path / "t.txt").exists()


def test_writes_are_atomic_and_leave_no_temporary_files(tmp_path):
    write_hierarchy(unbalanced(), tmp_path / "t.txt", format="pairs")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.txt", "t.txt.names.tsv"]


# ------------------------------------------------------------------ lines, header, detection, sidecar
@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_only_cr_and_lf_end_lines(tmp_path, newline):
    text = newline.join(["# a comment", "animal/form\x0cfeed", "animal/next\x85line", "plant\u2028leaf", ""])
    path = _write(tmp_path, "", name="t.txt")
    path.write_bytes(text.encode("utf-8"))
    tree = read_hierarchy(path)
    assert tree.leaf_names == ("form\x0cfeed", "next\x85line", "plant\u2028leaf")


@pytest.mark.parametrize(("header", "message"), [
    ("# hseval hierarchy: {paths}", r"t.txt, line 1: the '# hseval hierarchy:' line is not valid JSON \(Expecting "
                                    r"property name enclosed in double quotes\); fix it or delete the line"),
    ('# hseval hierarchy: {"format": "nbdt"}', r"line 1: the '# hseval hierarchy:' line needs a \"format\" of pairs, "
                                               r"paths, isa, child-parent; fix it or delete the line"),
    ('# hseval hierarchy: ["paths"]', r"needs a \"format\" of pairs, paths, isa, child-parent"),
    ('# hseval hierarchy: {"format": "paths", "colour": 1}', r"has the key 'colour', which paths files do not take"),
    ('# hseval hierarchy: {"format": "paths", "leaf_order": "file"}', r"has the key 'leaf_order', which paths files"),
    ('# hseval hierarchy: {"format": "paths", "root": ""}', r"line 1: the '# hseval hierarchy:' line has a malformed "
                                                            r"'root'; fix it or delete the line"),
    ('# hseval hierarchy: {"format": "paths", "superclass_order": [1]}', r"has a malformed 'superclass_order'"),
    ('# hseval hierarchy: {"format": "paths", "superclass_order": ["a", "a"]}',
     r"t.txt, line 1: the header's superclass_order does not list the file's 2 super-classes once each; fix it or "
     r"delete the line"),
    ('# hseval hierarchy: {"format": "paths", "root": "a"}', r"t.txt: two nodes are called 'a'"),
])
def test_bad_headers_have_clear_errors(tmp_path, header, message):
    path = _write(tmp_path, header + "\na/x\nb/y\n", name="t.txt")
    with pytest.raises(HierarchyError, match=message):
        read_hierarchy(path)


def test_header_decides_format_root_and_orders(tmp_path):
    path = _write(tmp_path, '# hseval hierarchy: {"format": "paths", "root": "entity", "superclass_order": ["b", '
                            '"a"]}\n123\na/x\nb/y\n', name="t.json")
    tree = read_hierarchy(path)
    assert detect_format(path) == "paths" and tree.root_name == "entity"
    assert tree.node_names == ("123", "x", "y", "b", "a")
    isa = _write(tmp_path, '# hseval hierarchy: {"format": "isa", "leaf_order": "file"}\nr n10\nr n9\n')
    assert read_hierarchy(isa).leaf_names == ("n10", "n9")
    assert read_hierarchy(isa, classes=["n9", "n10"]).leaf_names == ("n9", "n10")  # a class list still wins
    assert read_hierarchy(isa, format="paths").leaf_names == ("r n10", "r n9")  # another format: a comment header


def test_pairs_called_json_is_read_as_pairs(tmp_path):
    path = _write(tmp_path, "2\n0 2\n1 2\n", name="p.json")
    assert detect_format(path) == "pairs" and read_hierarchy(path).leaf_names == ("0", "1")
    broken = _write(tmp_path, "[[[", name="b.json")  # not a count: still JSON, with JSON's errors
    with pytest.raises(HierarchyError, match=r"b.json, line 1: not valid JSON"):
        read_hierarchy(broken)


def test_names_sidecar_of_json_strings(tmp_path):
    path = _write(tmp_path, "2\n0 2\n1 2\n", name="p.txt")
    names_sidecar(path).write_text('# hseval names: {"names": "json"}\n0\t" a "\n1\t"b\\u0000"\n2\t"r"\n')
    tree = read_hierarchy(path)
    assert tree.leaf_names == (" a ", "b\x00") and tree.root_name == "r"
    names_sidecar(path).write_text('# hseval names: {"names": "json"}\n0\tplain\n')
    with pytest.raises(HierarchyError, match=r"p.txt.names.tsv, line 2: expected 'index<TAB>\"name\"' \(the name as "
                                             r"a JSON string\), got '0\\tplain'"):
        read_hierarchy(path)


def test_names_sidecar_with_a_5000_digit_index(tmp_path):
    """Used to crash: int() refuses more than 4300 digits."""
    path = _write(tmp_path, "2\n0 2\n1 2\n", name="p.txt")
    names_sidecar(path).write_text("1" * 5000 + "\tbig\n")
    with pytest.raises(HierarchyError, match=r"^.*p.txt.names.tsv, line 1: index 11111111111111111111... is not a node "
                                             r"of p.txt \(0..2\)$"):
        read_hierarchy(path)


@pytest.mark.parametrize("name", ["²", "1" * 5000, "٣", "x²y", "n٣"])
def test_isa_classes_with_unusual_digits_sort_without_crashing(tmp_path, name):
    """natural sort used int() on '²' (a digit to str.isdigit, not to int) and on 5000-digit runs."""
    path = _write(tmp_path, f"r {name}\nr b\n")
    assert set(read_hierarchy(path).leaf_names) == {name, "b"}


# ------------------------------------------------------------------ trees too deep: the advice works
def _deep_tree(levels: int, *, caterpillar: bool) -> tuple[list[tuple[str, str]], list[str]]:
    """(parent, child) edges and the leaves of a tree ``levels`` super-classes deep: a chain of
    single-child super-classes above s0 → {a, b}, or (``caterpillar``) one where each super-class
    also holds a leaf of its own, so that merging single-child chains does not shorten it."""
    edges, leaves = [("s0", "a"), ("s0", "b")], ["a", "b"]
    for k in range(1, levels):
        edges.append((f"s{k}", f"s{k - 1}"))
        if caterpillar:
            edges.append((f"s{k}", f"l{k}"))
            leaves.append(f"l{k}")
    return edges, leaves


def _write_tree(path, fmt: str, edges: list[tuple[str, str]], leaves: list[str]) -> None:
    parent = {child: p for p, child in edges}
    if fmt == "paths":
        def line(node: str) -> str:
            parts = [node]
            while parts[-1] in parent:
                parts.append(parent[parts[-1]])
            return "/".join(reversed(parts))
        text = "".join(line(leaf) + "\n" for leaf in leaves)
    elif fmt == "nbdt":
        nodes = sorted({n for e in edges for n in e})
        text = json.dumps({"nodes": [{"id": n} for n in nodes],
                           "links": [{"source": p, "target": c} for p, c in edges]})
    elif fmt == "pairs":
        order = leaves + [n for n in dict.fromkeys(p for p, _ in edges) if n not in leaves]
        index = {n: k for k, n in enumerate(order)}
        text = f"{len(edges)}\n" + "".join(f"{index[c]} {index[p]}\n" for p, c in edges)
        names_sidecar(path).write_text("".join(f"{k}\t{n}\n" for k, n in enumerate(order)), encoding="utf-8")
    else:
        text = "".join(f"{p} {c}\n" if fmt == "isa" else f"{c} {p}\n" for p, c in edges)
    path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize("fmt", FORMATS.names())
@pytest.mark.parametrize(("levels", "caterpillar"), [(1001, False), (2000, False), (1500, True)])
def test_a_tree_too_deep_is_refused_with_advice_that_works(tmp_path, capsys, fmt, levels, caterpillar):
    """A tree deeper than the limit, in every format: its refusal advises ``hierarchy convert
    --merge-chains`` only where that converts it, and converting with it either works (a chain:
    merged as it is read, before the depth is checked) or says why not, without that advice (a
    2,000-level chain was refused by convert --merge-chains with the same line that advised it)."""
    from hseval.cli.main import main
    from hseval.tree.transforms import merge_single_child_chains

    source, out = tmp_path / ("tree.json" if fmt == "nbdt" else "tree.txt"), tmp_path / "out.txt"
    _write_tree(source, fmt, *_deep_tree(levels, caterpillar=caterpillar))
    argv = ["hierarchy", "convert", str(source), str(out), "--to", "pairs", "--format", fmt]
    for merge in (False, True):
        capsys.readouterr()
        code = main(argv + ["--merge-chains"] * merge)
        err = capsys.readouterr().err.strip().splitlines()
        assert code == (0 if merge and not caterpillar else 2), err
        if code == 2:
            assert len(err) == 1 and "levels deep" in err[0] and not out.exists(), err
            # the advice to merge where merging converts it, and only there
            assert ("--merge-chains" in err[0]) == (not merge and not caterpillar), err
    if not caterpillar:  # the chain merged as merge_single_child_chains merges a shorter one: s0 → {a, b}
        shallow = tmp_path / ("shallow.json" if fmt == "nbdt" else "shallow.txt")
        _write_tree(shallow, fmt, *_deep_tree(5, caterpillar=False))
        merged, expected = read_hierarchy(out), merge_single_child_chains(read_hierarchy(shallow, format=fmt))
        assert (merged.node_names, merged.parents.tolist()) == (expected.node_names, expected.parents.tolist()) == (
            ("a", "b", "s0"), [2, 2, -1])
