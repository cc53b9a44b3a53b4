"""Node probabilities, and the sums over the tree that every decoding rule and node metric reads.

A classifier that may answer with any node ("dog" instead of "husky") is read through the
probability of each node, ``p(n) = Σ_{l ∈ leaves(n)} p(l)``, with ``p(root) = 1``; no |N|×|L|
matrix is made. The classes are grouped by parent (a *family* of sibling classes): one pass over
a block's class probabilities gives each family's sum, most probable class and second largest
probability, and the super-classes' probabilities follow from the families' sums (a sparse
product of the size of the tree's super-classes).

Only the most probable class of a family can ever be chosen by a rule of
:mod:`hseval.metrics.decisions`: siblings share their depth, their path above and their gain of
information, so every rule's criterion and every metric's expectation is non-decreasing in the
class's own probability (non-increasing for a distance). A block is therefore read in *compact
columns*: each family's most probable class (a node that differs from sample to sample), every
super-class, and the root — at 10,000 classes in 500 families about 1,000 columns instead of
10,500. :class:`NodeBlock` holds them with the node of each, and, computed when first read, the
sums along each node's path from the root (``S(n) = Σ_{a ∈ path(n)} p(a)``, root excluded: the
expected depth of n's lowest common ancestor with the true class; per depth of the classes where
they lie at several depths; weighted by the gain of information), and the most probable node of
each depth and of each number of classes below a node (the fronts of the threshold rules,
:mod:`hseval.metrics.curves`). Ties go to the deeper node, then to the lower index.

Node indices are the tree's canonical ones; the root is -1, as in
:meth:`hseval.tree.hierarchy.Hierarchy.lca`. Information: ``info(n) = log|L| − log|leaves(n)|``
(Valmadre, NeurIPS 2022, with a uniform prior over the classes; the base cancels in every ratio).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from hseval.core.arguments import Array, checked
from hseval.metrics import _checks
from hseval.tree.hierarchy import Hierarchy

__all__ = ["NodeLayout", "NodeBlock", "layout_of", "node_probabilities", "softmax", "NONE"]

NONE = np.iinfo(np.int64).max
"""The node of a column that holds no node (a family's second class, when ties are broken)."""


def softmax(logits: np.ndarray) -> np.ndarray:
    """scipy.special.softmax(logits, axis=1) of (B, |L|) float64 logits, the same values, without its temporaries."""
    out = logits - logits.max(axis=1, keepdims=True)
    np.exp(out, out=out)
    out /= out.sum(axis=1, keepdims=True)
    return out


@functools.lru_cache(maxsize=8)
def layout_of(tree: Hierarchy) -> NodeLayout:
    """The :class:`NodeLayout` of ``tree``, made once per tree."""
    return NodeLayout(tree)


def _runs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(starts, sizes) of the runs of equal values in ``keys`` (sorted)."""
    starts = np.r_[0, np.flatnonzero(np.diff(keys)) + 1] if len(keys) else np.zeros(0, np.int64)
    return starts, np.diff(np.r_[starts, len(keys)])


class NodeLayout:
    """What decoding needs of a tree, made once. The compact columns are the families of sibling
    classes (``families`` of them, each standing for its most probable class), then the
    super-classes and the root, ordered by depth from the deepest (the root last); per column its
    depth, number of classes below, information, gain of information from its parent and parent
    column. ``node[c]`` is the node of a super-class column or the root's -1 (a family's column:
    -2, its node is per sample)."""

    def __init__(self, tree: Hierarchy) -> None:
        L, N = tree.num_leaves, tree.num_nodes
        self.tree, self.num_leaves, self.num_nodes, self.max_depth = tree, L, N, tree.max_depth
        parent = np.r_[np.where(tree.parents >= 0, tree.parents, N), -1]  # node N is the root
        self.node_depth = np.r_[tree.depth, 0]                          # by node index, the root's at -1
        count = np.r_[np.ones(L, np.int64), np.zeros(N - L + 1, np.int64)]
        for d in range(tree.max_depth, 0, -1):
            at = np.flatnonzero(tree.depth == d)
            np.add.at(count, parent[at], count[at])
        self.node_info = np.log(L) - np.log(count)
        self.leaf_depths = np.unique(tree.depth[:L])
        # the classes by family (by parent), each family's classes in node order
        self.by_family = np.lexsort((np.arange(L), parent[:L]))
        self.family_starts, self.family_sizes = _runs(parent[self.by_family])
        F = self.families = len(self.family_starts)
        family_parent = parent[self.by_family[self.family_starts]]
        self.family_of_class = np.empty(L, np.int64)
        self.family_of_class[self.by_family] = np.repeat(np.arange(F), self.family_sizes)
        # the columns: the families, then the super-classes and the root, deepest first
        inner = np.r_[np.arange(L, N), N]
        self.inner = inner[np.lexsort((inner, -self.node_depth[inner]))]
        self.column_of = np.full(N + 1, -1, np.int64)
        self.column_of[self.inner] = F + np.arange(len(self.inner))
        self.columns = F + len(self.inner)
        self.node = np.r_[np.full(F, -2), np.where(self.inner == N, -1, self.inner)]
        self.is_class = np.arange(self.columns) < F
        self.family_parent = self.column_of[family_parent]
        self.parent = np.r_[self.family_parent, self.column_of[parent[self.inner]]]
        self.parent[-1] = -1
        self.depth = np.r_[self.node_depth[self.by_family[self.family_starts]], self.node_depth[self.inner]]
        self.family_depth = self.depth[:F]
        self.count = np.r_[np.ones(F, np.int64), count[self.inner]]
        self.info = np.log(L) - np.log(self.count)
        self.delta_info = self.info - np.where(self.parent >= 0, self.info[self.parent], 0.0)
        # ancestors-or-self of every column but the root, as (ancestor, column) pairs
        rows, at = np.nonzero(tree.ancestor_table[self.inner[:-1]] >= 0)
        pairs = [(self.column_of[tree.ancestor_table[self.inner[rows], at]], F + rows)]
        under = np.flatnonzero(family_parent < N)                       # families under a super-class
        rows, at = np.nonzero(tree.ancestor_table[family_parent[under]] >= 0)
        families = under[rows]
        pairs += [(self.column_of[tree.ancestor_table[family_parent[families], at]], families),
                  (np.arange(F), np.arange(F))]
        self.ancestry = tuple(np.concatenate(part) for part in zip(*pairs))
        # the super-classes' mass is the sum of the families' below them (each family at one depth)
        above = (self.ancestry[1] < F) & (self.ancestry[0] >= F)
        self.up = sp.csr_array((np.ones(above.sum()), (self.ancestry[1][above], self.ancestry[0][above] - F)),
                               shape=(F, len(self.inner)))
        # the children of each column (siblings together, by parent), and the groups the fronts search
        child = np.flatnonzero(self.parent >= 0)
        self.siblings = child[np.lexsort((child, self.parent[child]))]
        self.sibling_starts, _ = _runs(self.parent[self.siblings])
        self.sibling_group = np.full(self.columns, -1, np.int64)
        self.sibling_group[self.parent[self.siblings[self.sibling_starts]]] = np.arange(len(self.sibling_starts))
        self.order = np.lexsort((np.arange(self.columns), -self.depth))
        self.depth_starts, _ = _runs(-self.depth[self.order])
        self.by_count = np.lexsort((np.arange(self.columns), -self.depth, self.count))
        self.count_starts, _ = _runs(self.count[self.by_count])

    @functools.cache  # noqa: B019 (a layout lives as long as its tree's cache entry)
    def paths(self, weights: str | None) -> sp.csc_array:
        """(columns, columns) sparse: w(a) where column a is an ancestor-or-self of column n (the
        root excluded); w = 1 (None) or the gain of information from the parent ("info")."""
        ancestors, columns = self.ancestry
        values = np.ones(len(ancestors)) if weights is None else self.delta_info[ancestors]
        return sp.csc_array((values, (ancestors, columns)), shape=(self.columns, self.columns))


class NodeBlock:
    """A block of samples through the tree: ``probs`` (B, |L|) class probabilities (float64, rows
    summing to 1) as compact columns (:class:`NodeLayout`): ``p`` their probabilities and ``nodes``
    their nodes, with path sums and fronts computed when first read."""

    def __init__(self, layout: NodeLayout, probs: np.ndarray) -> None:
        self.layout, self.probs = layout, probs
        F = layout.families
        grouped = np.take(probs, layout.by_family, axis=1)
        starts, sizes = layout.family_starts, layout.family_sizes
        self.family_sums = np.add.reduceat(grouped, starts, axis=1)
        best = np.maximum.reduceat(grouped, starts, axis=1)
        first = np.where(grouped == np.repeat(best, sizes, axis=1), np.arange(grouped.shape[1]), NONE)
        at = np.minimum.reduceat(first, starts, axis=1)
        grouped[np.arange(len(probs))[:, None], at] = -np.inf
        self.second = np.maximum.reduceat(grouped, starts, axis=1)      # -inf: a family of one
        self.p = np.empty((len(probs), layout.columns))
        self.p[:, :F] = best
        self.p[:, F:-1] = (self.family_sums @ layout.up)[:, :-1]
        self.p[:, -1] = 1.0
        np.clip(self.p, 0.0, 1.0, out=self.p)
        self.nodes = np.empty((len(probs), layout.columns), np.int64)
        self.nodes[:, :F] = layout.by_family[at]
        self.nodes[:, F:] = layout.node[F:]

    def with_levels(self, levels: Mapping[int, np.ndarray]) -> NodeBlock:
        """The same samples with their super-classes' probabilities read from a model's own level
        scores: ``levels`` {depth: (B, nodes of that depth) probabilities, columns in
        ``nodes_at_depth`` order}; the classes keep theirs (a class at a scored depth too), and so
        do the super-classes of a depth not given (their sums)."""
        out = NodeBlock.__new__(NodeBlock)
        out.layout, out.probs, out.family_sums, out.second, out.nodes = (
            self.layout, self.probs, self.family_sums, self.second, self.nodes)
        out.p = self.p.copy()
        for depth, values in levels.items():
            nodes = self.layout.tree.nodes_at_depth(depth)
            inner = nodes >= self.layout.num_leaves
            out.p[:, self.layout.column_of[nodes[inner]]] = np.asarray(values)[:, inner]
        return out

    def pick(self, values: np.ndarray, *, lowest: bool = False) -> np.ndarray:
        """(B,) the node of the largest (``lowest``: smallest) of each row's ``values`` (B, columns);
        ties to the deeper node, then to the lower index."""
        depth = self.layout.depth
        best = values.min(axis=1) if lowest else values.max(axis=1)
        tied = values == best[:, None]
        deepest = np.where(tied, depth, -1).max(axis=1)
        return np.where(tied & (depth == deepest[:, None]), self.nodes, NONE).min(axis=1)

    def masses(self, depth: int) -> tuple[np.ndarray, np.ndarray]:
        """(B, columns) the probability below each column of the classes at ``depth``, and its total (B,)."""
        layout = self.layout
        at = layout.family_depth == depth
        out = np.zeros_like(self.p)
        out[:, : layout.families] = np.where(at, self.p[:, : layout.families], 0.0)
        out[:, layout.families:-1] = (self.family_sums[:, at] @ layout.up[at])[:, :-1]
        out[:, -1] = self.family_sums[:, at].sum(axis=1)
        return out, out[:, -1].copy()

    def path_sums(self, values: np.ndarray, weights: str | None = None) -> np.ndarray:
        """(B, columns) ``Σ_{a ∈ path(n)} w(a)·values[:, a]`` over each column's ancestors-or-self
        (the root excluded: its column is 0); w = 1, or the gain of information ("info")."""
        return values @ self.layout.paths(weights)

    @cached_property
    def depth_sums(self) -> np.ndarray:
        """(B, columns) S(n): the expected depth of n's lowest common ancestor with the true class."""
        return self.path_sums(self.p)

    @cached_property
    def info_sums(self) -> np.ndarray:
        """(B, columns) the expected information of n's lowest common ancestor with the true class,
        ``Σ_{a ∈ path(n)} p(a)·(info(a) − info(parent(a)))``."""
        return self.path_sums(self.p, "info")

    def class_risk(self) -> np.ndarray:
        """(B, |L|) each class's expected Making Better Mistakes distance ``H − depth(LCA)`` under the
        probabilities (CRM's risk, Karthik et al.): ``H·Σp − S(parent) − p_k·(H + 1 − depth(k))``,
        the parent's path sum shared by the family (:mod:`hseval.metrics.crm`)."""
        layout, H = self.layout, self.layout.max_depth
        above = np.take(self.depth_sums[:, layout.family_parent], layout.family_of_class, axis=1)
        out = self.probs * (layout.node_depth[: layout.num_leaves] - (H + 1.0))
        out -= above
        out += H * self.probs.sum(axis=1, keepdims=True)
        return out

    @cached_property
    def by_class_depth(self) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """[(D, P_D, S_D)] for each depth D the classes lie at: their total probability (B,) and the
        path sums of their probability (B, columns), ``E[depth(LCA)·[depth(l) = D]]``."""
        depths = self.layout.leaf_depths
        if len(depths) == 1:
            return [(int(depths[0]), np.ones(len(self.probs)), self.depth_sums)]
        out = []
        for depth in depths.tolist():
            masses, total = self.masses(depth)
            out.append((depth, total, self.path_sums(masses)))
        return out

    def _front(self, order: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(best, node) of each group of ``order``'s columns: the largest probability and its node
        (ties to the deeper, then the lower index)."""
        p = np.take(self.p, order, axis=1)
        nodes = np.take(self.nodes, order, axis=1)
        depth = self.layout.depth[order]
        sizes = np.diff(np.r_[starts, len(order)])
        best = np.maximum.reduceat(p, starts, axis=1)
        tied = p == np.repeat(best, sizes, axis=1)
        deepest = np.maximum.reduceat(np.where(tied, depth, -1), starts, axis=1)
        tied &= depth == np.repeat(deepest, sizes, axis=1)
        return best, np.minimum.reduceat(np.where(tied, nodes, NONE), starts, axis=1)

    @cached_property
    def depth_front(self) -> tuple[np.ndarray, np.ndarray]:
        """(best, node), each (B, max_depth + 1): at each depth from 0 (the root) down, the largest
        node probability and its node."""
        best, node = self._front(self.layout.order, self.layout.depth_starts)
        return best[:, ::-1], node[:, ::-1]

    @cached_property
    def count_front(self) -> tuple[np.ndarray, np.ndarray]:
        """(best, node), each (B, groups): for each number of classes below a node, from 1 (the
        most informative) up, the largest node probability and its node."""
        return self._front(self.layout.by_count, self.layout.count_starts)

    @cached_property
    def siblings(self) -> tuple[np.ndarray, np.ndarray]:
        """(child, second), each (B, parents): each super-class's (and the root's) most probable
        child, as a column, and the second largest probability among its children (-inf for one)."""
        layout = self.layout
        order, starts = layout.siblings, layout.sibling_starts
        p = np.take(self.p, order, axis=1)
        nodes = np.take(self.nodes, order, axis=1)
        sizes = np.diff(np.r_[starts, len(order)])
        best = np.maximum.reduceat(p, starts, axis=1)
        tied = p == np.repeat(best, sizes, axis=1)
        first = np.minimum.reduceat(np.where(tied, nodes, NONE), starts, axis=1)
        winner = tied & (nodes == np.repeat(first, sizes, axis=1))
        at = np.minimum.reduceat(np.where(winner, np.arange(len(order)), NONE), starts, axis=1)
        p[np.arange(len(p))[:, None], at] = -np.inf
        second = np.maximum.reduceat(p, starts, axis=1)
        families = order < layout.families                               # a family's second class is a sibling too
        in_family = np.where(families, self.second[:, np.minimum(order, layout.families - 1)], -np.inf)
        second = np.maximum(second, np.maximum.reduceat(in_family, starts, axis=1))
        return order[at], second


@checked
def node_probabilities(probs: Array, tree: Hierarchy) -> np.ndarray:
    """``p(n) = Σ_{l ∈ leaves(n)} p(l)`` of every non-root node.

    Parameters
    ----------
    probs : (N, |L|) array_like
        Class probabilities (rows summing to 1), columns in the tree's class order.
    tree : Hierarchy

    Returns
    -------
    (N, |P|) ndarray of float64
        Columns in canonical node order (the classes first); the root's probability is 1.

    Raises
    ------
    ValueError
        If ``probs`` is not (N, |L|) rows of probabilities (each in [0, 1], summing to 1 within 0.01).

    Examples
    --------
    >>> import numpy as np
    >>> from hseval.tree.hierarchy import Hierarchy
    >>> from hseval.metrics import node_probabilities
    >>> tree = Hierarchy.from_paths([["animal", "cat"], ["animal", "dog"], ["car"]])
    >>> node_probabilities(np.array([[0.5, 0.3, 0.2]]), tree).round(3).tolist()  # cat, dog, car, animal
    [[0.5, 0.3, 0.2, 0.8]]
    """
    layout = layout_of(tree)
    probs = _checks.scores(probs, "probs", tree.num_leaves)
    _checks.probabilities(probs, fix="pass softmax outputs", rows_sum_to_one=True)
    block = NodeBlock(layout, probs)
    return np.concatenate([probs, block.p[:, layout.column_of[tree.num_leaves: tree.num_nodes]]], axis=1)
