"""What a :class:`~hseval.tree.hierarchy.Hierarchy` is built from, checked: the lists its
constructor takes (one parent index per name, each in range, names that a file can hold; then the
tree itself checked and put in canonical order by :func:`hseval.tree.ancestry.canonical`), and the
new order of a renumbering (a class list, every leaf once; or every node, the leaves first). Each
check raises one line (:class:`~hseval.core.errors.HierarchyError`) naming the first wrong item.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from pydantic_core import PydanticCustomError

import hseval.tree.ancestry as ancestry
from hseval.core.errors import HierarchyError
from hseval.tree.naming import check_names

__all__ = ["Built", "node_indices", "build", "check_class_order", "renumbered_parents"]


class Built(NamedTuple):
    """A tree in canonical order: ``names`` (|P|,), ``parents`` and ``depth`` (|P|,) read-only
    int64, and ``index``, each name's canonical index."""

    names: tuple[str, ...]
    parents: np.ndarray
    depth: np.ndarray
    index: dict[str, int]


def node_indices(value: Any) -> np.ndarray:
    """Node indices: integers (a float would be cut to one silently)."""
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        array = np.asarray(None)
    if array.ndim != 1 or (array.size and not np.issubdtype(array.dtype, np.integer)):
        raise PydanticCustomError("indices_type", "must be a sequence of integer node indices")
    return array.astype(np.int64)


def build(names: list[str], parents: np.ndarray, num_leaves: int, root_name: str, *, merge_chains: bool) -> Built:
    """The tree of the constructor's lists (``parents`` from :func:`node_indices`), checked, in
    canonical order; ``merge_chains`` as :class:`~hseval.tree.hierarchy.Hierarchy`'s."""
    n = len(names)
    if len(parents) != n:
        raise HierarchyError(f"{n} node names but {len(parents)} parents; give one parent index per node")
    if not 1 <= num_leaves <= n:
        raise HierarchyError(f"num_leaves={num_leaves} must be between 1 and the number of nodes ({n})")
    check_names([*names, root_name])
    if n and (parents.min() < -1 or parents.max() >= n):
        bad = int(np.flatnonzero((parents < -1) | (parents >= n))[0])
        raise HierarchyError(f"node {names[bad]!r} has parent index {parents[bad]}, outside -1..{n - 1}")
    order, depth, parents = ancestry.canonical(names, parents, num_leaves, merge_chains=merge_chains)
    kept = tuple(map(names.__getitem__, order.tolist()))
    return Built(kept, ancestry.readonly(parents), ancestry.readonly(depth), dict(zip(kept, range(len(order)))))


def check_class_order(classes: Sequence[str], leaf_names: Sequence[str], *, source: str) -> None:
    """Refuse a class list that is not every leaf of a tree (``leaf_names``) once; ``source`` names
    the class list."""
    leaves = set(leaf_names)
    seen: set[str] = set()
    for name in classes:
        if name in seen:
            raise HierarchyError(f"{source}: class {name!r} is listed twice; list each class once")
        if name not in leaves:
            raise HierarchyError(f"{source}: class {name!r} is not a leaf of the tree")
        seen.add(name)
    missing = next((name for name in leaf_names if name not in seen), None)
    if missing is not None:
        raise HierarchyError(f"{source}: leaf {missing!r} of the tree is not in the class list")


def renumbered_parents(order: Sequence[str], names: Sequence[str], parents: Sequence[int], index: Mapping[str, int],
                       num_leaves: int) -> list[int]:
    """The parent of each node of ``order`` as an index into ``order`` (-1: the root), for a tree of
    ``names``, ``parents`` (``index``: each name's position) whose first ``num_leaves`` nodes are its
    leaves; ``order`` must list every node once, the leaves first."""
    if sorted(order[:num_leaves]) != sorted(names[:num_leaves]) or sorted(order) != sorted(names):
        raise HierarchyError("renumbered: give every node once, the leaves first")
    position = {name: k for k, name in enumerate(order)}
    return [position[names[parents[index[name]]]] if parents[index[name]] >= 0 else -1 for name in order]
