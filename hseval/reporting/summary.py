"""Summary tables of evaluated runs: one row per run (:func:`summary_table`), per seed group
(:func:`grouped_summary`), per run, level and way (:func:`level_long`, the super-class accuracy
report :func:`level_table`), and why a metric is missing (:func:`unavailable_table`). Levels are
data: :func:`level_long` is one row per (run, level, way)."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pandas as pd

from hseval.io.data_identity import evaluated_split
from hseval.io.results import RunResult
from hseval.io.run_settings import run_inputs
from hseval.metrics import statistics
from hseval.reporting.columns import WAYS, key_name, metric_of_column, not_available

__all__ = ["methods_table", "history_long", "summary_table", "grouped_summary", "level_long", "level_table",
           "settings", "config_key", "setting_names", "unavailable_table", "mark_unavailable",
           "reason", "declaration", "reading_order", "CRM_COLUMNS", "CURVE_COLUMNS", "SCALE_COLUMNS"]


def _num(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan


def _levels(values: Any) -> list[tuple[int, Any]]:
    """(depth, value) pairs of a checked {"1": ..., "2": ...} record, in numeric order."""
    return sorted(((int(k), v) for k, v in (values or {}).items()), key=lambda kv: kv[0])


CRM_COLUMNS = ("top1", "mistake_severity", "avg_hdist@1", "hierarchical_f1")
"""The scores of CRM's ranking the summary shows (``crm_top1`` ...)."""
CURVE_COLUMNS = tuple(f"curve_{key}" for key in ("auc_depth", "auc_info", "depth_recall_at_90", "depth_recall_at_95",
                                                  "info_recall_at_90", "info_recall_at_95"))
"""The summaries of each run's ``threshold`` operating curve (metrics.json's ``operating_curve``)."""
SCALE_COLUMNS = ("feature_norm", "max_logit", "cophenetic_correlation")
"""The last columns of the summary: the logit scale, and how well the class vectors recover the tree."""


def summary_table(runs: list[RunResult]) -> pd.DataFrame:
    """One row per run: identity, every declared metric's columns in their order (one per k of a
    top-k metric, one per level of a metric by level), CRM's, feature scale and tree agreement."""
    rows = []
    for r in runs:
        m = r.metrics
        row: dict[str, Any] = {"run": r.name, "dataset": m.get("dataset"), "split": evaluated_split(m),
                               "backbone": m.get("backbone"),
                               "head": m.get("head"), "seed": m.get("seed"), "samples": m.get("samples")}
        for key, (metric, declared) in statistics.declared().items():
            if declared.kind == "levels":
                row.update({f"level{depth}_{WAYS.get(key, key).replace(' ', '_')}": _num(value)
                            for depth, value in _levels(m.get(key))})
            elif declared.shown != "none":
                row.update({key.format(k=k): math.nan for k in declared.always})
                row.update({name: _num(value) for name, value in m.items() if metric.patterns[key].fullmatch(name)})
        crm = m.get("crm") or {}
        for key in CRM_COLUMNS:
            row[f"crm_{key}"] = _num(crm.get(key))
        curve = (m.get("operating_curve") or {}).get("threshold") or {}
        row.update({column: _num(curve.get(column[6:])) for column in CURVE_COLUMNS})
        row["feature_norm"] = _num((m.get("feature_norm") or {}).get("mean"))
        row["max_logit"] = _num((m.get("max_logit") or {}).get("mean"))
        agreement = ((m.get("geometry") or {}).get("tree_agreement") or {})
        row["cophenetic_correlation"] = _num(agreement.get("cophenetic_correlation"))
        rows.append(row)
    return pd.DataFrame(rows)


def methods_table(runs: list[RunResult]) -> pd.DataFrame:
    """One row per head among ``runs``, in their order: what it is in one line and the paper it
    comes from (as the evaluation recorded them; a prediction file's head is a name only)."""
    rows: dict[str, dict[str, Any]] = {}
    for r in runs:
        method = r.metrics.get("method") or {}
        rows.setdefault(r.metrics.get("head"), {
            "head": r.metrics.get("head"), "group": method.get("group", ""),
            "what it is": method.get("description", "(a prediction file: the head is only a name)"),
            "reference": method.get("citation", "")})
    return pd.DataFrame(list(rows.values()), columns=["head", "group", "what it is", "reference"])


HELD_SPLITS = {"val": "validation", "test": "test"}
"""The splits a training tests on after each epoch, by their keys' prefix in a history."""


