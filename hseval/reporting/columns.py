"""The words of every table and chart: one display name and one help text per column, the level's
names beside "level k", and "n/a — reason" wherever a value is missing.

A metric's name and help are written once, where the metric is declared
(:class:`hseval.metrics.statistics.Key`; the other keys of metrics.json: the field descriptions of
:func:`hseval.io.evaluation_format.metrics_record`), read by :func:`metric_help` and
:func:`display_name`; this module only maps a column of a table to that key. The report's tables,
the dashboard's headers and README's metrics list all read it from there.
"""

from __future__ import annotations

import re
import typing
from typing import Any

import pandas as pd

from hseval.io.evaluation_format import CurveSummary, metrics_record
from hseval.io.records import Record
from hseval.metrics import statistics
from hseval.tree.hierarchy import Hierarchy

__all__ = ["WAYS", "level_column", "metric_of_column", "metric_help", "level_names", "level_label", "display_name",
           "column_help", "not_available", "key_name", "identity", "level_legend"]

_TOP_K = {"{the top k}": ("the head's highest-scored class", "among the head's {k} highest-scored classes"),
          "{each of the top k}": ("the highest-scored class", "each of the {k} highest-scored classes"),
          "{the nearest of the top k}": ("the highest-scored class", "the nearest of the {k} highest-scored classes")}


def _declared(key: str, text: str) -> str:
    """``text`` (a declared key's name or help) for the metrics.json key ``key``: a per-k key's
    braces worded for its k ("top{k}" -> "top5")."""
    found = statistics.key_of(key)
    if found is None or "{k}" not in found[1]:
        return text
    k = int(found[0].patterns[found[1]].fullmatch(key).group(1))
    for slot, (one, many) in _TOP_K.items():
        text = text.replace(slot, one if k == 1 else many)
    return text.replace("{k}", str(k))


def metric_help(*path: str) -> str | None:
    """The help of a metrics.json key, written once where the key is defined: a declared metric's
    (:class:`~hseval.metrics.statistics.Key`, also inside "crm"), else a field's description
    (``metric_help("geometry", "tree_agreement", ...)`` walks into nested records); None for a key
    without one."""
    found = statistics.key_of(path[-1]) if path[:-1] in ((), ("crm",)) else None
    if found is not None:
        return _declared(path[-1], found[0].keys[found[1]].help)
    record: Any = metrics_record()
    field = None
    for key in path:
        field = getattr(record, "model_fields", {}).get(key)
        if field is None:
            break
        record = next((a for a in typing.get_args(field.annotation) if isinstance(a, type)
                       and issubclass(a, Record)), field.annotation)
    return field.description if field is not None else None


WAYS = {"superclass_acc": "from leaf", "superclass_acc_from_levels": "own scores", "level_agreement": "agreement"}
"""How a value per level is measured, by its metrics.json key: the predicted class's ancestor at the
level, the head's own super-class scores, or their agreement. Its columns are ``level{d}_{way}``
(summary.csv, "_" for the space) and "level d (way)" (the super-class accuracy table)."""
_LEVEL = re.compile(r"level ?([0-9]+)(?:_| \()(from.leaf|own.scores|agreement)\)?")
_BY_WAY = {way: key for key, way in WAYS.items()}


def level_column(column: str) -> tuple[int, str] | None:
    """(depth, metrics.json key) of a column of one level's values ("level2_own_scores",
    "level 2 (own scores)"); None for another column."""
    match = _LEVEL.fullmatch(column)
    return None if match is None else (int(match.group(1)), _BY_WAY[match.group(2).replace("_", " ")])


_KEYS = {"leaf": "top1", "cophenetic_correlation": "geometry.tree_agreement.cophenetic_correlation"}


def metric_of_column(column: str) -> str:
    """The metrics.json key behind a column of a summary or level table, as ``unavailable`` names
    it: a level's value "superclass_acc.2", a CRM column's "crm.top1"."""
    if (level := level_column(column)) is not None:
        return f"{level[1]}.{level[0]}"
    if column.startswith("curve_"):
        return f"operating_curve.threshold.{column[6:]}"
    return f"crm.{column[4:]}" if column.startswith("crm_") else _KEYS.get(column, column)


_NAMES = {
    "samples": "samples", "feature_norm": "feature norm ‖φ(x)‖", "max_logit": "max logit",
    "cophenetic_correlation": "cophenetic correlation", "leaf": "leaf (top-1)", "crm": "CRM re-ranking",
    "projections": "projections", "embeddings": "embeddings",
    # geometry.csv, pair_angles.csv and the per-depth summary: units in the name
    "angle_to_parent": "angle to parent (°)", "delta_norm": "step ‖w_p − w_parent‖", "radius": "radius R_p",
    "norm": "norm ‖w_p‖", "is_leaf": "class", "name": "node", "angle": "angle (°)",
    "delta_norm_over_radius": "step / R_p", "nodes": "nodes", "vectors": "vectors",
}
_HELP = {  # columns that are not a metrics.json key
    "run": "The run's name (its folder in the evaluation).",
    "angle_to_parent": "Angle between the node's vector and its parent's, in degrees.",
    "delta_norm": "‖w_p − w_parent‖: how far the node's vector lies from its parent's.",
    "radius": "The node's radius R_p (heads with a radius per node).",
    "norm": "‖w_p‖: the norm of the node's vector.",
    "classes clustered": "The classes whose vectors were clustered: all of them, or, in a tree too large to "
                         "cluster whole (clustering takes memory quadratic in the classes), a sample drawn with a "
                         "fixed seed.",
}


