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

Per run: ``metrics.json`` (:func:`metrics_record`), the tables of
:data:`hseval.io.tables.EVALUATION_TABLES` (``per_node.csv``, ``geometry.csv``, ``pair_angles.csv``,
``projections.csv``) and of :data:`hseval.io.decision_tables.DECISION_TABLES` (``decisions.csv``,
``operating_curve.csv``), ``embeddings.npz`` and ``predictions.npz`` (:data:`ARRAYS`). In the
folder of all runs: ``index.json`` (:class:`IndexRecord`).
"""

from __future__ import annotations

import functools
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, StringConstraints, create_model, model_validator

from hseval.core import fileio
from hseval.core.errors import RunFormatError
from hseval.io.data_identity import DatasetInfo
from hseval.io.decision_tables import DECISION_TABLES
from hseval.io.evaluation_arrays import ARRAYS, EMBEDDINGS, PREDICTIONS, read_arrays
from hseval.io.folders import EvaluationMarker, read_marker
from hseval.io.records import (
    Count,
    Finite,
    HistoryEntry,
    Json,
    Level,
    Levels,
    NonNegative,
    Positive,
    Record,
    TreeRecord,
    Unit,
    keys_like,
    level_keys,
    parse_json,
    parse_record,
    write_record,
)
from hseval.io.tables import EVALUATION_TABLES, GROUPED, LEVELS, RERUN, SUMMARY, render
from hseval.metrics import statistics
from hseval.tree.hierarchy import Hierarchy

__all__ = ["SCHEMA_VERSION", "CurveSummary", "METRICS", "PER_NODE", "GEOMETRY", "PAIRS", "PROJECTIONS", "DECISIONS",
           "CURVES", "EMBEDDINGS", "PREDICTIONS",
           "FILES", "TABLES", "ARRAYS", "metrics_record", "IndexRecord", "write_run", "read_metrics",
           "read_arrays", "sealed", "INDEX_FILE", "REPORT_FILES", "FOLDER_FILES", "write_index"]

SCHEMA_VERSION = 4
METRICS, INDEX_FILE = "metrics.json", "index.json"
TABLES = {**EVALUATION_TABLES, **DECISION_TABLES}
PER_NODE, GEOMETRY, PAIRS, PROJECTIONS, DECISIONS, CURVES = TABLES  # the file names, in the order of the tables
FILES = (METRICS, *TABLES, EMBEDDINGS, PREDICTIONS)
REPORT_FILES = (SUMMARY.file, GROUPED.file, LEVELS.file, "superclass_accuracy.md", "significance.csv",
                "leaderboard.csv", "decisions_summary.csv", "operating_points.csv",
                "paper_tables.md", "paper_tables.tex", "report.md", "report.html")
"""The files ``hseval report`` writes into an evaluation folder."""
FOLDER_FILES = (INDEX_FILE, *REPORT_FILES)
"""The files at the top of an evaluation folder, beside its evaluated runs: no run's evaluation takes these names."""


# ====================================================================== metrics.json
Signed = Annotated[float, Field(ge=-1, le=1)]
_MEAN = r"^mean_[a-z_]+$"


def _help(text: str) -> Any:
    return Field(None, description=text)


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
    __pydantic_extra__: dict[Annotated[str, StringConstraints(pattern=_MEAN)], Finite | None]
    nodes: Count | None = None
    sibling_pairs: Count | None = None
    """The pairs of nodes of this depth with one parent; ``mean_sibling_cosine`` is over all of them."""
    sibling_pairs_measured: Count | None = None
    """The pairs ``mean_sibling_angle`` is over: all, or a seeded sample past a million (``geometry.PAIR_SAMPLE``)."""
    non_sibling_pairs: Count | None = None
    non_sibling_pairs_measured: Count | None = None


class LevelAgreement(Record):
    clusters: Positive | None = None
    adjusted_rand: Signed | None = None
    rand: Unit | None = None


class TreeAgreement(Record):
    cophenetic_correlation: Signed | None = _help(
        "Correlation between the tree's distances between classes and those of the class vectors' "
        "average-linkage (cosine) dendrogram; 1: the vectors recover the tree.")
    levels: dict[Level, LevelAgreement] | None = None
    classes: Annotated[Count, Field(ge=3)] | None = None
    """The classes clustered: all, or a seeded sample of ``geometry.CLUSTER_CLASSES`` past that many."""
    skipped: str | None = None
    """Why the class vectors were not clustered (fewer than 3 classes, a zero vector)."""


class Geometry(Record):
    """The class vectors' geometry per depth, and how well they agree with the tree."""

    skipped: str | None = None
    node_vectors: str | None = None
    depths: dict[Level, DepthGeometry] | None = None
    tree_agreement: TreeAgreement | None = None