def history_long(runs: list[RunResult], *, names: dict[str, str] | None = None) -> pd.DataFrame:
    """What each run's training measured after each epoch it tested: one row per run and tested
    epoch (columns run, or its name in ``names`` such as its seed group; epoch; split, "validation"
    or "test"; accuracy; samples), averaged over the runs that share a name."""
    rows = [{"run": (names or {}).get(r.name, r.name), "epoch": h["epoch"], "split": label,
             "accuracy": h[f"{key}_acc"], "samples": h.get(f"{key}_samples")}
            for r in runs for h in r.history for key, label in HELD_SPLITS.items() if h.get(f"{key}_acc") is not None]
    frame = pd.DataFrame(rows, columns=["run", "epoch", "split", "accuracy", "samples"])
    return frame.groupby(["run", "epoch", "split"], sort=False, as_index=False).agg(
        accuracy=("accuracy", "mean"), samples=("samples", "first"))


def settings(run: RunResult) -> dict[str, Any]:
    """Everything a run was trained under except its seed, as flat ``key: value`` pairs: the
    dataset, backbone and head, and the run's inputs as resuming reads them
    (:func:`~hseval.io.run_settings.run_inputs`: every training setting but where or how fast it
    ran, the tree it learned and the file its backbone started from, both by content, and the data
    it was trained on by its identity, ``trained_on``: :func:`~hseval.io.data_identity.data_identity`,
    the images by content, not where they lay)."""
    source = run.metrics.get("source") or {}
    if source.get("kind") == "predictions":  # a model trained elsewhere: no seed siblings known
        return {"predictions": source.get("path")}
    m = run.metrics
    record = {"training": m.get("training"), "hierarchy": m.get("hierarchy"),
              "initialised_from": m.get("initialised_from"), "dataset": m.get("trained_on")}
    inputs = run_inputs(record, drop=("engine.seed",))
    return {"dataset": m.get("dataset"), "backbone": m.get("backbone"), "head": m.get("head"), **inputs}


def config_key(run: RunResult) -> str:
    """The one rule of pooling: runs with equal keys were trained under equal :func:`settings` and
    differ only by their seed, on the same data (equal identities:
    :func:`~hseval.io.data_identity.data_changes` finds nothing either way). Every table that pools
    runs as seeds (the paper's tables, seed groups in the report and the dashboard,
    summary_grouped.csv) pools by it."""
    return json.dumps(settings(run), sort_keys=True, default=str)


def setting_names(groups: list[list[RunResult]], *, within: str | None = None) -> list[str]:
    """What tells each group of runs (one setting each) from the other groups: the settings whose
    values differ between them, ``key=value, ...``; empty for a group alone. ``within`` ("head"):
    only between the groups of one head, and without the head itself (``beta=10`` for one of two
    hxe groups, nothing for a head of one group)."""
    flat = [settings(group[0]) for group in groups]
    if within is not None:
        names = [""] * len(groups)
        for value in dict.fromkeys(f.get(within) for f in flat):
            members = [i for i, f in enumerate(flat) if f.get(within) == value]
            for i, name in zip(members, setting_names([groups[i] for i in members])):
                names[i] = name
        return names
    differ = sorted(k for k in set().union(*flat) if len({json.dumps(f.get(k), default=str) for f in flat}) > 1)
    return [", ".join(f"{k}={_shown(f.get(k))}" for k in differ) for f in flat]


def _shown(value: Any) -> Any:
    """A setting's value as a group's name shows it: a SHA-256 (the data's content) by its first 12 hex digits."""
    return f"{value[:12]}…" if isinstance(value, str) and re.fullmatch("[0-9a-f]{64}", value) else value


def grouped_summary(runs: list[RunResult]) -> pd.DataFrame:
    """Runs that differ only by their seed (:func:`config_key`), grouped: mean and std of every
    metric (the paper's Table 3 reports mean ± std over seeds), with the number of seeds and, where
    groups of one head differ in other settings, the "setting" that tells them apart."""
    table = summary_table(runs)
    if table.empty:
        return table
    table["config"] = [config_key(r) for r in runs]
    keys = ["dataset", "split", "backbone", "head"]
    numeric = [c for c in table.columns if c not in (*keys, "config", "run", "seed", "samples")
               and pd.api.types.is_numeric_dtype(table[c])]
    by_name = {r.name: r for r in runs}
    rows, members = [], []
    for _, group in table.groupby("config", sort=False):
        row = {k: group[k].iloc[0] for k in keys}
        row.update(runs=", ".join(group["run"]), seeds=len(group))
        for col in numeric:
            row[f"{col}_mean"] = group[col].mean()
            row[f"{col}_std"] = group[col].std(ddof=1) if len(group) > 1 else math.nan  # one seed: no spread
        rows.append(row)
        members.append([by_name[name] for name in group["run"]])
    out = pd.DataFrame(rows)
    out.insert(4, "setting", setting_names(members, within="head"))
    return out


