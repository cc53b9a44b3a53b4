"""Pure table shaping for the dashboard's pages: DataFrames and trees in, DataFrames out.

Kept apart from the views (which only render) and from the loaders (which only read and cache),
so each transformation is testable without Streamlit. Nothing here reads a file or computes a
metric over samples: the heaviest step is picking cells out of an already-counted confusion matrix.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from hseval.reporting.significance import group_levels, seed_groups
from hseval.reporting.summary import level_long
from hseval.tree.hierarchy import Hierarchy

__all__ = ["overview_columns", "node_paths", "per_node_difference", "classes_under",
           "top_confusions", "concat_runs", "tree_agreement", "depth_summary", "children_of", "child_pair_angles",
           "node_accuracy", "history", "clicked_node", "matrix_accuracy", "metric_deltas",
           "versus_baseline", "level_frame", "grouped_history"]

SEP = " / "
"""How a node's path is written in selectboxes, tables and hover texts."""


def overview_columns(summary: pd.DataFrame) -> pd.DataFrame:
    """The columns of :func:`hseval.reporting.summary.summary_table` a reader compares first, in reading
    order: identity, leaf accuracy, super-class accuracy per level (both ways), hierarchical
    metrics, calibration and scale. Columns that are entirely empty are dropped."""
    first = ["run", "dataset", "backbone", "head", "seed", "top1", "top5"]
    levels = sorted((c for c in summary.columns if c.startswith("level") and not c.endswith("_agreement")),
                    key=lambda c: (int("".join(ch for ch in c[5:] if ch.isdigit()) or 0), c))
    rest = ["mistake_severity", "avg_hdist@1", "hierarchical_precision", "hierarchical_recall", "hierarchical_f1",
            "crm_top1", "crm_mistake_severity", "crm_avg_hdist@1", "crm_hierarchical_f1", "ece", "cross_entropy",
            "feature_norm", "max_logit", "cophenetic_correlation"]
    columns = [c for c in (*first, *levels, *rest) if c in summary.columns]
    return summary[columns].dropna(axis=1, how="all")


def node_paths(hierarchy: Hierarchy) -> dict[str, int]:
    """``{"clothing / tops / Coat": node index}`` for every node, in tree order."""
    return {SEP.join(hierarchy.path_names(n)): n for n in hierarchy.preorder().tolist()}


def node_accuracy(per_node: pd.DataFrame, node: int) -> dict[str, Any]:
    """support, correct and accuracy of one node (NaN when the node is not in the table)."""
    row = per_node[per_node["node"] == node] if "node" in per_node else pd.DataFrame()
    if row.empty:
        return {"support": 0, "correct": 0, "accuracy": math.nan}
    first = row.iloc[0]
    return {"support": int(first["support"]), "correct": int(first["correct"]), "accuracy": float(first["accuracy"])}


