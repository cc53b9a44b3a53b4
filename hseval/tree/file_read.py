"""Readers and writers of hierarchy files.

Formats (``FORMATS``):

``pairs``
    The paper's ``DATASETNAME_child_parent_pairs.txt``: the first line is the number of entries,
    then one ``child parent`` pair of integer indices per line. Leaves are ``0..L-1`` in class
    order; the root is the one index that is only a parent. Names, when there are any, live in a
    sidecar ``<file>.names.tsv`` with ``index<TAB>name`` lines (names are stripped). A sidecar whose
    first line is ``# hseval names: {"names": "json"}`` holds each name as a JSON string instead
    (hseval writes it so only where a name has surrounding whitespace or a NUL character).
``isa``
    ``parent child`` name pairs, one per line (Making Better Mistakes' ``isa.txt``, cvjena's
    ``parent-child.txt``). Leaves are in natural sort order (numeric ids as numbers, WordNet ids
    as ImageNet's class index) unless a class list is given or the header says otherwise.
``nbdt``
    networkx node-link JSON as written by NBDT (``nodes`` with ``id``; ``links`` or ``edges``
    with ``source`` -> ``target`` from parent to child). Leaves are in the order of ``nodes``;
    nodes are named by their ``label`` where labels are unique, else by ``id``.
``paths``
    One label path per class in class order, components separated by ``/``
    (``animal/dog/husky``). A backslash makes the next character part of the name: ``\\/`` is a
    slash, ``\\\\`` a backslash, ``\\#`` a ``#`` that would start a comment, ``\\ `` a space (or
    other whitespace) at either end of a name, which would otherwise be trimmed. The root is
    called ``root`` unless the header names it.

Lines end at ``\\n``, ``\\r\\n`` or ``\\r`` only: names may hold the other separators that
``str.splitlines`` breaks at (U+0085, U+2028, form feed...). Blank lines and lines whose first
non-space character is ``#`` are skipped, and the whitespace around a line is ignored.

The header: an isa or paths file may begin with the line ``# hseval hierarchy: {...}`` (a JSON
object; other tools see a comment). Its keys: ``format`` (the file's format: detection trusts
it), ``root`` (paths: the root's name), ``leaf_order`` (isa: ``"file"`` keeps the classes in the
order in which they first appear, ``"natural"`` sorts them) and ``superclass_order`` (isa and
paths: every super-class, in the tree's canonical order). The format is detected from the header,
else from the first lines: a count (an integer): pairs, whatever the file's name; ``{``, or
anything else in a ``.json`` file: nbdt; a ``/`` or ``\\``: paths; two names a line: isa; one
name a line: paths.

Writing (:mod:`hseval.tree.file_write`): a writer renders the text, reads it back in memory with
the readers above and compares the result with the tree (``==``). Where they differ it adds the
header, then the header with the super-class order; where even that cannot hold the tree (a name
with whitespace in isa, a NUL), it refuses with a one-line :class:`HierarchyError` that names the
node and the formats that can. So a file that hseval writes reads back, format detected, as the
tree it was written from.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Sequence
from itertools import chain
from pathlib import Path

from hseval.core import fileio
from hseval.core.errors import HierarchyError, first_line
from hseval.tree.hierarchy import Hierarchy

__all__ = ["FORMATS", "detect_format", "read_hierarchy", "write_hierarchy", "names_sidecar"]

FORMATS = ("pairs", "isa", "nbdt", "paths")
MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_INDEX_DIGITS = 12
HEADER = "# hseval hierarchy:"
NAMES_HEADER = '# hseval names: {"names": "json"}'
_HEADER_KEYS = {  # key of the header -> (the formats that take it, what its value must be)
    "format": (("pairs", "isa", "paths"), lambda value: True),
    "root": (("paths",), lambda value: isinstance(value, str) and value != ""),
    "leaf_order": (("isa",), lambda value: value in ("file", "natural")),
    "superclass_order": (("isa", "paths"), lambda value: isinstance(value, list)
                         and all(isinstance(name, str) for name in value)),
}
_INTEGER = re.compile(r"[+-]?\d+")
_CLEAN_PAIRS = re.compile(rf"(?:[0-9]{{1,{MAX_INDEX_DIGITS}}} [0-9]{{1,{MAX_INDEX_DIGITS}}}\n)*")  # as hseval writes
_FROM_DISK = object()  # read the sidecar next to the file
_SURROGATE = re.compile("[\ud800-\udfff]")

Files = list[tuple[Path, str]]  # what a writer writes: (path, text), the pairs sidecar first


def names_sidecar(path: str | Path) -> Path:
    """The names file that goes with a pairs file: ``<file>.names.tsv``."""
    path = Path(path)
    return path.with_name(path.name + ".names.tsv")


# --------------------------------------------------------------------- text and lines
def _read_text(path: Path) -> str:
    return _decode(path, fileio.read_bytes(path, what="a hierarchy file", error=HierarchyError, missing="no such file",
                                           max_bytes=MAX_FILE_BYTES))


def _decode(path: Path, data: bytes) -> str:
    if len(data) > MAX_FILE_BYTES:
        raise HierarchyError(f"{path}: {len(data)} bytes is too large for a hierarchy file "
                             f"(limit {MAX_FILE_BYTES})")
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


def _as_read(path: Path, text: str) -> str:
    """``text`` as a reader will see it once written: encoded as UTF-8, then decoded."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise HierarchyError(f"{path}: {text[exc.start:exc.end]!r} is not valid Unicode (a lone "
                             "surrogate); UTF-8 cannot hold it") from None
    return _decode(path, data)


