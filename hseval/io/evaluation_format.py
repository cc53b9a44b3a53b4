"""The evaluation format: the one module that knows the files of an evaluated run and their schema
version.

``hseval evaluate`` writes each run's folder through :func:`write_run`; ``hseval report``, ``hseval
demo`` and the dashboard read it through :mod:`hseval.io.results`, which checks every value before
anyone sees it. A file that breaks the schema is refused with one line naming the file, and the
line (CSV) or key (JSON) and column. Nothing here unpickles: JSON, CSV and
``np.load(allow_pickle=False)``.

Each folder's marker (:mod:`hseval.io.folders`) lists the SHA-256 of every file, so a file edited
after ``hseval evaluate`` wrote it is refused rather than shown: a changed number never passes
without a word.

Per run: ``metrics.json`` (:class:`MetricsRecord`), the tables of
:data:`hseval.io.tables.EVALUATION_TABLES` (``per_node.csv``, ``geometry.csv``, ``pair_angles.csv``,
``projections.csv``), ``embeddings.npz`` and ``predictions.npz`` (:data:`ARRAYS`). In the folder
of all runs: ``index.json`` (:class:`IndexRecord`).
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, StringConstraints, ValidationError, model_validator

from hseval.core import fileio
from hseval.core.errors import RunFormatError
from hseval.io.folders import EvaluationMarker, read_marker
from hseval.io.records import (
    Count,
    HistoryEntry,
    Level,
    Levels,
    NonNegative,
    Record,
    TreeRecord,
    Unit,
    keys_like,
    level_keys,
    parse_json,
    parse_record,
    write_record,
)
from hseval.io.tables import EVALUATION_TABLES, RERUN, render
from hseval.tree.hierarchy import Hierarchy

__all__ = ["SCHEMA_VERSION", "METRICS", "PER_NODE", "GEOMETRY", "PAIRS", "PROJECTIONS", "EMBEDDINGS", "PREDICTIONS",
           "FILES", "TABLES", "ARRAYS", "MetricsRecord", "IndexRecord", "write_run", "read_metrics", "read_arrays",
           "verified_bytes", "checksums", "INDEX_FILE", "read_index", "write_index"]

SCHEMA_VERSION = 2
METRICS, EMBEDDINGS, PREDICTIONS, INDEX_FILE = "metrics.json", "embeddings.npz", "predictions.npz", "index.json"
TABLES = EVALUATION_TABLES
PER_NODE, GEOMETRY, PAIRS, PROJECTIONS = TABLES  # the file names, in the order of the tables
FILES = (METRICS, *TABLES, EMBEDDINGS, PREDICTIONS)


# ====================================================================== metrics.json
Signed = Annotated[float, Field(ge=-1, le=1)]
_SCORE = r"^(top[1-9][0-9]{0,3}|(avg|best)_hdist@[1-9][0-9]{0,3})$"
_MEAN = r"^mean_[a-z_]+$"


class Scores(Record):
    """Predictions scored: leaf top-k (``top1``, ``top5`` ...), super-class accuracy, mistake
    severity, hierarchical distance@k (``avg_hdist@5`` ...) and hierarchical precision/recall/F1."""

    model_config = keys_like(_SCORE)
    __pydantic_extra__: dict[Annotated[str, StringConstraints(pattern=_SCORE)], NonNegative | None]
    superclass_acc: Levels | None = None
    mistake_severity: NonNegative | None = None
    hierarchical_precision: Unit | None = None
    hierarchical_recall: Unit | None = None
    hierarchical_f1: Unit | None = None

    @model_validator(mode="after")
    def _top_k_is_a_fraction(self) -> Scores:
        for key, value in (self.__pydantic_extra__ or {}).items():
            if key.startswith("top") and value is not None and value > 1:
                raise ValueError(f"'{key}' must be <= 1, got {value:g}")
        return self


class Reliability(Record):
    """The reliability diagram's bins: edges, mean confidence, accuracy (null when empty), count."""

    lower: list[Unit] | None = None
    upper: list[Unit] | None = None
    confidence: list[Unit | None] | None = None
    accuracy: list[Unit | None] | None = None
    count: list[Count] | None = None

    @model_validator(mode="after")
    def _one_length(self) -> Reliability:
        if len({len(v) for v in self.model_dump().values() if v is not None}) > 1:
            raise ValueError("its lists must have one length (one entry per bin)")
        return self


