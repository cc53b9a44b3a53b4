"""Every writer round-trips by design: for any tree the Hierarchy class accepts, a written file reads
back (format detected) as an equal tree, or the writer refuses with one line naming the node.
Also: outputs that already round-tripped are written byte for byte as before, 200,000 classes in
every format, and ``hierarchy show`` on a tree MAX_DEPTH deep."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hseval.cli.hierarchy import render_tree
from hseval.cli.main import main
from hseval.core.errors import HierarchyError
from hseval.tree import FORMATS, read_hierarchy, write_hierarchy
from hseval.tree.formats import detect_format
from hseval.tree.formats.pairs import names_sidecar
from hseval.tree.hierarchy import Hierarchy
from tests.helpers import examples, fashion_tree, trees

PROPERTY = settings(max_examples=examples(150), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# characters that broke a reader or a detector: line and paragraph separators, whitespace that
# str.strip/str.split know, comment and escape characters, JSON punctuation, digits of other
# scripts, a byte-order mark, NUL, surrogates (which no UTF-8 file holds)
AWKWARD = [" ", "\u00a0", "\x85", "\u2028", "\u2029", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f", "#", "/",
           "\\", "'", '"', "{", "}", "[", ":", ",", "0", "7", "²", "٣", "\ufeff", "\x00", "é", "字", "\U0001f600",
           "a", "b", "\ud800", "\udc00"]
SPECIAL = ["root", "#hash", "123", "007", "0", "-1", "big cat", " padded ", "a/b", "\\", "\\/", "{x", "[", "\ufeffbom",
           "# hseval hierarchy: {}", "# comment", "x\u2028y", "x\x85y", "²", "٣", "n10", "n9", "x ", " x"]
nasty_names = st.one_of(st.sampled_from(SPECIAL), st.text(
    alphabet=st.one_of(st.sampled_from(AWKWARD), st.characters(blacklist_characters="\n\r\t",
                                                               blacklist_categories=("Cs",))),
    min_size=1, max_size=6))
token_names = st.from_regex(r"[A-Za-z0-9_.#{}\\/-]{1,5}", fullmatch=True)  # no whitespace: isa may hold them


@st.composite
def named_trees(draw, max_leaves: int = 12) -> Hierarchy:
    """A random tree (conftest's ``trees``) whose nodes and root get generated names."""
    tree = draw(trees(max_leaves=max_leaves))
    style = draw(st.sampled_from(["kept", "tokens", "nasty"]))
    if style == "kept":  # c0, s5...: only the root is renamed, sometimes
        root = draw(st.sampled_from(["root", "r", "big root", "#r", "c0x"]))
        return Hierarchy(tree.node_names, tree.parents, tree.num_leaves, root_name=root)
    strategy = token_names if style == "tokens" else nasty_names
    names = draw(st.lists(strategy, min_size=tree.num_nodes + 1, max_size=tree.num_nodes + 1, unique=True))
    labelled = draw(st.lists(st.booleans(), min_size=len(names), max_size=len(names)))  # NBDT's labels
    labels = {name: draw(nasty_names) for name, keep in zip(names, labelled) if keep}
    return Hierarchy(names[:-1], tree.parents, tree.num_leaves, root_name=names[-1], labels=labels)


def cannot_hold(tree: Hierarchy, fmt: str) -> bool:
    """The rules, stated independently of the writers: JSON strings (pairs' sidecar, nbdt) hold any
    text; text files hold no NUL; isa separates names by whitespace and skips '#' lines."""
    names = [*tree.node_names, tree.root_name]
    labels = list(tree.labels.values()) if fmt == "nbdt" else []  # only nbdt holds the labels
    if any(0xD800 <= ord(ch) <= 0xDFFF for name in names + labels for ch in name):
        return True
    if fmt in ("pairs", "nbdt"):
        return False
    if any("\x00" in name for name in names):
        return True
    parents = {names[p] for p in tree.parents.tolist()}  # names[-1] is the root
    if fmt == "child-parent":  # lines start with the children: every node but the root
        return any(n.split() != [n] for n in names) or any(n[0] == "#" for n in names[:-1])
    return fmt == "isa" and (any(n.split() != [n] for n in names) or any(n[0] == "#" for n in parents))


def one_line_naming_a_node(message: str, tree: Hierarchy, fmt: str) -> None:
    assert "\n" not in message and "\r" not in message
    names = [*tree.node_names, tree.root_name]
    assert any(message.startswith((f"cannot write {fmt} format: node name {n!r} ",
                                   f"cannot write {fmt} format: the label of node {n!r} ")) for n in names), message
    assert "use --to" in message or "rename the node" in message


@pytest.mark.parametrize("fmt", FORMATS.names())
@PROPERTY
@given(tree=named_trees(), suffix=st.sampled_from([".txt", ".json", "", ".tsv"]))
def test_every_writer_round_trips_or_refuses(tmp_path_factory, fmt, tree, suffix):
    path = tmp_path_factory.mktemp(fmt) / f"tree{suffix}"
    try:
        write_hierarchy(tree, path, format=fmt)
    except HierarchyError as exc:
        one_line_naming_a_node(str(exc), tree, fmt)
        assert cannot_hold(tree, fmt), str(exc)
        assert not path.exists() and not names_sidecar(path).exists()
        return
    assert not cannot_hold(tree, fmt)
    assert detect_format(path) == fmt
    written = tree if fmt == "nbdt" else tree.with_labels(None)  # the others leave NBDT's labels out
    assert read_hierarchy(path) == written
    assert read_hierarchy(path, format=fmt) == written
    assert read_hierarchy(path, classes=tree.leaf_names) == written


# ------------------------------------------------------------------ byte for byte as before
def old_layout(tree: Hierarchy, fmt: str) -> dict[str, str]:
    """What the writers wrote before the header and the escapes (names -> text)."""
    names = [*tree.node_names, tree.root_name]
    parents = tree.parents.tolist()
    if fmt == "pairs":
        lines = [str(tree.num_nodes)] + [f"{c} {p if p >= 0 else tree.num_nodes}" for c, p in enumerate(parents)]
        return {"tree.txt.names.tsv": "".join(f"{i}\t{n}\n" for i, n in enumerate(names)),
                "tree.txt": "\n".join(lines) + "\n"}
    if fmt == "isa":
        return {"tree.txt": "\n".join(f"{names[p]} {names[c]}" for c, p in enumerate(parents)) + "\n"}
    if fmt == "child-parent":
        return {"tree.txt": "\n".join(f"{names[c]} {names[p]}" for c, p in enumerate(parents)) + "\n"}
    if fmt == "nbdt":
        data = {"directed": True, "multigraph": False, "graph": {}, "nodes": [{"id": n, "label": n} for n in names],
                "links": [{"source": names[p], "target": names[c]} for c, p in enumerate(parents)]}
        return {"tree.json": json.dumps(data, indent=1) + "\n"}

    def escape(name: str) -> str:
        return name.replace("\\", "\\\\").replace("/", "\\/")

    return {"tree.txt": "\n".join("/".join(escape(n) for n in tree.path_names(leaf))
                                  for leaf in range(tree.num_leaves)) + "\n"}


@pytest.mark.parametrize("fmt", FORMATS.names())
@PROPERTY
@given(tree=named_trees())
def test_files_that_already_round_tripped_are_written_as_before(tmp_path_factory, fmt, tree):
    """Other tools read these files: where the old layout reads back as the tree, the writer
    writes exactly the old bytes (no header, no new escapes)."""
    old, new = tmp_path_factory.mktemp("old"), tmp_path_factory.mktemp("new")
    try:
        for name, text in old_layout(tree, fmt).items():
            (old / name).write_bytes(text.encode("utf-8"))
        same = read_hierarchy(old / ("tree.json" if fmt == "nbdt" else "tree.txt")) == tree
    except (HierarchyError, UnicodeEncodeError):
        same = False
    if not same:
        return
    write_hierarchy(tree, new / ("tree.json" if fmt == "nbdt" else "tree.txt"), format=fmt)
    assert {p.name: p.read_bytes() for p in new.iterdir()} == {p.name: p.read_bytes() for p in old.iterdir()}


# ------------------------------------------------------------------ the failures, pinned
def test_a_node_named_hash_survives(tmp_path):
    tree = Hierarchy.from_paths([("#hash", "x"), ("#hash", "y"), ("b", "#leaf")])
    for fmt in ("pairs", "nbdt", "paths"):
        path = tmp_path / f"{fmt}.txt"
        write_hierarchy(tree, path, format=fmt)
        assert read_hierarchy(path) == tree
    assert (tmp_path / "paths.txt").read_text() == "\\#hash/x\n\\#hash/y\nb/#leaf\n"
    with pytest.raises(HierarchyError, match=r"^cannot write isa format: node name '#hash' starts with '#', and its "
                                             r"lines would be comments in an isa file; use --to pairs, paths or nbdt$"):
        write_hierarchy(tree, tmp_path / "isa.txt", format="isa")
    leaf_only = Hierarchy.from_paths([("a", "#x"), ("a", "y")])  # '#x' only ends lines: isa holds it
    write_hierarchy(leaf_only, tmp_path / "isa.txt", format="isa")
    assert read_hierarchy(tmp_path / "isa.txt") == leaf_only


@pytest.mark.parametrize("separator", ["\x85", "\u2028", "\u2029", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"])
@pytest.mark.parametrize("fmt", FORMATS.names())
def test_line_separators_in_names_survive_convert(tmp_path, capsys, separator, fmt):
    src = tmp_path / "src.txt"
    src.write_text(f"animal/big{separator}cat\nanimal/dog\nplant\n", encoding="utf-8")
    tree = read_hierarchy(src)
    assert tree.leaf_names == (f"big{separator}cat", "dog", "plant")
    out = tmp_path / ("out.json" if fmt == "nbdt" else "out.txt")
    code = main(["hierarchy", "convert", str(src), str(out), "--to", fmt])
    err = capsys.readouterr().err
    if fmt in ("isa", "child-parent"):  # these separators are whitespace to str.split, which separates the names
        assert code == 2 and err == f"hseval: error: cannot write {fmt} format: node name " \
                                    f"{f'big{separator}cat'!r} contains whitespace; use --to pairs, paths or nbdt\n"
        assert not out.exists()
    else:
        assert code == 0 and err == ""
        assert read_hierarchy(out) == tree


@pytest.mark.parametrize(("tree", "fmt", "name", "first_line"), [
    # a flat paths file of two-word classes looked like isa
    (Hierarchy.from_paths([("big cat",), ("small dog",)]), "paths", "t.txt",
     '# hseval hierarchy: {"format": "paths", "root": "root"}'),
    # a paths file whose first class is a number looked like pairs
    (Hierarchy.from_paths([("123",), ("x",)]), "paths", "t.txt",
     '# hseval hierarchy: {"format": "paths", "root": "root"}'),
    # the paths format had no place for the root's name
    (Hierarchy.from_paths([("a", "x"), ("b",)], root_name="entity"), "paths", "t.txt",
     '# hseval hierarchy: {"format": "paths", "root": "entity"}'),
    # a pairs file called .json was read as nbdt (pairs files get no header: the text decides)
    (fashion_tree(), "pairs", "t.json", "13"),
    (Hierarchy.from_edges([("r", "a"), ("r", "b")]), "isa", "t.json",
     '# hseval hierarchy: {"format": "isa", "leaf_order": "file"}'),
    # isa sorts its classes naturally: another class order goes in the header
    (Hierarchy.from_edges([("r", "b"), ("r", "a")], classes=["b", "a"]), "isa", "t.txt",
     '# hseval hierarchy: {"format": "isa", "leaf_order": "file"}'),
])
def test_detection_and_root_are_fixed_by_a_header(tmp_path, tree, fmt, name, first_line):
    path = tmp_path / name
    write_hierarchy(tree, path, format=fmt)
    assert path.read_text(encoding="utf-8").splitlines()[0] == first_line
    assert detect_format(path) == fmt and read_hierarchy(path) == tree


def test_superclass_order_goes_in_the_header_where_the_lines_cannot_give_it(tmp_path):
    # class 0 is under b, yet a comes first among the super-classes: a paths file lists classes in order
    tree = Hierarchy(["x", "y", "a", "b"], [3, 2, -1, -1], 2)
    write_hierarchy(tree, tmp_path / "t.txt", format="paths")
    assert (tmp_path / "t.txt").read_text() == ('# hseval hierarchy: {"format": "paths", "root": "root", '
                                                '"superclass_order": ["a", "b"]}\nb/x\na/y\n')
    assert read_hierarchy(tmp_path / "t.txt") == tree
    write_hierarchy(tree, tmp_path / "t.json", format="nbdt")  # nbdt lists the super-classes' links first instead
    assert read_hierarchy(tmp_path / "t.json") == tree


def test_surrounding_whitespace_is_escaped_in_paths_and_quoted_in_the_sidecar(tmp_path):
    tree = Hierarchy.from_paths([(" animal ", "cat "), (" animal ", "\u2028"), ("plant",)])
    write_hierarchy(tree, tmp_path / "t.txt", format="paths")
    assert (tmp_path / "t.txt").read_text(encoding="utf-8") == "\\ animal\\ /cat\\ \n\\ animal\\ /\\\u2028\nplant\n"
    write_hierarchy(tree, tmp_path / "p.txt", format="pairs")
    sidecar = names_sidecar(tmp_path / "p.txt").read_text()
    assert sidecar.splitlines()[:2] == ['# hseval names: {"names": "json"}', '0\t"cat "']
    for name in ("t.txt", "p.txt"):
        assert read_hierarchy(tmp_path / name) == tree


def test_surrogates_and_nul_are_refused_with_the_formats_that_can(tmp_path):
    nul = Hierarchy.from_paths([("a", "x\x00y"), ("b",)])
    with pytest.raises(HierarchyError, match=r"^cannot write paths format: node name 'x\\x00y' contains a NUL "
                                             r"character, which a text file cannot hold; use --to pairs or nbdt$"):
        write_hierarchy(nul, tmp_path / "t.txt", format="paths")
    for fmt in ("pairs", "nbdt"):
        write_hierarchy(nul, tmp_path / f"{fmt}.txt", format=fmt)
        assert read_hierarchy(tmp_path / f"{fmt}.txt") == nul
    pair = Hierarchy.from_paths([("a", "\ud83d\ude00"), ("b",)])  # two surrogates: JSON would merge them
    for fmt in FORMATS.names():
        with pytest.raises(HierarchyError, match=r"node name '\\ud83d\\ude00' holds a surrogate code point, which is "
                                                 r"not Unicode text and no hierarchy file can hold; rename the node$"):
            write_hierarchy(pair, tmp_path / f"s.{fmt}", format=fmt)
    assert not list(tmp_path.glob("s.*"))


# ------------------------------------------------------------------ size and depth
def big_tree(num_leaves: int = 200_000) -> Hierarchy:
    """``num_leaves`` classes under 450 super-classes at depth 2 (15 groups of 30), and every
    1000th class 4 levels deeper."""
    groups, per_group = 15, 30
    mids = num_leaves + groups + np.arange(groups * per_group)
    deep = mids[-1] + 1 + np.arange(4)
    leaf_parent = mids[np.arange(num_leaves) % len(mids)]
    leaf_parent[999::1000] = deep[-1]
    parents = np.concatenate([leaf_parent, np.full(groups, -1), num_leaves + np.arange(groups).repeat(per_group),
                              [mids[-1], *deep[:-1]]])
    names = ([f"c{i}" for i in range(num_leaves)] + [f"g{k}" for k in range(groups)]
             + [f"g{k // per_group}s{k % per_group}" for k in range(groups * per_group)]
             + [f"deep{k}" for k in range(4)])
    return Hierarchy(names, parents, num_leaves)


@pytest.mark.slow  # seconds each: the fast lane keeps units and contracts
def test_200000_classes_in_every_format(tmp_path):
    """Every reader and writer is linear: this took minutes (paths: quadratic) before."""
    tree = big_tree()
    assert (tree.num_leaves, tree.num_nodes, tree.max_depth) == (200_000, 200_469, 7)
    for fmt in FORMATS.names():
        path = tmp_path / f"big.{fmt}"
        write_hierarchy(tree, path, format=fmt)
        assert read_hierarchy(path) == tree
    lines = render_tree(tree).splitlines()
    leaves = np.arange(tree.num_leaves)
    under_g0 = int(((leaves % 450 < 30) & (leaves % 1000 != 999)).sum())  # g0's 30 super-classes, not deep ones
    assert len(lines) == 1 + tree.num_nodes and lines[1] == f"├── g0  ({under_g0} classes)"


def test_show_prints_a_tree_999_levels_deep(tmp_path, capsys):
    path = tmp_path / "chain.txt"
    path.write_text("/".join(f"n{k}" for k in range(999)) + "\n")
    assert main(["hierarchy", "show", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1000 and lines[0] == "root" and lines[1] == "└── n0  (1 classes)"
    assert lines[-1] == " " * 4 * 998 + "└── n998"
    path.write_text("/".join(f"n{k}" for k in range(1001)) + "\n")  # past MAX_DEPTH: one line, no crash
    assert main(["hierarchy", "show", str(path)]) == 2
    assert "the tree is 1001 levels deep (limit 1000)" in capsys.readouterr().err


def recursive_render(hierarchy: Hierarchy, max_depth: int | None = None) -> str:
    """The reference: render_tree as it was (recursive, leaf counts from H)."""
    lines = [hierarchy.root_name]

    def walk(node: int, prefix: str) -> None:
        kids = hierarchy.children[node]
        for k, child in enumerate(kids):
            last = k == len(kids) - 1
            label = hierarchy.node_names[child]
            if not hierarchy.is_leaf(child):
                label += f"  ({len(hierarchy.subtree_leaves(child))} classes)"
            lines.append(f"{prefix}{'└── ' if last else '├── '}{label}")
            if max_depth is None or hierarchy.depth[child] < max_depth:
                walk(child, prefix + ("    " if last else "│   "))

    walk(-1, "")
    return "\n".join(lines)


@settings(max_examples=examples(100), deadline=None)
@given(tree=trees(), max_depth=st.sampled_from([None, 1, 2, 3]))
def test_show_prints_what_it_printed_before(tree, max_depth):
    assert render_tree(tree, max_depth) == recursive_render(tree, max_depth)