def _rows(text: str) -> list[str]:
    """The lines of ``text``, which end at \\n, \\r\\n or \\r only."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.split("\n")


def _head(text: str, size: int = 1 << 16) -> list[str]:
    """The first lines of ``text`` (about ``size`` characters), enough to detect its format; the
    first line is whole."""
    first = min((i for i in (text.find("\n"), text.find("\r")) if i >= 0), default=len(text))
    rows = _rows(text[:max(size, first + 1)])
    return rows[:-1] if len(text) > max(size, first + 1) and len(rows) > 1 else rows


def _content_lines(rows: list[str], *, raw: bool = False) -> list[tuple[int, str]]:
    """(line number, line) of every line that is not blank or a comment; stripped unless ``raw``."""
    kept = [(number, line) for number, line in enumerate(map(str.strip, rows), start=1) if line and line[0] != "#"]
    return [(number, rows[number - 1]) for number, _ in kept] if raw else kept


def _header(path: Path, first_row: str) -> dict:
    """The ``# hseval hierarchy: {...}`` line at the top of a file, checked; {} when there is none."""
    if not first_row.startswith(HEADER):
        return {}
    where = f"{path}, line 1: the '{HEADER}' line"
    try:
        header = json.loads(first_row[len(HEADER):])
    except (ValueError, RecursionError) as exc:
        reason = getattr(exc, "msg", None) or exc.__class__.__name__
        raise HierarchyError(f"{where} is not valid JSON ({reason}); fix it or delete the line") from None
    formats = _HEADER_KEYS["format"][0]
    if not isinstance(header, dict) or header.get("format") not in formats:
        raise HierarchyError(f"{where} needs a \"format\" of {', '.join(formats)}; fix it or delete the line")
    for key, value in header.items():
        takes, valid = _HEADER_KEYS.get(key, ((), None))
        if header["format"] not in takes:
            raise HierarchyError(f"{where} has the key {key!r}, which {header['format']} files do not take; "
                                 "fix it or delete the line")
        if not valid(value):
            raise HierarchyError(f"{where} has a malformed {key!r}; fix it or delete the line")
    return header


# --------------------------------------------------------------------- readers
def detect_format(path: str | Path, text: str | None = None) -> str:
    """Guess the format of ``path`` from its header, extension and first lines."""
    path = Path(path)
    head = _head(_read_text(path) if text is None else text)
    return _detect(path, head, _header(path, head[0]))


def _detect(path: Path, rows: list[str], header: dict) -> str:
    if header:
        return header["format"]
    sample = []
    for line in map(str.strip, rows):
        if line and line[0] != "#":
            sample.append(line)
            if len(sample) == 200:
                break
    is_json = path.suffix.lower() == ".json"
    if not sample:
        if is_json:
            return "nbdt"
        raise HierarchyError(f"{path}: holds only comments; expected a hierarchy")
    first = sample[0]
    if _INTEGER.fullmatch(first):  # a pairs file, even one called .json
        return "pairs"
    if is_json or first.startswith("{"):
        return "nbdt"
    if any(_split_path(line) != [line] for line in sample):
        return "paths"
    if all(len(line.split()) == 2 for line in sample):
        return "isa"
    if all(len(line.split()) == 1 for line in sample):
        return "paths"
    raise HierarchyError(f"{path}: cannot tell the hierarchy format; pass --format "
                         f"({', '.join(FORMATS)})")


def check_format(format: str) -> None:
    """Refuse a format name that is not one of :data:`FORMATS`, listing them."""
    if format not in FORMATS:
        raise HierarchyError(f"unknown hierarchy format {format!r}; choose one of {', '.join(FORMATS)}")


def read_hierarchy(path: str | Path, format: str | None = None, *,
                   classes: Sequence[str] | None = None) -> Hierarchy:
    """Read ``path`` (see the module docstring for the formats)."""
    path = Path(path)
    if format is not None:
        check_format(format)
    return _parse(path, _read_text(path), format, classes)


