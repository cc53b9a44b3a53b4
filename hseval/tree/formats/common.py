"""What every hierarchy file format shares: the text and its lines, the header line, format
detection, and the registry of formats (:data:`FORMATS`) through which every file is read and
written.

Lines end at ``\\n``, ``\\r\\n`` or ``\\r`` only: names may hold the other separators that
``str.splitlines`` breaks at (U+0085, U+2028, form feed...). Blank lines and lines whose first
non-space character is ``#`` are skipped, and the whitespace around a line is ignored.

The header: an isa, child-parent or paths file may begin with the line ``# hseval hierarchy: {...}``
(a JSON object; other tools see a comment). Its key ``format`` names the file's format (detection
trusts it); the other keys are each format's (:attr:`Format.header_keys`): ``root`` (paths: the
root's name), ``leaf_order`` (isa, child-parent: ``"file"`` keeps the classes in the order in which
they first appear, ``"natural"`` sorts them) and ``superclass_order`` (the three: every
super-class, in the tree's canonical order).

Detection: the format the header names, else the first of :data:`FORMATS` that claims the file
from its name and first lines; each format's module says which files it claims
(:attr:`Format.claims`), and the registry's order settles overlaps.

Writing: a format renders the text, :func:`write_hierarchy` reads it back in memory (format
detected) and compares the result with the tree (``==``). Where they differ the format tries its
next rendering (with the header, then the header with the super-class order); where none can hold
the tree (a name with whitespace in isa, a NUL), it refuses with a one-line
:class:`~hseval.core.errors.HierarchyError` that names the node and the formats that can. So a
file that hseval writes reads back, format detected, as the tree it was written from.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from hseval.core import fileio
from hseval.core.arguments import checked
from hseval.core.errors import HierarchyError
from hseval.core.registry import Registry
from hseval.tree.hierarchy import Hierarchy

__all__ = ["FORMATS", "Format", "HierarchyFile", "read_hierarchy", "write_hierarchy", "detect_format"]

MAX_FILE_BYTES = 256 * 1024 * 1024
DETECTED_LINES = 200  # what detection reads of a file: its format shows in its first lines
HEADER = "# hseval hierarchy:"
_SURROGATE = re.compile("[\ud800-\udfff]")

Files = list[tuple[Path, str]]  # what a rendering writes: (path, text), the hierarchy file itself last


@dataclass(frozen=True)
class HierarchyFile:
    """A hierarchy file being read: its path and text, the header's keys where the header is of
    this format (else {}), the dataset's classes (None: the file decides the order), the texts
    of its companion files (None: read from disk; a writer checking its output gives them), and
    whether its single-child chains are merged as it is read (``merge_chains`` of
    :class:`~hseval.tree.hierarchy.Hierarchy`, before the depth is checked)."""

    path: Path
    text: str
    header: dict
    classes: list[str] | None
    files: Mapping[Path, str] | None = None
    merge_chains: bool = False

    def lines(self, *, raw: bool = False) -> list[tuple[int, str]]:
        """(line number, line) of every line that is not blank or a comment; stripped unless ``raw``."""
        rows = split_lines(self.text)
        kept = [(number, line) for number, line in enumerate(map(str.strip, rows), start=1) if line and line[0] != "#"]
        if not kept:
            raise HierarchyError(f"{self.path}: holds only comments; expected a hierarchy")
        return [(number, rows[number - 1]) for number, _ in kept] if raw else kept

    def companion(self, path: Path) -> str | None:
        """The text of a file that goes with this one (the pairs names), None where there is none."""
        if self.files is not None:
            return self.files.get(path)
        return read_text(path) if path.exists() else None


@dataclass(frozen=True)
class Format:
    """One hierarchy file format, its reader and writer together (one module of
    :mod:`hseval.tree.formats` each).

    ``read`` builds the tree of a :class:`HierarchyFile`; ``renderings`` yields the files of a tree, the
    plainest first (the first that reads back as the tree is written); ``header_keys`` maps each
    header key the format takes (beside ``format``) to the check of its value, None for a format
    without a header; ``name_problem(name, role)`` says why a name cannot be in such a file (``role``:
    ``"root"``, ``"parent"`` or ``"leaf"``) (None for a format that holds any text); ``holds_labels``:
    the file keeps the nodes' display labels (:attr:`Hierarchy.labels`), which the other formats
    leave out; ``claims(path, lines)``: a file without a header is of this format, from its path and
    first lines (at most :data:`DETECTED_LINES`, stripped, no blanks or comments; maybe none), asked
    in the order of :data:`FORMATS`, so a claim may leave out an earlier format's; None: only a
    header or ``--format`` says a file is of this format."""

    name: str
    read: Callable[[HierarchyFile], Hierarchy]
    renderings: Callable[[Hierarchy, Path], Iterator[Files]]
    header_keys: Mapping[str, Callable[[object], bool]] | None = None
    name_problem: Callable[[str, str], str | None] | None = None
    holds_labels: bool = False
    claims: Callable[[Path, list[str]], bool] | None = None


FORMATS: Registry[Format] = Registry("hierarchy format")  # filled by hseval.tree.formats, in detection order


# --------------------------------------------------------------------- text and lines
def read_text(path: Path) -> str:
    """The text of a hierarchy file (or of its companion), with a one-line error for a missing,
    binary, non-UTF-8, empty or too large file."""
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
        text = fileio.decode(data)
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


def split_lines(text: str) -> list[str]:
    """The lines of ``text``, which end at \\n, \\r\\n or \\r only."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.split("\n")