def level_names(tree: Hierarchy, depth: int, *, limit: int | None = 3) -> str:
    """The nodes of level ``depth`` in tree order ("clothing, footwear, Bag"); past ``limit`` names,
    the first ones and how many more."""
    names = [tree.node_names[n] for n in tree.preorder().tolist() if tree.depth[n] == depth]
    if limit is None or len(names) <= limit:
        return ", ".join(names)
    return f"{', '.join(names[:limit])} +{len(names) - limit} more"


def level_label(depth: int, tree: Hierarchy | None = None) -> str:
    """"level k" with its nodes' names beside it ("level 1 · clothing, footwear, Bag")."""
    if tree is None or depth < 1 or depth >= tree.max_depth + 1:
        return f"level {depth}"
    return f"level {depth} · {level_names(tree, depth)}"


def level_legend(tree: Hierarchy) -> str:
    """One line naming every super-class level's nodes: "level 1 = clothing, footwear, Bag; ..."."""
    return "; ".join(f"level {d} = {level_names(tree, d, limit=12)}" for d in range(1, tree.max_depth))


def display_name(column: str, tree: Hierarchy | None = None) -> str:
    """The one name a column is shown under, in every table of the report and the dashboard (a level's
    names are in its help and in the line that lists the levels beside the table: :func:`level_legend`)."""
    if (level := level_column(column)) is not None:
        return f"level {level[0]} ({WAYS[level[1]]})"
    if column.startswith("crm_"):
        return f"CRM {display_name(column[4:], tree)}"
    if column.startswith("mean_"):
        return f"mean {display_name(column[5:], tree)}"
    if column.startswith("curve_") and column[6:] in CurveSummary.model_fields:
        name = column[6:].replace("auc_", "AUC (").replace("_at_", " at ").replace("_", " ")
        return f"curve: {name})" if name.startswith("AUC") else f"curve: {name} % correct"
    if column in _NAMES:
        return _NAMES[column]
    found = statistics.key_of(column)
    if found is not None:
        return _declared(column, found[0].keys[found[1]].name)
    name = column.replace("_", " ")
    return f"{name} (°)" if "angle" in name and "(°)" not in name else name


def column_help(column: str, tree: Hierarchy | None = None) -> str | None:
    """The help a column's header carries: its metric's help (from the metric's definition), with
    the level's names for a level column; None for a column that needs none."""
    if (level := level_column(column)) is not None:
        depth, key = level
        names = f" Level {depth}: {level_names(tree, depth, limit=None)}." if tree is not None else ""
        return None if (text := metric_help(key)) is None else f"{text}{names}"
    if column.startswith("crm_"):
        return None if (text := column_help(column[4:], tree)) is None else (
            f"{text} Here for CRM re-ranking's prediction (the class of least expected tree distance under the "
            "head's probabilities) instead of the most probable class.")
    if column.startswith("curve_") and column[6:] in CurveSummary.model_fields:
        return (f"{CurveSummary.model_fields[column[6:]].description} On the threshold:t rule's operating curve "
                "(every t; decisions.csv, operating_curve.csv).")
    return _HELP[column] if column in _HELP else metric_help(*metric_of_column(column).split("."))


def key_name(key: str, tree: Hierarchy | None = None) -> str:
    """A metrics.json key as the columns it fills are named ("superclass_acc_from_levels" -> "level
    1, 2 (own scores)"; a dotted key as its column: "superclass_acc.2" -> "level 2 (from leaf)", "crm.top1"
    -> "CRM top-1"), for the list of what is not available."""
    record, _, inner = key.partition(".")
    if inner and record in WAYS:
        return f"level {inner} ({WAYS[record]})"
    if inner and record == "crm":
        return f"CRM {key_name(inner, tree)}"
    if key.startswith("geometry.tree_agreement"):
        return display_name("cophenetic_correlation")
    if key in WAYS and tree is not None and tree.max_depth > 1:
        levels = ", ".join(str(d) for d in range(1, tree.max_depth))
        return f"level {levels} ({WAYS[key]})"
    if key == "crm":
        return "the CRM columns"
    return display_name(key, tree)


def not_available(reason: str | None) -> str:
    """The text of a missing value: "n/a — reason"."""
    return f"n/a — {reason or 'not computed by this evaluation'}"


def identity(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` without its ``head`` column when every run is named after its head (the two
    columns would repeat each other)."""
    if {"run", "head"} <= set(frame.columns) and (frame["run"].astype(str) == frame["head"].astype(str)).all():
        return frame.drop(columns="head")
    return frame
