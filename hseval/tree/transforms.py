"""Tree transforms used by the paper: single-child merging (Appendix C.3, WordNet trees) and the
random hierarchy of the same shape (Table 5's ablation)."""

from __future__ import annotations

import numpy as np

from hseval.tree.hierarchy import Hierarchy

__all__ = ["merge_single_child_chains", "random_hierarchy"]


def merge_single_child_chains(hierarchy: Hierarchy) -> Hierarchy:
    """Remove every super-class that has exactly one child, attaching the child to the removed
    node's parent (so a chain a → b → c collapses to a → c, and a leaf keeps its name).

    The root is kept; a lone child of the root that is a super-class is removed the same way
    (:func:`hseval.tree.ancestry.merged_chains`, which a file's reader applies before the depth
    check: ``read_hierarchy(path, merge_chains=True)``). A tree without such a node is returned as is.
    """
    merged = Hierarchy(hierarchy.node_names, hierarchy.parents, hierarchy.num_leaves, root_name=hierarchy.root_name,
                       labels=hierarchy.labels, merge_chains=True)
    return hierarchy if merged.num_nodes == hierarchy.num_nodes else merged


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
