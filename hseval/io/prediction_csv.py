"""The text files that go with ``hseval evaluate --predictions``: a prediction file in CSV, one row
per sample (its columns are described in :mod:`hseval.io.prediction_format`), and the class list,
one class name a line in the model's order. Both name the classes by the tree's leaf names, and a
name that is none is refused with the closest leaf name.

A CSV is small enough to be read, parsed and checked whole; its scores come back in the tree's
class order, checked against the kind the file (or ``--scores``) declares
(:mod:`hseval.io.prediction_scores`).
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import NamedTuple

import numpy as np

from hseval.core.errors import DataError
from hseval.core.fileio import read_text
from hseval.io.prediction_scores import SCORE_KINDS, check_kind, permuted
from hseval.io.tables import Column, failure, parse_column, read_cells
from hseval.metrics._checks import probability_problem
from hseval.tree.hierarchy import Hierarchy

__all__ = ["CsvPredictions", "read_csv", "read_class_list"]

_SCORE_COLUMN = re.compile(r"(score|logit|prob)_([0-9]+)")
_COLUMN_KIND = {"logit": "logits", "prob": "probs", "score": None}
_CSV_HINTS = {"logits": "name the columns logit_<i>", "probs": "name the columns prob_<i>"}

_fail = failure(DataError, "")


class CsvPredictions(NamedTuple):
    """What a CSV prediction file gives: ``targets`` (N,) int64 class indices; ``kind``
    ("labels", "logits" or "probs"); ``values``: for "labels" the (N,) int64 predicted classes, else
    the (N, |L|) float64 scores, columns in the tree's order."""

    targets: np.ndarray
    kind: str
    values: np.ndarray


def read_class_list(path: str | Path, tree: Hierarchy) -> np.ndarray:
    """``classes``: one class name per line, in the model's order -> (|L|,) the tree's leaf index
    of each model class."""
    path = Path(path)
    lines = read_text(path, what="class list", error=DataError).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    leaf = {name: i for i, name in enumerate(tree.leaf_names)}
    seen: dict[str, int] = {}
    order = []
    for number, line in enumerate(lines, start=1):
        name = line.rstrip("\r")
        if name not in leaf:
            raise _fail(path, _unknown(name, tree), number)
        if name in seen:
            raise _fail(path, f"{name!r} is listed twice (first on line {seen[name]})", number)
        seen[name] = number
        order.append(leaf[name])
    if len(order) != tree.num_leaves:
        missing = next(n for n in tree.leaf_names if n not in seen)
        raise _fail(path, f"lists {len(order)} classes but the hierarchy has {tree.num_leaves} (missing {missing!r}); "
                          "give every class once, one per line, in the model's order")
    return np.asarray(order, dtype=np.int64)


def _unknown(name: str, tree: Hierarchy) -> str:
    close = difflib.get_close_matches(name, tree.leaf_names, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"{name[:60]!r} is not a class of the hierarchy{hint}"


def read_csv(path: Path, data: bytes, tree: Hierarchy, classes: np.ndarray | None,
             declared: str | None) -> CsvPredictions:
    """The CSV prediction file ``path`` (its bytes ``data``), checked against ``tree``; ``classes``
    and ``declared`` as :func:`~hseval.io.prediction_format.read_predictions`' ``classes`` and ``scores``."""
    header, cells = read_cells(path, data, error=DataError, hint="", lenient=True,
                               empty="is empty; expected a header line such as target,pred")
    if "target" not in header:
        raise _fail(path, "no column 'target'; expected target,pred or target,logit_0,... or target,prob_0,...", 1)
    if not len(cells):
        raise _fail(path, "has a header but no sample")
    column = {h: cells[:, i] for i, h in enumerate(header)}
    targets = _csv_classes(path, "target", column["target"], tree, classes)
    score_columns = {h: _SCORE_COLUMN.fullmatch(h) for h in header if h != "target"}
    if list(score_columns) == ["pred"]:
        if declared is not None:
            raise _fail(path, f"holds predicted classes (target,pred), no scores, but {declared} were declared "
                              f"(--scores {declared})")
        return CsvPredictions(targets, "labels", _csv_classes(path, "pred", column["pred"], tree, classes))
    unknown = [h for h, m in score_columns.items() if m is None]
    if unknown:
        raise _fail(path, f"unknown column {unknown[0]!r}; expected target,pred or target,logit_0,...,"
                         f"logit_{tree.num_leaves - 1} (or prob_0,...)", 1)
    prefixes = {m.group(1) for m in score_columns.values()}
    indices = sorted(int(m.group(2)) for m in score_columns.values())
    if len(prefixes) != 1 or indices != list(range(tree.num_leaves)):
        raise _fail(path, f"score columns must be one kind (score_, logit_ or prob_) numbered 0.."
                         f"{tree.num_leaves - 1}, one per class; got {len(indices)} columns", 1)
    prefix = prefixes.pop()
    named = _COLUMN_KIND[prefix]
    if named is None and declared is None:
        raise _fail(path, f"{prefix}_<i> columns do not say whether they hold logits or probabilities; name them "
                          "logit_<i> or prob_<i>, or pass --scores logits or --scores probs", 1)
    if None not in (named, declared) and named != declared:
        raise _fail(path, f"the {prefix}_<i> columns hold {named}, but {declared} were declared (--scores "
                          f"{declared}); the columns' names say what they hold", 1)
    kind = named or declared
    scores = np.stack([parse_column(column[f"{prefix}_{i}"], Column(f"{prefix}_{i}", float), path, _fail)
                       for i in range(tree.num_leaves)], axis=1)
    hints = {k: f"{_CSV_HINTS[k]}" + (f" or pass --scores {k}" if named is None else "") for k in SCORE_KINDS}
    check_kind(path, f"{prefix}_<i>", probability_problem(scores), kind, hints, csv=True)
    return CsvPredictions(targets, kind, scores if classes is None else permuted(scores, classes))


def _csv_classes(path: Path, name: str, cells: np.ndarray, tree: Hierarchy, classes: np.ndarray | None) -> np.ndarray:
    """A column of class names (every cell a leaf name) or of class indices."""
    leaf = {n: i for i, n in enumerate(tree.leaf_names)}
    stripped = np.array([c.strip() for c in cells], dtype=object)
    if all(c in leaf for c in stripped):
        return np.array([leaf[c] for c in stripped], dtype=np.int64)
    if all(re.fullmatch(r"[0-9]{1,12}", c) for c in stripped):
        values = np.array([int(c) for c in stripped], dtype=np.int64)
        bad = np.flatnonzero(values >= tree.num_leaves)
        if len(bad):
            raise _fail(path, f"{int(values[bad[0]])} is not a class index 0..{tree.num_leaves - 1} of the "
                              "hierarchy", int(bad[0]) + 2, name)
        return values if classes is None else classes[values]
    digits = np.array([bool(re.fullmatch(r"[0-9]{1,12}", c)) for c in stripped])
    names = np.array([c in leaf for c in stripped])
    odd = np.flatnonzero(~names & ~digits)
    if len(odd):
        row = int(odd[0])
        raise _fail(path, _unknown(stripped[row], tree), row + 2, name)
    row = int(np.flatnonzero(digits)[0])
    raise _fail(path, f"{stripped[row]!r} is an index but other rows hold class names; use names or indices in the "
                      "whole column", row + 2, name)