def _parse(path: Path, text: str, format: str | None, classes: Sequence[str] | None,
           sidecar: str | object | None = _FROM_DISK) -> Hierarchy:
    """The tree in ``text`` (the contents of ``path``); ``sidecar`` is the text of the pairs
    names file, None for none, or read from disk by default."""
    head = _head(text)
    header = _header(path, head[0])
    format = format or _detect(path, head, header)
    if format == "nbdt":
        return _read_nbdt(path, text, classes)
    lines = _content_lines(_rows(text), raw=format == "paths")
    if not lines:
        raise HierarchyError(f"{path}: holds only comments; expected a hierarchy")
    header = header if header.get("format") == format else {}
    if format == "pairs":
        tree = _read_pairs(path, lines, classes, sidecar)
    elif format == "isa":
        tree = _read_isa(path, lines, classes, header.get("leaf_order", "natural"))
    else:
        tree = _read_paths(path, lines, classes, header.get("root", "root"))
    if "superclass_order" in header:
        tree = _with_superclass_order(path, tree, header["superclass_order"])
    return tree


def _int_token(path: Path, number: int, token: str) -> int:
    if not token.isdecimal():
        raise HierarchyError(f"{path}, line {number}: {token!r} is not a non-negative integer index")
    if len(token) > MAX_INDEX_DIGITS:
        raise HierarchyError(f"{path}, line {number}: index {token[:20]}... is too large (more than "
                             f"{MAX_INDEX_DIGITS} digits)")
    return int(token)


def _read_pairs(path: Path, lines: list[tuple[int, str]], classes: Sequence[str] | None,
                sidecar: str | object | None) -> Hierarchy:
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
    parent_of = _pair_links(path, entries)
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
    names = _read_names(path, size, sidecar)
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
        return Hierarchy([node_names[i] for i in order], [position[parent_of[i]] for i in order],
                         num_leaves, root_name=node_names[root])
    except HierarchyError as exc:
        raise HierarchyError(f"{path}: {exc}") from None


def _pair_links(path: Path, entries: list[tuple[int, str]]) -> dict[int, int]:
    """child -> parent of the ``child parent`` lines."""
    joined = "\n".join(line for _, line in entries) + "\n"
    if _CLEAN_PAIRS.fullmatch(joined):  # as hseval writes them: parsed in C, then checked as a whole
        values = list(map(int, joined.split()))
        parent_of = dict(zip(values[0::2], values[1::2]))
        if len(parent_of) == len(entries) and all(map(operator.ne, values[0::2], values[1::2])):
            return parent_of
    parent_of, line_of = {}, {}
    for number, line in entries:  # line by line, to name the first wrong one
        tokens = line.split()
        if len(tokens) != 2:
            raise HierarchyError(f"{path}, line {number}: expected 'child parent' (two integers), got {line!r}")
        child, parent = _int_token(path, number, tokens[0]), _int_token(path, number, tokens[1])
        if child == parent:
            raise HierarchyError(f"{path}, line {number}: node {child} is its own parent (a cycle)")
        if child in parent_of:
            raise HierarchyError(f"{path}, line {number}: node {child} has two parents ({parent_of[child]} on line "
                                 f"{line_of[child]} and {parent}); a hierarchy must be a tree")
        parent_of[child], line_of[child] = parent, number
    return parent_of


