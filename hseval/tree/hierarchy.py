"""The class tree: nodes, parents, depths, paths, the hierarchical layer H, LCAs.

Notation follows the paper (Scieur & Kim, 2021, Sec. 2.1): ``P`` is every node except the root,
``L`` the leaves, which are the dataset's classes. Node order is canonical: nodes ``0..L-1`` are
the leaves in class order, then the super-classes sorted by depth (ties keep their input order).
The root is implicit: a parent index of ``-1`` means "child of the root". Depth counts from the
root, whose children have depth 1. What a tree is built from is checked by
:mod:`hseval.tree.building`; files are read and written by :mod:`hseval.tree.formats`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Annotated, Any

import numpy as np
import scipy.sparse as sp
from pydantic import PlainValidator, SkipValidation
from pydantic_core import PydanticCustomError, core_schema

import hseval.tree.ancestry as ancestry
from hseval.core.arguments import checked
from hseval.core.errors import HierarchyError
from hseval.tree.building import build, check_class_order, node_indices, renumbered_parents
from hseval.tree.naming import checked_labels
from hseval.tree.node_lists import EdgePair, lists_from_edges, lists_from_groups, lists_from_paths

__all__ = ["Hierarchy"]


class Hierarchy:
    """An immutable class tree.

    Parameters
    ----------
    names : sequence of str, length |P|
        Name of every non-root node; the first ``num_leaves`` are the classes in class order.
    parents : sequence of int, length |P|
        Index of each node's parent in ``names``, or -1 for the children of the root.
    num_leaves : int
        Number of classes |L|. Nodes ``0..num_leaves-1`` must be exactly the tree's leaves.
    root_name : str, default "root"
        Name of the implicit root.
    source : str, optional
        The input (a file) that the error messages start with.
    labels : mapping of str to str, optional
        Display labels, by node (or root) name, of the nodes whose label is not their name (NBDT's
        ``label`` beside its ``id``). Names identify nodes (lookups, class lists, file ids); a
        label is only shown and written back. A label equal to the name is dropped.
    merge_chains : bool, default False
        Remove each super-class of one child first (Appendix C.3), then check the depth.

    The super-classes are renumbered into canonical order (by depth); use :meth:`index` to find
    a node by name.

    Examples
    --------
    >>> tree = Hierarchy.from_paths([["animal", "cat"], ["animal", "dog"], ["car"]])
    >>> tree.leaf_names, tree.node_names[tree.num_leaves:], tree.max_depth
    (('cat', 'dog', 'car'), ('animal',), 2)
    >>> tree.H.toarray()  # H[i, j] = 1 iff node i is an ancestor-or-self of class j
    array([[1, 0, 0],
           [0, 1, 0],
           [0, 0, 1],
           [1, 1, 0]], dtype=int8)
    """

    __slots__ = ("_names", "_parents", "_depth", "_num_leaves", "_root_name", "_index", "_labels", "__dict__")

    @checked  # the labels are checked by checked_labels, in a HierarchyError that names the source
    def __init__(self, names: Sequence[str], parents: Annotated[Sequence[int], PlainValidator(node_indices)],
                 num_leaves: int, *, root_name: str = "root", source: str | None = None,
                 labels: SkipValidation[Mapping[str, str] | None] = None, merge_chains: bool = False) -> None:
        try:
            built = build(list(map(str, names)), parents, num_leaves, root_name, merge_chains=merge_chains)
            self._names, self._parents, self._depth, self._index = built
            self._num_leaves = int(num_leaves)
            self._root_name = root_name
            if merge_chains and isinstance(labels, Mapping):  # a removed node's label goes with it
                labels = {k: v for k, v in labels.items() if k in self._index or k == root_name}
            self._labels = checked_labels(labels, self._names, root_name)
        except HierarchyError as exc:
            if source is None:
                raise
            raise HierarchyError(f"{source}: {exc}") from None

    # ----------------------------------------------------------------- constructors
    @classmethod
    @checked
    def from_edges(cls, edges: Sequence[EdgePair], *, classes: Sequence[str] | None = None, source: str = "edges",
                   labels: SkipValidation[Mapping[str, str] | None] = None, merge_chains: bool = False) -> Hierarchy:
        """Build a tree from ``(parent, child)`` name pairs.

        The root is the one node that is never a child. Leaves are ordered as ``classes`` when
        given (every class must be a leaf and every leaf a class), else in natural sort order
        (so numeric ids sort as numbers and WordNet ids as ImageNet's class index does).
        ``source`` names the input in errors; ``labels``, ``merge_chains`` as in :class:`Hierarchy`.
        """
        return cls(**lists_from_edges(edges, classes=classes, source=source)._asdict(), source=source, labels=labels,
                   merge_chains=merge_chains)

    @classmethod
    @checked
    def from_paths(cls, paths: Sequence[Sequence[str]], *, root_name: str = "root",
                   source: str = "paths", merge_chains: bool = False) -> Hierarchy:
        """Build a tree from one label path per class (``("animal", "dog", "husky")``), in class order.

        A node is identified by its whole path; it is named by its last component, or by the
        joined path where two nodes would share a name. O(total path length).
        """
        lists = lists_from_paths(paths, root_name=root_name, source=source)
        return cls(**lists._asdict(), source=source, merge_chains=merge_chains)

    @classmethod
    def from_groups(cls, classes: Sequence[str], groups: Sequence[Sequence[str]], *, root_name: str = "root",
                    source: str = "groups") -> Hierarchy:
        """Build a tree of ``classes`` (in class order) under generated super-classes: ``groups[i]``
        names the groups of class i from the top (``("g1.2", "g2.5")``, ``("Albatross",)``).

        The leaves are exactly ``classes``, never renamed: a group (or the root) whose generated
        name is also a class's takes a suffix (``g1.1_1``)."""
        return cls(**lists_from_groups(classes, groups, root_name=root_name, source=source)._asdict(), source=source)

    def reorder_leaves(self, classes: Sequence[str], *, source: str = "classes") -> Hierarchy:
        """The same tree with its leaves in the order of ``classes`` (the same names, once each); the
        super-classes keep their numbering, and a tree already in that order is returned as is.
        ``source`` names the class list in the error raised when it names other classes."""
        classes = [str(c) for c in classes]
        if classes == list(self.leaf_names):
            return self
        check_class_order(classes, self.leaf_names, source=source)
        return self.renumbered([*classes, *self.node_names[self._num_leaves:]])

    def renumbered(self, names: Sequence[str]) -> Hierarchy:
        """The same tree with its nodes numbered in the order of ``names`` (every node once, the
        leaves first: a permutation of the leaves and one of the super-classes)."""
        names = [str(n) for n in names]
        parents = renumbered_parents(names, self._names, self._parents.tolist(), self._index, self._num_leaves)
        return Hierarchy(names, parents, self._num_leaves, root_name=self._root_name, labels=self._labels)

    def with_labels(self, labels: Mapping[str, str] | None) -> Hierarchy:
        """The same tree with these display labels (None: none)."""
        return Hierarchy(self._names, self._parents, self._num_leaves, root_name=self._root_name, labels=labels)

    # ----------------------------------------------------------------- basic facts
    @property
    def node_names(self) -> tuple[str, ...]:
        """Names of the |P| non-root nodes in canonical order."""
        return self._names

    @property
    def leaf_names(self) -> tuple[str, ...]:
        """Names of the |L| classes in class order."""
        return self._names[: self._num_leaves]

    @property
    def root_name(self) -> str:
        return self._root_name

    @property
    def labels(self) -> Mapping[str, str]:
        """Display labels by node name (the root's too) of the nodes whose label is not their name;
        empty for most trees. ``tree.labels.get(name, name)`` is the text to show."""
        return self._labels

    @property
    def num_leaves(self) -> int:
        """|L|, the number of classes."""
        return self._num_leaves

    @property
    def num_nodes(self) -> int:
        """|P|, every node except the root."""
        return len(self._names)

    @property
    def parents(self) -> np.ndarray:
        """(|P|,) int64: parent index of each node, -1 for the children of the root."""
        return self._parents

    @property
    def depth(self) -> np.ndarray:
        """(|P|,) int64: depth of each node; the root's children have depth 1."""
        return self._depth

    @property
    def max_depth(self) -> int:
        return int(self._depth.max())

    @property
    def nodes_per_depth(self) -> list[int]:
        """Number of nodes at depth 1, 2, ..., max_depth."""
        return np.bincount(self._depth, minlength=self.max_depth + 1)[1:].tolist()

    def nodes_at_depth(self, depth: int) -> np.ndarray:
        """Indices of the nodes at ``depth`` (leaves included), in canonical order."""
        return np.flatnonzero(self._depth == depth)

    def index(self, name: str) -> int:
        """Canonical index of the node called ``name``."""
        try:
            return self._index[name]
        except KeyError:
            raise HierarchyError(f"no node called {name!r} in the hierarchy") from None

    def is_leaf(self, node: int) -> bool:
        return 0 <= node < self._num_leaves

    @cached_property
    def children(self) -> tuple[tuple[int, ...], ...]:
        """Children of each node; ``children[-1]`` (one extra entry) holds the root's."""
        kids: list[list[int]] = [[] for _ in range(self.num_nodes + 1)]
        for child, parent in enumerate(self._parents.tolist()):
            kids[parent].append(child)
        return tuple(tuple(k) for k in kids)

    def preorder(self) -> np.ndarray:
        """Every non-root node in depth-first preorder, children in canonical order: the order in
        which the tree reads top to bottom (each super-class's classes are contiguous)."""
        children = self.children
        order: list[int] = []
        stack = list(reversed(children[-1]))
        while stack:
            node = stack.pop()
            order.append(node)
            stack.extend(reversed(children[node]))
        return np.asarray(order, dtype=np.int64)

    # ----------------------------------------------------------------- paths and matrices
    @cached_property
    def ancestor_table(self) -> np.ndarray:
        """(|P|, max_depth) read-only int64: row i is the path of node i (its ancestor at depth 1,
        2, ..., then i itself), padded with -1."""
        return ancestry.ancestor_table(self._parents, self._depth)

    def path(self, node: int) -> tuple[int, ...]:
        """Node indices from depth 1 down to ``node``."""
        row = self.ancestor_table[node]
        return tuple(row[row >= 0].tolist())

    def path_names(self, node: int) -> tuple[str, ...]:
        return tuple(self._names[i] for i in self.path(node))

    def ancestor_at_depth(self, nodes: np.ndarray | Sequence[int], depth: int) -> np.ndarray:
        """The ancestor-or-self at ``depth`` of each node, -1 where the node is shallower."""
        if not 1 <= depth <= self.max_depth:
            raise HierarchyError(f"depth {depth} is outside 1..{self.max_depth}")
        return self.ancestor_table[np.asarray(nodes, dtype=np.int64), depth - 1]

    @cached_property
    def ancestor_matrix(self) -> sp.csr_array:
        """(|P|, |P|) sparse 0/1: ``A[i, j] = 1`` iff node i is an ancestor-or-self of node j."""
        table = self.ancestor_table
        cols, depth_idx = np.nonzero(table >= 0)
        rows = table[cols, depth_idx]
        return sp.csr_array((np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(self.num_nodes, self.num_nodes))

    @property
    def H(self) -> sp.csr_array:
        """(|P|, |L|) sparse 0/1 hierarchical layer: ``H[i, j] = 1`` iff node i is an
        ancestor-or-self of leaf j (the paper's Definition 1, root excluded)."""
        return self.ancestor_matrix[:, : self._num_leaves]

    def subtree_leaves(self, node: int) -> np.ndarray:
        """Leaves below (or equal to) ``node``."""
        return self.H[[node], :].indices if node >= 0 else np.arange(self._num_leaves)

    # ----------------------------------------------------------------- LCA and distances
    def lca(self, a: np.ndarray | Sequence[int], b: np.ndarray | Sequence[int]) -> np.ndarray:
        """Lowest common ancestor of nodes ``a[k]`` and ``b[k]``; -1 is the root."""
        depth = self.lca_depth(a, b)
        a = np.asarray(a, dtype=np.int64)
        out = self.ancestor_table[a, np.maximum(depth - 1, 0)]
        return np.where(depth > 0, out, -1)

    def lca_depth(self, a: np.ndarray | Sequence[int], b: np.ndarray | Sequence[int]) -> np.ndarray:
        """Depth of the lowest common ancestor of each pair (0 when it is the root), int64 of the
        broadcast shape of ``a`` and ``b`` (node indices of any non-root nodes).

        Trees of up to :data:`~hseval.tree.ancestry.LCA_TABLE_MAX_BYTES` worth of node pairs look
        every pair up in a table of all LCA depths (built on first use); larger ones compare
        ancestor rows."""
        table = self.lca_depth_table
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        if table is None or (a.size and b.size and (min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= len(table))):
            # no table, or an index outside it: the same IndexError, or -k counted from the end
            return ancestry.lca_depth_by_rows(self.ancestor_table, a, b)
        # one flat gather is faster than numpy's two-index fancy indexing
        return table.ravel()[a * len(table) + b].astype(np.int64)

    @cached_property
    def lca_depth_table(self) -> np.ndarray | None:
        """(|P|, |P|) read-only uint8 (uint16 for trees deeper than 255): ``T[a, b]`` is the depth
        of the LCA of nodes a and b; None when it would take more than
        :data:`~hseval.tree.ancestry.LCA_TABLE_MAX_BYTES` (:func:`~hseval.tree.ancestry.lca_depth_table`)."""
        return ancestry.lca_depth_table(self._parents, self._depth, self.ancestor_table)

    def tree_distance(self, a: np.ndarray | Sequence[int], b: np.ndarray | Sequence[int]) -> np.ndarray:
        """Number of edges on the path between each pair of nodes."""
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        return self._depth[a] + self._depth[b] - 2 * self.lca_depth(a, b)

    # ----------------------------------------------------------------- conversions
    def to_dict(self) -> dict:
        """Plain JSON types; :meth:`from_dict` inverts it."""
        labels = {"labels": dict(self._labels)} if self._labels else {}
        return {"root": self._root_name, "num_leaves": self._num_leaves,
                "names": list(self._names), "parents": self._parents.tolist(), **labels}

    @classmethod
    @checked
    def from_dict(cls, data: Mapping[str, Any]) -> Hierarchy:
        try:
            return cls(data["names"], data["parents"], int(data["num_leaves"]), root_name=str(data["root"]),
                       labels=data.get("labels"))
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            if isinstance(exc, HierarchyError):
                raise
            raise HierarchyError(f"hierarchy record is malformed ({exc.__class__.__name__}: {exc}); it needs "
                                 "'root', 'num_leaves', 'names' and 'parents'") from None

    def stats(self) -> dict:
        """The summary printed by ``hseval hierarchy stats``."""
        return {"num_leaves": self.num_leaves, "num_nodes": self.num_nodes, "max_depth": self.max_depth,
                "nodes_per_depth": self.nodes_per_depth}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Hierarchy):
            return NotImplemented
        return (self._names == other._names and self._num_leaves == other._num_leaves
                and self._root_name == other._root_name and np.array_equal(self._parents, other._parents)
                and self._labels == other._labels)

    def __hash__(self) -> int:
        return hash((self._names, self._num_leaves, self._parents.tobytes()))

    def __repr__(self) -> str:
        return (f"Hierarchy(num_leaves={self.num_leaves}, num_nodes={self.num_nodes}, "
                f"max_depth={self.max_depth}, root={self._root_name!r})")

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> core_schema.CoreSchema:
        """A Hierarchy as a checked argument (:func:`~hseval.core.arguments.checked`); a path is
        told to be read first."""
        def check(value: Any) -> Hierarchy:
            if isinstance(value, cls):
                return value
            hint = (f"read the file first: hseval.read_hierarchy({str(value)!r})"
                    if isinstance(value, (str, os.PathLike)) else
                    "build one with hseval.read_hierarchy(FILE) or Hierarchy.from_paths")
            raise PydanticCustomError("is_instance_of", "must be a Hierarchy", {"class": "Hierarchy", "hint": hint})
        return core_schema.no_info_plain_validator_function(check)
