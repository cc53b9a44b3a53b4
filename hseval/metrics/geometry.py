"""Geometry of the learned hyperplanes, in float64.

For every non-root node p with parent q: the angle between w_p and w_q, and ‖w_p − w_q‖ (the
effective ‖R_p δ_p‖) against the radius R_p; angles between sibling classifiers against
non-sibling ones, per depth; and how well the tree recovered by agglomerative clustering of the
class vectors (cosine, average linkage) agrees with the given tree.

Heads that have no super-class vectors (plain, multitask) are measured on their class vectors,
with each super-class represented by the mean of the class vectors below it (``kind="centroid"``
in the outputs), so that every head is judged against the same tree.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy.cluster.hierarchy import cophenet, fcluster, linkage
from scipy.spatial.distance import squareform
from sklearn.metrics import adjusted_rand_score, rand_score

from hseval.tree.hierarchy import Hierarchy

__all__ = ["node_vectors", "vectors_from", "parent_child_table", "pair_angles", "tree_agreement", "geometry_summary"]

MAX_LEAVES_FOR_CLUSTERING = 5000


def node_vectors(head) -> tuple[np.ndarray, str] | None:
    """(|P|, d) float64 vectors of every non-root node and their kind ("learned" or "centroid"),
    from the head's contract; None when the head has no class vectors (hyperbolic)."""
    nodes, leaves = head.node_weights(), head.class_weights()
    as_rows = (lambda w: None if w is None else w.detach().cpu().double().numpy().T)  # noqa: E731
    return vectors_from(head.hierarchy, class_weights=as_rows(leaves), node_weights=as_rows(nodes))


def vectors_from(tree: Hierarchy, *, class_weights: np.ndarray | None = None,
                 node_weights: np.ndarray | None = None) -> tuple[np.ndarray, str] | None:
    """Node vectors from a last layer's weights: ``node_weights`` (|P|, d), one learned vector per
    node, or ``class_weights`` (|L|, d), each super-class then the mean of the classes below it."""
    if node_weights is not None:
        return np.array(node_weights, dtype=np.float64), "learned"
    if class_weights is None:
        return None
    H = tree.H.astype(np.float64)
    counts = np.asarray(H.sum(axis=1)).reshape(-1, 1)
    return np.asarray(H @ np.asarray(class_weights, dtype=np.float64)) / counts, "centroid"


