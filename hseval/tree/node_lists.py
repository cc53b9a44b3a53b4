"""The node lists of a tree given as (parent, child) name pairs or as one label path per class:
what :meth:`Hierarchy.from_edges <hseval.tree.hierarchy.Hierarchy.from_edges>` and
:meth:`~hseval.tree.hierarchy.Hierarchy.from_paths` build from. Both take time linear in their
input, and each error names the input (``source``) and the first wrong edge or path.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import chain
from typing import Annotated, Any, NamedTuple

from pydantic import PlainValidator
from pydantic_core import PydanticCustomError

from hseval.core.errors import HierarchyError
from hseval.tree.naming import fresh_names, natural_key

__all__ = ["NodeLists", "MAX_JOINED_NAMES", "EdgePair", "lists_from_edges", "lists_from_paths", "lists_from_groups"]

MAX_JOINED_NAMES = 64 * 1024 * 1024  # characters of path-names that lists_from_paths may build


def _pair(value: Any) -> tuple:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != 2:
        raise PydanticCustomError("pair_type", "must be a (parent, child) pair of names")
    return tuple(value)


EdgePair = Annotated[tuple[str, str], PlainValidator(_pair)]
"""One item of :func:`lists_from_edges`'s ``edges``, as a checked argument (a list of two is one)."""


class NodeLists(NamedTuple):
    """The arguments of :class:`~hseval.tree.hierarchy.Hierarchy`: the leaves first."""

    names: list[str]
    parents: list[int]
    num_leaves: int
    root_name: str


def lists_from_edges(edges: Iterable[tuple[str, str]], *, classes: Sequence[str] | None, source: str) -> NodeLists:
    """The nodes of ``(parent, child)`` name pairs: the root is the one node that is never a
    child; the leaves are ordered as ``classes`` when given (every class a leaf, every leaf a
    class), else naturally; the super-classes in order of appearance."""
    edges = list(edges)
    parent_of = {child: parent for parent, child in edges}
    if len(parent_of) != len(edges) or any(child == parent for child, parent in parent_of.items()):
        parent_of = {}  # edge by edge, to name the first wrong one
        for parent, child in edges:
            if child == parent:
                raise HierarchyError(f"{source}: node {child!r} is its own parent (a cycle)")
            previous = parent_of.get(child)
            if previous == parent:  # not merged in silence: in a file of edges, a node's one line
                raise HierarchyError(f"{source}: node {child!r} is listed twice under {parent!r}; list each node once")
            if previous is not None:
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
    if classes is None:
        leaves.sort(key=natural_key)
    else:  # the classes, once each and exactly the leaves
        classes, leaf_set = [str(c) for c in classes], set(leaves)
        unknown = next((c for c in classes if c not in leaf_set), None)
        if unknown is not None:
            where = "an internal node of" if unknown in order else "not in"
            raise HierarchyError(f"{source}: class {unknown!r} is {where} the hierarchy; every class must be a leaf")
        extra = sorted(leaf_set - set(classes), key=natural_key)
        if extra:
            raise HierarchyError(f"{source}: leaf {extra[0]!r} is not a dataset class ({len(extra)} such leaves); "
                                 "remove it or add it to the class list")
        if len(set(classes)) != len(classes):
            seen: set[str] = set()
            twice = next(c for c in classes if c in seen or seen.add(c))
            raise HierarchyError(f"{source}: the class list names class {twice!r} twice; list each class once")
        leaves = classes
    leaf_set = set(leaves)
    names = leaves + [name for name in order if name not in leaf_set and name != root]
    index = {name: i for i, name in enumerate(names)}
    index[root] = -1
    return NodeLists(names, [index[parent_of[name]] for name in names], len(leaves), root)


def lists_from_paths(paths: Sequence[Sequence[str]], *, root_name: str, source: str) -> NodeLists:
    """The nodes of one label path per class, in class order. A node is identified by its whole
    path and named by its last component, or by the joined path where two nodes (or a node and
    the root) would share a name. The tree's depth is checked where the tree is built
    (:func:`hseval.tree.ancestry.canonical`, after its chains are merged where asked)."""
    child_of: dict[tuple[int, str], int] = {}  # (parent node, component) -> node, in order of appearance
    parent: list[int] = []
    label: list[str] = []
    leaf_node: list[int] = []
    for line, path in enumerate(paths, start=1):
        path = tuple(path)
        if not path or "" in path:
            raise HierarchyError(f"{source}, class {line}: empty path component in {'/'.join(path)!r}")
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
    position = dict(zip(ordered, range(len(ordered))))
    parents = [position[parent[node]] if parent[node] >= 0 else -1 for node in ordered]
    return NodeLists(names, parents, len(leaf_node), root_name)


def lists_from_groups(classes: Sequence[str], groups: Sequence[Sequence[str]], *, root_name: str,
                      source: str) -> NodeLists:
    """The nodes of ``classes`` under generated super-classes: ``groups[i]`` names the groups of
    class i from the top. The classes keep their names; a group or the root whose generated name
    a class already has takes the next free suffix (:func:`~hseval.tree.naming.fresh_names`)."""
    classes = [str(c) for c in classes]
    if len(groups) != len(classes):
        raise HierarchyError(f"{source}: {len(classes)} classes but {len(groups)} group paths; give one per class")
    taken = set(classes)
    rename = fresh_names(chain.from_iterable(groups), taken)
    root = fresh_names([root_name], taken.union(rename.values()))[root_name]
    paths = [(*map(rename.__getitem__, path), name) for path, name in zip(groups, classes)]
    return lists_from_paths(paths, root_name=root, source=source)
