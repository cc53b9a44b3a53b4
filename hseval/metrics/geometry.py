"""Geometry of the learned hyperplanes, in float64.

For every non-root node p with parent q: the angle between w_p and w_q, and ‖w_p − w_q‖ (the
effective ‖R_p δ_p‖) against the radius R_p; angles between sibling classifiers against
non-sibling ones, per depth; and how well the tree recovered by agglomerative clustering of the class
vectors (cosine, average linkage) agrees with the given tree.

Heads that have no super-class vectors (plain, multitask) are measured on their class vectors,
with each super-class represented by the mean of the class vectors below it (``kind="centroid"``
in the outputs), so that every head is judged against the same tree.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy.cluster.hierarchy import cophenet, fcluster, linkage
from sklearn.metrics import adjusted_rand_score, rand_score

from hseval.tree.hierarchy import Hierarchy

__all__ = ["node_vectors", "vectors_from", "parent_child_table", "pair_angles", "tree_agreement", "geometry_summary"]

CLUSTER_CLASSES = 1000
"""Past this many classes, :func:`tree_agreement` clusters this many drawn (seeded) instead of all:
clustering takes O(L²) memory: at 5,000 classes scipy's linkage peaks at 190 MB and the cophenetic
correlation holds five more arrays of 100 MB; at 1,000 classes all are 25 times smaller."""
PAIR_LIMIT = 1_000_000
"""Of a depth and kind of more pairs than this, :data:`PAIR_SAMPLE` pairs drawn (seeded) are measured."""
PAIR_SAMPLE = 100_000
"""Pairs drawn: the mean angle's standard error is then below 0.1° for angles spread over 30°."""


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


def pair_angles(hierarchy: Hierarchy, vectors: np.ndarray, *, max_pairs: int = 20000, seed: int = 0,
                limit: int = PAIR_LIMIT, sample: int = PAIR_SAMPLE) -> tuple[pd.DataFrame, dict[int, dict[str, Any]]]:
    """Angles between pairs of nodes of the same depth, "sibling" (same parent) or "non-sibling".

    At each depth the pairs of each kind are measured all when the depth has at most ``limit``
    pairs, or when the kind has; else ``sample`` of them are drawn uniformly (with replacement,
    seeded). The mean cosine of each kind is exact at any size: computed from sums of unit vectors.

    Returns
    -------
    table : pd.DataFrame
        pair_angles.csv: depth, kind, node_a, node_b, angle; at most ``max_pairs`` of the measured
        pairs per depth and kind (a seeded choice).
    stats : dict
        {depth: {"sibling_pairs": the pairs there are, "sibling_pairs_measured": those the mean
        angle is over, "mean_sibling_angle", "mean_sibling_cosine", and the same for
        "non_sibling"}}; pairs with a zero vector have no angle: they are left out of the table
        and of the means.
    """
    rng = np.random.default_rng(seed)
    rows, stats = [], {}
    norms = np.linalg.norm(vectors, axis=-1)
    for depth in range(1, hierarchy.max_depth + 1):
        nodes = hierarchy.nodes_at_depth(depth)
        n = len(nodes)
        if n < 2:
            continue
        stats[depth] = _cosine_means(hierarchy.parents, vectors, nodes)
        if n * (n - 1) // 2 <= limit:  # every pair, in the order of the upper triangle
            i, j = np.triu_indices(n, k=1)
            a, b = nodes[i], nodes[j]
            sibling = hierarchy.parents[a] == hierarchy.parents[b]
            measured = {"sibling": (a[sibling], b[sibling]), "non-sibling": (a[~sibling], b[~sibling])}
        else:
            measured = _pairs_by_family(hierarchy.parents, nodes, limit, sample, rng)
        for kind, (ia, ib) in measured.items():
            angles = _angles(vectors, norms, ia, ib)
            kept = ~np.isnan(angles)  # a pair with a zero vector has no angle
            ia, ib, angles = ia[kept], ib[kept], angles[kept]
            key = kind.replace("-", "_")
            stats[depth][f"{key}_pairs_measured"] = len(ia)
            if len(ia):
                stats[depth][f"mean_{key}_angle"] = float(pd.Series(angles).mean())
            if len(ia) > max_pairs:
                pick = rng.choice(len(ia), max_pairs, replace=False)
                ia, ib, angles = ia[pick], ib[pick], angles[pick]
            if len(ia):
                rows.append(pd.DataFrame({"depth": depth, "kind": kind, "node_a": ia, "node_b": ib, "angle": angles}))
    columns = ["depth", "kind", "node_a", "node_b", "angle"]
    return (pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=columns)), stats


