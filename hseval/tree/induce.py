"""A tree induced from class vectors (NBDT's workflow: train a plain head, induce a tree from its class
vectors, train the hierarchy heads on it).

The class vectors are clustered by average linkage on the cosine distance (scipy) — the
dendrogram whose agreement with the given tree ``hseval evaluate`` reports — and the dendrogram is
cut into ``clusters[0] < clusters[1] < ...`` groups, one level each from the top. Cuts of one
dendrogram at decreasing heights refine each other, so every level nests in the one above; a
group with a single child (a cluster that the next level does not split, a class alone in its
cluster) is merged away.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage

from hseval.core.errors import ConfigError
from hseval.tree.hierarchy import Hierarchy
from hseval.tree.transforms import merge_single_child_chains

__all__ = ["induce_tree", "default_clusters"]


def induce_tree(leaf_vectors: np.ndarray, class_names: Sequence[str], *, clusters: Sequence[int]) -> Hierarchy:
    """The tree whose level k groups the classes as the dendrogram's cut into ``clusters[k-1]``
    groups; super-classes are named ``g<level>.<cluster>`` (with a suffix where a class has that
    name: the leaves are always ``class_names``, in order); single-child chains merged.

    ``leaf_vectors`` is (|L|, d), one vector per class of ``class_names`` (a trained head's class
    vectors: the caller reads them from a run or an evaluation)."""
    vectors = np.asarray(leaf_vectors, dtype=np.float64)
    if vectors.ndim != 2 or len(vectors) != len(class_names):
        raise ConfigError(f"need one class vector per class: {len(class_names)} classes, vectors of shape "
                          f"{vectors.shape}")
    if len(vectors) < 3:
        raise ConfigError(f"{len(vectors)} classes: a tree needs at least 3 to cluster")
    if (np.linalg.norm(vectors, axis=1) == 0).any():
        raise ConfigError("a class vector is zero: its direction, and so its cluster, is undefined")
    counts = list(clusters)
    if not counts or any(not 1 < k < len(vectors) for k in counts) or counts != sorted(set(counts)):
        raise ConfigError(f"--clusters must be increasing numbers of groups between 2 and {len(vectors) - 1} "
                          f"(one per level, from the top), got {','.join(map(str, counts)) or 'none'}")
    Z = linkage(vectors, method="average", metric="cosine")
    cuts = [fcluster(Z, t=k, criterion="maxclust") for k in counts]
    groups = [[f"g{level + 1}.{cut[i]}" for level, cut in enumerate(cuts)] for i in range(len(class_names))]
    return merge_single_child_chains(Hierarchy.from_groups(class_names, groups, source="induced"))


def default_clusters(tree: Hierarchy) -> list[int]:
    """As many groups per level as the given tree groups its classes into at that depth: its
    nodes there, plus each class that ends above it (a group of its own); cuts that cannot split
    anything are left out."""
    depth_of_leaf = tree.depth[: tree.num_leaves]
    counts = [len(tree.nodes_at_depth(d)) + int((depth_of_leaf < d).sum()) for d in range(1, tree.max_depth)]
    return sorted({k for k in counts if 1 < k < tree.num_leaves})