def _angle(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise angle in degrees; NaN where a vector is zero."""
    na = np.linalg.norm(a, axis=-1)
    nb = np.linalg.norm(b, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.einsum("...d,...d->...", a, b) / (na * nb)
    return np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))


def parent_child_table(hierarchy: Hierarchy, vectors: np.ndarray, radii: np.ndarray | None = None) -> pd.DataFrame:
    """One row per non-root node: its depth, parent, ‖w_p‖, the angle to its parent's vector
    (NaN at depth 1: the root's vector is 0), ‖w_p − w_parent‖ and the radius R_p (NaN if none)."""
    parents = hierarchy.parents
    parent_vec = np.where((parents >= 0)[:, None], vectors[np.maximum(parents, 0)], 0.0)
    angle = _angle(vectors, parent_vec)
    angle[parents < 0] = np.nan
    names = hierarchy.node_names
    return pd.DataFrame({
        "node": np.arange(hierarchy.num_nodes), "name": names, "depth": hierarchy.depth,
        "is_leaf": np.arange(hierarchy.num_nodes) < hierarchy.num_leaves,
        "parent": [names[p] if p >= 0 else hierarchy.root_name for p in parents.tolist()],
        "norm": np.linalg.norm(vectors, axis=1), "angle_to_parent": angle,
        "delta_norm": np.linalg.norm(vectors - parent_vec, axis=1),
        "radius": np.full(hierarchy.num_nodes, np.nan) if radii is None else np.asarray(radii, dtype=np.float64),
    })


def pair_angles(hierarchy: Hierarchy, vectors: np.ndarray, *, max_pairs: int = 20000, seed: int = 0) -> pd.DataFrame:
    """Angles between pairs of nodes of the same depth, labelled "sibling" (same parent) or
    "non-sibling"; at most ``max_pairs`` random pairs per depth and kind."""
    rng = np.random.default_rng(seed)
    rows = []
    for depth in range(1, hierarchy.max_depth + 1):
        nodes = hierarchy.nodes_at_depth(depth)
        if len(nodes) < 2:
            continue
        n = len(nodes)
        if n * (n - 1) // 2 <= 4 * max_pairs:
            i, j = np.triu_indices(n, k=1)
        else:
            i = rng.integers(0, n, 8 * max_pairs)
            j = rng.integers(0, n, 8 * max_pairs)
            keep = i != j
            i, j = i[keep], j[keep]
        a, b = nodes[i], nodes[j]
        sibling = hierarchy.parents[a] == hierarchy.parents[b]
        for kind, mask in (("sibling", sibling), ("non-sibling", ~sibling)):
            ia, ib = a[mask], b[mask]
            if len(ia) > max_pairs:
                pick = rng.choice(len(ia), max_pairs, replace=False)
                ia, ib = ia[pick], ib[pick]
            if len(ia):
                rows.append(pd.DataFrame({"depth": depth, "kind": kind, "node_a": ia, "node_b": ib,
                                          "angle": _angle(vectors[ia], vectors[ib])}))
    columns = ["depth", "kind", "node_a", "node_b", "angle"]
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=columns)


def tree_agreement(hierarchy: Hierarchy, leaf_vectors: np.ndarray) -> dict[str, Any]:
    """Compare the tree recovered by average-linkage clustering of the class vectors (cosine) with
    the given tree: the cophenetic correlation between the dendrogram and the tree distances, and
    at every super-class level k (cutting the dendrogram into as many clusters as level k has
    nodes) the adjusted Rand index and the Rand index, i.e. the share of class pairs on which both
    trees agree about being grouped together."""
    L = hierarchy.num_leaves
    if L < 3:
        return {"skipped": "fewer than 3 classes"}
    if L > MAX_LEAVES_FOR_CLUSTERING:
        return {"skipped": f"more than {MAX_LEAVES_FOR_CLUSTERING} classes (clustering is O(L²))"}
    if np.any(np.linalg.norm(leaf_vectors, axis=1) == 0):
        return {"skipped": "a class vector is zero"}
    Z = linkage(leaf_vectors, method="average", metric="cosine")
    i, j = np.triu_indices(L, k=1)
    given = np.zeros((L, L))
    given[i, j] = hierarchy.tree_distance(i, j)
    given = given + given.T
    coph_corr, _ = cophenet(Z, squareform(given, checks=False))
    levels = {}
    for depth in range(1, hierarchy.max_depth):
        truth = hierarchy.ancestor_at_depth(np.arange(L), depth)
        keep = truth >= 0
        k = len(np.unique(truth[keep]))
        if keep.sum() < 2 or k < 1:
            continue
        found = fcluster(Z, t=k, criterion="maxclust")
        levels[str(depth)] = {"clusters": int(k), "adjusted_rand": float(adjusted_rand_score(truth[keep], found[keep])),
                              "rand": float(rand_score(truth[keep], found[keep]))}
    # a correlation: rounding can take a perfect agreement to 1 + 2e-16, which the file format refuses
    return {"cophenetic_correlation": float(np.clip(coph_corr, -1.0, 1.0)), "levels": levels}


def geometry_summary(hierarchy: Hierarchy, table: pd.DataFrame, pairs: pd.DataFrame, kind: str,
                     agreement: dict[str, Any]) -> dict[str, Any]:
    """Per-depth means for metrics.json: angle to parent, ‖Δw‖/R, sibling vs non-sibling angle."""
    depths: dict[str, Any] = {}
    for depth, group in table.groupby("depth"):
        entry = {"nodes": int(len(group)), "mean_norm": float(group["norm"].mean()),
                 "mean_delta_norm": float(group["delta_norm"].mean())}
        if group["angle_to_parent"].notna().any():
            entry["mean_angle_to_parent"] = float(group["angle_to_parent"].mean())
        if group["radius"].notna().any():
            entry["mean_delta_norm_over_radius"] = float((group["delta_norm"] / group["radius"]).mean())
        for pair_kind in ("sibling", "non-sibling"):
            sel = pairs[(pairs["depth"] == depth) & (pairs["kind"] == pair_kind)]["angle"]
            if len(sel):
                entry[f"mean_{pair_kind.replace('-', '_')}_angle"] = float(sel.mean())
        depths[str(int(depth))] = entry
    return {"node_vectors": kind, "depths": depths, "tree_agreement": agreement}