def level_long(runs: list[RunResult]) -> pd.DataFrame:
    """Accuracy per run, level and way, one row each (columns run, head, level, depth, way,
    accuracy): the leaf, and per super-class depth "from leaf" and the head's own scores."""
    rows = []
    for r in runs:
        rows.append({"run": r.name, "head": r.head, "level": "leaf", "depth": 0, "way": "leaf",
                     "accuracy": _num(r.metrics["top1"])})
        for key in ("superclass_acc", "superclass_acc_from_levels"):
            for depth, value in _levels(r.metrics.get(key)):
                rows.append({"run": r.name, "head": r.head, "level": f"level {depth}", "depth": depth,
                             "way": WAYS[key], "accuracy": _num(value)})
    frame = pd.DataFrame(rows, columns=["run", "head", "level", "depth", "way", "accuracy"])
    return frame.dropna(subset=["accuracy"]).reset_index(drop=True)


def level_table(runs: list[RunResult]) -> pd.DataFrame:
    """The super-class accuracy report: one row per run, one column per level and way
    ("level 1 (from leaf)" ...), the wide form of :func:`level_long`."""
    long = level_long(runs)
    out = pd.DataFrame({"run": [r.name for r in runs], "head": [r.head for r in runs]})
    columns = long[["depth", "way", "level"]].drop_duplicates()
    columns = columns.assign(order=[["leaf", *WAYS.values()].index(w) for w in columns["way"]])
    for depth, way, level, _ in columns.sort_values(["order", "depth"]).itertuples(index=False):
        name = "leaf" if depth == 0 else f"{level} ({way})"
        values = long[(long["depth"] == depth) & (long["way"] == way)].set_index("run")["accuracy"]
        out[name] = out["run"].map(values).astype(float)
    return out


def declaration(column: str) -> statistics.Key | None:
    """The declaration of the metric behind a column of :func:`summary_table` (its ``shown`` says
    which tables show it); None for a column no metric declares (identity, CRM's, the scale)."""
    found = statistics.key_of(metric_of_column(column).split(".")[0])
    return found[0].keys[found[1]] if found else None


def reading_order(column: str) -> tuple[int, int, int]:
    """Sort key of the columns of declared metrics in reading order: as the metrics are declared, a
    top-k metric's by k, and the levels together, by depth then way ("level 1 from leaf", "level 1
    own scores", "level 2 from leaf" ...), where the first metric by level is declared."""
    declared = statistics.declared()
    keys = list(declared)
    key = (statistics.key_of(metric_of_column(column).split(".")[0]) or (None, ""))[1]
    match = re.search(r"[0-9]+", column)
    number = int(match.group()) if match else 0  # a level's depth, a top-k's k
    if key in declared and declared[key][1].kind == "levels":
        return next(i for i, k in enumerate(keys) if declared[k][1].kind == "levels"), number, keys.index(key)
    return (keys.index(key) if key in keys else len(keys)), number, 0


def reason(unavailable: dict[str, str], key: str) -> str | None:
    """Why ``key`` (a dotted metrics.json key) is missing: its own reason in ``unavailable``, else
    that of the record it lies in ("crm.top1" -> "crm"); None when none is recorded."""
    while key:
        if key in unavailable:
            return unavailable[key]
        key = key.rpartition(".")[0]
    return None


def unavailable_table(runs: list[RunResult]) -> pd.DataFrame:
    """Why metrics are missing: one row per run and reason (columns run, metrics: named as their
    columns are, reason). A top-k or distance@k that no run has is no column, so it leaves no cell
    to explain (10 classes have no top-20) and is not listed."""
    columns = {metric_of_column(c) for c in summary_table(runs).columns}
    rows = []
    for r in runs:
        by_reason: dict[str, list[str]] = {}
        for key, why in r.unavailable.items():
            if key in columns or "{k}" not in (statistics.key_of(key) or (None, ""))[1]:
                by_reason.setdefault(why, []).append(key)
        rows += [{"run": r.name, "metrics": ", ".join(key_name(k, r.hierarchy) for k in keys), "reason": why}
                 for why, keys in by_reason.items()]
    return pd.DataFrame(rows, columns=["run", "metrics", "reason"])


def mark_unavailable(frame: pd.DataFrame, runs: list[RunResult], *, digits: int = 4,
                     columns: list[str] | None = None) -> pd.DataFrame:
    """``frame`` (one row per run, a "run" column) with its metric ``columns`` (default: every
    numeric one) as text: numbers with ``digits`` decimals, and "n/a — reason" in each empty cell,
    the reason the evaluation recorded for that run's metric (:func:`unavailable_table`)."""
    reasons = {r.name: r.unavailable for r in runs}
    out = frame.copy()
    for column in frame.columns if columns is None else columns:
        if not pd.api.types.is_numeric_dtype(frame[column]) or column in ("seed", "samples", "seeds"):
            continue
        key = metric_of_column(column)
        out[column] = [not_available(reason(reasons.get(run, {}), key))
                       if isinstance(value, float) and math.isnan(value) else f"{value:.{digits}f}"
                       for run, value in zip(frame["run"], frame[column])]
    return out