class DepthGeometry(Record):
    model_config = keys_like(_MEAN)
    __pydantic_extra__: dict[Annotated[str, StringConstraints(pattern=_MEAN)], float | None]
    nodes: Count | None = None
    sibling_pairs: Count | None = None
    """The pairs of nodes of this depth with one parent; ``mean_sibling_cosine`` is over all of them."""
    sibling_pairs_measured: Count | None = None
    """The pairs ``mean_sibling_angle`` is over: all, or a seeded sample past a million (``geometry.PAIR_SAMPLE``)."""
    non_sibling_pairs: Count | None = None
    non_sibling_pairs_measured: Count | None = None


class LevelAgreement(Record):
    clusters: Annotated[int, Field(ge=1)] | None = None
    adjusted_rand: Signed | None = None
    rand: Unit | None = None


class TreeAgreement(Record):
    cophenetic_correlation: Signed | None = None
    levels: dict[Level, LevelAgreement] | None = None
    skipped: str | None = None
    """Why the class vectors were not clustered (fewer than 3 classes, too many, a zero vector)."""


class Geometry(Record):
    """The class vectors' geometry per depth, and how well they agree with the tree."""

    skipped: str | None = None
    node_vectors: str | None = None
    depths: dict[Level, DepthGeometry] | None = None
    tree_agreement: TreeAgreement | None = None


class Source(Record):
    kind: Literal["run", "predictions"]
    path: str | None = None
    sha256: str | None = None
    format: str | None = None
    inputs: list[str] | None = None


class MetricsRecord(Scores):
    """``metrics.json``: the scores of one evaluated run, what it was, and its tree."""

    top1: Unit
    head: str
    dataset: str
    samples: Count
    hierarchy: TreeRecord
    superclass_acc_from_levels: Levels | None = None
    level_agreement: Levels | None = None
    ece: Unit | None = None
    cross_entropy: NonNegative | None = None
    reliability: Reliability | None = None
    feature_norm: dict[Literal["mean", "std", "max"], NonNegative | None] | None = None
    max_logit: dict[Literal["mean"], float | None] | None = None
    class_vector_norm: dict[Literal["mean"], NonNegative | None] | None = None
    geometry: Geometry | None = None
    crm: Scores | None = None
    """CRM re-ranking's predictions scored like the argmax's (:mod:`hseval.metrics.crm`)."""
    unavailable: dict[str, str] | None = None
    """Metric key -> why it could not be computed."""
    run: str | None = None
    run_path: str | None = None
    backbone: str | None = None
    split: Literal["train", "test"] | None = None
    seed: Count | None = None
    training: dict[str, Any] | None = None
    history: list[HistoryEntry] | None = None
    train_seconds: NonNegative | None = None
    eval_seconds: NonNegative | None = None
    source: Source | None = None

    @model_validator(mode="after")
    def _levels_of_the_tree(self) -> MetricsRecord:
        tree = self.hierarchy.tree
        for key in ("superclass_acc", "superclass_acc_from_levels", "level_agreement"):
            level_keys(key, getattr(self, key), tree)
        level_keys("crm.superclass_acc", self.crm and self.crm.superclass_acc, tree)
        return self


def read_metrics(path: Path, data: bytes) -> tuple[dict[str, Any], Hierarchy]:
    """``metrics.json`` as it reads (every value checked by :class:`MetricsRecord`) and the run's tree."""
    metrics = parse_json(data, where=path, hint=RERUN)
    return metrics, parse_record(MetricsRecord, metrics, where=path, hint=RERUN).hierarchy.tree


# ====================================================================== arrays
ARRAYS: dict[str, dict[str, tuple[str, int]]] = {
    EMBEDDINGS: {"embeddings": ("f", 2), "labels": ("iu", 1), "predictions": ("iu", 1), "indices": ("iu", 1),
                 "node_vectors": ("f", 2)},
    PREDICTIONS: {"targets": ("iu", 1), "topk": ("iu", 2), "levels": ("i", 2)},
}
"""Members of each .npz file: (dtype kinds, number of dimensions). predictions.npz's ``levels``
(N, depth - 1) is the node each sample is predicted at each super-class level by the head's own
scores (-1 in every row of a level the head does not score)."""


