"""The ``isa`` format: ``parent child`` name pairs, one per line (Making Better Mistakes'
``isa.txt``, cvjena's ``parent-child.txt``).

Names are separated by whitespace, so they cannot hold any. Leaves are in natural sort order
(numeric ids as numbers, WordNet ids as ImageNet's class index) unless a class list is given or
the header's ``leaf_order`` is ``"file"`` (the order in which they first appear); the header's
``superclass_order`` gives the super-classes' numbering.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain
from pathlib import Path

from hseval.core.errors import HierarchyError
from hseval.tree.formats.common import Files, Format, Source, header_line, is_name_list, text_file_problem
from hseval.tree.hierarchy import Hierarchy

__all__ = ["FORMAT"]


def read(source: Source) -> Hierarchy:
    """The tree of an isa file."""
    edges = []
    for number, line in source.lines():
        tokens = line.split()
        if len(tokens) != 2:
            raise HierarchyError(f"{source.path}, line {number}: expected 'parent child' (two names), got {line!r}")
        edges.append((tokens[0], tokens[1]))
    classes = source.classes
    if classes is None and source.header.get("leaf_order") == "file":
        parents = {parent for parent, _ in edges}
        classes = [name for name in dict.fromkeys(chain.from_iterable(edges)) if name not in parents]
    return Hierarchy.from_edges(edges, classes=classes, source=str(source.path))


def name_problem(name: str, starts_lines: bool) -> str | None:
    """Why an isa file cannot hold ``name`` (``starts_lines``: it is a parent, first on its lines)."""
    problem = text_file_problem(name)
    if problem is None and name.split() != [name]:
        problem = f"node name {name!r} contains whitespace; use --to pairs, paths or nbdt"
    if problem is None and starts_lines and name[0] == "#":
        problem = (f"node name {name!r} starts with '#', and its lines would be comments in an isa file; use --to "
                   "pairs, paths or nbdt")
    return problem


def renderings(tree: Hierarchy, path: Path) -> Iterator[Files]:
    """The edges; then with the header keeping the class order; then the super-classes' order too."""
    names = [*tree.node_names, tree.root_name]  # names[-1], the root, is the parent -1
    body = "".join(f"{names[p]} {names[c]}\n" for c, p in enumerate(tree.parents.tolist()))
    yield [(path, body)]
    header = {"format": "isa", "leaf_order": "file"}
    yield [(path, header_line(header) + body)]
    header["superclass_order"] = list(tree.node_names[tree.num_leaves:])
    yield [(path, header_line(header) + body)]


FORMAT = Format("isa", read, renderings, header_keys={"leaf_order": lambda value: value in ("file", "natural"),
                                                      "superclass_order": is_name_list},
                name_problem=name_problem)