def _angles(vectors: np.ndarray, norms: np.ndarray, a: np.ndarray, b: np.ndarray, block: int = 1 << 16) -> np.ndarray:
    """:func:`_angle` of the pairs ``(a[i], b[i])`` (the same values), the vectors' ``norms`` given,
    gathered a block at a time."""
    out = np.empty(len(a))
    for lo in range(0, len(a), block):
        i, j = a[lo: lo + block], b[lo: lo + block]
        with np.errstate(invalid="ignore", divide="ignore"):
            cos = np.einsum("...d,...d->...", vectors[i], vectors[j]) / (norms[i] * norms[j])
        out[lo: lo + block] = np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))
    return out


def _pairs_by_family(parents: np.ndarray, nodes: np.ndarray, limit: int, sample: int,
                     rng: np.random.Generator) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The sibling and non-sibling pairs of ``nodes``, each kind all when at most ``limit``, else
    ``sample`` drawn uniformly. In the nodes ordered by parent, the partners of the node at
    position i are a range: its later siblings, or every node of the later families."""
    ordered = nodes[np.argsort(parents[nodes], kind="stable")]
    family = parents[ordered]
    n = len(ordered)
    end = np.searchsorted(family, family, side="right")  # where each node's family ends
    out = {}
    for kind, (low, high) in (("sibling", (np.arange(1, n + 1), end)), ("non-sibling", (end, np.full(n, n)))):
        count = high - low
        total = int(count.sum())
        if total <= limit:
            first = np.repeat(np.arange(n), count)
            second = np.repeat(low - np.cumsum(count) + count, count) + np.arange(total)
        else:
            first = rng.choice(n, size=sample, p=count / total)
            second = low[first] + rng.integers(0, count[first])
        out[kind] = (ordered[first], ordered[second])
    return out


def _cosine_means(parents: np.ndarray, vectors: np.ndarray, nodes: np.ndarray) -> dict[str, Any]:
    """How many sibling and non-sibling pairs ``nodes`` make, and the exact mean cosine of each kind
    over the pairs of non-zero vectors, from sums of unit vectors: Σ_{i<j} u_i·u_j = (‖Σ u‖² − m) / 2
    over a group of m, the siblings' summed family by family."""
    n = len(nodes)
    sizes = np.unique(parents[nodes], return_counts=True)[1]
    sibling_pairs = int((sizes * (sizes - 1) // 2).sum())
    out: dict[str, Any] = {"sibling_pairs": sibling_pairs, "non_sibling_pairs": n * (n - 1) // 2 - sibling_pairs}
    norms = np.linalg.norm(vectors[nodes], axis=1)
    order = np.argsort(parents[nodes[norms > 0]], kind="stable")
    units = (vectors[nodes[norms > 0]] / norms[norms > 0, None])[order]
    if len(units) < 2:
        return out
    family = parents[nodes[norms > 0]][order]
    starts = np.flatnonzero(np.r_[True, family[1:] != family[:-1]])
    sizes = np.diff(np.r_[starts, len(units)])
    pairs, siblings = len(units) * (len(units) - 1) // 2, int((sizes * (sizes - 1) // 2).sum())
    dot_all = (float(np.square(units.sum(axis=0)).sum()) - len(units)) / 2
    dot_siblings = (float(np.square(np.add.reduceat(units, starts, axis=0)).sum()) - len(units)) / 2
    if siblings:
        out["mean_sibling_cosine"] = dot_siblings / siblings
    if pairs > siblings:
        out["mean_non_sibling_cosine"] = (dot_all - dot_siblings) / (pairs - siblings)
    return out


def tree_agreement(hierarchy: Hierarchy, leaf_vectors: np.ndarray, *, limit: int = CLUSTER_CLASSES,
                   seed: int = 0) -> dict[str, Any]:
    """Compare the tree recovered by average-linkage clustering of the class vectors (cosine) with
    the given tree: the cophenetic correlation between the dendrogram and the tree distances, and
    at every super-class level k (cutting the dendrogram into as many clusters as level k has
    nodes) the adjusted Rand index and the Rand index, i.e. the share of class pairs on which both
    trees agree about being grouped together. Past ``limit`` classes, ``limit`` classes drawn with
    ``seed`` are clustered (the tree distances between them are the full tree's); ``classes`` says
    how many were."""
    L = hierarchy.num_leaves
    if L < 3:
        return {"skipped": "fewer than 3 classes"}
    if np.any(np.linalg.norm(leaf_vectors, axis=1) == 0):
        return {"skipped": "a class vector is zero"}
    leaves = np.arange(L) if L <= limit else np.sort(np.random.default_rng(seed).choice(L, limit, replace=False))
    tree_distances = _condensed_tree_distances(hierarchy, leaves)
    if np.ptp(tree_distances) == 0:
        return {"skipped": "every two classes are equally far apart in the tree, which has no order to correlate"}
    Z = linkage(leaf_vectors[leaves], method="average", metric="cosine")
    dendrogram = cophenet(Z)
    levels = {}
    for depth in range(1, hierarchy.max_depth):
        truth = hierarchy.ancestor_at_depth(leaves, depth)
        keep = truth >= 0
        k = len(np.unique(truth[keep]))
        if keep.sum() < 2 or k < 1:
            continue
        found = fcluster(Z, t=k, criterion="maxclust")
        levels[str(depth)] = {"clusters": int(k), "adjusted_rand": float(adjusted_rand_score(truth[keep], found[keep])),
                              "rand": float(rand_score(truth[keep], found[keep]))}
    if np.ptp(dendrogram) == 0:
        return {"skipped": "the class vectors' dendrogram puts every two classes equally far apart, which has no "
                           "order to correlate", "levels": levels, "classes": int(len(leaves))}
    coph_corr, _ = cophenet(Z, tree_distances)
    # a correlation: rounding can take a perfect agreement to 1 + 2e-16, which the file format refuses
    return {"cophenetic_correlation": float(np.clip(coph_corr, -1.0, 1.0)), "levels": levels,
            "classes": int(len(leaves))}


def _condensed_tree_distances(hierarchy: Hierarchy, leaves: np.ndarray, block: int = 1 << 18) -> np.ndarray:
    """The tree distance of every pair of ``leaves`` a < b (positions in ``leaves``), in the order of
    ``scipy.spatial.distance.pdist`` (row by row), a block of rows at a time: never an |L|×|L| matrix."""
    L = len(leaves)
    out = np.empty(L * (L - 1) // 2)
    row, at = 0, 0
    while row < L - 1:
        rows = np.arange(row, min(L - 1, row + max(1, block // L)))
        count = L - 1 - rows  # the partners j > i of each row i
        i = np.repeat(rows, count)
        j = i + 1 + np.arange(len(i)) - np.repeat(np.cumsum(count) - count, count)
        out[at: at + len(i)] = hierarchy.tree_distance(leaves[i], leaves[j])
        row, at = int(rows[-1]) + 1, at + len(i)
    return out


def geometry_summary(hierarchy: Hierarchy, table: pd.DataFrame, pairs: dict[int, dict[str, Any]], kind: str,
                     agreement: dict[str, Any]) -> dict[str, Any]:
    """Per-depth means for metrics.json: angle to parent, ‖Δw‖/R, and :func:`pair_angles`'
    statistics of sibling and non-sibling pairs (``pairs``: its second result)."""
    depths: dict[str, Any] = {}
    for depth, group in table.groupby("depth"):
        entry = {"nodes": int(len(group)), "mean_norm": float(group["norm"].mean()),
                 "mean_delta_norm": float(group["delta_norm"].mean())}
        if group["angle_to_parent"].notna().any():
            entry["mean_angle_to_parent"] = float(group["angle_to_parent"].mean())
        if group["radius"].notna().any():
            entry["mean_delta_norm_over_radius"] = float((group["delta_norm"] / group["radius"]).mean())
        entry.update(pairs.get(int(depth), {}))
        depths[str(int(depth))] = entry
    return {"node_vectors": kind, "depths": depths, "tree_agreement": agreement}
