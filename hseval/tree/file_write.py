"""Writers of hierarchy files: every file hseval writes reads back as the tree it came from.

A writer renders the text, reads it back in memory with the readers of :mod:`hseval.tree.file_read`
and compares the result with the tree (``==``). Where they differ it adds the header, then the
header with the super-class order; where even that cannot hold the tree (a name with whitespace in
isa, a NUL), it refuses with a one-line :class:`HierarchyError` that names the node and the formats
that can (the formats, the header and the escapes are described in :mod:`hseval.tree.file_read`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from json.encoder import encode_basestring_ascii as _quote
from pathlib import Path

from hseval.core import fileio
from hseval.core.errors import HierarchyError
from hseval.tree.file_read import (
    _SURROGATE,
    HEADER,
    NAMES_HEADER,
    Files,
    _as_read,
    _escape,
    _parse,
    check_format,
    names_sidecar,
)
from hseval.tree.hierarchy import Hierarchy

__all__ = ["write_hierarchy"]


def write_hierarchy(hierarchy: Hierarchy, path: str | Path, format: str | None = None) -> None:
    """Write ``hierarchy`` to ``path`` atomically (pairs also writes the names sidecar), in a file
    that reads back as an equal tree, or refuse with a one-line HierarchyError (module docstring)."""
    path = Path(path)
    format = format or ("nbdt" if path.suffix.lower() == ".json" else "pairs")
    check_format(format)
    for target, text in _render(hierarchy, path, format):
        fileio.write_text(target, text)


def _render(tree: Hierarchy, path: Path, format: str) -> Files:
    """The first rendering of ``tree`` that reads back as ``tree``."""
    refusal = _refusal(tree, format)
    if refusal is not None:
        raise HierarchyError(f"cannot write {format} format: {refusal}")
    problem = "it reads back as a different tree"
    renderings = {"pairs": _pairs_renderings, "isa": _isa_renderings, "nbdt": _nbdt_renderings,
                  "paths": _paths_renderings}[format]
    for files in renderings(tree, path):
        try:
            sidecar = _as_read(files[0][0], files[0][1]) if len(files) == 2 else None
            again = _parse(path, _as_read(path, files[-1][1]), None, None, sidecar)
        except HierarchyError as exc:
            problem = str(exc)
            continue
        if again == tree:
            return files
    raise HierarchyError(f"cannot write {format} format: the file would not read back as the tree ({problem}); "
                         "use --to pairs or nbdt")


def _refusal(tree: Hierarchy, format: str) -> str | None:
    """Why ``format`` cannot hold ``tree`` whatever the header says, or None."""
    names = [*tree.node_names, tree.root_name]
    everything = "".join(names)
    if not _SURROGATE.search(everything) and (format in ("pairs", "nbdt") or (
            "\x00" not in everything and format == "paths")):
        return None
    parents = set(tree.parents.tolist())
    for k, name in enumerate(names):
        if _SURROGATE.search(name):  # not Unicode text: UTF-8 cannot encode it, JSON would merge a pair
            return (f"node name {name!r} holds a surrogate code point, which is not Unicode text and no "
                    "hierarchy file can hold; rename the node")
        if format in ("pairs", "nbdt"):  # their names are JSON strings
            continue
        if "\x00" in name:
            return f"node name {name!r} contains a NUL character, which a text file cannot hold; use --to pairs or nbdt"
        if format == "isa" and name.split() != [name]:
            return f"node name {name!r} contains whitespace; use --to pairs, paths or nbdt"
        if format == "isa" and name[0] == "#" and (k in parents or k == len(names) - 1):
            return (f"node name {name!r} starts with '#', and its lines would be comments in an isa file; use --to "
                    "pairs, paths or nbdt")
    return None


def _header_line(header: dict) -> str:
    return f"{HEADER} {json.dumps(header)}\n"


def _pairs_renderings(tree: Hierarchy, path: Path) -> Iterator[Files]:
    root = tree.num_nodes
    pairs = "".join(f"{c} {p if p >= 0 else root}\n" for c, p in enumerate(tree.parents.tolist()))
    text = f"{tree.num_nodes}\n{pairs}"
    names = [*tree.node_names, tree.root_name]
    yield [(names_sidecar(path), "".join(f"{i}\t{n}\n" for i, n in enumerate(names))), (path, text)]
    # names with surrounding whitespace (which the plain sidecar trims) or a NUL: JSON strings, ASCII only
    yield [(names_sidecar(path), NAMES_HEADER + "\n" + "".join(f"{i}\t{_quote(n)}\n" for i, n in enumerate(names))),
           (path, text)]


def _isa_renderings(tree: Hierarchy, path: Path) -> Iterator[Files]:
    names = [*tree.node_names, tree.root_name]  # names[-1], the root, is the parent -1
    body = "".join(f"{names[p]} {names[c]}\n" for c, p in enumerate(tree.parents.tolist()))
    yield [(path, body)]
    header = {"format": "isa", "leaf_order": "file"}
    yield [(path, _header_line(header) + body)]
    header["superclass_order"] = list(tree.node_names[tree.num_leaves:])
    yield [(path, _header_line(header) + body)]


def _paths_renderings(tree: Hierarchy, path: Path) -> Iterator[Files]:
    names, parents = tree.node_names, tree.parents.tolist()
    prefix = [""] * len(names)

    def line(node: int) -> str:
        p = parents[node]
        return _escape(names[node], first=True) if p < 0 else prefix[p] + "/" + _escape(names[node])

    for node in range(tree.num_leaves, len(names)):  # super-classes, by depth: each parent comes first
        prefix[node] = line(node)
    body = "".join(line(leaf) + "\n" for leaf in range(tree.num_leaves))
    yield [(path, body)]
    header = {"format": "paths", "root": tree.root_name}
    yield [(path, _header_line(header) + body)]
    header["superclass_order"] = list(tree.node_names[tree.num_leaves:])
    yield [(path, _header_line(header) + body)]


def _nbdt_renderings(tree: Hierarchy, path: Path) -> Iterator[Files]:
    quoted = [_quote(n) for n in (*tree.node_names, tree.root_name)]
    parents = tree.parents.tolist()
    yield [(path, _nbdt_text(quoted, parents, range(len(parents))))]
    # a reader numbers the super-classes in order of appearance in the links: list theirs first
    leaves = tree.num_leaves
    yield [(path, _nbdt_text(quoted, parents, [*range(leaves, len(parents)), *range(leaves)]))]


def _nbdt_text(quoted: list[str], parents: list[int], children: Sequence[int]) -> str:
    """What ``json.dumps(node_link_data, indent=1)`` writes, without its slow pure-Python encoder."""
    nodes = ",\n".join(f'  {{\n   "id": {q},\n   "label": {q}\n  }}' for q in quoted)
    links = ",\n".join(f'  {{\n   "source": {quoted[parents[c]]},\n   "target": {quoted[c]}\n  }}' for c in children)
    return ('{\n "directed": true,\n "multigraph": false,\n "graph": {},\n "nodes": [\n' + nodes
            + '\n ],\n "links": [\n' + links + "\n ]\n}\n")