def _read_names(path: Path, size: int, text: str | object | None) -> dict[int, str]:
    sidecar = names_sidecar(path)
    if text is _FROM_DISK:
        text = _read_text(sidecar) if sidecar.exists() else None
    if text is None:
        return {}
    rows = _rows(text)
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
            raise HierarchyError(f"{sidecar}, line {number}: index {shown} is not a node of {path.name} "
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


def _read_isa(path: Path, lines: list[tuple[int, str]], classes: Sequence[str] | None,
              leaf_order: str) -> Hierarchy:
    edges = []
    for number, line in lines:
        tokens = line.split()
        if len(tokens) != 2:
            raise HierarchyError(f"{path}, line {number}: expected 'parent child' (two names), got {line!r}")
        edges.append((tokens[0], tokens[1]))
    if classes is None and leaf_order == "file":
        parents = {parent for parent, _ in edges}
        classes = [name for name in dict.fromkeys(chain.from_iterable(edges)) if name not in parents]
    return Hierarchy.from_edges(edges, classes=classes, source=str(path))


def _read_nbdt(path: Path, text: str, classes: Sequence[str] | None) -> Hierarchy:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HierarchyError(f"{path}, line {exc.lineno}: not valid JSON ({exc.msg})") from None
    except (ValueError, RecursionError) as exc:  # a number too long to convert, nesting too deep
        raise HierarchyError(f"{path}: not valid JSON ({first_line(exc, clause=True)})") from None
    links = data.get("links", data.get("edges")) if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list) or not isinstance(links, list):
        raise HierarchyError(f"{path}: expected node-link JSON with 'nodes' and 'links' lists (NBDT format)")
    ids, labels = _nbdt_nodes(path, data["nodes"])
    known = set(ids)
    try:  # the common case in C; the loop below names the first wrong link
        edges = [(link["source"], link["target"]) for link in links]
    except (TypeError, KeyError, IndexError):
        edges = []
    if len(edges) != len(links) or not all(type(p) is str and type(c) is str for p, c in edges) \
            or not known.issuperset(chain.from_iterable(edges)):
        edges = []
        for k, link in enumerate(links):
            if not isinstance(link, dict) or "source" not in link or "target" not in link:
                raise HierarchyError(f"{path}: links[{k}] needs 'source' and 'target'")
            parent, child = str(link["source"]), str(link["target"])
            if parent not in known or child not in known:
                end = parent if parent not in known else child
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
    if use_labels and labels != ids:
        rename = dict(zip(ids, labels))
        edges = [(rename[p], rename[c]) for p, c in edges]
        classes = [rename.get(c, c) for c in classes]
    return Hierarchy.from_edges(edges, classes=classes, source=str(path))


def _nbdt_nodes(path: Path, nodes: list) -> tuple[list[str], list[str | None]]:
    """The id of every node, and its label where it has a usable one."""
    ids = [node.get("id") if isinstance(node, dict) else None for node in nodes]
    if not all(type(node_id) is str for node_id in ids):
        bad = next((k for k, node_id in enumerate(ids) if not isinstance(node_id, (str, int))), None)
        if bad is not None:
            raise HierarchyError(f"{path}: nodes[{bad}] has no 'id'")
        ids = list(map(str, ids))
    labels = [node.get("label") for node in nodes]
    labels = [(label if label.strip() else None) if isinstance(label, str)
              else str(label) if isinstance(label, int) else None for label in labels]
    return ids, labels


def _split_path(line: str) -> list[str]:
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


def _escape(name: str, *, first: bool = False) -> str:
    """``name`` as a paths component (``first``: at the start of a line, where ``#`` is a comment)."""
    text = name.replace("\\", "\\\\").replace("/", "\\/") if "\\" in name or "/" in name else name
    if name[0].isspace() or (first and name[0] == "#"):
        text = "\\" + text
    if len(name) > 1 and name[-1].isspace():
        text = text[:-1] + "\\" + text[-1]
    return text


def _read_paths(path: Path, lines: list[tuple[int, str]], classes: Sequence[str] | None,
                root_name: str) -> Hierarchy:
    paths = []
    for number, line in lines:
        parts = _split_path(line)
        if "" in parts:
            raise HierarchyError(f"{path}, line {number}: empty component in the path {line.strip()!r}")
        paths.append(parts)
    hierarchy = Hierarchy.from_paths(paths, root_name=root_name, source=str(path))
    if classes is None:
        return hierarchy
    classes = [str(c) for c in classes]
    leaves = set(hierarchy.leaf_names)
    missing = next((c for c in classes if c not in leaves), None)
    if missing is not None:
        raise HierarchyError(f"{path}: class {missing!r} is not in the hierarchy; give one path per dataset class")
    extra = next((name for name in hierarchy.leaf_names if name not in set(classes)), None)
    if extra is not None:
        raise HierarchyError(f"{path}: leaf {extra!r} is not a dataset class; remove its path")
    return hierarchy.reorder_leaves(classes, source=str(path))  # the leaves follow the dataset's classes


def _with_superclass_order(path: Path, tree: Hierarchy, order: list[str]) -> Hierarchy:
    """``tree`` with its super-classes renumbered in ``order`` (the header's superclass_order)."""
    supers = tree.node_names[tree.num_leaves:]
    if len(order) != len(supers) or set(order) != set(supers) or len(set(order)) != len(order):
        raise HierarchyError(f"{path}, line 1: the header's superclass_order does not list the file's "
                             f"{len(supers)} super-classes once each; fix it or delete the line")
    return tree.renumbered([*tree.leaf_names, *order])


def write_hierarchy(hierarchy: Hierarchy, path: str | Path, format: str | None = None) -> None:
    """Write ``hierarchy`` to ``path`` atomically in a file that reads back as an equal tree, or
    refuse with a one-line HierarchyError (see :mod:`hseval.tree.file_write`)."""
    from hseval.tree.file_write import write_hierarchy as write

    write(hierarchy, path, format)
