"""The evaluation format: the one module that knows the files of an evaluated run, their columns,
types, ranges and schema version.

``hseval evaluate`` writes each run's folder through :func:`write_run`; ``hseval report``, ``hseval
demo`` and the dashboard read it through :func:`read_run`, which checks every value before anyone
sees it. A file that breaks the schema is refused with one line naming the file, and the line
(CSV) or key (JSON) and column. Nothing here unpickles: JSON, CSV and ``np.load(allow_pickle=False)``.

Each folder's marker (:mod:`hseval.io.folders`) lists the SHA-256 of every file, so a file edited
after ``hseval evaluate`` wrote it is refused rather than shown: a changed number never passes
without a word.

Per run: ``metrics.json`` (:data:`METRICS_SPEC`), the tables of :data:`TABLES` (``per_node.csv``,
``geometry.csv``, ``pair_angles.csv``, ``projections.csv``), ``embeddings.npz`` and
``predictions.npz`` (:data:`ARRAYS`).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hseval.core import fileio
from hseval.core.errors import HierarchyError, RunFormatError
from hseval.io.folders import EvaluationMarker, read_marker
from hseval.tree.hierarchy import Hierarchy

__all__ = ["SCHEMA_VERSION", "METRICS", "PER_NODE", "GEOMETRY", "PAIRS", "PROJECTIONS", "EMBEDDINGS", "PREDICTIONS",
           "FILES", "TABLES", "ARRAYS", "Column", "Table", "write_run", "read_metrics", "read_table", "read_arrays",
           "verified_bytes", "checksums", "check_metrics", "INDEX_FILE", "read_index", "write_index"]

SCHEMA_VERSION = 2  # 1: hseval 0.1, without checksums
METRICS, PER_NODE, GEOMETRY, PAIRS, PROJECTIONS = ("metrics.json", "per_node.csv", "geometry.csv", "pair_angles.csv",
                                                   "projections.csv")
EMBEDDINGS, PREDICTIONS = "embeddings.npz", "predictions.npz"
FILES = (METRICS, PER_NODE, GEOMETRY, PAIRS, PROJECTIONS, EMBEDDINGS, PREDICTIONS)
INDEX_FILE = "index.json"
"""In the evaluation folder itself: the evaluated runs (name, path, head, dataset, leaf top-1)."""
RERUN = "re-run 'hseval evaluate'"


# ====================================================================== tables
@dataclass(frozen=True)
class Column:
    """A CSV column: its type (int, float, str or bool), range, allowed values, whether it may be
    empty (read as NaN) and whether it may be missing (``optional``: a column added after files
    without it were written; such a file reads with the column empty)."""

    name: str
    kind: type
    low: float | None = None
    high: float | None = None
    nullable: bool = False
    choices: tuple[str, ...] | None = None
    optional: bool = False


@dataclass(frozen=True)
class Table:
    file: str
    columns: tuple[Column, ...]
    key: tuple[str, ...] = ()            # columns that identify a row (no duplicates)
    extra: str | None = None             # regex of the names of further columns (str, nullable)


TABLES: dict[str, Table] = {t.file: t for t in (
    Table(PER_NODE, (Column("node", int, 0), Column("name", str), Column("depth", int, 1), Column("parent", str),
                     Column("is_leaf", bool), Column("support", int, 0), Column("correct", int, 0),
                     Column("accuracy", float, 0, 1, nullable=True)), key=("node",)),
    Table(GEOMETRY, (Column("vectors", str), Column("node", int, 0), Column("name", str), Column("depth", int, 1),
                     Column("is_leaf", bool), Column("parent", str), Column("norm", float, 0),
                     Column("angle_to_parent", float, 0, 180, nullable=True), Column("delta_norm", float, 0),
                     Column("radius", float, 0, nullable=True)), key=("node",)),
    Table(PAIRS, (Column("depth", int, 1), Column("kind", str, choices=("sibling", "non-sibling")),
                  Column("node_a", int, 0), Column("node_b", int, 0), Column("angle", float, 0, 180))),
    Table(PROJECTIONS, (Column("method", str), Column("kind", str, choices=("sample", "class_vector")),
                        Column("x", float), Column("y", float), Column("label", str),
                        Column("correct", bool, nullable=True),
                        # the sample's position in the evaluated split (empty for class vectors); older folders lack it
                        Column("index", int, 0, nullable=True, optional=True)), extra=r"level[1-9][0-9]{0,3}"),
)}


def _where(path: Path, line: int | None, column: str | None) -> str:
    return f"{path}" + (f", line {line}" if line is not None else "") + (f", column '{column}'" if column else "")


_CONVERT: dict[type, Callable[[str], Any]] = {int: int, float: float, bool: {"True": True, "False": False}.__getitem__}
_EXPECTED = {int: "an integer", float: "a finite number", str: "a name", bool: "True or False"}


def _parse_column(cells: np.ndarray, col: Column, path: Path) -> np.ndarray:
    """The strings of one CSV column (an object array) as typed values (empty cells NaN where
    allowed), or a one-line error at the first bad cell."""
    empty = cells == ""

    def fail(mask: np.ndarray, expected: str) -> None:
        row = int(np.flatnonzero(mask)[0])
        got = "an empty cell" if cells[row] == "" else repr(cells[row][:40])
        raise RunFormatError(f"{_where(path, row + 2, col.name)}: expected {expected}, got {got}; {RERUN}")

    if empty.any() and not col.nullable:
        fail(empty, _EXPECTED[col.kind])
    if col.kind is str:
        if col.choices is not None and (bad := ~empty & ~np.isin(cells, col.choices)).any():
            fail(bad, " or ".join(col.choices))
        return np.where(empty, np.nan, cells).astype(object)
    convert = _CONVERT[col.kind]
    values = np.empty(len(cells), dtype=object)
    values[empty] = np.nan
    filled = np.flatnonzero(~empty)
    try:
        values[filled] = [convert(c) for c in cells[filled]]
    except (ValueError, KeyError, OverflowError):
        bad = np.zeros(len(cells), dtype=bool)
        for k in filled:
            try:
                convert(cells[k])
            except (ValueError, KeyError, OverflowError):
                bad[k] = True
        fail(bad, _EXPECTED[col.kind])
    if col.kind is bool:
        return values if empty.any() else values.astype(bool)
    numbers = values.astype(float)
    if col.kind is int and (bad := ~empty & (np.abs(numbers) > 2**53)).any():
        fail(bad, "an integer of at most 15 digits")
    if (bad := ~empty & ~np.isfinite(numbers)).any():
        fail(bad, _EXPECTED[col.kind])
    low = -np.inf if col.low is None else col.low
    high = np.inf if col.high is None else col.high
    if (outside := (numbers < low) | (numbers > high)).any():
        fail(outside, f"a value in [{low:g}, {high:g}]")
    return numbers.astype(np.int64) if col.kind is int and not empty.any() else numbers


def read_table(path: Path, data: bytes, spec: Table, tree: Hierarchy, *, samples: int | None = None) -> pd.DataFrame:
    """Parse and check one of :data:`TABLES` against its spec and the run's ``tree`` (and, when
    given, the number of ``samples`` of the evaluated split, which a sample's ``index`` is below).
    A missing optional column is added, empty."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RunFormatError(f"{path}: not UTF-8 text (byte {exc.start}); {RERUN}") from None
    try:
        reader = csv.reader(io.StringIO(text, newline=""), strict=True)
        header = next(reader, None)
        if header is None:
            raise RunFormatError(f"{path}: empty (not even a header line); {RERUN}")
        rows = []
        for row in reader:
            if len(row) != len(header):
                raise RunFormatError(f"{path}, line {reader.line_num}: {len(row)} cells but the header has "
                                     f"{len(header)}; {RERUN}")
            rows.append(row)
    except csv.Error as exc:
        raise RunFormatError(f"{path}: not a readable CSV ({exc}); {RERUN}") from None
    if len(set(header)) != len(header):
        twice = next(h for h in header if header.count(h) > 1)
        raise RunFormatError(f"{path}, line 1: the column '{twice}' appears twice; {RERUN}")
    names = [c.name for c in spec.columns]
    missing = [c.name for c in spec.columns if c.name not in header and not c.optional]
    if missing:
        raise RunFormatError(f"{path}, line 1: no column '{missing[0]}'; {RERUN}")
    unknown = [h for h in header if h not in names and not (spec.extra and re.fullmatch(spec.extra, h))]
    if unknown:
        raise RunFormatError(f"{path}, line 1: unknown column '{unknown[0]}'; {RERUN}")
    cells = np.array(rows, dtype=object).reshape(len(rows), len(header))
    kinds = {c.name: c for c in spec.columns}
    frame = pd.DataFrame({name: _parse_column(cells[:, k], kinds.get(name) or Column(name, str, nullable=True), path)
                          for k, name in enumerate(header)})
    if spec.key:
        dup = frame.duplicated(list(spec.key)).to_numpy()
        if dup.any():
            row = int(np.flatnonzero(dup)[0])
            raise RunFormatError(f"{_where(path, row + 2, spec.key[0])}: a row for the same "
                                 f"{'/'.join(spec.key)} appears twice; {RERUN}")
    _CHECKS[spec.file](frame, path, tree)
    if samples is not None and "index" in frame:
        _row_fail(path, (frame["index"] >= samples).to_numpy(), "index",
                  f"not a sample of the evaluated split (0..{samples - 1})")
    for column in spec.columns:
        if column.name not in frame:
            frame[column.name] = np.nan
    return frame


