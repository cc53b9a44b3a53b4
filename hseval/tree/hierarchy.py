"""The class tree: nodes, parents, depths, paths, the hierarchical layer H, LCAs.

Notation follows the paper (Scieur & Kim, 2021, Sec. 2.1): ``P`` is every node except the root,
``L`` the leaves, which are the dataset's classes. Node order is canonical: nodes ``0..L-1`` are
the leaves in class order, then the super-classes sorted by depth (ties keep their input order).
The root is implicit: a parent index of ``-1`` means "child of the root". Depth counts from the
root, whose children have depth 1.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import cached_property
from itertools import chain
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from hseval.core.errors import HierarchyError

__all__ = ["Hierarchy"]

_FORBIDDEN = re.compile(r"[\n\r\t]")  # what a name may not hold
MAX_DEPTH = 1000
MAX_JOINED_NAMES = 64 * 1024 * 1024  # characters of path-names that from_paths may build
LCA_TABLE_MAX_BYTES = 16 * 1024 * 1024  # Hierarchy.lca_depth_table: up to 4,096 nodes at one byte a pair
_NUMBER = re.compile(r"(\d+)")
_TEXT_NUMBER = re.compile(r"(\D*)([0-9]+)")


def _readonly(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


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

    The super-classes are renumbered into canonical order (by depth); use :meth:`index` to find
    a node by name.
    """

    __slots__ = ("_names", "_parents", "_depth", "_num_leaves", "_root_name", "_index", "__dict__")

    def __init__(self, names: Sequence[str], parents: Sequence[int], num_leaves: int, *,
                 root_name: str = "root") -> None:
        names = list(map(str, names))
        parents = np.asarray(parents, dtype=np.int64).reshape(-1)
        n = len(names)
        if len(parents) != n:
            raise HierarchyError(f"{n} node names but {len(parents)} parent indices; give one parent per node")
        if not 1 <= num_leaves <= n:
            raise HierarchyError(f"num_leaves={num_leaves} must be between 1 and the number of nodes ({n})")
        _check_names([*names, root_name])
        if n and (parents.min() < -1 or parents.max() >= n):
            bad = int(np.flatnonzero((parents < -1) | (parents >= n))[0])
            raise HierarchyError(f"node {names[bad]!r} has parent index {parents[bad]}, outside -1..{n - 1}")
        depth = _depths(names, parents)
        if n and depth.max() > MAX_DEPTH:
            raise HierarchyError(f"the tree is {depth.max()} levels deep (limit {MAX_DEPTH}); merge single-child "
                                 "chains or check the parent links")
        has_child = np.zeros(n, dtype=bool)
        has_child[parents[parents >= 0]] = True
        if has_child[:num_leaves].any():
            bad = int(np.flatnonzero(has_child[:num_leaves])[0])
            raise HierarchyError(f"class {names[bad]!r} has children; every dataset class must be a leaf of the tree")
        if not has_child[num_leaves:].all():
            bad = num_leaves + int(np.flatnonzero(~has_child[num_leaves:])[0])
            raise HierarchyError(f"leaf {names[bad]!r} is not a dataset class; remove it or add it to the class list")
        # canonical order: leaves, then super-classes by depth (stable)
        order = np.concatenate([np.arange(num_leaves),
                                num_leaves + np.argsort(depth[num_leaves:], kind="stable")])
        new_index = np.empty(n, dtype=np.int64)
        new_index[order] = np.arange(n)
        old_parents = parents[order]
        self._parents = _readonly(np.where(old_parents >= 0, new_index[np.maximum(old_parents, 0)], -1))
        self._names = tuple(map(names.__getitem__, order.tolist()))
        self._depth = _readonly(depth[order])
        self._num_leaves = int(num_leaves)
        self._root_name = root_name
        self._index = dict(zip(self._names, range(n)))

    # ----------------------------------------------------------------- constructors
    @classmethod
    def from_edges(cls, edges: Iterable[tuple[str, str]], *, classes: Sequence[str] | None = None,
                   source: str = "edges") -> Hierarchy:
        """Build a tree from ``(parent, child)`` name pairs.

        The root is the one node that is never a child. Leaves are ordered as ``classes`` when
        given (every class must be a leaf and every leaf a class), else in natural sort order
        (so numeric ids sort as numbers and WordNet ids as ImageNet's class index does).
        ``source`` names the input in error messages.
        """
        edges = list(edges)
        parent_of = {child: parent for parent, child in edges}
        if len(parent_of) != len(edges) or any(child == parent for child, parent in parent_of.items()):
            parent_of = {}  # edge by edge, to name the first wrong one
            for parent, child in edges:
                if child == parent:
                    raise HierarchyError(f"{source}: node {child!r} is its own parent (a cycle)")
                previous = parent_of.get(child)
                if previous is not None and previous != parent:
                    raise HierarchyError(f"{source}: node {child!r} has two parents ({previous!r} and {parent!r}); "
                                         "a hierarchy must be a tree")
                parent_of[child] = parent
        order = dict.fromkeys(chain.from_iterable(edges))  # every node, in order of appearance
        if not order:
            raise HierarchyError(f"{source}: no edges; the hierarchy is empty")
        roots = [name for name in order if name not in parent_of]
        if len(roots) != 1:
            if not roots:
                raise HierarchyError(f"{source}: every node has a parent, so the edges contain a cycle")
            shown = ", ".join(repr(r) for r in roots[:5]) + (" ..." if len(roots) > 5 else "")
            raise HierarchyError(f"{source}: {len(roots)} roots ({shown}); a tree has exactly one node without "
                                 "a parent: add a common root")
        root = roots[0]
        has_child = set(parent_of.values())
        leaves = [name for name in order if name not in has_child]
        if classes is not None:
            classes = [str(c) for c in classes]
            leaf_set = set(leaves)
            unknown = [c for c in classes if c not in leaf_set]
            if unknown:
                where = "an internal node of" if unknown[0] in order else "not in"
                raise HierarchyError(f"{source}: class {unknown[0]!r} is {where} the hierarchy; every class must "
                                     "be a leaf")
            extra = sorted(leaf_set - set(classes), key=natural_key)
            if extra:
                raise HierarchyError(f"{source}: leaf {extra[0]!r} is not a dataset class "
                                     f"({len(extra)} such leaves); remove it or add it to the class list")
            if len(set(classes)) != len(classes):
                raise HierarchyError(f"{source}: the class list names a class twice")
            leaves = classes
        else:
            leaves = sorted(leaves, key=natural_key)
        leaf_set = set(leaves)
        internal = [name for name in order if name not in leaf_set and name != root]
        names = leaves + internal
        index = {name: i for i, name in enumerate(names)}
        index[root] = -1
        parents = [index[parent_of[name]] for name in names]
        try:
            return cls(names, parents, len(leaves), root_name=root)
        except HierarchyError as exc:  # a cycle beside the root, a name with a tab...: say which file
            raise HierarchyError(f"{source}: {exc}") from None

    @classmethod
    def from_paths(cls, paths: Sequence[Sequence[str]], *, root_name: str = "root",
                   source: str = "paths") -> Hierarchy:
        """Build a tree from one label path per class (``("animal", "dog", "husky")``), in class order.

        A node is identified by its whole path; it is named by its last component, or by the
        joined path where two nodes would share a name. O(total path length).
        """
        child_of: dict[tuple[int, str], int] = {}  # (parent node, component) -> node, in order of appearance
        parent: list[int] = []
        label: list[str] = []
        leaf_node: list[int] = []
        for line, path in enumerate(paths, start=1):
            path = tuple(path)
            if not path or "" in path:
                raise HierarchyError(f"{source}, class {line}: empty path component in {'/'.join(path)!r}")
            if len(path) > MAX_DEPTH:
                raise HierarchyError(f"{source}, class {line}: the path is {len(path)} levels deep (limit "
                                     f"{MAX_DEPTH}); merge single-child chains")
            node = -1
            for part in path:
                new = len(parent)
                node_next = child_of.setdefault((node, part), new)
                if node_next == new:
                    parent.append(node)
                    label.append(part)
                node = node_next
            leaf_node.append(node)

        def joined(node: int) -> str:
            parts = []
            while node >= 0:
                parts.append(label[node])
                node = parent[node]
            return "/".join(reversed(parts))

        uses = Counter(leaf_node)
        if len(uses) != len(leaf_node):
            dup = next(node for node in leaf_node if uses[node] > 1)
            raise HierarchyError(f"{source}: the path {joined(dup)!r} is given twice")
        supers = set(parent)
        supers.discard(-1)
        if not supers.isdisjoint(uses):  # node ids follow the paths: the smallest is the first one met
            raise HierarchyError(f"{source}: class {joined(min(supers.intersection(uses)))!r} is also a super-class "
                                 "of another class; every class must be a leaf")
        ordered = leaf_node + sorted(supers)
        names = list(map(label.__getitem__, ordered))
        position = dict(zip(ordered, range(len(ordered))))
        counts = Counter(label)
        if len(counts) != len(label) or root_name in counts:
            shared = [k for k, name in enumerate(names) if counts[name] > 1 or name == root_name]
            # a shared name is replaced by the node's whole path: refuse before that grows quadratically
            length = [0] * len(parent)
            for node, p in enumerate(parent):
                length[node] = len(label[node]) + (length[p] + 1 if p >= 0 else 0)
            total = sum(length[ordered[k]] for k in shared)
            if total > MAX_JOINED_NAMES:
                raise HierarchyError(f"{source}: {len(shared)} nodes share their names with other nodes, and naming "
                                     f"them by their paths would take {total} characters (limit "
                                     f"{MAX_JOINED_NAMES}); give the nodes distinct names")
            for k in shared:
                names[k] = joined(ordered[k])
        parents = [position[parent[node]] if parent[node] >= 0 else -1 for node in ordered]
        try:
            return cls(names, parents, len(leaf_node), root_name=root_name)
        except HierarchyError as exc:  # a name with a tab, a chain too deep...: say which file
            raise HierarchyError(f"{source}: {exc}") from None

    @classmethod
    def read(cls, path: str | Path, format: str | None = None, *,
             classes: Sequence[str] | None = None) -> Hierarchy:
        """Read a tree from a file.

        Parameters
        ----------
        path : a hierarchy file (pairs with ``<path>.names.tsv``, isa, NBDT JSON or paths).
        format : one of :data:`hseval.tree.file_read.FORMATS`, or None to detect it.
        classes : the dataset's class names; orders (and checks) the leaves for name-based formats.

        Returns
        -------
        Hierarchy

        Raises
        ------
        HierarchyError
            one line naming the file and line (a cycle, two parents, an unknown class...).

        Example
        -------
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "tree.txt"
        >>> _ = path.write_text("animal/cat\\nanimal/dog\\ncar\\n")
        >>> tree = Hierarchy.read(path, "paths")
        >>> tree.leaf_names, tree.max_depth
        (('cat', 'dog', 'car'), 2)
        """
        from hseval.tree.file_read import read_hierarchy

        return read_hierarchy(path, format, classes=classes)

    def reorder_leaves(self, classes: Sequence[str], *, source: str = "classes") -> Hierarchy:
        """The same tree with its leaves in the order of ``classes`` (the same names, once each); the
        super-classes keep their numbering, and a tree already in that order is returned as is.
        ``source`` names the class list in the error raised when it names other classes."""
        classes = [str(c) for c in classes]
        if classes == list(self.leaf_names):
            return self
        seen: set[str] = set()
        for name in classes:
            if name in seen:
                raise HierarchyError(f"{source}: class {name!r} is listed twice; list each class once")
            if name not in self._index or self._index[name] >= self._num_leaves:
                raise HierarchyError(f"{source}: class {name!r} is not a leaf of the tree")
            seen.add(name)
        missing = next((name for name in self.leaf_names if name not in seen), None)
        if missing is not None:
            raise HierarchyError(f"{source}: leaf {missing!r} of the tree is not in the class list")
        return self.renumbered([*classes, *self.node_names[self._num_leaves:]])

    def renumbered(self, names: Sequence[str]) -> Hierarchy:
        """The same tree with its nodes numbered in the order of ``names`` (every node once, the
        leaves first: a permutation of the leaves and one of the super-classes)."""
        names = [str(n) for n in names]
        if sorted(names[: self._num_leaves]) != sorted(self.leaf_names) or sorted(names) != sorted(self._names):
            raise HierarchyError("renumbered: give every node once, the leaves first")
        position = {name: k for k, name in enumerate(names)}
        old = self.parents.tolist()
        parents = [position[self._names[old[self._index[name]]]] if old[self._index[name]] >= 0 else -1
                   for name in names]
        return Hierarchy(names, parents, self._num_leaves, root_name=self._root_name)

    def write(self, path: str | Path, format: str | None = None) -> None:
        """Write the tree atomically (format from the extension when None: .json = nbdt,
        else pairs). The pairs format also writes ``<path>.names.tsv``. The file reads back
        (format detected) as an equal tree, or nothing is written and HierarchyError says which
        node the format cannot hold and which formats can."""
        from hseval.tree.file_read import write_hierarchy

        write_hierarchy(self, path, format)

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
        """(|P|, max_depth) int64: row i is the path of node i (its ancestor at depth 1, 2, ...,
        then i itself), padded with -1."""
        table = np.full((self.num_nodes, self.max_depth), -1, dtype=np.int64)
        # super-classes are sorted by depth, so a parent's row is ready before its children's
        for i in np.argsort(self._depth, kind="stable").tolist():
            p, k = self._parents[i], self._depth[i]
            if p >= 0:
                table[i, : k - 1] = table[p, : k - 1]
            table[i, k - 1] = i
        return _readonly(table)

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
        data = np.ones(len(rows), dtype=np.int8)
        return sp.csr_array((data, (rows, cols)), shape=(self.num_nodes, self.num_nodes))

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

        Trees of up to :data:`LCA_TABLE_MAX_BYTES` worth of node pairs look every pair up in a
        table of all LCA depths (built on first use); larger ones compare ancestor rows."""
        table = self.lca_depth_table
        if table is None:
            return self._lca_depth_by_rows(a, b)
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        if a.size and b.size and (min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= len(table)):
            return self._lca_depth_by_rows(a, b)  # the same IndexError, or -k counted from the end
        # one flat gather is faster than numpy's two-index fancy indexing
        return table.ravel()[a * len(table) + b].astype(np.int64)

    @cached_property
    def lca_depth_table(self) -> np.ndarray | None:
        """(|P|, |P|) read-only uint8 (uint16 for trees deeper than 255): ``T[a, b]`` is the depth
        of the LCA of nodes a and b; None when it would take more than :data:`LCA_TABLE_MAX_BYTES`.

        Built level by level in O(|P|² + |P|·depth): node a's row is its parent's row (the LCA
        with anything outside a's subtree is the parent's LCA with it), then the depth of a across
        a's subtree, whose (ancestor, node) pairs are the columns of :attr:`ancestor_table`."""
        n = self.num_nodes
        dtype = np.uint8 if self.max_depth <= np.iinfo(np.uint8).max else np.uint16
        if n * n * np.dtype(dtype).itemsize > LCA_TABLE_MAX_BYTES:
            return None
        table = np.zeros((n, n), dtype=dtype)  # the root's row: 0 everywhere
        ancestors = self.ancestor_table
        by_depth = np.argsort(self._depth, kind="stable")
        starts = np.searchsorted(self._depth[by_depth], np.arange(1, self.max_depth + 2))
        for depth in range(1, self.max_depth + 1):
            level = by_depth[starts[depth - 1]: starts[depth]]
            if depth > 1:
                table[level] = table[self._parents[level]]
            column = ancestors[:, depth - 1]
            below = np.flatnonzero(column >= 0)  # nodes of depth >= depth, under column[below]
            table[column[below], below] = depth
        return _readonly(table)

    def _lca_depth_by_rows(self, a: np.ndarray | Sequence[int], b: np.ndarray | Sequence[int]) -> np.ndarray:
        """:meth:`lca_depth` without the table: the length of the common prefix of the two paths."""
        ta = self.ancestor_table[np.asarray(a, dtype=np.int64)]
        tb = self.ancestor_table[np.asarray(b, dtype=np.int64)]
        same = (ta == tb) & (ta >= 0)
        return np.cumprod(same, axis=-1).sum(axis=-1)

    def tree_distance(self, a: np.ndarray | Sequence[int], b: np.ndarray | Sequence[int]) -> np.ndarray:
        """Number of edges on the path between each pair of nodes."""
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        return self._depth[a] + self._depth[b] - 2 * self.lca_depth(a, b)

    # ----------------------------------------------------------------- conversions
    def to_dict(self) -> dict:
        """Plain JSON types; :meth:`from_dict` inverts it."""
        return {"root": self._root_name, "num_leaves": self._num_leaves,
                "names": list(self._names), "parents": self._parents.tolist()}

    @classmethod
    def from_dict(cls, data: dict) -> Hierarchy:
        try:
            return cls(data["names"], data["parents"], int(data["num_leaves"]), root_name=str(data["root"]))
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
                and self._root_name == other._root_name and np.array_equal(self._parents, other._parents))

    def __hash__(self) -> int:
        return hash((self._names, self._num_leaves, self._parents.tobytes()))

    def __len__(self) -> int:
        return self.num_nodes

    def __repr__(self) -> str:
        return (f"Hierarchy(num_leaves={self.num_leaves}, num_nodes={self.num_nodes}, "
                f"max_depth={self.max_depth}, root={self._root_name!r})")


