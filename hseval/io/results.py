"""Reading an evaluation folder (what ``hseval evaluate`` wrote) into :class:`RunResult` objects.

Shared by ``hseval report``, ``hseval demo``, ``hseval export`` and the dashboard. Every file is
read through :mod:`hseval.io.evaluation_format`, which checks it (checksum, columns, types, ranges,
agreement with the run's tree) when the folder is loaded: a run with a damaged file is set aside
with a one-line reason in ``Evaluation.problems``, and the other runs stay usable; nothing
downstream sees an unchecked value. The tables made from them are :mod:`hseval.reporting.summary`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hseval.core.errors import HsevalError, RunFormatError
from hseval.io import evaluation_format as eval_format
from hseval.io.data_identity import evaluated_split
from hseval.io.folders import kind_of
from hseval.io.tables import read_table
from hseval.tree.hierarchy import Hierarchy

__all__ = ["RunResult", "Evaluation", "load_evaluation", "read_run"]

_NOT_EVALUATED = ("run", "runs")  # folders of training runs: the dashboard and the report need their evaluation

@dataclass
class RunResult:
    """The evaluation of one run, every file checked."""

    name: str
    path: Path
    metrics: dict[str, Any]
    hierarchy: Hierarchy
    per_node: pd.DataFrame = field(repr=False)
    geometry: pd.DataFrame = field(repr=False)
    pair_angles: pd.DataFrame = field(repr=False)
    projections: pd.DataFrame = field(repr=False)
    targets: np.ndarray = field(repr=False)
    topk: np.ndarray = field(repr=False)
    levels: np.ndarray = field(repr=False)
    """(N, depth - 1) node predicted at each super-class level by the head's own scores (-1: the
    head does not score that level)."""
    decisions: pd.DataFrame = field(repr=False)
    """decisions.csv: one row per decoding rule, one column per metric of node predictions."""
    curves: pd.DataFrame = field(repr=False)
    """operating_curve.csv: the operating curves of the threshold rules."""
    indices: np.ndarray = field(repr=False)
    """(N,) each sample's position in the evaluated split (the rows of a prediction file)."""
    decided: np.ndarray = field(repr=False)
    """(N, rules) the node each rule of ``decisions`` chose for each sample (-1: the root)."""
    depth_front: tuple[np.ndarray, np.ndarray] = field(repr=False)
    """((N, max_depth + 1) probabilities, nodes): each sample's most probable node at each depth
    (0 rows without probabilities)."""
    calibration: tuple[np.ndarray, np.ndarray] = field(repr=False)
    """((N,) top-1 confidence, (N,) -log p(target)): what the ECE and the cross-entropy sum (empty
    without scores)."""

    def embeddings(self) -> dict[str, np.ndarray]:
        """The sample of embeddings, its labels and predictions, and the node vectors (embeddings.npz)."""
        data = eval_format.sealed(self.path)(eval_format.EMBEDDINGS)
        return eval_format.read_arrays(self.path / eval_format.EMBEDDINGS, data, self.hierarchy,
                                       self.metrics["samples"])

    @property
    def head(self) -> str:
        return self.metrics["head"]

    @property
    def history(self) -> list[dict[str, Any]]:
        return list(self.metrics.get("history") or [])

    @property
    def unavailable(self) -> dict[str, str]:
        """Metric key -> why this evaluation could not compute it (e.g. a model without
        super-class scores, a prediction file without embeddings)."""
        return dict(self.metrics.get("unavailable") or {})


@dataclass
class Evaluation:
    root: Path
    runs: list[RunResult] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    """Every evaluated run's name, readable or not: what a run's colour is chosen among, so that
    it does not change when another run cannot be read."""

    def run(self, name: str) -> RunResult:
        for r in self.runs:
            if r.name == name:
                return r
        raise KeyError(name)

    @property
    def datasets(self) -> list[str]:
        return sorted({r.metrics["dataset"] for r in self.runs})

    @property
    def split(self) -> str:
        """The split its runs were evaluated on, as people name it
        (:func:`~hseval.io.data_identity.split_label`): one, as ``hseval evaluate`` keeps it."""
        return "; ".join(sorted({evaluated_split(r.metrics) for r in self.runs})) or "test"


def read_run(folder: Path) -> RunResult:
    """One evaluated run, every file read and checked (one-line :class:`RunFormatError` otherwise)."""
    fmt = eval_format
    data = fmt.sealed(folder)
    metrics, tree = fmt.read_metrics(folder / fmt.METRICS, data(fmt.METRICS))
    tables = {name: read_table(folder / name, data(name), spec, tree=tree, samples=metrics["samples"])
              for name, spec in fmt.TABLES.items()}
    arrays = fmt.read_arrays(folder / fmt.PREDICTIONS, data(fmt.PREDICTIONS), tree, metrics["samples"])
    fmt.read_arrays(folder / fmt.EMBEDDINGS, data(fmt.EMBEDDINGS), tree, metrics["samples"])  # checked, read on demand
    if arrays["decisions"].shape[1] != len(tables[fmt.DECISIONS]):
        raise RunFormatError(f"{folder / fmt.PREDICTIONS}: 'decisions' has {arrays['decisions'].shape[1]} columns for "
                             f"the {len(tables[fmt.DECISIONS])} rules of {fmt.DECISIONS}; re-run 'hseval evaluate'")
    return RunResult(name=folder.name, path=folder, metrics=metrics, hierarchy=tree, per_node=tables[fmt.PER_NODE],
                     geometry=tables[fmt.GEOMETRY], pair_angles=tables[fmt.PAIRS],
                     projections=tables[fmt.PROJECTIONS], targets=arrays["targets"], topk=arrays["topk"],
                     levels=arrays["levels"], decisions=tables[fmt.DECISIONS], curves=tables[fmt.CURVES],
                     indices=arrays["indices"], decided=arrays["decisions"],
                     depth_front=(arrays["depth_front"], arrays["depth_front_nodes"]),
                     calibration=(arrays["confidence"], arrays["nll"]))


def load_evaluation(root: str | Path, *, strict: bool = False) -> Evaluation:
    """Every evaluated run under ``root``; damaged runs go to ``problems`` (or raise if ``strict``)."""
    root = Path(root)
    if not root.is_dir():
        raise RunFormatError(f"{root}: no such evaluation folder; write one with 'hseval evaluate RUNS --out {root}'")
    kind = kind_of(root, error=RunFormatError)
    if kind == "demo":
        raise RunFormatError(f"{root}: this is the output of hseval demo; open its evaluation folder {root / 'eval'}")
    evaluation = Evaluation(root=root)
    trained = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        try:
            folder_kind = kind_of(folder, error=RunFormatError)
            if folder_kind != "evaluation":
                trained += [folder.name] if folder_kind == "run" else []
                continue  # not an evaluated run hseval wrote (e.g. the user's folder of plots)
            evaluation.runs.append(read_run(folder))
        except HsevalError as exc:
            if strict:
                raise
            evaluation.problems.append(str(exc))
        evaluation.names.append(folder.name)
    if kind in _NOT_EVALUATED or (trained and not evaluation.names):
        what = "a training run" if kind == "run" else "a folder of training runs"
        raise RunFormatError(f"{root}: this is {what}: evaluate it first with 'hseval evaluate {root} --out EVAL'")
    if not evaluation.runs and not evaluation.problems:
        raise RunFormatError(f"{root}: holds no evaluated runs; write them with 'hseval evaluate RUNS --out {root}'")
    return evaluation