class CurveSummary(Record):
    """An operating curve's summaries (:func:`hseval.metrics.curves.curve_summary`)."""

    auc_depth: Unit = Field(description="Area under correct against depth recall (Valmadre's AC(depth)).")
    auc_info: Unit = Field(description="Area under correct against information recall (Valmadre's AC(info)).")
    depth_recall_at_90: Unit = Field(description="The best depth recall with at least 90 % correct answers.")
    depth_recall_at_95: Unit = Field(description="The best depth recall with at least 95 % correct answers.")
    info_recall_at_90: Unit = Field(description="The best information recall with at least 90 % correct answers.")
    info_recall_at_95: Unit = Field(description="The best information recall with at least 95 % correct answers.")


class WeightsFile(Record):
    path: str
    sha256: str


class PretrainedModel(Record):
    """A torchvision or timm classifier that ``hseval predict`` ran (:mod:`hseval.evaluation.zoo`)."""

    model: str = Field(description="torchvision:NAME or timm:NAME.")
    library: Literal["torchvision", "timm"]
    recipe: str = Field(description="The torchvision weights enum member, or the timm tag, whose preprocessing ran.")
    weights: WeightsFile
    preprocessing: str = Field(description="The preprocessing, as the library prints it.")


class Source(Record):
    kind: Literal["run", "predictions"]
    path: str | None = None
    sha256: str | None = None
    format: str | None = None
    inputs: list[str] | None = None
    model: PretrainedModel | None = None


class _Run(Record):
    """What metrics.json says beside the scores of the declared metrics: what was evaluated, its
    tree, the scale and geometry of its vectors, CRM's scores, how it was trained."""

    top1: Unit
    head: str = Field(description="The last layer: plain, multitask, hierarchy, manifold, riemann, hyperbolic ...")
    dataset: str
    samples: Count = Field(description="Test samples evaluated.")
    hierarchy: TreeRecord
    feature_norm: dict[Literal["mean", "std", "max"], NonNegative | None] | None = _help(
        "Mean norm ‖φ(x)‖ of the test embeddings (with std and max): with the class vectors' norms it sets the "
        "logit scale.")
    max_logit: dict[Literal["mean"], Finite | None] | None = _help(
        "Mean of each sample's largest logit: the logit scale; a sphere head far below its classes' need cannot "
        "be confident (see the radius guard).")
    class_vector_norm: dict[Literal["mean"], NonNegative | None] | None = _help("Mean norm of the class vectors.")
    method: dict[Literal["description", "citation", "group"], str] | None = _help(
        "What the head is in one line, the paper it comes from, and its group (the paper's heads or the peers).")
    initialised_from: dict[str, Json] | None = _help("The file the backbone started from (--init) and its SHA-256.")
    radius: NonNegative | None = _help(
        "The radius R0 of a sphere head's first level, as it was built (its option or the head's default); none "
        "for a head without one.")
    geometry: Geometry | None = _help("The class vectors' geometry per depth and their agreement with the tree.")
    unavailable: dict[str, str] | None = None
    """Metric key -> why it could not be computed."""
    run: str | None = _help("The run's name (its folder in the evaluation).")
    run_path: str | None = None
    backbone: str | None = _help("The network that computes the embeddings φ(x).")
    split: Literal["train", "val", "test"] | None = None
    seed: Count | None = _help("The training seed.")
    training: dict[str, Json] | None = None
    trained_on: DatasetInfo | None = _help(
        "The identity of the data the run was trained on: run.json's 'dataset' without where it lay (its images and "
        "labels by 'content_sha256'); runs pool as seeds only when theirs are equal.")
    history: list[HistoryEntry] | None = None
    train_seconds: NonNegative | None = None
    eval_seconds: NonNegative | None = None
    source: Source | None = None
    probabilities: Literal["softmax", "given"] | None = _help(
        "What the decisions read as the model's probabilities: the softmax of its logits, or the probabilities a "
        "prediction file gave.")
    operating_curve: dict[Literal["threshold", "info-threshold", "threshold (own scores)",
                                  "info-threshold (own scores)"], CurveSummary] | None = _help(
        "The summaries of each operating curve of operating_curve.csv (from a head's own scores: '(own scores)').")

    @model_validator(mode="after")
    def _levels_of_the_tree(self) -> _Run:
        tree = self.hierarchy.tree
        for record, where in ((self, ""), (getattr(self, "crm", None), "crm.")):
            for key, (_, declared) in statistics.declared().items():
                if declared.kind == "levels":
                    level_keys(where + key, getattr(record, key, None), tree)
        return self


