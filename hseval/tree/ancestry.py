"""Depths, ancestor rows and lowest common ancestors of a tree given by its parent links.

Pure functions of ``parents`` ((|P|,) int64, -1 for the children of the root) and ``depth``
(the root's children have depth 1), on which :class:`~hseval.tree.hierarchy.Hierarchy` builds its
cached tables. Every one is iterative: a tree may be :data:`MAX_DEPTH` levels deep.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from hseval.core.errors import HierarchyError

__all__ = ["MAX_DEPTH", "LCA_TABLE_MAX_BYTES", "canonical", "depths", "merged_chains", "ancestor_table",
           "lca_depth_table", "lca_depth_by_rows", "readonly", "same_tree", "MERGE_CHAINS"]

MAX_DEPTH = 1000
MERGE_CHAINS = "hseval hierarchy convert --merge-chains"
"""The command that writes a tree too deep in chains with them merged (:func:`merged_chains`)."""
LCA_TABLE_MAX_BYTES = 16 * 1024 * 1024  # lca_depth_table: up to 4,096 nodes at one byte a pair


def readonly(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def canonical(names: Sequence[str], parents: np.ndarray, num_leaves: int, *,
              merge_chains: bool = False) -> tuple[np.ndarray, ...]:
    """Check that ``parents`` make a tree whose leaves are exactly nodes ``0..num_leaves-1``, and put it
    in canonical order: the leaves, then the super-classes by depth (stable). ``merge_chains``:
    the super-classes of one child are removed first (:func:`merged_chains`), and the depth checked
    after, so that a tree deeper than :data:`MAX_DEPTH` in chains reads.

    Returns ``(order, depth, parents)``: ``order[k]`` is the input index of canonical node ``k`` (a
    removed node has none), and ``depth``/``parents`` are given in canonical order and indices.
    """
    depth = depths(names, parents)
    kept = np.arange(len(parents))
    if merge_chains:
        kept, parents = merged_chains(parents, depth, num_leaves)
        names = [names[k] for k in kept.tolist()]
        depth = depths(names, parents)
    if len(depth) and depth.max() > MAX_DEPTH:
        raise HierarchyError(_too_deep(names, parents, depth, num_leaves, merged=merge_chains))
    has_child = np.zeros(len(parents), dtype=bool)
    has_child[parents[parents >= 0]] = True
    if has_child[:num_leaves].any():
        bad = int(np.flatnonzero(has_child[:num_leaves])[0])
        raise HierarchyError(f"class {names[bad]!r} has children; every dataset class must be a leaf of the tree")
    if not has_child[num_leaves:].all():
        bad = num_leaves + int(np.flatnonzero(~has_child[num_leaves:])[0])
        raise HierarchyError(f"leaf {names[bad]!r} is not a dataset class; remove it or add it to the class list")
    order = np.concatenate([np.arange(num_leaves), num_leaves + np.argsort(depth[num_leaves:], kind="stable")])
    new_index = np.empty(len(parents), dtype=np.int64)
    new_index[order] = np.arange(len(parents))
    moved = parents[order]
    return kept[order], depth[order], np.where(moved >= 0, new_index[np.maximum(moved, 0)], -1)


def _too_deep(names: Sequence[str], parents: np.ndarray, depth: np.ndarray, num_leaves: int, *, merged: bool) -> str:
    """Why a tree deeper than :data:`MAX_DEPTH` is refused, with the advice that works for it:
    merging its single-child chains where that brings it within the limit."""
    deep = f"the tree is {depth.max()} levels deep"
    if merged:
        return f"{deep} with its single-child chains merged (limit {MAX_DEPTH}); check the parent links"
    kept, merged_parents = merged_chains(parents, depth, num_leaves)
    after = depths([names[k] for k in kept.tolist()], merged_parents).max()
    chains = f"{deep} (limit {MAX_DEPTH}), {'' if after <= MAX_DEPTH else 'still '}{after} once its single-child " \
             "chains are merged"
    return f"{chains}: merge them with {MERGE_CHAINS}" if after <= MAX_DEPTH else f"{chains}; check the parent links"


def merged_chains(parents: np.ndarray, depth: np.ndarray, num_leaves: int) -> tuple[np.ndarray, np.ndarray]:
    """The tree without its super-classes of exactly one child, each child hung on the removed
    node's parent (a chain a → b → c becomes a → c; a leaf keeps its name); the root's lone child,
    a super-class, is removed the same way. Returns the kept nodes' input indices and their parents
    (indices among the kept). O(|P|), iterative: a chain may be any length."""
    n = len(parents)
    removed = np.zeros(n, dtype=bool)
    removed[num_leaves:] = np.bincount(parents[parents >= 0], minlength=n)[num_leaves:] == 1
    root_children = np.flatnonzero(parents == -1)
    if len(root_children) == 1 and root_children[0] >= num_leaves:
        removed[root_children[0]] = True
    new_parent = parents.copy()
    for node in np.argsort(depth, kind="stable").tolist():  # a parent's new parent is known before its child's
        p = new_parent[node]
        if p >= 0 and removed[p]:
            new_parent[node] = new_parent[p]
    kept = np.flatnonzero(~removed)
    position = np.full(n, -1, dtype=np.int64)
    position[kept] = np.arange(len(kept))
    return kept, np.where(new_parent[kept] >= 0, position[np.maximum(new_parent[kept], 0)], -1)


def depths(names: Sequence[str], parents: np.ndarray) -> np.ndarray:
    """Depth of every node, raising on a cycle (naming a node on it); O(|P| log depth) by pointer
    doubling."""
    depth = np.ones(len(parents), dtype=np.int64)
    jump = parents.copy()  # after k rounds: the ancestor 2**k levels up (-1: the root was reached)
    for _ in range(len(parents).bit_length() + 1):
        active = np.flatnonzero(jump >= 0)
        if not len(active):
            return depth
        target = jump[active]
        depth[active] += depth[target]
        jump[active] = jump[target]
    return _depths_by_walks(names, parents)  # unreachable unless a cycle: find and name it


def _depths_by_walks(names: Sequence[str], parents: np.ndarray) -> np.ndarray:
    """Depth of every node by memoised walks up the tree, raising on a cycle with the node it meets."""
    plist = parents.tolist()
    depth = [0] * len(plist)
    state = [0] * len(plist)  # 0 = new, 1 = on the current walk, 2 = done
    for start in range(len(plist)):
        if state[start]:
            continue
        walk = []
        node = start
        while node >= 0 and state[node] == 0:
            state[node] = 1
            walk.append(node)
            node = plist[node]
        if node >= 0 and state[node] == 1:
            raise HierarchyError(f"the parent links contain a cycle through node {names[node]!r}")
        base = depth[node] if node >= 0 else 0
        for k, w in enumerate(reversed(walk), start=1):
            depth[w] = base + k
            state[w] = 2
    return np.asarray(depth, dtype=np.int64)


def ancestor_table(parents: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """(|P|, max depth) read-only int64: row i is the path of node i (its ancestor at depth 1, 2,
    ..., then i itself), padded with -1."""
    table = np.full((len(parents), int(depth.max())), -1, dtype=np.int64)
    for i in np.argsort(depth, kind="stable").tolist():  # a parent's row is ready before its children's
        p, k = parents[i], depth[i]
        if p >= 0:
            table[i, : k - 1] = table[p, : k - 1]
        table[i, k - 1] = i
    return readonly(table)


def lca_depth_table(parents: np.ndarray, depth: np.ndarray, ancestors: np.ndarray) -> np.ndarray | None:
    """(|P|, |P|) read-only uint8 (uint16 for trees deeper than 255): ``T[a, b]`` is the depth of
    the LCA of nodes a and b; None when it would take more than :data:`LCA_TABLE_MAX_BYTES`.

    Built level by level in O(|P|² + |P|·depth) from ``ancestors`` (:func:`ancestor_table`): node
    a's row is its parent's row (the LCA with anything outside a's subtree is the parent's LCA with
    it), then the depth of a across a's subtree, whose (ancestor, node) pairs are its columns."""
    n, max_depth = ancestors.shape
    dtype = np.uint8 if max_depth <= np.iinfo(np.uint8).max else np.uint16
    if n * n * np.dtype(dtype).itemsize > LCA_TABLE_MAX_BYTES:
        return None
    table = np.zeros((n, n), dtype=dtype)  # the root's row: 0 everywhere
    by_depth = np.argsort(depth, kind="stable")
    starts = np.searchsorted(depth[by_depth], np.arange(1, max_depth + 2))
    for level_depth in range(1, max_depth + 1):
        level = by_depth[starts[level_depth - 1]: starts[level_depth]]
        if level_depth > 1:
            table[level] = table[parents[level]]
        column = ancestors[:, level_depth - 1]
        below = np.flatnonzero(column >= 0)  # nodes at least this deep, under column[below]
        table[column[below], below] = level_depth
    return readonly(table)


