"""Readers and writers of hierarchy files.

Formats (``FORMATS``):

``pairs``
    The paper's ``DATASETNAME_child_parent_pairs.txt``: the first line is the number of entries,
    then one ``child parent`` pair of integer indices per line. Leaves are ``0..L-1`` in class
    order; the root is the one index that is only a parent. Names, when there are any, live in a
    sidecar ``<file>.names.tsv`` with ``index<TAB>name`` lines.
``isa``
    ``parent child`` name pairs, one per line (Making Better Mistakes' ``isa.txt``, cvjena's
    ``parent-child.txt``); ``#`` starts a comment. Leaves are in natural sort order (numeric ids
    as numbers, WordNet ids as ImageNet's class index) unless a class list is given.
``nbdt``
    networkx node-link JSON as written by NBDT (``nodes`` with ``id``; ``links`` or ``edges``
    with ``source`` -> ``target`` from parent to child). Leaves are in the order of ``nodes``;
    nodes are named by their ``label`` where labels are unique, else by ``id``.
``paths``
    One label path per class in class order, components separated by ``/``
    (``animal/dog/husky``); a ``/`` inside a name is written ``\\/``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from hseval import fileio
from hseval.errors import HierarchyError
from hseval.hierarchy import Hierarchy

__all__ = ["FORMATS", "detect_format", "read_hierarchy", "write_hierarchy", "names_sidecar"]

FORMATS = ("pairs", "isa", "nbdt", "paths")
MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_INDEX_DIGITS = 12


def names_sidecar(path: str | Path) -> Path:
    """The names file that goes with a pairs file: ``<file>.names.tsv``."""
    path = Path(path)
    return path.with_name(path.name + ".names.tsv")


def _read_text(path: Path) -> str:
    try:
        if path.is_dir():
            raise HierarchyError(f"{path}: is a folder, expected a hierarchy file")
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise HierarchyError(f"{path}: {size} bytes is too large for a hierarchy file "
                                 f"(limit {MAX_FILE_BYTES})")
        data = path.read_bytes()
    except FileNotFoundError:
        raise HierarchyError(f"{path}: no such file") from None
    except OSError as exc:
        raise HierarchyError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if b"\x00" in data:
        raise HierarchyError(f"{path}: is a binary file, not a hierarchy (expected text: "
                             f"one of {', '.join(FORMATS)})")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise HierarchyError(f"{path}: is not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    if not text.strip():
        raise HierarchyError(f"{path}: is empty; expected a hierarchy in one of the formats "
                             f"{', '.join(FORMATS)}")
    return text


def _content_lines(text: str) -> list[tuple[int, str]]:
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            out.append((number, stripped))
    return out


def detect_format(path: str | Path, text: str | None = None) -> str:
    """Guess the format of ``path`` from its extension and first lines."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        return "nbdt"
    text = _read_text(path) if text is None else text
    lines = _content_lines(text)
    if not lines:
        raise HierarchyError(f"{path}: holds only comments; expected a hierarchy")
    first = lines[0][1]
    if first.startswith("{"):
        return "nbdt"
    if re.fullmatch(r"[+-]?\d+", first):
        return "pairs"
    sample = [line for _, line in lines[:200]]
    if any(_split_path(line) != [line] for line in sample):
        return "paths"
    if all(len(line.split()) == 2 for line in sample):
        return "isa"
    if all(len(line.split()) == 1 for line in sample):
        return "paths"
    raise HierarchyError(f"{path}: cannot tell the hierarchy format; pass --format "
                         f"({', '.join(FORMATS)})")


def read_hierarchy(path: str | Path, format: str | None = None, *,
                   classes: Sequence[str] | None = None) -> Hierarchy:
    """Read ``path`` (see the module docstring for the formats)."""
    path = Path(path)
    if format is not None and format not in FORMATS:
        raise HierarchyError(f"unknown hierarchy format {format!r}; choose one of {', '.join(FORMATS)}")
    text = _read_text(path)
    format = format or detect_format(path, text)
    if format != "nbdt" and not _content_lines(text):
        raise HierarchyError(f"{path}: holds only comments; expected a hierarchy")
    reader = {"pairs": _read_pairs, "isa": _read_isa, "nbdt": _read_nbdt, "paths": _read_paths}[format]
    return reader(path, text, classes)


def _int_token(path: Path, number: int, token: str) -> int:
    if not re.fullmatch(r"\d+", token):
        raise HierarchyError(f"{path}, line {number}: {token!r} is not a non-negative integer index")
    if len(token) > MAX_INDEX_DIGITS:
        raise HierarchyError(f"{path}, line {number}: index {token[:20]}... is too large (more than "
                             f"{MAX_INDEX_DIGITS} digits)")
    return int(token)


