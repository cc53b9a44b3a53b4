"""Every CSV file hseval writes, and the one mechanism that reads and checks them.

A :class:`Table` names a file's columns (:class:`Column`: type, range, allowed values, whether a
cell may be empty), the columns whose names follow a pattern (``level1``, ``level2`` ...), the key
columns that identify a row, and the cross-checks of its rows against the run's tree.
:func:`read_table` parses a file into a DataFrame and refuses the first bad cell with one line
naming the file, the line and the column; :func:`render` writes a frame as the bytes that read
back. :func:`read_cells` (the CSV layer alone) serves the prediction files made elsewhere too.

Why not pandera: its checks run after pandas has parsed the file, so a bad cell is reported as a
column of the wrong dtype, without the line, and its reports are many lines; here each cell is
parsed once, vectorised, and the first bad one is named.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hseval.core import fileio
from hseval.core.errors import HsevalError, RunFormatError
from hseval.io.records import INT_MAX, HistoryEntry, TestScores
from hseval.tree.hierarchy import Hierarchy

__all__ = ["Column", "Table", "read_table", "read_cells", "parse_column", "render", "where", "failure",
           "PER_NODE", "GEOMETRY", "PAIRS", "PROJECTIONS", "HISTORY", "EVALUATION_TABLES", "SUMMARY", "GROUPED",
           "LEVELS", "RERUN", "write_history"]

RERUN = "re-run 'hseval evaluate'"


@dataclass(frozen=True)
class Column:
    """A CSV column: its type (int, float, str or bool), range, allowed values and whether a cell
    may be empty (read as NaN)."""

    name: str
    kind: type
    low: float | None = None
    high: float | None = None
    nullable: bool = False
    choices: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Table:
    """A CSV file: its columns in order, further columns by the pattern of their names, the key
    columns (no two rows alike) and ``check(frame, fail, tree, samples)``, its cross-checks."""

    file: str
    columns: tuple[Column, ...]
    pattern: tuple[str, Column] | None = None
    key: tuple[str, ...] = ()
    check: Callable[..., None] | None = None
    hint: str = RERUN
    digits: int | None = None
    """Significant digits of its numbers (None: every digit of a double): a table of means written
    with the precision its values carry (``-0.0358``, not ``-0.035800000000000054``)."""

    def column(self, name: str) -> Column | None:
        found = next((c for c in self.columns if c.name == name), None)
        if found is None and self.pattern is not None and re.fullmatch(self.pattern[0], name):
            return dataclasses.replace(self.pattern[1], name=name)
        return found


def where(path: Path, line: int | None = None, column: str | None = None) -> str:
    return f"{path}" + (f", line {line}" if line is not None else "") + (f", column '{column}'" if column else "")


def failure(error: type[HsevalError] = RunFormatError, hint: str = RERUN) -> Callable[..., HsevalError]:
    """``fail(path, message, line=None, column=None)``: the one-line ``error`` at that place."""
    def fail(path: Path, message: str, line: int | None = None, column: str | None = None) -> HsevalError:
        return error(f"{where(path, line, column)}: {message}" + (f"; {hint}" if hint else ""))
    return fail


def read_cells(path: Path, data: bytes, *, error: type[HsevalError] = RunFormatError, hint: str = RERUN,
               empty: str = "empty (not even a header line)", lenient: bool = False) -> tuple[list[str], np.ndarray]:
    """The header and the cells (an object array, one row per line) of a CSV file, or one line
    naming the file (and line) that is not UTF-8, not CSV, ragged or has a column twice.
    ``lenient`` (files made elsewhere): spaces around names and blank lines pass. A byte-order mark
    passes in every file (:func:`hseval.core.fileio.decode`)."""
    fail = failure(error, hint)
    try:
        text = fileio.decode(data)
    except UnicodeDecodeError as exc:
        raise fail(path, f"not UTF-8 text (byte {exc.start})" + ("; save it as UTF-8" if lenient else "")) from None
    try:
        reader = csv.reader(io.StringIO(text, newline=""), strict=True)
        header = next(reader, None)
        if header is None:
            raise fail(path, empty)
        header = [h.strip() for h in header] if lenient else header
        rows = [row for row in reader if row] if lenient else list(reader)  # read at C speed, checked below
    except csv.Error as exc:
        raise fail(path, f"not a readable CSV ({exc})") from None
    ragged = np.flatnonzero(np.fromiter(map(len, rows), np.int64, len(rows)) != len(header))
    if len(ragged):
        again = csv.reader(io.StringIO(text, newline=""), strict=True)   # the bad row's line, for the message
        seen = -1
        for row in again:
            seen += bool(row) or not lenient
            if seen == ragged[0] + 1:
                break
        raise fail(path, f"{len(rows[ragged[0]])} cells but the header has {len(header)}", again.line_num)
    twice = next((h for h in header if header.count(h) > 1), None)
    if twice is not None:
        raise fail(path, f"the column '{twice}' appears twice", 1)
    return header, np.array(rows, dtype=object).reshape(len(rows), len(header))


_CONVERT: dict[type, Callable[[str], Any]] = {int: int, float: float, bool: {"True": True, "False": False}.__getitem__}
_EXPECTED = {int: "an integer", float: "a finite number", str: "a name", bool: "True or False"}


def parse_column(cells: np.ndarray, col: Column, path: Path, fail: Callable[..., HsevalError]) -> np.ndarray:
    """The strings of one column as typed values (empty cells NaN where allowed), or one line at the
    first bad cell."""
    empty = cells == ""

    def refuse(mask: np.ndarray, expected: str) -> None:
        row = int(np.flatnonzero(mask)[0])
        got = "an empty cell" if cells[row] == "" else repr(cells[row][:40])
        raise fail(path, f"expected {expected}, got {got}", row + 2, col.name)

    if empty.any() and not col.nullable:
        refuse(empty, _EXPECTED[col.kind])
    if col.kind is str:
        if col.choices is not None and (bad := ~empty & ~np.isin(cells, col.choices)).any():
            refuse(bad, " or ".join(col.choices))
        return np.where(empty, np.nan, cells).astype(object)
    convert = _CONVERT[col.kind]
    values = np.empty(len(cells), dtype=object)
    values[empty] = np.nan
    filled = np.flatnonzero(~empty)
    try:  # numbers through the array's cast (float() or int() of each string, in C); bools by name
        values[filled] = [convert(c) for c in cells[filled]] if col.kind is bool else \
            cells[filled].astype(col.kind).astype(object)
    except (ValueError, KeyError, OverflowError, TypeError):
        bad = np.zeros(len(cells), dtype=bool)
        for k in filled:
            try:
                convert(cells[k])
            except (ValueError, KeyError, OverflowError):
                bad[k] = True
        refuse(bad, _EXPECTED[col.kind])
    if col.kind is bool:
        return values if empty.any() else values.astype(bool)
    numbers = values.astype(float)
    if col.kind is int and (bad := ~empty & (np.abs(numbers) > INT_MAX)).any():
        refuse(bad, "an integer of at most 15 digits")
    if (bad := ~empty & ~np.isfinite(numbers)).any():
        refuse(bad, _EXPECTED[col.kind])
    low = -np.inf if col.low is None else col.low
    high = np.inf if col.high is None else col.high
    if (outside := (numbers < low) | (numbers > high)).any():
        refuse(outside, f"a value in [{low:g}, {high:g}]")
    return numbers.astype(np.int64) if col.kind is int and not empty.any() else numbers


def read_table(path: Path, data: bytes, spec: Table, *, tree: Hierarchy | None = None,
               samples: int | None = None) -> pd.DataFrame:
    """Parse one of hseval's CSV files and check it against ``spec`` and, when given, the run's
    ``tree`` and the number of ``samples`` of the evaluated split."""
    fail = failure(hint=spec.hint)
    header, cells = read_cells(path, data, hint=spec.hint)
    missing = next((c.name for c in spec.columns if c.name not in header), None)
    if missing is not None:
        raise fail(path, f"no column '{missing}'", 1)
    unknown = next((h for h in header if spec.column(h) is None), None)
    if unknown is not None:
        raise fail(path, f"unknown column '{unknown}'", 1)
    frame = pd.DataFrame({name: parse_column(cells[:, k], spec.column(name), path, fail)
                          for k, name in enumerate(header)})
    if spec.key and (dup := frame.duplicated(list(spec.key)).to_numpy()).any():
        raise fail(path, f"a row for the same {'/'.join(spec.key)} appears twice", int(np.flatnonzero(dup)[0]) + 2,
                   spec.key[0])

    def rows(mask: Any, column: str, message: str) -> None:
        if np.asarray(mask).any():
            raise fail(path, message, int(np.flatnonzero(np.asarray(mask))[0]) + 2, column)

    if spec.check is not None:
        spec.check(frame, rows, path=path, fail=fail, tree=tree, samples=samples)
    return frame


def render(frame: pd.DataFrame, spec: Table, **context: Any) -> bytes:
    """``frame`` as the CSV bytes of ``spec`` (its columns in order, then those of its pattern;
    integers as integers even where a cell is empty), read back through :func:`read_table` with
    ``context`` (``tree``, ``samples``): a writer that breaks its own schema fails before writing."""
    names = [c.name for c in spec.columns]
    names += [c for c in frame.columns if spec.pattern and re.fullmatch(spec.pattern[0], c) and c not in names]
    out = frame[names].copy()
    for name in names:
        if spec.column(name).kind is int:
            out[name] = out[name].astype("Int64")
    data = out.to_csv(index=False, float_format=spec.digits and f"%.{spec.digits}g").encode("utf-8")
    read_table(Path(spec.file), data, spec, **context)
    return data


# ====================================================================== cross-checks against the tree
def _check_nodes(frame: pd.DataFrame, rows: Callable, *, tree: Hierarchy, **_: Any) -> None:
    """Node indices inside the tree, named and placed as in it (geometry.csv's whole check)."""
    nodes = frame["node"].to_numpy(dtype=np.int64) if len(frame) else np.zeros(0, np.int64)
    rows(nodes >= tree.num_nodes, "node", f"not a node of the run's tree (0..{tree.num_nodes - 1})")
    names = np.asarray(tree.node_names, dtype=object)
    rows(frame["name"].to_numpy(dtype=object) != names[nodes], "name", "not the name of that node in the run's tree")
    rows(frame["depth"].to_numpy() != tree.depth[nodes], "depth", "not the depth of that node")
    rows(frame["is_leaf"].to_numpy() != (nodes < tree.num_leaves), "is_leaf", "wrong for that node")
    parents = np.asarray([*tree.node_names, tree.root_name], dtype=object)[tree.parents[nodes]]
    rows(frame["parent"].to_numpy(dtype=object) != parents, "parent", "not the parent of that node")


def _check_per_node(frame: pd.DataFrame, rows: Callable, *, path: Path, fail: Callable, tree: Hierarchy,
                    **_: Any) -> None:
    _check_nodes(frame, rows, tree=tree)
    if len(frame) != tree.num_nodes:
        raise fail(path, f"{len(frame)} rows for the {tree.num_nodes} nodes of the run's tree")
    support, correct = frame["support"].to_numpy(), frame["correct"].to_numpy()
    rows(correct > support, "correct", "more correct samples than the node's support")
    accuracy = frame["accuracy"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = correct / support
    rows(np.where(support > 0, ~np.isclose(accuracy, expected, rtol=1e-9, atol=1e-12), ~np.isnan(accuracy)),
         "accuracy", "not correct / support")


def _check_pairs(frame: pd.DataFrame, rows: Callable, *, tree: Hierarchy, **_: Any) -> None:
    for column in ("node_a", "node_b"):
        nodes = frame[column].to_numpy(dtype=np.int64)
        rows(nodes >= tree.num_nodes, column, f"not a node of the run's tree (0..{tree.num_nodes - 1})")
        rows(tree.depth[np.minimum(nodes, tree.num_nodes - 1)] != frame["depth"].to_numpy(), column,
             "a node of another depth")


def _check_projections(frame: pd.DataFrame, rows: Callable, *, path: Path, fail: Callable, tree: Hierarchy,
                       samples: int | None) -> None:
    levels = [f"level{d}" for d in range(1, tree.max_depth)]
    found = [c for c in frame.columns if c.startswith("level")]
    if sorted(found) != sorted(levels):
        raise fail(path, f"level columns {', '.join(found) or 'none'} do not fit the run's tree "
                         f"({', '.join(levels) or 'none'})", 1)
    rows(~frame["label"].isin(set(tree.node_names)).to_numpy(), "label", "not a node of the run's tree")
    sample = (frame["kind"] == "sample").to_numpy()
    rows(sample & ~frame["label"].isin(set(tree.leaf_names)).to_numpy(), "label", "a sample's label must be a class")
    rows(sample & frame["correct"].isna().to_numpy(), "correct", "empty for a sample")
    rows(sample & frame["index"].isna().to_numpy(), "index", "empty for a sample")
    rows(~sample & frame["index"].notna().to_numpy(), "index", "not empty for a class vector")
    if samples is not None:
        rows((frame["index"] >= samples).to_numpy(), "index", f"not a sample of the evaluated split (0..{samples - 1})")
    for depth, column in enumerate(levels, start=1):
        values = frame[column]
        names = {tree.node_names[n] for n in tree.nodes_at_depth(depth)}
        rows((values.notna() & ~values.isin(names)).to_numpy(), column, f"not a node of depth {depth}")


def _check_history(frame: pd.DataFrame, rows: Callable, **_: Any) -> None:
    epochs = frame["epoch"].to_numpy()
    rows(np.r_[False, np.diff(epochs) != 1] if len(epochs) else epochs, "epoch", "not the epoch after the previous "
         "line's")


# ====================================================================== the tables
def _columns_of(model: type) -> tuple[Column, ...]:
    """The scalar fields of a record as columns, typed and bounded as its JSON Schema says."""
    schema = model.model_json_schema()
    out = []
    for name, prop in schema["properties"].items():
        shape = next(p for p in prop.get("anyOf", [prop]) if p.get("type") != "null")
        kind = {"integer": int, "number": float, "string": str, "boolean": bool}.get(shape.get("type"))
        if kind is not None:
            out.append(Column(name, kind, shape.get("minimum"), shape.get("maximum"),
                              nullable=name not in schema.get("required", ())))
    return tuple(out)


_UNIT = Column("", float, 0, 1, nullable=True)
PER_NODE = Table("per_node.csv", (
    Column("node", int, 0), Column("name", str), Column("depth", int, 1), Column("parent", str),
    Column("is_leaf", bool), Column("support", int, 0), Column("correct", int, 0),
    Column("accuracy", float, 0, 1, nullable=True)), key=("node",), check=_check_per_node)
GEOMETRY = Table("geometry.csv", (
    Column("vectors", str), Column("node", int, 0), Column("name", str), Column("depth", int, 1),
    Column("is_leaf", bool), Column("parent", str), Column("norm", float, 0),
    Column("angle_to_parent", float, 0, 180, nullable=True), Column("delta_norm", float, 0),
    Column("radius", float, 0, nullable=True)), key=("node",), check=_check_nodes)
PAIRS = Table("pair_angles.csv", (
    Column("depth", int, 1), Column("kind", str, choices=("sibling", "non-sibling")), Column("node_a", int, 0),
    Column("node_b", int, 0), Column("angle", float, 0, 180)), check=_check_pairs)
PROJECTIONS = Table("projections.csv", (
    Column("method", str), Column("kind", str, choices=("sample", "class_vector")), Column("x", float),
    Column("y", float), Column("label", str), Column("correct", bool, nullable=True),
    Column("index", int, 0, nullable=True)),  # the sample's position in the evaluated split
    pattern=(r"level[1-9][0-9]{0,3}", Column("", str, nullable=True)), check=_check_projections)
EVALUATION_TABLES = {t.file: t for t in (PER_NODE, GEOMETRY, PAIRS, PROJECTIONS)}
HISTORY = Table("history.csv", tuple(sorted(_columns_of(HistoryEntry),  # epoch, training, then test columns
                                             key=lambda c: (c.name != "epoch") + (c.name in TestScores.model_fields))),
                pattern=(r"(val|test)_superclass_acc_depth[1-9][0-9]{0,3}", _UNIT), key=("epoch",),
                check=_check_history, hint="")
"""A run's ``history.csv``: run.json's history flat, one line per epoch (super-class accuracy one
column per depth)."""
_NUMBER = Column("", float, nullable=True)
SUMMARY = Table("summary.csv", (
    Column("run", str), Column("dataset", str), Column("split", str), Column("backbone", str, nullable=True),
    Column("head", str), Column("seed", int, 0, nullable=True), Column("samples", int, 0),
    Column("selection", str, nullable=True)),
    pattern=(".+", _NUMBER), key=("run",), hint="", digits=15)
GROUPED = Table("summary_grouped.csv", (
    Column("dataset", str), Column("split", str), Column("backbone", str, nullable=True), Column("head", str),
    Column("setting", str, nullable=True), Column("runs", str),
    Column("seeds", int, 1)), pattern=(r".+_(mean|std)", _NUMBER), hint="", digits=15)
LEVELS = Table("superclass_accuracy.csv", (Column("run", str), Column("head", str), Column("leaf", float, 0, 1)),
               pattern=(r"level [1-9][0-9]{0,3} \((from leaf|own scores)\)", _UNIT), key=("run",), hint="",
               digits=15)
"""The report's tables of numbers (``hseval report``): one row per run, per seed group, and the
super-class accuracy report. Every column a pattern names is a number."""


def write_history(run_dir: str | Path, history: list[dict[str, Any]]) -> None:
    """``history.csv``: one line per epoch of ``history`` (run.json's), super-class accuracy one
    column per depth; read back before it is written."""
    levels = ("val_superclass_acc", "test_superclass_acc")
    rows = [{**{k: v for k, v in h.items() if k not in levels},
             **{f"{key}_depth{d}": v for key in levels for d, v in (h.get(key) or {}).items()}} for h in history]
    depths = sorted({k for row in rows for k in row if "_depth" in k}, key=lambda k: (k[0], int(k.split("depth")[1])))
    frame = pd.DataFrame(rows, columns=[c.name for c in HISTORY.columns] + depths)
    fileio.write_bytes(Path(run_dir) / HISTORY.file, render(frame, HISTORY))
