"""Prediction files: a model's outputs on a test set, made by any framework, for ``hseval evaluate
--predictions``. This module alone defines them, and reads them through its two readers: the
arrays' here, the CSV's (and the class list's) in :mod:`hseval.io.prediction_csv`; nothing
unpickles.

Arrays (``.npz`` read with ``allow_pickle=False``, or ``.safetensors``), N samples, |L| classes:

- ``targets`` (N,) integer class indices — required;
- ``logits`` or ``probs`` (N, |L|) — one of the two is required; its name says what it holds;
- ``level_scores_<k>`` (N, nodes at depth k) — the model's own super-class scores at level k,
  columns in the order of ``hierarchy.nodes_at_depth(k)``;
- ``embeddings`` (N, d) — the features before the last layer (projections, feature norms);
- ``class_weights`` (|L|, d) or ``node_weights`` (|P|, d) — the last layer's class vectors, or
  one vector per non-root node (geometry, angle statistics, tree agreement).

A ``.csv`` with a header and one row per sample is accepted too: ``target,pred`` (predicted
classes only: the metrics that need scores are then not available, and say so), or ``target``
and one score column per class, ``logit_0 … logit_{|L|-1}`` or ``prob_0 … prob_{|L|-1}``; columns
named ``score_0 …`` hold either, so the reader is told which (``scores="logits"`` or ``"probs"``,
``hseval evaluate --scores``). Classes are given by index or by name (the names of the tree's
leaves; a column holding only leaf names is read as names).

What scores are is never guessed from their values; the values are checked against what the file
says, with one tolerance (:data:`PROBABILITY_TOLERANCE`): probabilities are rows of values in
[0, 1] summing to 1 within it, and "logits" whose every row is such a vector are refused as the
probabilities they are (:mod:`hseval.io.prediction_scores`, for both readers).

Class indices follow the tree's leaf order, or the order of ``classes`` (one name per class, as
the model numbers them) when it is given: the scores' columns and the class weights are then
permuted into the tree's order.

A file's layout (its members, their shapes and types) and its small arrays are checked when it is
read; the per-sample matrices (scores, level scores, embeddings) are :class:`Rows`, read from the
file (:mod:`hseval.io.prediction_arrays`) and checked a block of rows at a time as the evaluation
goes through them, so that a file of any size is evaluated in the memory of a few blocks.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hseval.core.errors import DataError
from hseval.core.fileio import sha256
from hseval.io.prediction_arrays import Member, in_memory, npz_members, safetensors_members
from hseval.io.prediction_csv import read_class_list, read_csv
from hseval.io.prediction_scores import SCORE_KINDS, check_kind, permuted
from hseval.io.tables import failure
from hseval.metrics._checks import PROBABILITY_TOLERANCE, probability_problem
from hseval.tree.hierarchy import Hierarchy

__all__ = ["Predictions", "Rows", "read_predictions", "read_class_list", "SUFFIXES", "MEMBERS", "SCORE_KINDS",
           "PROBABILITY_TOLERANCE"]

SUFFIXES = (".npz", ".safetensors", ".csv")
FEATURE_ARRAYS = ("embeddings", "class_weights", "node_weights")
"""The arrays of features (a layer's values, stored as float32): each value within float32's range."""
MEMBERS = ("targets", "logits", "probs", "level_scores_<k>", *FEATURE_ARRAYS)
_LEVEL = re.compile(r"level_scores_([1-9][0-9]{0,3})")
_ARRAY_HINTS = {"logits": "save raw scores as 'logits'", "probs": "save softmax outputs as 'probs'"}


@dataclass
class Predictions:
    """A checked prediction file, classes in the tree's order."""

    path: Path
    format: str
    sha256: str
    targets: np.ndarray                              # (N,) int64
    scores: Rows | None = None                       # (N, |L|) logits or probabilities
    kind: str = "logits"                             # "logits", "probs" or "labels"
    predictions: np.ndarray | None = None            # (N,) int64 when only classes were given
    level_scores: dict[int, Rows] = field(default_factory=dict)
    embeddings: Rows | None = None                   # (N, d)
    class_weights: np.ndarray | None = None
    node_weights: np.ndarray | None = None

    @property
    def members(self) -> list[str]:
        """What the file gave, by member name."""
        out = ["targets", "pred" if self.kind == "labels" else self.kind]
        out += [f"level_scores_{k}" for k in sorted(self.level_scores)]
        out += [m for m in FEATURE_ARRAYS if getattr(self, m) is not None]
        return out


_fail = failure(DataError, "")


class Rows:
    """A per-sample matrix of a prediction file, (N, C), read in blocks of rows: each block float64,
    checked (finite values) and, with ``columns`` (:func:`read_class_list`'s order), its columns
    permuted into the tree's order. With ``kind`` the scores are checked against it as
    :func:`~hseval.io.prediction_scores.check_kind` checks a whole matrix: "probs" whose row is no
    distribution, "logits" whose every row is one. A damaged value is one line (``DataError``)
    naming the member and the row when its block is read. ``np.asarray(rows)`` reads the whole
    matrix."""

    def __init__(self, path: Path, name: str, member: Member, *, columns: np.ndarray | None = None,
                 kind: str | None = None) -> None:
        self.path, self.name, self.shape = path, name, member.shape
        self._member, self._columns, self._kind = member, columns, kind

    def blocks(self, rows: int) -> Iterator[np.ndarray]:
        """The rows in order, ``rows`` at a time (the last block may be shorter)."""
        first, all_probabilities = 0, True
        for raw in self._member.blocks(rows):
            block = _values(self.path, self.name, raw, first)
            if self._kind is not None:
                problem = probability_problem(block)
                all_probabilities = all_probabilities and problem is None
                if self._kind == "probs":
                    check_kind(self.path, f"'{self.name}'", problem, "probs", _ARRAY_HINTS, first=first)
            yield block if self._columns is None else permuted(block, self._columns)
            first += len(block)
        if self._kind == "logits" and all_probabilities and first:
            check_kind(self.path, f"'{self.name}'", None, "logits", _ARRAY_HINTS)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        whole = np.concatenate(list(self.blocks(max(1, (1 << 20) // self.shape[1]))))
        return whole if dtype is None else whole.astype(dtype)


def read_predictions(path: str | Path, tree: Hierarchy, *, classes: np.ndarray | None = None,
                     scores: str | None = None) -> Predictions:
    """Read and check a prediction file against ``tree``; ``classes`` is :func:`read_class_list`'s
    result (None: indices follow the tree's leaf order); ``scores`` ("logits" or "probs") what a
    CSV's ``score_<i>`` columns hold (a file that names its scores must agree with it)."""
    path = Path(path)
    if scores not in (None, *SCORE_KINDS):
        raise ValueError(f"scores must be one of {SCORE_KINDS} or None, got {scores!r}")
    if path.suffix.lower() not in SUFFIXES:
        raise _fail(path, f"unknown kind of prediction file {path.suffix or '(no suffix)'!r}; give a .npz, "
                          ".safetensors or .csv file (never a pickle)")
    fmt = path.suffix.lower()[1:]
    try:
        with open(path, "rb") as fh:
            data = fh.read() if fmt == "csv" else b""
    except FileNotFoundError:
        raise _fail(path, "no such file") from None
    except IsADirectoryError:
        raise _fail(path, "is a folder; give a .npz, .safetensors or .csv file") from None
    if fmt == "csv":
        csv = read_csv(path, data, tree, classes, scores)
        out = Predictions(path=path, format=fmt, sha256="", targets=csv.targets, kind=csv.kind)
        if csv.kind == "labels":
            out.predictions = csv.values
        else:  # parsed, checked and permuted whole
            out.scores = Rows(path, csv.kind, in_memory(csv.values))
    else:
        members = npz_members(path, _fail) if fmt == "npz" else safetensors_members(path, _fail)
        out = _from_members(path, members, tree, classes, scores)
    out.format, out.sha256 = fmt, sha256(data if fmt == "csv" else path, error=DataError)
    return out


# ====================================================================== arrays
def _from_members(path: Path, arrays: dict[str, Member], tree: Hierarchy, classes: np.ndarray | None,
                  declared: str | None) -> Predictions:
    """Check the members' layout and the small arrays; the per-sample matrices become :class:`Rows`."""
    known = {"targets", "logits", "probs", *FEATURE_ARRAYS}
    for name in arrays:
        if name not in known and not _LEVEL.fullmatch(name):
            raise _fail(path, f"unknown array {name!r}; expected {', '.join(MEMBERS)}")
    if "targets" not in arrays:
        raise _fail(path, "no array 'targets' (N,): the true class of each sample")
    scores = [m for m in ("logits", "probs") if m in arrays]
    if len(scores) != 1:
        raise _fail(path, "holds both 'logits' and 'probs'; keep one" if scores else
                    "no 'logits' or 'probs' (N, classes); save the model's scores (or use a CSV target,pred)")
    kind = scores[0]
    if declared not in (None, kind):
        raise _fail(path, f"holds '{kind}', but {declared} were declared (--scores {declared}); the array's name "
                          "says what it holds")
    targets = _class_indices(path, "targets", arrays["targets"].load(), tree, classes)
    n = len(targets)
    out = Predictions(path=path, format="", sha256="", targets=targets, kind=kind)
    _layout(path, kind, arrays[kind], (n, tree.num_leaves), "class")
    out.scores = Rows(path, kind, arrays[kind], columns=classes, kind=kind)
    for name, values in arrays.items():
        match = _LEVEL.fullmatch(name)
        if match:
            level = int(match.group(1))
            if not 1 <= level < tree.max_depth:
                raise _fail(path, f"'{name}': level {level} is not a super-class level of the hierarchy "
                                  f"(1..{tree.max_depth - 1})")
            _layout(path, name, values, (n, len(tree.nodes_at_depth(level))), f"node at depth {level}")
            out.level_scores[level] = Rows(path, name, values)
    if "embeddings" in arrays:
        _layout(path, "embeddings", arrays["embeddings"], (n, None), "feature")
        out.embeddings = Rows(path, "embeddings", arrays["embeddings"])
    if "class_weights" in arrays and "node_weights" in arrays:
        raise _fail(path, "holds both 'class_weights' and 'node_weights'; keep one")
    if "class_weights" in arrays:
        weights = _matrix(path, "class_weights", arrays["class_weights"].load(), (tree.num_leaves, None), "feature")
        out.class_weights = weights if classes is None else permuted(weights.T, classes).T
    if "node_weights" in arrays:
        out.node_weights = _matrix(path, "node_weights", arrays["node_weights"].load(), (tree.num_nodes, None),
                                   "feature")
    vectors = out.class_weights if out.class_weights is not None else out.node_weights
    if out.embeddings is not None and vectors is not None and vectors.shape[1] != out.embeddings.shape[1]:
        raise _fail(path, f"the class vectors have {vectors.shape[1]} features but 'embeddings' has "
                          f"{out.embeddings.shape[1]}; both come from the same layer")
    return out


def _class_indices(path: Path, name: str, values: np.ndarray, tree: Hierarchy,
                   classes: np.ndarray | None) -> np.ndarray:
    values = np.asarray(values)
    if values.ndim != 1:
        raise _fail(path, f"'{name}' must be 1-D (one class index per sample), got shape {values.shape}")
    if len(values) == 0:
        raise _fail(path, f"'{name}' is empty; give at least one sample")
    if values.dtype.kind not in "iu":
        raise _fail(path, f"'{name}' must hold integer class indices, got {values.dtype}")
    bad = np.flatnonzero((values < 0) | (values >= tree.num_leaves))
    if len(bad):
        raise _fail(path, f"'{name}'[{int(bad[0])}] = {int(values[bad[0]])} is not a class index "
                          f"0..{tree.num_leaves - 1} of the hierarchy")
    values = values.astype(np.int64)
    return values if classes is None else classes[values]


def _matrix(path: Path, name: str, values: np.ndarray, shape: tuple[int, int | None], what: str) -> np.ndarray:
    values = np.asarray(values)
    _layout(path, name, values, shape, what)
    return _values(path, name, values)


def _layout(path: Path, name: str, values: np.ndarray | Member, shape: tuple[int, int | None], what: str) -> None:
    """Refuse an array (or a member, by its header) of another shape than ``shape`` or not of numbers."""
    rows, columns = shape
    expected = f"({rows}, {columns if columns is not None else 'd'})"
    if len(values.shape) != 2 or values.shape[0] != rows or (columns is not None and values.shape[1] != columns) \
            or values.shape[1] == 0:
        detail = f"{rows} rows (one per {'sample' if name not in ('class_weights', 'node_weights') else 'node'})"
        if columns is not None:
            detail += f" and {columns} columns (one per {what})"
        raise _fail(path, f"'{name}' has shape {values.shape}, expected {expected}: {detail}")
    if values.dtype.kind not in "iuf":
        raise _fail(path, f"'{name}' holds {values.dtype} values; expected numbers")


def _values(path: Path, name: str, values: np.ndarray, first: int = 0) -> np.ndarray:
    """``values`` as float64, refused where one is NaN or infinite, or, in an array of
    :data:`FEATURE_ARRAYS`, beyond float32's range (rows counted from ``first``)."""
    values = values.astype(np.float64)
    if not np.isfinite(values).all():
        row = first + int(np.argwhere(~np.isfinite(values))[0][0])
        raise _fail(path, f"'{name}' holds a NaN or infinite value (row {row}); check the model's output")
    largest = float(np.finfo(np.float32).max)
    if name in FEATURE_ARRAYS and values.size and np.abs(values).max() > largest:
        row = first + int(np.argwhere(np.abs(values) > largest)[0][0])
        raise _fail(path, f"'{name}' holds a value beyond float32's range ±{largest:.3g} (row {row}), which no layer "
                          "of a network gives; check how the file was written")
    return values