def _head(text: str, size: int = 1 << 16) -> list[str]:
    """The first lines of ``text`` (about ``size`` characters), enough to detect its format; the
    first line is whole."""
    first = min((i for i in (text.find("\n"), text.find("\r")) if i >= 0), default=len(text))
    rows = split_lines(text[:max(size, first + 1)])
    return rows[:-1] if len(text) > max(size, first + 1) and len(rows) > 1 else rows


# --------------------------------------------------------------------- the header
def header_line(header: dict) -> str:
    """The header line that records ``header`` (a JSON object with a ``format``)."""
    return f"{HEADER} {json.dumps(header)}\n"


def is_name_list(value: object) -> bool:
    """The check of a header's list of node names (``superclass_order``)."""
    return isinstance(value, list) and all(isinstance(name, str) for name in value)


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
    with_header = [name for name in FORMATS if FORMATS.get(name).header_keys is not None]
    if not isinstance(header, dict) or header.get("format") not in with_header:
        raise HierarchyError(f"{where} needs a \"format\" of {', '.join(with_header)}; fix it or delete the line")
    takes = FORMATS.get(header["format"]).header_keys
    for key, value in header.items():
        if key != "format" and key not in takes:
            raise HierarchyError(f"{where} has the key {key!r}, which {header['format']} files do not take; "
                                 "fix it or delete the line")
        if key != "format" and not takes[key](value):
            raise HierarchyError(f"{where} has a malformed {key!r}; fix it or delete the line")
    return header


def _with_superclass_order(path: Path, tree: Hierarchy, order: list[str]) -> Hierarchy:
    """``tree`` with its super-classes renumbered in ``order`` (the header's superclass_order)."""
    supers = tree.node_names[tree.num_leaves:]
    if len(order) != len(supers) or set(order) != set(supers) or len(set(order)) != len(order):
        raise HierarchyError(f"{path}, line 1: the header's superclass_order does not list the file's "
                             f"{len(supers)} super-classes once each; fix it or delete the line")
    return tree.renumbered([*tree.leaf_names, *order])


# --------------------------------------------------------------------- detection and reading
def detect_format(path: str | Path) -> str:
    """Guess the format of ``path`` from its header, extension and first lines."""
    path = Path(path)
    head = _head(read_text(path))
    return _detect(path, head, _header(path, head[0]))


def _detect(path: Path, rows: list[str], header: dict) -> str:
    """The format the header names, else the first of :data:`FORMATS` to claim the file (``rows``: its first lines)."""
    if header:
        return header["format"]
    sample = list(itertools.islice((line for line in map(str.strip, rows) if line and line[0] != "#"),
                                   DETECTED_LINES))
    for name in FORMATS:
        claims = FORMATS.get(name).claims
        if claims is not None and claims(path, sample):
            return name
    if not sample:  # unclaimed: a file of comments only is a format's only by its name (nbdt's .json)
        raise HierarchyError(f"{path}: holds only comments; expected a hierarchy")
    raise HierarchyError(f"{path}: cannot tell the hierarchy format; pass --format ({', '.join(FORMATS)})")


@checked
def read_hierarchy(path: str | Path, *, format: str | None = None, classes: Sequence[str] | None = None,
                   merge_chains: bool = False) -> Hierarchy:
    """Read a tree from a hierarchy file.

    Parameters
    ----------
    path : str or Path
        A hierarchy file: pairs (with its ``<path>.names.tsv``), isa, NBDT JSON or paths.
    format : str, optional
        One of :data:`FORMATS` (``pairs``, ``nbdt``, ``paths``, ``isa``, ``child-parent``); None
        detects it.
    classes : sequence of str, optional
        The dataset's class names: the leaves take their order, and each must be a leaf.
    merge_chains : bool, default False
        Remove every super-class of one child as the file is read, before its depth is checked
        (``hseval hierarchy convert --merge-chains``): a tree too deep in chains reads merged.

    Returns
    -------
    Hierarchy

    Raises
    ------
    HierarchyError
        One line naming the file and line (a cycle, two parents, an unknown class...).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "tree.txt"
    >>> _ = path.write_text("animal/cat\\nanimal/dog\\ncar\\n")
    >>> tree = read_hierarchy(path, format="paths")
    >>> tree.leaf_names, tree.max_depth
    (('cat', 'dog', 'car'), 2)
    """
    path = Path(path)
    if format is not None:
        FORMATS.get(format)
    return _parse(path, read_text(path), format, classes, merge_chains=merge_chains)