def _read_pairs(path: Path, text: str, classes: Sequence[str] | None) -> Hierarchy:
    lines = _content_lines(text)
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
    parent_of: dict[int, tuple[int, int]] = {}
    for number, line in entries:
        tokens = line.split()
        if len(tokens) != 2:
            raise HierarchyError(f"{path}, line {number}: expected 'child parent' (two integers), got {line!r}")
        child, parent = (_int_token(path, number, t) for t in tokens)
        if child == parent:
            raise HierarchyError(f"{path}, line {number}: node {child} is its own parent (a cycle)")
        if child in parent_of:
            other_parent, other_line = parent_of[child]
            raise HierarchyError(f"{path}, line {number}: node {child} has two parents ({other_parent} on line "
                                 f"{other_line} and {parent}); a hierarchy must be a tree")
        parent_of[child] = (parent, number)
    nodes = set(parent_of) | {p for p, _ in parent_of.values()}
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
    parents_set = {p for p, _ in parent_of.values()}
    leaves = sorted(nodes - parents_set)
    num_leaves = len(leaves)
    if leaves[-1] != num_leaves - 1:
        not_leaf = min(set(range(num_leaves)) - set(leaves))
        raise HierarchyError(f"{path}: node {not_leaf} is a super-class, but indices 0..{num_leaves - 1} must be "
                             f"the {num_leaves} classes (leaves) in class order; renumber the file")
    names = _read_names(path, size)
    if classes is not None:
        classes = [str(c) for c in classes]
        if len(classes) != num_leaves:
            raise HierarchyError(f"{path}: {num_leaves} leaves but {len(classes)} dataset classes; the tree must "
                                 "have one leaf per class")
        for i, cls_name in enumerate(classes):
            if i in names and names[i] != cls_name:
                raise HierarchyError(f"{names_sidecar(path)}: leaf {i} is named {names[i]!r} but class {i} is "
                                     f"{cls_name!r}")
            names[i] = cls_name
    node_names = [names.get(i, str(i)) for i in range(size)]
    order = [i for i in range(size) if i != root]
    position = {node: k for k, node in enumerate(order)}
    position[root] = -1
    try:
        return Hierarchy([node_names[i] for i in order], [position[parent_of[i][0]] for i in order],
                         num_leaves, root_name=node_names[root])
    except HierarchyError as exc:
        raise HierarchyError(f"{path}: {exc}") from None


def _read_names(path: Path, size: int) -> dict[int, str]:
    sidecar = names_sidecar(path)
    if not sidecar.exists():
        return {}
    names: dict[int, str] = {}
    for number, line in enumerate(_read_text(sidecar).splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        index, sep, name = line.partition("\t")
        if not sep or not re.fullmatch(r"\d+", index.strip()) or not name.strip():
            raise HierarchyError(f"{sidecar}, line {number}: expected 'index<TAB>name', got {line!r}")
        i = int(index)
        if i >= size:
            raise HierarchyError(f"{sidecar}, line {number}: index {i} is not a node of {path.name} "
                                 f"(0..{size - 1})")
        if i in names:
            raise HierarchyError(f"{sidecar}, line {number}: index {i} is named twice")
        names[i] = name.strip()
    return names


def _read_isa(path: Path, text: str, classes: Sequence[str] | None) -> Hierarchy:
    edges = []
    for number, line in _content_lines(text):
        tokens = line.split()
        if len(tokens) != 2:
            raise HierarchyError(f"{path}, line {number}: expected 'parent child' (two names), got {line!r}")
        edges.append((tokens[0], tokens[1]))
    return Hierarchy.from_edges(edges, classes=classes, source=str(path))


def _read_nbdt(path: Path, text: str, classes: Sequence[str] | None) -> Hierarchy:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HierarchyError(f"{path}, line {exc.lineno}: not valid JSON ({exc.msg})") from None
    except (ValueError, RecursionError) as exc:  # a number too long to convert, nesting too deep
        reason = (str(exc).splitlines() or [exc.__class__.__name__])[0].split(";")[0]
        raise HierarchyError(f"{path}: not valid JSON ({reason})") from None
    links = data.get("links", data.get("edges")) if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list) or not isinstance(links, list):
        raise HierarchyError(f"{path}: expected node-link JSON with 'nodes' and 'links' lists (NBDT format)")
    ids, labels = [], []
    for k, node in enumerate(data["nodes"]):
        if not isinstance(node, dict) or not isinstance(node.get("id"), (str, int)):
            raise HierarchyError(f"{path}: nodes[{k}] has no 'id'")
        ids.append(str(node["id"]))
        label = node.get("label")
        labels.append(str(label) if isinstance(label, (str, int)) and str(label).strip() else None)
    known = set(ids)
    edges = []
    for k, link in enumerate(links):
        if not isinstance(link, dict) or "source" not in link or "target" not in link:
            raise HierarchyError(f"{path}: links[{k}] needs 'source' and 'target'")
        parent, child = str(link["source"]), str(link["target"])
        for end in (parent, child):
            if end not in known:
                raise HierarchyError(f"{path}: links[{k}] refers to {end!r}, which is not in 'nodes'")
        edges.append((parent, child))
    isolated = known - {p for p, _ in edges} - {c for _, c in edges}
    if isolated and len(known) > 1:
        raise HierarchyError(f"{path}: node {sorted(isolated)[0]!r} has no links; a tree is connected")
    # name nodes by their labels (WordNet words) when those are unique and the classes are not ids
    use_labels = (all(labels) and len(set(labels)) == len(labels)
                  and not (classes is not None and set(map(str, classes)) <= known))
    if classes is None:  # NBDT lists the leaves in class order
        parents = {p for p, _ in edges}
        classes = [name for name in ids if name not in parents]
    if use_labels:
        rename = dict(zip(ids, labels))
        edges = [(rename[p], rename[c]) for p, c in edges]
        classes = [rename.get(c, c) for c in classes]
    return Hierarchy.from_edges(edges, classes=classes, source=str(path))


