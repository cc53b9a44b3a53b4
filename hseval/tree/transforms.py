"""Tree transforms used by the paper: single-child merging (Appendix C.3, WordNet trees) and the
random hierarchy of the same shape (Table 5's ablation)."""

from __future__ import annotations

import numpy as np

from hseval.tree.hierarchy import Hierarchy

__all__ = ["merge_single_child_chains", "random_hierarchy"]


def merge_single_child_chains(hierarchy: Hierarchy) -> Hierarchy:
    """Remove every super-class that has exactly one child, attaching the child to the removed
    node's parent (so a chain a → b → c collapses to a → c, and a leaf keeps its name).

    The root is kept; a lone child of the root that is a super-class is removed the same way.
    """
    parents = hierarchy.parents.copy()
    num_children = np.bincount(parents[parents >= 0], minlength=hierarchy.num_nodes)
    removed = np.zeros(hierarchy.num_nodes, dtype=bool)
    removed[hierarchy.num_leaves:] = num_children[hierarchy.num_leaves:] == 1
    root_children = np.flatnonzero(parents == -1)
    if len(root_children) == 1 and root_children[0] >= hierarchy.num_leaves:
        removed[root_children[0]] = True
    if not removed.any():
        return hierarchy
    # follow each node's parent chain past removed nodes (depth order: parents are resolved first)
    new_parent = parents.copy()
    for node in np.argsort(hierarchy.depth, kind="stable").tolist():
        p = new_parent[node]
        if p >= 0 and removed[p]:
            new_parent[node] = new_parent[p]
    keep = np.flatnonzero(~removed)
    position = np.full(hierarchy.num_nodes, -1, dtype=np.int64)
    position[keep] = np.arange(len(keep))
    kept_parents = new_parent[keep]
    mapped = np.where(kept_parents >= 0, position[np.maximum(kept_parents, 0)], -1)
    names = [hierarchy.node_names[i] for i in keep.tolist()]
    kept = {*names, hierarchy.root_name}
    labels = {name: label for name, label in hierarchy.labels.items() if name in kept}
    return Hierarchy(names, mapped, hierarchy.num_leaves, root_name=hierarchy.root_name, labels=labels)


def random_hierarchy(hierarchy: Hierarchy, *, seed: int) -> Hierarchy:
    """The same tree with the classes dealt randomly to the leaf positions.

    Every super-class keeps its number of leaf children and every class keeps its index, but
    class j now hangs where class ``perm[j]`` did; ``seed`` makes it reproducible.
    """
    perm = np.random.default_rng(seed).permutation(hierarchy.num_leaves)
    parents = hierarchy.parents.copy()
    parents[: hierarchy.num_leaves] = hierarchy.parents[perm]
    return Hierarchy(hierarchy.node_names, parents, hierarchy.num_leaves, root_name=hierarchy.root_name,
                     labels=hierarchy.labels)