def read_arrays(path: Path, data: bytes, tree: Hierarchy, samples: int) -> dict[str, np.ndarray]:
    """An .npz of :data:`ARRAYS`, checked: members, types, shapes, and class indices in range."""
    spec = ARRAYS[path.name]
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            missing = next((m for m in spec if m not in archive.files), None)
            if missing is not None:
                raise RunFormatError(f"{path}: no array '{missing}'; {RERUN}")
            arrays = {m: archive[m] for m in spec}
    except RunFormatError:
        raise
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        raise RunFormatError(f"{path}: not a readable .npz archive ({type(exc).__name__}); {RERUN}") from None
    for member, (kinds, ndim) in spec.items():
        array = arrays[member]
        if not isinstance(array, np.ndarray) or array.dtype.kind not in kinds or array.ndim != ndim:
            raise RunFormatError(f"{path}: '{member}' must be a {ndim}-d array of "
                                 f"{'floats' if kinds == 'f' else 'integers'}; {RERUN}")
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            raise RunFormatError(f"{path}: '{member}' holds NaN or infinite values; {RERUN}")
    for member in (m for m in ("labels", "predictions", "targets", "topk") if m in arrays):
        values = arrays[member]
        if values.size and (values.min() < 0 or values.max() >= tree.num_leaves):
            raise RunFormatError(f"{path}: '{member}' holds class indices outside 0..{tree.num_leaves - 1}; {RERUN}")
    first = arrays[next(iter(spec))]
    lengths = {m: len(arrays[m]) for m in spec if m != "node_vectors"}
    if len(set(lengths.values())) > 1:
        raise RunFormatError(f"{path}: arrays of different lengths ({lengths}); {RERUN}")
    if path.name == PREDICTIONS:
        if len(first) != samples:
            raise RunFormatError(f"{path}: {len(first)} samples but metrics.json says {samples}; {RERUN}")
        _check_level_predictions(path, arrays["levels"], len(first), tree)
    else:
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
    if fileio.sha256(data) != recorded.get(name):
        raise RunFormatError(f"{path}: was changed after 'hseval evaluate' wrote it (checksum mismatch); {RERUN}")
    return data


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return buffer.getvalue()


def write_run(folder: Path, *, metrics: dict[str, Any], tables: dict[str, pd.DataFrame],
              arrays: dict[str, dict[str, np.ndarray]]) -> None:
    """Write every file of one evaluated run into ``folder`` (the staging of an ``evaluation``
    output folder, whose marker records the files' checksums when it is committed). What was
    rendered is read back first: a writer that breaks its own schema is a bug, and fails before
    writing."""
    missing = [f for f in (*TABLES, *ARRAYS) if f not in tables and f not in arrays]
    if missing:
        raise ValueError(f"write_run needs {missing}")
    contents = {METRICS: (json.dumps(fileio.json_ready(metrics), indent=2, allow_nan=False) + "\n").encode("utf-8")}
    checked, tree = read_metrics(folder / METRICS, contents[METRICS])
    contents.update({name: render(tables[name], spec, tree=tree, samples=checked["samples"])
                     for name, spec in TABLES.items()})
    contents.update({name: _npz_bytes(arrays[name]) for name in ARRAYS})
    for name in ARRAYS:
        read_arrays(folder / name, contents[name], tree, checked["samples"])
    for name, data in contents.items():
        fileio.write_bytes(folder / name, data)


# ====================================================================== index.json
class IndexEntry(Record):
    run: str
    path: str | None = None
    head: str | None = None
    dataset: str | None = None
    backbone: str | None = None
    seed: Count | None = None
    split: Literal["train", "test"] | None = None
    leaf_top1: Unit | None = None


class IndexRecord(Record):
    """``index.json``, in the folder of every evaluated run: one entry per run (an informative list:
    the folders are the truth)."""

    runs: list[IndexEntry]


def read_index(root: Path) -> list[dict[str, Any]]:
    """The entries of ``root/index.json``; [] when it is missing or does not fit its schema (it
    is rebuilt from the folders)."""
    try:
        record = IndexRecord.model_validate_json((Path(root) / INDEX_FILE).read_bytes())
    except (OSError, ValidationError):
        return []
    return [entry.model_dump(exclude_unset=True) for entry in record.runs]


def write_index(root: Path, entries: list[dict[str, Any]]) -> None:
    write_record(Path(root) / INDEX_FILE, IndexRecord(runs=[IndexEntry.model_validate(e) for e in entries]))