class _Scored(Record):
    """Scores of the declared metrics whose keys hold a k (``top5``): each within its kind's range."""

    @model_validator(mode="after")
    def _per_k_in_range(self) -> _Scored:
        for key, value in (self.__pydantic_extra__ or {}).items():
            found = statistics.key_of(key)
            if found and found[0].keys[found[1]].kind == "share" and value is not None and value > 1:
                raise ValueError(f"'{key}' must be <= 1, got {value:g}")
        return self


_KINDS: dict[str, Any] = {"share": Unit, "nonnegative": NonNegative, "levels": Levels, "bins": Reliability}
"""The type of a declared metric's value in metrics.json, by its :class:`~hseval.metrics.statistics.Key`'s kind."""


@functools.cache
def _records(metrics: tuple[str, ...]) -> tuple[type[Record], type[Record]]:
    """(Scores, MetricsRecord) for the metrics registered under these names (a metric added later,
    by a user's module, makes new ones)."""
    declared = statistics.declared()
    per_k = {metric.patterns[k].pattern.replace("([1-9][0-9]{0,3})", "[1-9][0-9]{0,3}"): key
             for k, (metric, key) in declared.items() if "{k}" in k}
    any_k = f"^({'|'.join(per_k)})$"
    extra = NonNegative if any(key.kind == "nonnegative" for key in per_k.values()) else Unit

    def fields(crm: bool) -> dict[str, Any]:
        return {k: (_KINDS[key.kind] | None, _help(key.help)) for k, (metric, key) in declared.items()
                if "{k}" not in k and metric.crm == crm}

    scores = type("Scores", (_Scored,), {
        "__module__": __name__, "__doc__": "Predictions scored by the metrics that CRM's ranking has too.",
        "model_config": keys_like(any_k, narrower={f"^{p}$": Unit | None for p, key in per_k.items()
                                                   if key.kind == "share" and extra is not Unit}),
        "__annotations__": {"__pydantic_extra__": dict[Annotated[str, StringConstraints(pattern=any_k)], extra | None],
                            **{k: kind for k, (kind, _) in fields(True).items()}},
        **{k: default for k, (_, default) in fields(True).items()}})
    record = create_model("MetricsRecord", __base__=(_Run, scores), __module__=__name__, **fields(False),
                          crm=(scores | None, _help(
                              "The same scores for CRM re-ranking (Karthik et al., ICLR 2021), which predicts the "
                              "class of least expected tree distance under the head's probabilities instead of the "
                              "most probable one.")))
    record.__doc__ = "``metrics.json``: the scores of one evaluated run, what it was, and its tree."
    return scores, record


def metrics_record() -> type[Record]:
    """The record of ``metrics.json``, made from the metrics registered now
    (:data:`~hseval.metrics.statistics.METRICS`: each key's type, by its kind, and its help) and
    what the evaluation says beside them (:class:`_Run`)."""
    return _records(tuple(statistics.METRICS))[1]


def read_metrics(path: Path, data: bytes) -> tuple[dict[str, Any], Hierarchy]:
    """``metrics.json`` as it reads (every value checked by :func:`metrics_record`) and the run's tree."""
    metrics = parse_json(data, where=path, hint=RERUN)
    return metrics, parse_record(metrics_record(), metrics, where=path, hint=RERUN).hierarchy.tree


# ====================================================================== checksums and writing
def sealed(folder: Path) -> Callable[[str], bytes]:
    """The reader of ``folder``'s files: the bytes of each, checked against the SHA-256 ``hseval
    evaluate`` recorded in the folder's marker."""
    marker = read_marker(folder, error=RunFormatError)
    if not isinstance(marker, EvaluationMarker):
        raise RunFormatError(f"{folder}: is not the evaluation of a run written by hseval (no marker of one); {RERUN}")
    return lambda name: fileio.verified_bytes(
        folder / name, marker.files.get(name), what=name, error=RunFormatError, missing=f"missing; {RERUN}",
        changed=f"was changed after 'hseval evaluate' wrote it (checksum mismatch); {RERUN}")


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
    split: Literal["train", "val", "test"] | None = None
    leaf_top1: Unit | None = None


class IndexRecord(Record):
    """``index.json``, in the folder of every evaluated run: one entry per run (an informative list
    for other tools: the folders are the truth, and hseval never reads it back, but rebuilds it
    from the evaluations' own files, :class:`hseval.evaluation.writer.Index`)."""

    runs: list[IndexEntry]


def write_index(root: Path, entries: list[dict[str, Any]]) -> None:
    write_record(Path(root) / INDEX_FILE, IndexRecord(runs=[IndexEntry.model_validate(e) for e in entries]))
