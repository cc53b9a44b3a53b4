"""Reading an evaluation folder (what ``hseval evaluate`` wrote) into tables.

Shared by ``hseval report`` and the dashboard. A run whose files are missing or damaged is set
aside with a one-line reason in ``Evaluation.problems``; the other runs stay usable. Nothing here
unpickles: JSON, CSV and ``np.load(allow_pickle=False)`` only.
"""

from __future__ import annotations

import math
import re
import zipfile
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hseval import fileio
from hseval.errors import HsevalError, RunFormatError
from hseval.hierarchy import Hierarchy

__all__ = ["RunResult", "Evaluation", "load_evaluation", "summary_table", "grouped_summary", "level_table"]

REQUIRED = ("metrics.json", "per_node.csv", "geometry.csv")
# the types that the tables, the report and the dashboard rely on (a key may be missing or null)
_TYPES: dict[str, tuple[type, ...]] = {
    "head": (str,), "dataset": (str,), "backbone": (str,), "split": (str,), "seed": (int, str),
    "samples": (int,), "hierarchy": (dict,), "history": (list,), "training": (dict,), "geometry": (dict,),
    "feature_norm": (dict,), "max_logit": (dict,), "class_vector_norm": (dict,), "reliability": (dict,),
    "superclass_acc": (dict,), "superclass_acc_from_levels": (dict,), "level_agreement": (dict,),
    "geometry.tree_agreement": (dict,), "training.engine": (dict,), "training.data": (dict,),
}


