r"""The ``paths`` format: one label path per class in class order, components separated by ``/``
(``animal/dog/husky``).

A backslash makes the next character part of the name: ``\/`` is a slash, ``\\`` a backslash,
``\#`` a ``#`` that would start a comment, ``\ `` a space (or other whitespace) at either end of a
name, which would otherwise be trimmed. The root is called ``root`` unless the header's ``root``
names it; the header's ``superclass_order`` gives the super-classes' numbering.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from hseval.core.errors import HierarchyError
from hseval.tree.formats.common import Files, Format, HierarchyFile, header_line, is_name_list, text_file_problem
from hseval.tree.hierarchy import Hierarchy

__all__ = ["FORMAT", "split_path", "escape"]


def split_path(line: str) -> list[str]:
    """Split on unescaped slashes and trim each name; a backslash makes the next character part
    of the name (``\\/`` a slash, ``\\\\`` a backslash) and keeps it from being trimmed."""
    if "\\" not in line:
        return list(map(str.strip, line.split("/")))
    out: list[str] = []
    current: list[str] = []
    kept: list[int] = []  # positions in ``current`` of escaped characters
    escaped = False
    for ch in line:
        if escaped:
            kept.append(len(current))
            current.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == "/":
            out.append(_trim(current, kept))
            current, kept = [], []
        else:
            current.append(ch)
    out.append(_trim(current, kept))
    return out


def _trim(chars: list[str], kept: list[int]) -> str:
    """``chars`` joined, without the whitespace at either end that no backslash protects."""
    text = "".join(chars)
    if not kept:
        return text.strip()
    lo, hi = kept[0], kept[-1] + 1
    return text[:lo].lstrip() + text[lo:hi] + text[hi:].rstrip()


def escape(name: str, *, first: bool = False) -> str:
    """``name`` as a path component (``first``: at the start of a line, where ``#`` is a comment)."""
    text = name.replace("\\", "\\\\").replace("/", "\\/") if "\\" in name or "/" in name else name
    if name[0].isspace() or (first and name[0] == "#"):
        text = "\\" + text
    if len(name) > 1 and name[-1].isspace():
        text = text[:-1] + "\\" + text[-1]
    return text


def read(source: HierarchyFile) -> Hierarchy:
    """The tree of a paths file; with a class list, its leaves in the classes' order."""
    path = source.path
    paths = []
    for number, line in source.lines(raw=True):
        parts = split_path(line)
        if "" in parts:
            raise HierarchyError(f"{path}, line {number}: empty component in the path {line.strip()!r}")
        paths.append(parts)
    hierarchy = Hierarchy.from_paths(paths, root_name=source.header.get("root", "root"), source=str(path),
                                     merge_chains=source.merge_chains)
    classes = source.classes
    if classes is None:
        return hierarchy
    leaves = set(hierarchy.leaf_names)
    missing = next((c for c in classes if c not in leaves), None)
    if missing is not None:
        raise HierarchyError(f"{path}: class {missing!r} is not in the hierarchy; give one path per dataset class")
    wanted = set(classes)
    extra = next((name for name in hierarchy.leaf_names if name not in wanted), None)
    if extra is not None:
        raise HierarchyError(f"{path}: leaf {extra!r} is not a dataset class; remove its path")
    return hierarchy.reorder_leaves(classes, source=str(path))  # the leaves follow the dataset's classes


def renderings(tree: Hierarchy, path: Path) -> Iterator[Files]:
    """The paths; then with the header naming the root; then the super-classes' order too."""
    names, parents = tree.node_names, tree.parents.tolist()
    prefix = [""] * len(names)

    def line(node: int) -> str:
        p = parents[node]
        return escape(names[node], first=True) if p < 0 else prefix[p] + "/" + escape(names[node])

    for node in range(tree.num_leaves, len(names)):  # super-classes, by depth: each parent comes first
        prefix[node] = line(node)
    body = "".join(line(leaf) + "\n" for leaf in range(tree.num_leaves))
    yield [(path, body)]
    header = {"format": "paths", "root": tree.root_name}
    yield [(path, header_line(header) + body)]
    header["superclass_order"] = list(tree.node_names[tree.num_leaves:])
    yield [(path, header_line(header) + body)]


def claims(path: Path, lines: list[str]) -> bool:
    """Detection: a file with a ``/`` or ``\\`` on some line (a separator or an escape), or of one
    name a line (a tree of depth 1)."""
    return any("/" in line or "\\" in line for line in lines) or \
        (bool(lines) and all(len(line.split()) == 1 for line in lines))


FORMAT = Format("paths", read, renderings, claims=claims,
                header_keys={"root": lambda value: isinstance(value, str) and value != "",
                             "superclass_order": is_name_list},
                name_problem=lambda name, role: text_file_problem(name))