def _split_path(line: str) -> list[str]:
    """Split on unescaped slashes; ``\\/`` is a slash inside a name, ``\\\\`` a backslash."""
    out, current, escaped = [], [], False
    for ch in line:
        if escaped:
            current.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == "/":
            out.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    out.append("".join(current).strip())
    return out


def _escape(name: str) -> str:
    return name.replace("\\", "\\\\").replace("/", "\\/")


def _read_paths(path: Path, text: str, classes: Sequence[str] | None) -> Hierarchy:
    paths = []
    for number, line in _content_lines(text):
        parts = _split_path(line)
        if any(not p for p in parts):
            raise HierarchyError(f"{path}, line {number}: empty component in the path {line!r}")
        paths.append(parts)
    hierarchy = Hierarchy.from_paths(paths, source=str(path))
    if classes is not None:
        classes = [str(c) for c in classes]
        if list(hierarchy.leaf_names) != classes:
            diff = next((i for i, (a, b) in enumerate(zip(hierarchy.leaf_names, classes)) if a != b),
                        min(len(classes), hierarchy.num_leaves))
            raise HierarchyError(f"{path}: line {diff + 1} ends in a class that does not match class {diff} of "
                                 f"the dataset ({len(classes)} classes, {hierarchy.num_leaves} paths); give one "
                                 "path per class in class order")
    return hierarchy


# --------------------------------------------------------------------- writers
def write_hierarchy(hierarchy: Hierarchy, path: str | Path, format: str | None = None) -> None:
    """Write ``hierarchy`` to ``path`` atomically (pairs also writes the names sidecar)."""
    path = Path(path)
    format = format or ("nbdt" if path.suffix.lower() == ".json" else "pairs")
    if format not in FORMATS:
        raise HierarchyError(f"unknown hierarchy format {format!r}; choose one of {', '.join(FORMATS)}")
    if format == "pairs":
        root = hierarchy.num_nodes
        parents = [p if p >= 0 else root for p in hierarchy.parents.tolist()]
        lines = [str(hierarchy.num_nodes)] + [f"{c} {p}" for c, p in enumerate(parents)]
        names = [*hierarchy.node_names, hierarchy.root_name]
        fileio.write_text(names_sidecar(path), "".join(f"{i}\t{n}\n" for i, n in enumerate(names)))
        fileio.write_text(path, "\n".join(lines) + "\n")
    elif format == "isa":
        names = [*hierarchy.node_names, hierarchy.root_name]
        spaced = next((n for n in names if len(n.split()) != 1), None)
        if spaced is not None:
            raise HierarchyError(f"cannot write isa format: node name {spaced!r} contains whitespace; "
                                 "use --to pairs, paths or nbdt")
        lines = [f"{names[p]} {names[c]}" for c, p in enumerate(hierarchy.parents.tolist())]
        fileio.write_text(path, "\n".join(lines) + "\n")
    elif format == "nbdt":
        names = [*hierarchy.node_names, hierarchy.root_name]
        data = {"directed": True, "multigraph": False, "graph": {},
                "nodes": [{"id": n, "label": n} for n in names],
                "links": [{"source": names[p], "target": names[c]}
                          for c, p in enumerate(hierarchy.parents.tolist())]}
        fileio.write_text(path, json.dumps(data, indent=1) + "\n")
    else:
        lines = ["/".join(_escape(n) for n in hierarchy.path_names(leaf)) for leaf in range(hierarchy.num_leaves)]
        fileio.write_text(path, "\n".join(lines) + "\n")
