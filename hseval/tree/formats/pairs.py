"""The ``pairs`` format: the paper's ``DATASETNAME_child_parent_pairs.txt``.

The first line is the number of entries, then one ``child parent`` pair of integer indices per
line. Leaves are ``0..L-1`` in class order; the root is the one index that is only a parent.
Names, when there are any, live in a sidecar ``<file>.names.tsv`` (:func:`names_sidecar`) with
``index<TAB>name`` lines (names are stripped). A sidecar whose first line is
``# hseval names: {"names": "json"}`` holds each name as a JSON string instead (hseval writes it so
only where a name has surrounding whitespace or a NUL character). A node that neither the sidecar
nor the class list names is called by its index, with a suffix (``_1``) where a given name is that
number. The index of a node is its canonical index in :class:`~hseval.tree.hierarchy.Hierarchy`,
and the root's is |P|. A file of ``parent child`` lines is refused with advice to swap them.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Iterator
from json.encoder import encode_basestring_ascii as _quote
from pathlib import Path

from hseval.core.errors import HierarchyError
from hseval.tree.formats.common import Files, Format, HierarchyFile, split_lines, swap_advice
from hseval.tree.hierarchy import Hierarchy
from hseval.tree.naming import fresh_names

__all__ = ["FORMAT", "names_sidecar", "NAMES_HEADER", "MAX_INDEX_DIGITS"]

MAX_INDEX_DIGITS = 12
NAMES_HEADER = '# hseval names: {"names": "json"}'
_COUNT = re.compile(r"[+-]?\d+")
_CLEAN_PAIRS = re.compile(rf"(?:[0-9]{{1,{MAX_INDEX_DIGITS}}} [0-9]{{1,{MAX_INDEX_DIGITS}}}\n)*")  # as hseval writes


def names_sidecar(path: str | Path) -> Path:
    """The names file that goes with a pairs file: ``<file>.names.tsv``."""
    path = Path(path)
    return path.with_name(path.name + ".names.tsv")


# --------------------------------------------------------------------- reading
def read(source: HierarchyFile) -> Hierarchy:
    """The tree of a pairs file and its names sidecar; where it is no tree but would be one read
    as ``parent child`` lines, the error says so."""
    try:
        return _read(source, swapped=False)
    except HierarchyError as exc:
        raise swap_advice(exc, lambda: _read(source, swapped=True), "parent child",
                          "swap them, as pairs lines are 'child parent'") from None


def _read(source: HierarchyFile, *, swapped: bool) -> Hierarchy:
    """The tree of a pairs file, or of one whose lines are ``parent child`` (``swapped``)."""
    path, lines = source.path, source.lines()
    number, first = lines[0]
    if len(first.split()) != 1:
        raise HierarchyError(f"{path}, line {number}: expected the number of entries on the first line, "
                             f"got {first!r}")
    count = _int_token(path, number, first)
    entries = lines[1:]
    if not entries:
        raise HierarchyError(f"{path}: no 'child parent' pairs after the count line; the hierarchy is empty")
    if count != len(entries):
        raise HierarchyError(f"{path}, line {number}: the count line says {count} entries but the file has "
                             f"{len(entries)}; fix the first line")
    parent_of = _pair_links(path, entries, swapped)
    parents_set = set(parent_of.values())
    nodes = parents_set | set(parent_of)
    size = max(nodes) + 1
    if len(nodes) != size:  # the first gap, without building range(size): an index may be huge
        gap = next(i for i, node in enumerate(sorted(nodes)) if i != node)
        raise HierarchyError(f"{path}: index {gap} is missing; node indices must run 0..{size - 1} without gaps")
    roots = sorted(nodes - set(parent_of))
    if len(roots) != 1:
        if not roots:
            raise HierarchyError(f"{path}: every node has a parent, so the pairs contain a cycle")
        raise HierarchyError(f"{path}: {len(roots)} roots (nodes {', '.join(map(str, roots[:5]))} have no parent); "
                             "a tree has exactly one: add a common root")
    root = roots[0]
    leaves = sorted(nodes - parents_set)
    num_leaves = len(leaves)
    if leaves[-1] != num_leaves - 1:
        not_leaf = min(set(range(num_leaves)) - set(leaves))
        raise HierarchyError(f"{path}: node {not_leaf} is a super-class, but indices 0..{num_leaves - 1} must be "
                             f"the {num_leaves} classes (leaves) in class order; renumber the file")
    names = _read_names(source, size)
    if source.classes is not None:
        if len(source.classes) != num_leaves:
            raise HierarchyError(f"{path}: {num_leaves} leaves but {len(source.classes)} dataset classes; the tree "
                                 "must have one leaf per class")
        for i, class_name in enumerate(source.classes):
            if i in names and names[i] != class_name:
                raise HierarchyError(f"{names_sidecar(path)}: leaf {i} is named {names[i]!r} but class {i} is "
                                     f"{class_name!r}")
            names[i] = class_name
    # a node without a name is called by its index, unless a given name is that number already
    fresh = fresh_names((str(i) for i in range(size) if i not in names), names.values()) if names else {}
    node_names = [names[i] if i in names else fresh.get(str(i), str(i)) for i in range(size)]
    order = [i for i in range(size) if i != root]
    position = {node: k for k, node in enumerate(order)}
    position[root] = -1
    return Hierarchy([node_names[i] for i in order], [position[parent_of[i]] for i in order], num_leaves,
                     root_name=node_names[root], source=str(path), merge_chains=source.merge_chains)


def _int_token(path: Path, number: int, token: str) -> int:
    if not token.isdecimal():
        raise HierarchyError(f"{path}, line {number}: {token!r} is not a non-negative integer index")
    if len(token) > MAX_INDEX_DIGITS:
        raise HierarchyError(f"{path}, line {number}: index {token[:20]}... is too large (more than "
                             f"{MAX_INDEX_DIGITS} digits)")
    return int(token)


def _pair_links(path: Path, entries: list[tuple[int, str]], swapped: bool) -> dict[int, int]:
    """child -> parent of the ``child parent`` lines (``parent child`` where ``swapped``)."""
    first, second = (1, 0) if swapped else (0, 1)
    joined = "\n".join(line for _, line in entries) + "\n"
    if _CLEAN_PAIRS.fullmatch(joined):  # as hseval writes them: parsed in C, then checked as a whole
        values = list(map(int, joined.split()))
        parent_of = dict(zip(values[first::2], values[second::2]))
        if len(parent_of) == len(entries) and all(map(operator.ne, values[0::2], values[1::2])):
            return parent_of
    parent_of, line_of = {}, {}
    for number, line in entries:  # line by line, to name the first wrong one
        tokens = line.split()
        if len(tokens) != 2:
            raise HierarchyError(f"{path}, line {number}: expected 'child parent' (two integers), got {line!r}")
        child, parent = _int_token(path, number, tokens[first]), _int_token(path, number, tokens[second])
        if child == parent:
            raise HierarchyError(f"{path}, line {number}: node {child} is its own parent (a cycle)")
        if parent_of.get(child) == parent:
            raise HierarchyError(f"{path}, line {number}: node {child} is listed twice (line {line_of[child]} too); "
                                 "list each node once")
        if child in parent_of:
            raise HierarchyError(f"{path}, line {number}: node {child} has two parents ({parent_of[child]} on line "
                                 f"{line_of[child]} and {parent}); a hierarchy must be a tree")
        parent_of[child], line_of[child] = parent, number
    return parent_of


def _read_names(source: HierarchyFile, size: int) -> dict[int, str]:
    """{index: name} of the sidecar, {} when there is none."""
    sidecar = names_sidecar(source.path)
    text = source.companion(sidecar)
    if text is None:
        return {}
    rows = split_lines(text)
    quoted = rows[0].strip() == NAMES_HEADER
    names = None if quoted else _clean_names(rows, size)
    if names is not None:
        return names
    names = {}
    for number, line in enumerate(rows, start=1):
        if not line.strip() or line.startswith("#"):
            continue
        index, sep, name = line.partition("\t")
        name = _json_name(name) if quoted else name.strip()
        if not sep or not index.strip().isdecimal() or not name:
            expected = "index<TAB>\"name\"' (the name as a JSON string)" if quoted else "index<TAB>name'"
            raise HierarchyError(f"{sidecar}, line {number}: expected '{expected}, got {line!r}")
        index = index.strip()
        if len(index) > MAX_INDEX_DIGITS or int(index) >= size:
            shown = index if len(index) <= 20 else index[:20] + "..."
            raise HierarchyError(f"{sidecar}, line {number}: index {shown} is not a node of {source.path.name} "
                                 f"(0..{size - 1})")
        i = int(index)
        if i in names:
            raise HierarchyError(f"{sidecar}, line {number}: index {i} is named twice")
        names[i] = name
    return names


def _clean_names(rows: list[str], size: int) -> dict[int, str] | None:
    """The names of a sidecar as hseval writes it (no comments, blank lines or repeated indices),
    in C-speed passes; None when the sidecar needs the line-by-line reading."""
    split = [row.partition("\t") for row in (rows[:-1] if rows[-1] == "" else rows)]
    indices = [index for index, _, _ in split]
    names = [name.strip() for _, _, name in split]
    if not (indices and all(map(str.isdecimal, indices)) and all(names)
            and max(map(len, indices)) <= MAX_INDEX_DIGITS):
        return None
    numbers = list(map(int, indices))
    table = dict(zip(numbers, names))
    return table if len(table) == len(numbers) and max(numbers) < size else None


def _json_name(text: str) -> str:
    try:
        name = json.loads(text)
    except (ValueError, RecursionError):
        return ""
    return name if isinstance(name, str) else ""


# --------------------------------------------------------------------- writing
def renderings(tree: Hierarchy, path: Path) -> Iterator[Files]:
    """The sidecar and the pairs file: plain names first, then names as JSON strings (for names
    with surrounding whitespace, which the plain sidecar trims, or a NUL), ASCII only."""
    root = tree.num_nodes
    pairs = "".join(f"{c} {p if p >= 0 else root}\n" for c, p in enumerate(tree.parents.tolist()))
    text = f"{tree.num_nodes}\n{pairs}"
    names = [*tree.node_names, tree.root_name]
    yield [(names_sidecar(path), "".join(f"{i}\t{n}\n" for i, n in enumerate(names))), (path, text)]
    yield [(names_sidecar(path), NAMES_HEADER + "\n" + "".join(f"{i}\t{_quote(n)}\n" for i, n in enumerate(names))),
           (path, text)]


def claims(path: Path, lines: list[str]) -> bool:
    """Detection: a file whose first line is a count (an integer) is a pairs file, whatever its
    name (even ``.json``)."""
    return bool(lines) and _COUNT.fullmatch(lines[0]) is not None


FORMAT = Format("pairs", read, renderings, header_keys={}, claims=claims)