def _row_fail(path: Path, mask: np.ndarray, column: str, message: str) -> None:
    if np.asarray(mask).any():
        row = int(np.flatnonzero(np.asarray(mask))[0])
        raise RunFormatError(f"{_where(path, row + 2, column)}: {message}; {RERUN}")


def _check_nodes(frame: pd.DataFrame, path: Path, tree: Hierarchy, *, every: bool) -> np.ndarray:
    """Node indices inside the tree, named and placed as in it; with ``every`` one row per node."""
    nodes = frame["node"].to_numpy(dtype=np.int64) if len(frame) else np.zeros(0, np.int64)
    _row_fail(path, nodes >= tree.num_nodes, "node", f"not a node of the run's tree (0..{tree.num_nodes - 1})")
    if every and len(frame) != tree.num_nodes:
        raise RunFormatError(f"{path}: {len(frame)} rows for the {tree.num_nodes} nodes of the run's tree; {RERUN}")
    names = np.asarray(tree.node_names, dtype=object)
    _row_fail(path, frame["name"].to_numpy(dtype=object) != names[nodes], "name", "not the name of that node in the "
              "run's tree")
    _row_fail(path, frame["depth"].to_numpy() != tree.depth[nodes], "depth", "not the depth of that node")
    _row_fail(path, frame["is_leaf"].to_numpy() != (nodes < tree.num_leaves), "is_leaf", "wrong for that node")
    parents = np.asarray([*tree.node_names, tree.root_name], dtype=object)[tree.parents[nodes]]
    _row_fail(path, frame["parent"].to_numpy(dtype=object) != parents, "parent", "not the parent of that node")
    return nodes