def natural_key(name: str) -> tuple:
    """Sort key that orders embedded integers numerically ('n2' < 'n10', '9' < '10'), in any
    script's decimal digits and at any length (compared as digit strings, never converted)."""
    simple = _TEXT_NUMBER.fullmatch(name)  # the common 'n01440764', 'c12', '42', quickly
    if simple is not None:
        text, digits = simple.groups()
        digits = digits.lstrip("0")
        return ((1, 0, text), (0, len(digits), digits)) if text else ((0, len(digits), digits),)
    key = []
    for k, tok in enumerate(_NUMBER.split(name)):
        if not tok:
            continue
        if k % 2:  # a run of decimal digits
            if not tok.isascii():
                import unicodedata

                tok = "".join(str(unicodedata.decimal(ch)) for ch in tok)
            digits = tok.lstrip("0")
            key.append((0, len(digits), digits))
        else:
            key.append((1, 0, tok))
    return tuple(key)


def _check_names(names: list[str]) -> None:
    if "" not in names and not _FORBIDDEN.search("".join(names)) and len(set(names)) == len(names):
        return  # the common case, checked in C; the loop below finds which name is wrong
    seen: set[str] = set()
    for name in names:
        if not name or _FORBIDDEN.search(name):
            raise HierarchyError(f"node name {name!r} is empty or holds a tab or line break; rename it")
        if name in seen:
            raise HierarchyError(f"two nodes are called {name!r}; node names must be unique")
        seen.add(name)


def _depths(names: list[str], parents: np.ndarray) -> np.ndarray:
    """Depth of every node, raising on a cycle; O(|P| log depth) by pointer doubling (no recursion)."""
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


def _depths_by_walks(names: list[str], parents: np.ndarray) -> np.ndarray:
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
