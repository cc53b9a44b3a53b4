"""The nearest nodes of a node by the cosine of their vectors: a pure table for the Embeddings page
(the head's node vectors in, a DataFrame out), testable without Streamlit."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.metrics.pairwise import cosine_similarity

from hseval.app.tables import node_path
from hseval.tree.hierarchy import Hierarchy

__all__ = ["nearest_nodes"]


def nearest_nodes(tree: Hierarchy, vectors: np.ndarray, node: int, *, k: int = 5) -> pd.DataFrame:
    """The ``k`` nodes whose vectors point closest to ``node``'s, most similar first.

    Parameters
    ----------
    tree : the run's hierarchy.
    vectors : (num_nodes, d) node vectors in canonical node order (``embeddings.npz``'s ``node_vectors``).
    node : index of the node whose neighbours are wanted.
    k : how many neighbours (fewer when the tree has fewer other nodes).

    Returns
    -------
    DataFrame with columns node, path, cosine, angle (degrees), tree_distance (edges between the
    two nodes); the node itself is left out. A zero vector has cosine 0 with every other.
    """
    vectors = np.asarray(vectors, dtype=np.float64)  # checked when embeddings.npz was read
    cosine = cosine_similarity(vectors[[node]], vectors)[0]
    others = np.delete(np.arange(tree.num_nodes), node)
    order = others[np.argsort(-cosine[others], kind="stable")][:k]
    return pd.DataFrame({
        "node": order,
        "path": [node_path(tree, n) for n in order.tolist()],
        "cosine": cosine[order],
        "angle": np.degrees(np.arccos(np.clip(cosine[order], -1.0, 1.0))),
        "tree_distance": tree.tree_distance(np.full(len(order), node), order),
    })
