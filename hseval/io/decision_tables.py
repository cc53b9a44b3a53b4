"""The two CSV files of an evaluated run's decisions (:mod:`hseval.metrics.decisions`), read and
checked by the one mechanism of :mod:`hseval.io.tables`; scripts and other tools read these names.

- ``decisions.csv``: one row per decoding rule (``rule``: ``leaf``, ``top-down``, ``crm``,
  ``plurality``, ``threshold:0.5``, ``optimal:hf1`` ...) and source of node probabilities
  (``probabilities``: ``classes``, or ``own scores``: :mod:`hseval.evaluation.decisions`), one
  column per metric of node predictions (:data:`~hseval.metrics.node_metrics.NODE_METRICS`, and
  ``hf:<β>`` for an ``optimal:hf:<β>`` rule), the mean over the samples (over the mistakes for
  ``mistake_severity``); ``unavailable`` says why a row or a cell is empty.
- ``operating_curve.csv``: the exact operating curves of ``threshold`` and ``info-threshold``
  (:mod:`hseval.metrics.curves`) of each source: one row per breakpoint, from t = 1 down; the row
  of ``threshold`` τ holds for every t in (the next row's τ, τ].
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hseval.core.errors import ConfigError
from hseval.io.tables import Column, Table
from hseval.metrics.curves import CURVE_METRICS
from hseval.metrics.decisions import CURVES as CURVE_RULES
from hseval.metrics.decisions import rule
from hseval.metrics.node_metrics import NODE_METRICS

SOURCES = ("classes", "own scores")
"""Where a row's node probabilities come from: the classes' sums, or a head's own level scores."""

__all__ = ["SOURCES", "DECISIONS", "CURVES", "DECISION_TABLES"]


def _check_decisions(frame: pd.DataFrame, rows: Callable, **_: Any) -> None:
    names = frame["rule"].to_numpy(dtype=object)
    valid = np.ones(len(names), bool)
    for k, name in enumerate(names):
        try:
            valid[k] = rule(name).name == name
        except ConfigError:
            valid[k] = False
    rows(~valid, "rule", "not a decoding rule as hseval names it (leaf, threshold:0.5, optimal:hf1 ...)")
    own = (frame["probabilities"] == "own scores").to_numpy()
    readable = np.array([rule(name).own if ok else True for name, ok in zip(names, valid)], dtype=bool)
    rows(own & ~readable, "probabilities",
         "a rule that reads a distribution over the classes has no row from a head's own scores")
    metrics = frame[[c for c in frame.columns if c not in ("rule", "probabilities", "unavailable")]]
    rows(metrics.isna().any(axis=1).to_numpy() & frame["unavailable"].isna().to_numpy(), "unavailable",
         "empty, but a metric of the row is missing: say why")


def _check_curves(frame: pd.DataFrame, rows: Callable, *, path: Path, fail: Callable, **_: Any) -> None:
    for (name, _source), part in frame.groupby(["rule", "probabilities"], sort=False):
        thresholds = part["threshold"].to_numpy()
        at = part.index.to_numpy()
        if thresholds[0] != 1.0:
            raise fail(path, f"the curve of {name} must start at threshold 1", int(at[0]) + 2, "threshold")
        bad = np.r_[False, np.diff(thresholds) >= 0]
        rows(np.isin(frame.index, at[bad]), "threshold", "not below the threshold of the line before")


_SHARE = {name: Column(name, float, 0, 1, nullable=True) for name in NODE_METRICS}
_SHARE.update({name: Column(name, float, 0, nullable=True) for name in NODE_METRICS if NODE_METRICS.get(name).lower})
_SOURCE = Column("probabilities", str, choices=SOURCES)
DECISIONS = Table("decisions.csv", (Column("rule", str), _SOURCE, *_SHARE.values(),
                                    Column("unavailable", str, nullable=True)),
                  pattern=(r"hf:[0-9.eE+-]+", Column("", float, 0, 1, nullable=True)), key=("rule", "probabilities"),
                  check=_check_decisions)
CURVES = Table("operating_curve.csv", (Column("rule", str, choices=CURVE_RULES), _SOURCE,
                                       Column("threshold", float, 0, 1),
                                       *(Column(name, float, 0, 1) for name in CURVE_METRICS)),
               key=("rule", "probabilities", "threshold"), check=_check_curves)
DECISION_TABLES = {t.file: t for t in (DECISIONS, CURVES)}
