"""The ``isa`` format: ``parent child`` name pairs, one per line (Making Better Mistakes'
``isa.txt``, cvjena's ``parent-child.txt``), and its mirror ``child-parent``: ``child parent``
pairs (cvjena's NAB ``hierarchy.txt``, their ``is_a_relations``).

Names are separated by whitespace, so they cannot hold any. Leaves are in natural sort order
(numeric ids as numbers, WordNet ids as ImageNet's class index) unless a class list is given or
the header's ``leaf_order`` is ``"file"`` (the order in which they first appear); the header's
``superclass_order`` gives the super-classes' numbering. Nothing tells the two column orders apart
but a header, so a file without one is detected as isa (:func:`claims`); where it is not a tree but would be one
with its columns swapped, the error says so and names the format that reads it.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from itertools import chain
from pathlib import Path

from hseval.core.errors import HierarchyError
from hseval.tree.formats.common import (
    Files,
    Format,
    HierarchyFile,
    header_line,
    is_name_list,
    swap_advice,
    text_file_problem,
)
from hseval.tree.hierarchy import Hierarchy

__all__ = ["FORMAT", "CHILD_PARENT"]


def read(source: HierarchyFile, *, child_first: bool = False) -> Hierarchy:
    """The tree of an isa file, or of a child-parent one (``child_first``)."""
    order, other = ("child parent", "isa") if child_first else ("parent child", "child-parent")
    edges = []
    for number, line in source.lines():
        tokens = line.split()
        if len(tokens) != 2:
            raise HierarchyError(f"{source.path}, line {number}: expected '{order}' (two names), got {line!r}")
        edges.append((tokens[1], tokens[0]) if child_first else (tokens[0], tokens[1]))
    try:
        return _tree(source, edges, child_first)
    except HierarchyError as exc:
        swapped = [(child, parent) for parent, child in edges]
        raise swap_advice(exc, lambda: _tree(source, swapped, child_first), " ".join(order.split()[::-1]),
                          f"pass --format {other}") from None


def _tree(source: HierarchyFile, edges: list[tuple[str, str]], child_first: bool) -> Hierarchy:
    """The tree of (parent, child) ``edges``; ``child_first``: the file lists each child first."""
    classes = source.classes
    if classes is None and source.header.get("leaf_order") == "file":
        parents = {parent for parent, _ in edges}
        in_file = chain.from_iterable((c, p) if child_first else (p, c) for p, c in edges)
        classes = [name for name in dict.fromkeys(in_file) if name not in parents]
    return Hierarchy.from_edges(edges, classes=classes, source=str(source.path), merge_chains=source.merge_chains)


def name_problem(name: str, role: str, *, child_first: bool = False) -> str | None:
    """Why an isa (or child-parent) file cannot hold ``name`` (``role``: root, parent or leaf; the
    lines start with the parents, or with the children where ``child_first``)."""
    problem = text_file_problem(name)
    if problem is None and name.split() != [name]:
        problem = f"node name {name!r} contains whitespace; use --to pairs, paths or nbdt"
    starts_lines = role != "root" if child_first else role != "leaf"
    if problem is None and starts_lines and name[0] == "#":
        problem = (f"node name {name!r} starts with '#', and its lines would be comments in "
                   f"{'a child-parent' if child_first else 'an isa'} file; use --to pairs, paths or nbdt")
    return problem


def renderings(tree: Hierarchy, path: Path, *, child_first: bool = False) -> Iterator[Files]:
    """The edges; then with the header keeping the class order; then the super-classes' order too."""
    names = [*tree.node_names, tree.root_name]  # names[-1], the root, is the parent -1
    links = enumerate(tree.parents.tolist())
    body = "".join(f"{names[c]} {names[p]}\n" for c, p in links) if child_first else \
        "".join(f"{names[p]} {names[c]}\n" for c, p in links)
    yield [(path, body)]
    header = {"format": "child-parent" if child_first else "isa", "leaf_order": "file"}
    yield [(path, header_line(header) + body)]
    header["superclass_order"] = list(tree.node_names[tree.num_leaves:])
    yield [(path, header_line(header) + body)]


def claims(path: Path, lines: list[str]) -> bool:
    """Detection: a file of two names a line (asked after nbdt and paths, which claim a first line
    starting with ``{`` and a line with a ``/``)."""
    return bool(lines) and all(len(line.split()) == 2 for line in lines)


_HEADER_KEYS = {"leaf_order": lambda value: value in ("file", "natural"), "superclass_order": is_name_list}
FORMAT = Format("isa", read, renderings, header_keys=_HEADER_KEYS, name_problem=name_problem, claims=claims)
# child-parent claims no file: only a header or --format tells it from isa
CHILD_PARENT = Format("child-parent", partial(read, child_first=True), partial(renderings, child_first=True),
                      header_keys=_HEADER_KEYS, name_problem=partial(name_problem, child_first=True))
