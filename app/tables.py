"""Pure table shaping for the dashboard's pages: DataFrames and trees in, DataFrames out.

Kept apart from the views (which only render) and from the loaders (which only read and cache),
so each transformation is testable without Streamlit. Nothing here reads a file or computes a
metric over samples (those are hseval.metrics'): the heaviest step is reindexing per-node counts.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import pandas as pd

from hseval.reporting.summary import (
    CRM_COLUMNS,
    SCALE_COLUMNS,
    declaration,
    reading_order,
)
from hseval.tree.hierarchy import Hierarchy

__all__ = ["overview_columns", "node_path", "node_paths", "per_node_difference", "worst_children", "find_nodes",
           "tree_agreement", "depth_summary", "children_of", "child_pair_angles",
           "node_accuracy", "clicked_node", "matrix_labels", "busiest_superclass"]

SEP = " / "
"""How a node's path is written in selectboxes, tables and hover texts."""


def overview_columns(summary: pd.DataFrame) -> pd.DataFrame:
    """The columns of :func:`hseval.reporting.summary.summary_table` a reader compares first, in reading
    order: identity, the metrics declared for the overview (leaf accuracy, super-class accuracy per
    level both ways, hierarchical metrics, calibration), CRM's and the scale. Columns that are
    entirely empty are dropped."""
    scores = sorted((c for c in summary.columns if (declared := declaration(c))
                     and declared.shown in ("headline", "overview")), key=reading_order)
    columns = ["run", "dataset", "backbone", "head", "seed", *scores, *(f"crm_{key}" for key in CRM_COLUMNS),
               *SCALE_COLUMNS]
    return summary[[c for c in columns if c in summary.columns]].dropna(axis=1, how="all")


def node_path(hierarchy: Hierarchy, node: int) -> str:
    """``"clothing / tops / Coat"``: how one node is named in pickers and tables."""
    return SEP.join(hierarchy.path_names(node))


@functools.lru_cache(maxsize=8)
def node_paths(hierarchy: Hierarchy) -> dict[str, int]:
    """``{"clothing / tops / Coat": node index}`` for every node, in tree order (kept for the last
    trees asked: a page asks on every rerun, and 100,000 paths take a second). Read-only."""
    return {node_path(hierarchy, n): n for n in hierarchy.preorder().tolist()}


def node_accuracy(per_node: pd.DataFrame, node: int) -> dict[str, Any]:
    """support, correct and accuracy of one node (NaN when the node is not in the table)."""
    row = per_node[per_node["node"] == node] if "node" in per_node else pd.DataFrame()
    if row.empty:
        return {"support": 0, "correct": 0, "accuracy": math.nan}
    first = row.iloc[0]
    return {"support": int(first["support"]), "correct": int(first["correct"]), "accuracy": float(first["accuracy"])}


def per_node_difference(hierarchy: Hierarchy, a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Per-node accuracy of run ``a`` minus run ``b`` (one tree, ``hierarchy``: ``a``'s; nodes are
    matched by name, whatever order ``b``'s tree lists them in): columns node, name, path, depth,
    support (of ``a``), accuracy_a, accuracy_b, delta."""
    left = a.set_index("name")[["support", "accuracy"]]
    right = b.set_index("name")[["accuracy"]]
    names = pd.Index(hierarchy.node_names, name="name")
    frame = pd.DataFrame({"node": range(hierarchy.num_nodes),
                          "support": left["support"].reindex(names).fillna(0).astype(int).to_numpy(),
                          "accuracy_a": left["accuracy"].reindex(names).to_numpy(),
                          "accuracy_b": right["accuracy"].reindex(names).to_numpy()})
    frame["delta"] = frame["accuracy_a"] - frame["accuracy_b"]
    frame.insert(1, "name", list(hierarchy.node_names))
    frame.insert(2, "path", [node_path(hierarchy, n) for n in frame["node"]])
    frame.insert(3, "depth", hierarchy.depth[frame["node"].to_numpy()])
    return frame


def worst_children(hierarchy: Hierarchy, per_node: pd.DataFrame, node: int) -> pd.DataFrame:
    """The children of ``node`` (-1: the top-level nodes), least accurate first (those without
    samples last): columns child, kind (class or super-class), classes (under it), support, correct,
    accuracy."""
    children = np.asarray(hierarchy.children[node] if node >= 0 else np.flatnonzero(hierarchy.parents < 0),
                          dtype=np.int64)
    table = per_node.set_index("node").reindex(children)
    frame = pd.DataFrame({"child": [hierarchy.node_names[n] for n in children.tolist()],
                          "kind": np.where(children < hierarchy.num_leaves, "class", "super-class"),
                          "classes": np.asarray(hierarchy.H[children, :].sum(axis=1)).ravel().astype(np.int64),
                          "support": table["support"].fillna(0).astype(np.int64).to_numpy(),
                          "correct": table["correct"].fillna(0).astype(np.int64).to_numpy(),
                          "accuracy": table["accuracy"].to_numpy(dtype=float)})
    return frame.sort_values(["accuracy", "support"], ascending=[True, False], na_position="last",
                             kind="stable").reset_index(drop=True)


def find_nodes(paths: dict[str, int], query: str, *, limit: int) -> list[str]:
    """The first ``limit`` node paths (in tree order) that contain every word of ``query``, ignoring
    case: the server-side search of a node picker over a tree too large to send whole."""
    words = query.lower().split()
    found = (p for p in paths if all(w in p.lower() for w in words))
    return [p for _, p in zip(range(limit), found)]


def tree_agreement(metrics: dict[str, dict]) -> pd.DataFrame:
    """How well the tree recovered from each run's class vectors matches the given tree: one row per
    run with the vector kind, the classes clustered (all, or a seeded sample past
    ``geometry.CLUSTER_CLASSES``), cophenetic correlation and (adjusted) Rand index per level."""
    rows = []
    for run, m in metrics.items():
        geometry = m.get("geometry") or {}
        agreement = geometry.get("tree_agreement") or {}
        if not agreement or agreement.get("skipped"):  # no tree recovered: the page says why (agreement_table)
            continue
        row: dict[str, Any] = {"run": run, "vectors": geometry.get("node_vectors"),
                               "classes clustered": agreement.get("classes"),
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


def matrix_labels(hierarchy: Hierarchy, depth: int | None) -> int:
    """Rows (and columns) of the confusion matrix at the classes or at level ``depth``, without building it."""
    if depth is None:
        return hierarchy.num_leaves
    shallower = bool((hierarchy.depth[: hierarchy.num_leaves] < depth).any())
    return len(hierarchy.nodes_at_depth(depth)) + shallower


def busiest_superclass(hierarchy: Hierarchy, per_node: pd.DataFrame, nodes: list[int]) -> int:
    """Position in ``nodes`` of the one whose samples have the most mistakes (support − correct): where
    a look inside pays first; 0 without per-node counts."""
    if per_node.empty or not nodes:
        return 0
    table = per_node.set_index("node").reindex(nodes)
    errors = (table["support"] - table["correct"]).fillna(0).to_numpy()
    return int(np.argmax(errors))