def lca_depth_by_rows(ancestors: np.ndarray, a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """Depth of the LCA of each pair without the table: the length of the common prefix of the two
    rows of ``ancestors`` (:func:`ancestor_table`)."""
    ta = ancestors[np.asarray(a, dtype=np.int64)]
    tb = ancestors[np.asarray(b, dtype=np.int64)]
    same = (ta == tb) & (ta >= 0)
    return np.cumprod(same, axis=-1).sum(axis=-1)


def same_tree(a, b) -> bool:
    """Whether two trees (:class:`~hseval.tree.hierarchy.Hierarchy`) are one tree, whatever order
    their nodes were listed in: the same classes and super-classes, each under the same parent,
    the same root and labels. Classes are their names: the one class-order rule of hseval, under
    which the same tree file pairs with itself however its classes were listed."""
    if a is b:
        return True
    if (a.num_leaves, a.num_nodes, a.root_name, dict(a.labels)) != (b.num_leaves, b.num_nodes, b.root_name,
                                                                      dict(b.labels)):
        return False
    def parents(tree) -> dict[str, str | None]:
        names = tree.node_names
        return {name: names[p] if p >= 0 else None for name, p in zip(names, tree.parents.tolist())}
    return set(a.leaf_names) == set(b.leaf_names) and parents(a) == parents(b)