def _parse(path: Path, text: str, format: str | None, classes: Sequence[str] | None,
           files: Mapping[Path, str] | None = None, *, merge_chains: bool = False) -> Hierarchy:
    """The tree in ``text`` (the contents of ``path``); ``files``: its companions' texts, else the disk's."""
    head = _head(text)
    header = _header(path, head[0])
    format = format or _detect(path, head, header)
    header = header if header.get("format") == format else {}
    classes = None if classes is None else [str(c) for c in classes]
    tree = FORMATS.get(format).read(HierarchyFile(path, text, header, classes, files, merge_chains))
    if "superclass_order" in header:
        order = header["superclass_order"]
        if merge_chains:  # the merged super-classes are gone
            order = [name for name in order if name in set(tree.node_names[tree.num_leaves:])]
        tree = _with_superclass_order(path, tree, order)
    return tree


# --------------------------------------------------------------------- writing
@checked
def write_hierarchy(hierarchy: Hierarchy, path: str | Path, *, format: str | None = None) -> None:
    """Write a tree to a hierarchy file atomically, in a file that reads back as an equal tree.

    Parameters
    ----------
    hierarchy : Hierarchy
        The tree to write.
    path : str or Path
        The file; the pairs format also writes ``<path>.names.tsv``.
    format : str, optional
        One of :data:`FORMATS`; None: nbdt for a ``.json`` path, else pairs.

    Raises
    ------
    HierarchyError
        Where the format cannot hold the tree (nothing is written): one line naming the node and
        the formats that can.
    """
    path = Path(path)
    chosen = FORMATS.get(format or ("nbdt" if path.suffix.lower() == ".json" else "pairs"))
    for target, text in _render(hierarchy, path, chosen):
        fileio.write_text(target, text)


def _render(tree: Hierarchy, path: Path, format: Format) -> Files:
    """The first rendering of ``tree`` that reads back as ``tree``."""
    refusal = _refusal(tree, format)
    if refusal is not None:
        raise HierarchyError(f"cannot write {format.name} format: {refusal}")
    if tree.labels and not format.holds_labels:  # the others leave the labels out: the names are the tree
        tree = tree.with_labels(None)
    problem = "it reads back as a different tree"
    for files in format.renderings(tree, path):
        try:
            texts = {target: _as_read(target, text) for target, text in files}
            again = _parse(path, texts[path], None, None, texts)
        except HierarchyError as exc:
            problem = str(exc)
            continue
        if again == tree:
            return files
    raise HierarchyError(f"cannot write {format.name} format: the file would not read back as the tree ({problem}); "
                         "use --to pairs or nbdt")


def _refusal(tree: Hierarchy, format: Format) -> str | None:
    """Why ``format`` cannot hold ``tree`` whatever the header says (the first node that it cannot
    hold), or None."""
    names = [*tree.node_names, tree.root_name]
    labels = tree.labels if format.holds_labels else {}
    bad_label = next((name for name, label in labels.items() if _SURROGATE.search(label)), None)
    if bad_label is not None:
        return (f"the label of node {bad_label!r} holds a surrogate code point, which is not Unicode text and no "
                "hierarchy file can hold; change the label")
    if format.name_problem is None and not _SURROGATE.search("".join(names)):
        return None
    parents = set(tree.parents.tolist())  # the super-classes; names[-1] is the root
    for k, name in enumerate(names):
        if _SURROGATE.search(name):  # not Unicode text: UTF-8 cannot encode it, JSON would merge a pair
            return (f"node name {name!r} holds a surrogate code point, which is not Unicode text and no "
                    "hierarchy file can hold; rename the node")
        role = "root" if k == len(names) - 1 else "parent" if k in parents else "leaf"
        problem = format.name_problem and format.name_problem(name, role)
        if problem:
            return problem
    return None


def swap_advice(error: HierarchyError, read_swapped: Callable[[], Hierarchy], order: str, fix: str) -> HierarchyError:
    """``error``, or, where the file reads as a tree with its two columns swapped
    (``read_swapped``), ``error`` saying so: the columns look like ``order``; ``fix`` says what to do."""
    try:
        read_swapped()
    except HierarchyError:
        return error
    return HierarchyError(f"{error}; the columns look swapped ({order}): {fix}")


def text_file_problem(name: str) -> str | None:
    """Why a text file (not JSON strings) cannot hold ``name``, or None."""
    if "\x00" in name:
        return f"node name {name!r} contains a NUL character, which a text file cannot hold; use --to pairs or nbdt"
    return None