def _csv(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()
    except FileNotFoundError:
        raise RunFormatError(f"{path}: missing") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise RunFormatError(f"{path}: not a readable CSV ({exc.__class__.__name__})") from None


@dataclass
class RunResult:
    """The evaluation of one run."""

    name: str
    path: Path
    metrics: dict[str, Any]
    hierarchy: Hierarchy

    @cached_property
    def per_node(self) -> pd.DataFrame:
        return _csv(self.path / "per_node.csv")

    @cached_property
    def geometry(self) -> pd.DataFrame:
        return _csv(self.path / "geometry.csv")

    @cached_property
    def pair_angles(self) -> pd.DataFrame:
        path = self.path / "pair_angles.csv"
        return _csv(path) if path.exists() else pd.DataFrame()

    @cached_property
    def projections(self) -> pd.DataFrame:
        path = self.path / "projections.csv"
        return _csv(path) if path.exists() else pd.DataFrame()

    def predictions(self) -> tuple[np.ndarray, np.ndarray]:
        """(targets (N,), top-k predictions (N, k)) of every evaluated sample."""
        path = self.path / "predictions.npz"
        try:
            with np.load(path, allow_pickle=False) as data:
                targets, topk = data["targets"], data["topk"]
        except FileNotFoundError:
            raise RunFormatError(f"{path}: missing") from None
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            raise RunFormatError(f"{path}: not a readable predictions file ({exc.__class__.__name__})") from None
        # np.load gives the raw bytes of a member that is not an .npy array
        if not all(isinstance(a, np.ndarray) and a.dtype.kind in "iu" for a in (targets, topk)) or \
                targets.ndim != 1 or topk.ndim != 2 or len(topk) != len(targets):
            raise RunFormatError(f"{path}: not a readable predictions file (expected integer arrays 'targets' (N,) "
                                 "and 'topk' (N, k))")
        return targets, topk

    @property
    def head(self) -> str:
        return str(self.metrics.get("head", "?"))

    @property
    def history(self) -> list[dict[str, Any]]:
        return list(self.metrics.get("history", []))


@dataclass
class Evaluation:
    root: Path
    runs: list[RunResult] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def run(self, name: str) -> RunResult:
        for r in self.runs:
            if r.name == name:
                return r
        raise KeyError(name)

    @property
    def datasets(self) -> list[str]:
        return sorted({str(r.metrics.get("dataset")) for r in self.runs})


def _load_run(folder: Path) -> RunResult:
    for name in REQUIRED:
        if not (folder / name).is_file():
            raise RunFormatError(f"{folder / name}: missing (re-run 'hseval evaluate')")
    metrics = fileio.read_json(folder / "metrics.json", what="metrics.json")
    if not isinstance(metrics, dict) or "top1" not in metrics or "hierarchy" not in metrics:
        raise RunFormatError(f"{folder / 'metrics.json'}: not written by 'hseval evaluate' (no 'top1'/'hierarchy')")
    _check_types(metrics, folder / "metrics.json")
    try:
        hierarchy = Hierarchy.from_dict(metrics["hierarchy"])
    except HsevalError as exc:
        raise RunFormatError(f"{folder / 'metrics.json'}: {exc}") from None
    return RunResult(name=folder.name, path=folder, metrics=metrics, hierarchy=hierarchy)


def _check_types(metrics: dict[str, Any], path: Path) -> None:
    """A one-line error for a value of the wrong type (an edited or foreign metrics.json)."""
    def fail(key: str, value: Any, expected: str) -> None:
        raise RunFormatError(f"{path}: '{key}' must be {expected}, got {type(value).__name__}; re-run "
                             "'hseval evaluate'")

    for dotted, kinds in _TYPES.items():
        outer, _, inner = dotted.partition(".")
        value = metrics.get(outer)
        if inner:
            value = value.get(inner) if isinstance(value, dict) else None
        if value is not None and (not isinstance(value, kinds) or isinstance(value, bool)):
            fail(dotted, value, " or ".join("an object" if k is dict else "a list" if k is list else k.__name__
                                            for k in kinds))
    for entry in metrics.get("history") or []:
        if not isinstance(entry, dict):
            fail("history[]", entry, "an object")
    reliability = metrics.get("reliability") or {}
    columns = list(reliability.values())
    if any(not isinstance(c, list) or any(isinstance(v, (bool, str, list, dict)) for v in c) for c in columns) \
            or len({len(c) for c in columns}) > 1:
        fail("reliability", reliability, "lists of numbers of one length")


def load_evaluation(root: str | Path, *, strict: bool = False) -> Evaluation:
    """Every evaluated run under ``root``; damaged runs go to ``problems`` (or raise if ``strict``)."""
    root = Path(root)
    if not root.is_dir():
        raise RunFormatError(f"{root}: no such evaluation folder; write one with 'hseval evaluate RUNS --out {root}'")
    evaluation = Evaluation(root=root)
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if not (folder / "metrics.json").exists() and not any(folder.glob("*.csv")):
            continue  # not an evaluated run (e.g. a folder of plots)
        try:
            evaluation.runs.append(_load_run(folder))
        except HsevalError as exc:
            if strict:
                raise
            evaluation.problems.append(str(exc))
    if not evaluation.runs and not evaluation.problems:
        raise RunFormatError(f"{root}: holds no evaluated runs; write them with 'hseval evaluate RUNS --out {root}'")
    return evaluation


def _num(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan


def _levels(values: Any) -> list[tuple[int, Any]]:
    """(depth, value) pairs of a {"1": ..., "2": ...} record, in numeric order."""
    if not isinstance(values, dict):
        return []
    return sorted(((int(k), v) for k, v in values.items() if re.fullmatch("[0-9]{1,4}", str(k))),
                  key=lambda kv: kv[0])


def summary_table(runs: list[RunResult]) -> pd.DataFrame:
    """One row per run: identity, leaf and super-class accuracy (both ways), mistake and
    hierarchical metrics, calibration, feature scale and tree agreement."""
    rows = []
    for r in runs:
        m = r.metrics
        row: dict[str, Any] = {"run": r.name, "dataset": m.get("dataset"), "backbone": m.get("backbone"),
                               "head": m.get("head"), "seed": m.get("seed"), "samples": m.get("samples")}
        for key in ("top1", "top5"):
            row[key] = _num(m.get(key))
        for depth, value in _levels(m.get("superclass_acc")):
            row[f"level{depth}_from_leaf"] = _num(value)
        for depth, value in _levels(m.get("superclass_acc_from_levels")):
            row[f"level{depth}_from_levels"] = _num(value)
        for depth, value in _levels(m.get("level_agreement")):
            row[f"level{depth}_agreement"] = _num(value)
        for key, value in m.items():
            if key.startswith(("mistake_severity", "avg_hdist", "best_hdist", "hierarchical_")):
                row[key] = _num(value)
        row["ece"] = _num(m.get("ece"))
        row["cross_entropy"] = _num(m.get("cross_entropy"))
        row["feature_norm"] = _num((m.get("feature_norm") or {}).get("mean"))
        row["max_logit"] = _num((m.get("max_logit") or {}).get("mean"))
        agreement = ((m.get("geometry") or {}).get("tree_agreement") or {})
        row["cophenetic_correlation"] = _num(agreement.get("cophenetic_correlation"))
        rows.append(row)
    return pd.DataFrame(rows)


def _config_key(run: RunResult) -> str:
    import json

    training = dict(run.metrics.get("training") or {})
    engine = dict(training.get("engine") or {})
    for key in ("seed", "progress", "device", "threads", "tensorboard"):
        engine.pop(key, None)
    training["engine"] = engine
    data = dict(training.get("data") or {})
    data.pop("root", None)
    data.pop("workers", None)
    training["data"] = data
    return json.dumps(training, sort_keys=True)


def grouped_summary(runs: list[RunResult]) -> pd.DataFrame:
    """Runs that differ only by their seed, grouped: mean and std of every metric (the paper's
    Table 3 reports mean ± std over seeds), with the number of seeds."""
    table = summary_table(runs)
    if table.empty:
        return table
    table["config"] = [_config_key(r) for r in runs]
    keys = ["dataset", "backbone", "head", "config"]
    numeric = [c for c in table.columns if c not in (*keys, "run", "seed", "samples")
               and pd.api.types.is_numeric_dtype(table[c])]
    rows = []
    for group_key, group in table.groupby(keys, sort=False, dropna=False):
        row = dict(zip(keys, group_key))
        row["runs"] = ", ".join(group["run"])
        row["seeds"] = len(group)
        for col in numeric:
            row[f"{col}_mean"] = group[col].mean()
            row[f"{col}_std"] = group[col].std(ddof=1) if len(group) > 1 else 0.0
        rows.append(row)
    out = pd.DataFrame(rows).drop(columns="config")
    return out


def level_table(runs: list[RunResult]) -> pd.DataFrame:
    """The super-class accuracy report: one row per run, one column per level and way
    ("from leaf": the leaf prediction's ancestor; "parent δ": the head's own super-class scores)."""
    rows = []
    for r in runs:
        m = r.metrics
        row: dict[str, Any] = {"run": r.name, "head": r.head, "leaf": _num(m.get("top1"))}
        for depth, value in _levels(m.get("superclass_acc")):
            row[f"level {depth} (from leaf)"] = _num(value)
        for depth, value in _levels(m.get("superclass_acc_from_levels")):
            row[f"level {depth} (parent δ / level head)"] = _num(value)
        rows.append(row)
    return pd.DataFrame(rows)