def _check_per_node(frame: pd.DataFrame, path: Path, tree: Hierarchy) -> None:
    _check_nodes(frame, path, tree, every=True)
    support, correct = frame["support"].to_numpy(), frame["correct"].to_numpy()
    _row_fail(path, correct > support, "correct", "more correct samples than the node's support")
    accuracy = frame["accuracy"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = correct / support
    wrong = np.where(support > 0, ~np.isclose(accuracy, expected, rtol=1e-9, atol=1e-12), ~np.isnan(accuracy))
    _row_fail(path, wrong, "accuracy", "not correct / support")


def _check_geometry(frame: pd.DataFrame, path: Path, tree: Hierarchy) -> None:
    _check_nodes(frame, path, tree, every=False)


def _check_pairs(frame: pd.DataFrame, path: Path, tree: Hierarchy) -> None:
    for column in ("node_a", "node_b"):
        nodes = frame[column].to_numpy(dtype=np.int64)
        _row_fail(path, nodes >= tree.num_nodes, column, f"not a node of the run's tree (0..{tree.num_nodes - 1})")
        _row_fail(path, tree.depth[np.minimum(nodes, tree.num_nodes - 1)] != frame["depth"].to_numpy(), column,
                  "a node of another depth")


def _check_projections(frame: pd.DataFrame, path: Path, tree: Hierarchy) -> None:
    levels = [f"level{d}" for d in range(1, tree.max_depth)]
    found = [c for c in frame.columns if c.startswith("level")]
    if sorted(found) != sorted(levels):
        wanted = ", ".join(levels) or "none"
        raise RunFormatError(f"{path}, line 1: level columns {', '.join(found) or 'none'} do not fit the run's tree "
                             f"({wanted}); {RERUN}")
    known = set(tree.node_names)
    _row_fail(path, ~frame["label"].isin(known).to_numpy(), "label", "not a node of the run's tree")
    samples = (frame["kind"] == "sample").to_numpy()
    leaves = set(tree.leaf_names)
    _row_fail(path, samples & ~frame["label"].isin(leaves).to_numpy(), "label", "a sample's label must be a class")
    _row_fail(path, samples & frame["correct"].isna().to_numpy(), "correct", "empty for a sample")
    if "index" in frame:  # an older file has no index column; a newer one, one per sample
        _row_fail(path, samples & frame["index"].isna().to_numpy(), "index", "empty for a sample")
        _row_fail(path, ~samples & frame["index"].notna().to_numpy(), "index", "not empty for a class vector")
    for depth, column in enumerate(levels, start=1):
        names = set(tree.node_names[n] for n in tree.nodes_at_depth(depth))
        values = frame[column]
        _row_fail(path, (values.notna() & ~values.isin(names)).to_numpy(), column, f"not a node of depth {depth}")


_CHECKS: dict[str, Callable[[pd.DataFrame, Path, Hierarchy], None]] = {
    PER_NODE: _check_per_node, GEOMETRY: _check_geometry, PAIRS: _check_pairs, PROJECTIONS: _check_projections}


# ====================================================================== metrics.json
class _Bad(Exception):
    def __init__(self, key: str, expected: str, value: Any) -> None:
        super().__init__(key)
        self.key, self.expected, self.value = key, expected, value


def _num(low: float | None = None, high: float | None = None, *, null: bool = True, integer: bool = False):
    kind = "an integer" if integer else "a number"
    span = "" if low is None and high is None else f" in [{'' if low is None else f'{low:g}'}, " \
        f"{'' if high is None else f'{high:g}'}]"

    def check(value: Any, key: str) -> Any:
        if value is None and null:
            return None
        ok = isinstance(value, int) if integer else isinstance(value, (int, float))
        if not ok or isinstance(value, bool) or (isinstance(value, float) and not np.isfinite(value)) or \
                (low is not None and value < low) or (high is not None and value > high):
            raise _Bad(key, kind + span + ("" if null else ", not null"), value)
        return value

    return check


def _text(*, null: bool = True, choices: tuple[str, ...] | None = None):
    def check(value: Any, key: str) -> Any:
        if value is None and null:
            return None
        if not isinstance(value, str) or (choices and value not in choices):
            raise _Bad(key, " or ".join(repr(c) for c in choices) if choices else "a string", value)
        return value

    return check


def _record(fields: dict[str, Callable], *, pattern_fields: dict[str, Callable] | None = None, null: bool = True):
    """A JSON object: the known keys checked, others dropped (only checked values go on)."""
    def check(value: Any, key: str) -> Any:
        if value is None and null:
            return None
        if not isinstance(value, dict):
            raise _Bad(key, "an object", value)
        out = {}
        for name, item in value.items():
            sub = f"{key}.{name}" if key else str(name)
            checker = fields.get(name) or next((c for p, c in (pattern_fields or {}).items() if re.fullmatch(p, name)),
                                               None)
            if checker is not None:
                out[name] = checker(item, sub)
        return out

    return check


def _levels(values: Callable):
    """{"1": value, "2": ...}: one entry per super-class depth."""
    return _record({}, pattern_fields={r"[1-9][0-9]{0,3}": values})


def _history_entry(value: Any, key: str) -> Any:
    fields = {"epoch": _num(1, integer=True, null=False), "lr": _num(0), "train_loss": _num(0),
              "train_acc": _num(0, 1), "images_per_s": _num(0), "seconds": _num(0), "test_loss": _num(0),
              "test_acc": _num(0, 1), "test_superclass_acc": _levels(_num(0, 1)), "test_samples": _num(0, integer=True),
              "feature_norm": _num(0), "initial_feature_norm": _num(0), "initial_class_norm": _num(0)}
    return _record(fields, null=False)(value, key)


def _list(item: Callable):
    def check(value: Any, key: str) -> Any:
        if value is None:
            return None
        if not isinstance(value, list):
            raise _Bad(key, "a list", value)
        return [item(v, f"{key}[{i}]") for i, v in enumerate(value)]

    return check


def _reliability(value: Any, key: str) -> Any:
    columns = _record({"lower": _list(_num(0, 1)), "upper": _list(_num(0, 1)), "confidence": _list(_num(0, 1)),
                       "accuracy": _list(_num(0, 1)), "count": _list(_num(0, integer=True, null=False))})(value, key)
    if columns and len({len(c) for c in columns.values() if c is not None}) > 1:
        raise _Bad(key, "lists of one length", value)
    return columns


def _any_json(value: Any, key: str) -> Any:
    return value


_UNIT = _num(0, 1)
_GEOMETRY = _record({
    "skipped": _text(), "node_vectors": _text(),
    "depths": _levels(_record({"nodes": _num(0, integer=True)}, pattern_fields={r"mean_[a-z_]+": _num()})),
    "tree_agreement": _record({"cophenetic_correlation": _num(-1, 1), "levels": _levels(_record({
        "clusters": _num(1, integer=True), "adjusted_rand": _num(-1, 1), "rand": _UNIT}))})})

METRICS_SPEC: dict[str, Callable] = {
    "top1": _num(0, 1, null=False), "superclass_acc": _levels(_UNIT), "superclass_acc_from_levels": _levels(_UNIT),
    "level_agreement": _levels(_UNIT), "mistake_severity": _num(0), "hierarchical_precision": _UNIT,
    "hierarchical_recall": _UNIT, "hierarchical_f1": _UNIT, "ece": _UNIT, "cross_entropy": _num(0),
    "reliability": _reliability, "feature_norm": _record({"mean": _num(0), "std": _num(0), "max": _num(0)}),
    "max_logit": _record({"mean": _num()}), "class_vector_norm": _record({"mean": _num(0)}), "geometry": _GEOMETRY,
    "run": _text(), "run_path": _text(), "head": _text(null=False), "backbone": _text(), "dataset": _text(null=False),
    "split": _text(choices=("train", "test")), "samples": _num(0, integer=True, null=False),
    "seed": _num(0, integer=True), "training": _record({}, pattern_fields={".*": _any_json}),
    "history": _list(_history_entry), "train_seconds": _num(0), "eval_seconds": _num(0),
    "hierarchy": _record({}, pattern_fields={".*": _any_json}, null=False),
    "unavailable": _record({}, pattern_fields={".*": _text(null=False)}),
    "source": _record({"kind": _text(null=False, choices=("run", "predictions")), "path": _text(),
                       "sha256": _text(), "format": _text(), "inputs": _list(_text(null=False))}),
}
"""What ``metrics.json`` may hold (top-k, hierarchical distance@k by pattern below); other keys are dropped."""
_METRICS_PATTERNS = {r"top[1-9][0-9]{0,3}": _UNIT, r"(avg|best)_hdist@[1-9][0-9]{0,3}": _num(0)}
METRICS_SPEC["crm"] = _record({"superclass_acc": _levels(_UNIT), "mistake_severity": _num(0),
                               "hierarchical_precision": _UNIT, "hierarchical_recall": _UNIT,
                               "hierarchical_f1": _UNIT}, pattern_fields=_METRICS_PATTERNS)
"""CRM re-ranking's predictions scored like the argmax's (:mod:`hseval.metrics.crm`)."""
_REQUIRED = ("top1", "head", "dataset", "samples", "hierarchy")


def check_metrics(data: Any, path: Path) -> tuple[dict[str, Any], Hierarchy]:
    """``metrics.json`` parsed into its checked values and the run's tree."""
    if not isinstance(data, dict):
        raise RunFormatError(f"{path}: expected a JSON object, got {type(data).__name__}; {RERUN}")
    missing = [k for k in _REQUIRED if k not in data]
    if missing:
        raise RunFormatError(f"{path}: no '{missing[0]}'; not written by 'hseval evaluate'; {RERUN}")
    try:
        metrics = _record(METRICS_SPEC, pattern_fields=_METRICS_PATTERNS, null=False)(data, "")
    except _Bad as bad:
        shown = json.dumps(bad.value)[:40] if _jsonable(bad.value) else type(bad.value).__name__
        raise RunFormatError(f"{path}: '{bad.key}' must be {bad.expected}, got {shown}; {RERUN}") from None
    try:
        tree = Hierarchy.from_dict(metrics["hierarchy"])
    except HierarchyError as exc:
        raise RunFormatError(f"{path}: 'hierarchy': {exc}") from None
    depths = range(1, tree.max_depth)
    for key in ("superclass_acc", "superclass_acc_from_levels", "level_agreement"):
        extra = [d for d in (metrics.get(key) or {}) if int(d) not in depths]
        if extra:
            raise RunFormatError(f"{path}: '{key}.{extra[0]}' is not a super-class level of the run's tree "
                                 f"(1..{tree.max_depth - 1}); {RERUN}")
    return metrics, tree


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        return False
    return True


def read_metrics(path: Path, data: bytes) -> tuple[dict[str, Any], Hierarchy]:
    try:
        text = data.decode("utf-8")
        parsed = json.loads(text)
    except UnicodeDecodeError as exc:
        raise RunFormatError(f"{path}: not UTF-8 text (byte {exc.start}); {RERUN}") from None
    except json.JSONDecodeError as exc:
        raise RunFormatError(f"{path}, line {exc.lineno}: not valid JSON ({exc.msg}); {RERUN}") from None
    except (ValueError, RecursionError) as exc:
        raise RunFormatError(f"{path}: not valid JSON ({type(exc).__name__}); {RERUN}") from None
    return check_metrics(parsed, path)


# ====================================================================== arrays
ARRAYS: dict[str, dict[str, tuple[str, int]]] = {
    EMBEDDINGS: {"embeddings": ("f", 2), "labels": ("iu", 1), "predictions": ("iu", 1), "indices": ("iu", 1),
                 "node_vectors": ("f", 2)},
    PREDICTIONS: {"targets": ("iu", 1), "topk": ("iu", 2)},
}
"""Members of each .npz file: (dtype kinds, number of dimensions)."""
OPTIONAL_ARRAYS: dict[str, dict[str, tuple[str, int]]] = {PREDICTIONS: {"levels": ("i", 2)}}
"""Members a file may lack (written by older versions): predictions.npz's ``levels`` (N, depth - 1),
the node each sample is predicted at each super-class level by the head's own scores (-1 in every
row of a level the head does not score)."""


def read_arrays(path: Path, data: bytes, tree: Hierarchy, samples: int) -> dict[str, np.ndarray]:
    """An .npz of :data:`ARRAYS`, checked: members, types, shapes, and class indices in range."""
    spec = ARRAYS[path.name]
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            names = set(archive.files)
            missing = [m for m in spec if m not in names]
            if missing:
                raise RunFormatError(f"{path}: no array '{missing[0]}'; {RERUN}")
            arrays = {m: archive[m] for m in spec}
            optional = {m: kind for m, kind in OPTIONAL_ARRAYS.get(path.name, {}).items() if m in names}
            arrays.update({m: archive[m] for m in optional})
    except RunFormatError:
        raise
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        raise RunFormatError(f"{path}: not a readable .npz archive ({type(exc).__name__}); {RERUN}") from None
    for member, (kinds, ndim) in {**spec, **optional}.items():
        array = arrays[member]
        if not isinstance(array, np.ndarray) or array.dtype.kind not in kinds or array.ndim != ndim:
            raise RunFormatError(f"{path}: '{member}' must be a {ndim}-d array of "
                                 f"{'integers' if kinds == 'iu' else 'floats'}; {RERUN}")
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            raise RunFormatError(f"{path}: '{member}' holds NaN or infinite values; {RERUN}")
    classes = [m for m in ("labels", "predictions", "targets", "topk") if m in arrays]
    for member in classes:
        values = arrays[member]
        if values.size and (values.min() < 0 or values.max() >= tree.num_leaves):
            raise RunFormatError(f"{path}: '{member}' holds class indices outside 0..{tree.num_leaves - 1}; {RERUN}")
    first = arrays[next(iter(spec))]
    lengths = {m: len(arrays[m]) for m in spec if m != "node_vectors"}
    if len(set(lengths.values())) > 1:
        raise RunFormatError(f"{path}: arrays of different lengths ({lengths}); {RERUN}")
    if path.name == PREDICTIONS and len(first) != samples:
        raise RunFormatError(f"{path}: {len(first)} samples but metrics.json says {samples}; {RERUN}")
    if "levels" in arrays:
        _check_level_predictions(path, arrays["levels"], len(first), tree)
    if path.name == EMBEDDINGS:
        vectors = arrays["node_vectors"]
        if vectors.size and (vectors.shape[0] != tree.num_nodes or vectors.shape[1] != arrays["embeddings"].shape[1]):
            raise RunFormatError(f"{path}: 'node_vectors' has shape {vectors.shape}, expected ({tree.num_nodes}, "
                                 f"{arrays['embeddings'].shape[1]}); {RERUN}")
        if len(arrays["indices"]) and (arrays["indices"].min() < 0 or arrays["indices"].max() >= samples):
            raise RunFormatError(f"{path}: 'indices' outside 0..{samples - 1}; {RERUN}")
    return arrays


def _check_level_predictions(path: Path, levels: np.ndarray, n: int, tree: Hierarchy) -> None:
    if levels.shape != (n, max(tree.max_depth - 1, 0)):
        raise RunFormatError(f"{path}: 'levels' has shape {levels.shape}, expected ({n}, {tree.max_depth - 1}): one "
                             f"column per super-class level; {RERUN}")
    for depth in range(1, tree.max_depth):
        column = levels[:, depth - 1]
        if (column == -1).all():
            continue  # the head does not score this level
        inside = (column >= 0) & (column < tree.num_nodes)
        if not inside.all() or (tree.depth[column] != depth).any():
            raise RunFormatError(f"{path}: 'levels' column {depth - 1} holds values that are not nodes of depth "
                                 f"{depth}; {RERUN}")


# ====================================================================== checksums and writing
def checksums(folder: Path) -> dict[str, str]:
    """The SHA-256 of each file as ``hseval evaluate`` recorded it in the folder's marker."""
    marker = read_marker(folder, error=RunFormatError)
    if not isinstance(marker, EvaluationMarker):
        raise RunFormatError(f"{folder}: is not the evaluation of a run written by hseval (no marker of one); {RERUN}")
    return dict(marker.files)


def verified_bytes(folder: Path, name: str, recorded: dict[str, str]) -> bytes:
    """The bytes of ``folder/name``, checked against ``recorded`` (:func:`checksums`)."""
    path = folder / name
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise RunFormatError(f"{path}: missing; {RERUN}") from None
    except OSError as exc:
        raise RunFormatError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if hashlib.sha256(data).hexdigest() != recorded.get(name):
        raise RunFormatError(f"{path}: was changed after 'hseval evaluate' wrote it (checksum mismatch); {RERUN}")
    return data


def _csv_bytes(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode("utf-8")


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return buffer.getvalue()


def _read_back(folder: Path, contents: dict[str, bytes]) -> None:
    """What was rendered reads back through the readers (a writer that breaks its own schema is a
    bug: it fails here, before a file is written)."""
    metrics, tree = read_metrics(folder / METRICS, contents[METRICS])
    for name, spec in TABLES.items():
        read_table(folder / name, contents[name], spec, tree, samples=metrics["samples"])
    for name in ARRAYS:
        read_arrays(folder / name, contents[name], tree, metrics["samples"])


def write_run(folder: Path, *, metrics: dict[str, Any], tables: dict[str, pd.DataFrame],
              arrays: dict[str, dict[str, np.ndarray]]) -> None:
    """Write every file of one evaluated run into ``folder`` (the staging of an ``evaluation``
    output folder, whose marker records the files' checksums when it is committed)."""
    missing = [f for f in (*TABLES, *ARRAYS) if f not in tables and f not in arrays]
    if missing:
        raise ValueError(f"write_run needs {missing}")
    contents = {METRICS: (json.dumps(fileio.json_ready(metrics), indent=2, allow_nan=False) + "\n").encode("utf-8")}
    contents.update({name: _csv_bytes(tables[name][[c.name for c in spec.columns if not c.optional or
                                                    c.name in tables[name]] + [
        c for c in tables[name].columns if spec.extra and re.fullmatch(spec.extra, c)]]) for name, spec in
        TABLES.items()})
    contents.update({name: _npz_bytes(arrays[name]) for name in ARRAYS})
    _read_back(folder, contents)
    for name, data in contents.items():
        fileio.write_bytes(folder / name, data)


def read_index(root: Path) -> list[dict[str, Any]]:
    """The entries of ``root/index.json`` (an informative list: the folders are the truth); [] when
    it is missing or unreadable."""
    try:
        data = json.loads((Path(root) / INDEX_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return []
    runs = data.get("runs") if isinstance(data, dict) else None
    return [e for e in runs if isinstance(e, dict)] if isinstance(runs, list) else []


def write_index(root: Path, entries: list[dict[str, Any]]) -> None:
    fileio.write_json(Path(root) / INDEX_FILE, {"runs": entries})