def per_node_difference(hierarchy: Hierarchy, a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Per-node accuracy of run ``a`` minus run ``b`` (same tree): columns node, name, path, depth,
    support (of ``a``), accuracy_a, accuracy_b, delta."""
    left = a.set_index("node")[["support", "accuracy"]]
    right = b.set_index("node")[["accuracy"]]
    nodes = pd.Index(range(hierarchy.num_nodes), name="node")
    frame = pd.DataFrame({"support": left["support"].reindex(nodes).fillna(0).astype(int),
                          "accuracy_a": left["accuracy"].reindex(nodes),
                          "accuracy_b": right["accuracy"].reindex(nodes)}, index=nodes).reset_index()
    frame["delta"] = frame["accuracy_a"] - frame["accuracy_b"]
    frame.insert(1, "name", [hierarchy.node_names[n] for n in frame["node"]])
    frame.insert(2, "path", [SEP.join(hierarchy.path_names(n)) for n in frame["node"]])
    frame.insert(3, "depth", hierarchy.depth[frame["node"].to_numpy()])
    return frame


def classes_under(hierarchy: Hierarchy, per_node: pd.DataFrame, node: int) -> pd.DataFrame:
    """The classes (leaves) under ``node`` with their support, correct count and accuracy, in tree order."""
    leaves = set(hierarchy.subtree_leaves(node).tolist())
    order = [n for n in hierarchy.preorder().tolist() if n in leaves]
    table = per_node.set_index("node").reindex(order)
    return pd.DataFrame({"class": [hierarchy.node_names[n] for n in order],
                         "path": [SEP.join(hierarchy.path_names(n)) for n in order],
                         "support": table["support"].fillna(0).astype(int).to_numpy(),
                         "correct": table["correct"].fillna(0).astype(int).to_numpy(),
                         "accuracy": table["accuracy"].to_numpy(dtype=float)})


def top_confusions(matrix: np.ndarray, labels: np.ndarray, hierarchy: Hierarchy, node: int, *,
                   k: int = 10) -> pd.DataFrame:
    """The ``k`` most frequent mistakes among samples whose true class lies under ``node``, from a
    leaf-level confusion matrix (rows true, columns predicted, classes ``labels``): columns true,
    predicted, count, share (of the true class's samples), tree_distance, inside (whether the
    prediction is still under ``node``)."""
    columns = ["true", "predicted", "count", "share", "tree_distance", "inside"]
    labels = np.asarray(labels)
    m = np.asarray(matrix, dtype=np.int64)
    if m.size == 0:
        return pd.DataFrame(columns=columns)
    under = np.isin(labels, hierarchy.subtree_leaves(node))
    errors = np.where(np.eye(len(labels), dtype=bool), 0, m)
    errors[~under] = 0
    rows, cols = np.nonzero(errors)
    if len(rows) == 0:
        return pd.DataFrame(columns=columns)
    counts = errors[rows, cols]
    best = np.argsort(-counts, kind="stable")[:k]
    rows, cols, counts = rows[best], cols[best], counts[best]
    totals = m.sum(axis=1)[rows]
    true, pred = labels[rows], labels[cols]
    return pd.DataFrame({"true": [hierarchy.node_names[t] for t in true],
                         "predicted": [hierarchy.node_names[p] for p in pred],
                         "count": counts, "share": counts / np.maximum(totals, 1),
                         "tree_distance": hierarchy.tree_distance(true, pred),
                         "inside": under[cols]}, columns=columns)


def concat_runs(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One table of every run's non-empty frame, with a leading ``run`` column."""
    parts = [f.assign(run=name) for name, f in frames.items() if not f.empty]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def tree_agreement(metrics: dict[str, dict]) -> pd.DataFrame:
    """How well the tree recovered from each run's class vectors matches the given tree: one row per
    run with the vector kind, cophenetic correlation and (adjusted) Rand index per level."""
    rows = []
    for run, m in metrics.items():
        geometry = m.get("geometry") or {}
        agreement = geometry.get("tree_agreement") or {}
        if not agreement:
            continue
        row: dict[str, Any] = {"run": run, "vectors": geometry.get("node_vectors"),
                               "cophenetic_correlation": agreement.get("cophenetic_correlation")}
        for level, values in sorted((agreement.get("levels") or {}).items(), key=lambda kv: int(kv[0])):
            row[f"level {level} adjusted Rand"] = (values or {}).get("adjusted_rand")
            row[f"level {level} Rand"] = (values or {}).get("rand")
        rows.append(row)
    return pd.DataFrame(rows)


def depth_summary(metrics: dict[str, dict]) -> pd.DataFrame:
    """The per-depth geometry summary that ``hseval evaluate`` stored in metrics.json, one row per
    (run, depth): mean norms, steps, step / R and angles."""
    rows = []
    for run, m in metrics.items():
        depths = (m.get("geometry") or {}).get("depths") or {}
        for depth, values in sorted(depths.items(), key=lambda kv: int(kv[0])):
            rows.append({"run": run, "depth": int(depth), **(values or {})})
    return pd.DataFrame(rows)


def children_of(geometry: pd.DataFrame, name: str) -> pd.DataFrame:
    """Rows of a run's geometry table whose parent is the node called ``name``."""
    if geometry.empty or "parent" not in geometry:
        return pd.DataFrame()
    return geometry[geometry["parent"] == name].reset_index(drop=True)


def child_pair_angles(pairs: pd.DataFrame, hierarchy: Hierarchy, node: int) -> pd.DataFrame:
    """Angles between pairs of children of ``node`` (from pair_angles.csv, which holds a sample of
    the pairs), with their names."""
    if pairs.empty or not {"node_a", "node_b", "angle"} <= set(pairs.columns):
        return pd.DataFrame(columns=["child_a", "child_b", "angle"])
    children = set(hierarchy.children[node])
    mask = pairs["node_a"].isin(children) & pairs["node_b"].isin(children)
    sub = pairs[mask]
    return pd.DataFrame({"child_a": [hierarchy.node_names[n] for n in sub["node_a"]],
                         "child_b": [hierarchy.node_names[n] for n in sub["node_b"]],
                         "angle": sub["angle"].to_numpy()})


def history(runs: dict[str, list[dict]]) -> pd.DataFrame:
    """Per-epoch training history of each run (run.json's ``history``) as one long table."""
    return pd.DataFrame([{**epoch, "run": name} for name, epochs in runs.items() for epoch in epochs])


def clicked_node(selection: Any, hierarchy: Hierarchy) -> int | None:
    """The node a click on a sunburst/treemap chose, from Streamlit's plotly selection event:
    the sector's ``customdata`` (its node index, see :func:`hseval.reporting.charts.node_sunburst`), else
    its label (node names are unique). None when nothing (known) was clicked."""
    try:
        points = selection["selection"]["points"]
    except (KeyError, TypeError):
        return None
    for point in points or []:
        data = point.get("customdata")
        if isinstance(data, (list, tuple)) and data:
            data = data[0]
        if isinstance(data, (int, float)) and 0 <= int(data) < hierarchy.num_nodes:
            return int(data)
        for key in ("id", "label"):
            name = point.get(key)
            if isinstance(name, str) and name in hierarchy.node_names:
                return hierarchy.node_names.index(name)
    return None


def matrix_accuracy(matrix: np.ndarray) -> float:
    """Fraction of the samples on the diagonal of a confusion matrix (NaN without samples)."""
    m = np.asarray(matrix)
    total = m.sum()
    return float(np.trace(m)) / float(total) if total else math.nan


def metric_deltas(levels: pd.DataFrame, a: str, b: str) -> pd.DataFrame:
    """Side-by-side accuracies of runs ``a`` and ``b`` from a :func:`hseval.reporting.summary.level_table`
    (columns metric, a, b, delta = a − b), one row per level and way."""
    rows = levels.set_index("run")
    numeric = [c for c in rows.columns if c != "head" and pd.api.types.is_numeric_dtype(rows[c])]
    out = pd.DataFrame({"metric": numeric, a: rows.loc[a, numeric].to_numpy(dtype=float),
                        b: rows.loc[b, numeric].to_numpy(dtype=float)})
    out["delta"] = out[a] - out[b]
    return out


def versus_baseline(differences: dict[str, Any]) -> list[str]:
    """The "vs baseline" cells of :func:`hseval.reporting.significance.versus`: the difference with its 95 %
    interval and McNemar's p, or why there is none."""
    return [d if isinstance(d, str) else d.text() for d in differences.values()]


def level_frame(runs: list, *, group_seeds: bool) -> pd.DataFrame:
    """The long accuracy table the level charts draw: per run, or per seed group (mean, std, seeds)."""
    long = level_long(runs)
    return group_levels(seed_groups(runs), long) if group_seeds else long


def grouped_history(runs: list, *, group_seeds: bool) -> pd.DataFrame:
    """Per-epoch test accuracy per run, or its mean over the seeds of each group."""
    frame = history({r.name: r.history for r in runs})
    if not group_seeds or frame.empty or "test_acc" not in frame:
        return frame
    names = {r.name: g.name for g in seed_groups(runs) for r in g.runs}
    frame = frame.assign(run=frame["run"].map(names))
    return frame.groupby(["run", "epoch"], sort=False, as_index=False)["test_acc"].mean()
