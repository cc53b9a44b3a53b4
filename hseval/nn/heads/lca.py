"""Where every class meets the target in the tree, batch by batch: what the losses of Making Better
Mistakes (HXE and soft labels) need, at any tree size and for leaves at any depth.

For a target y of depth h and a class j, ``u = h − depth(LCA(j, y))`` counts the levels from y up
to where j joins its path: ``u = 0`` for y itself, 1 for the classes under y's parent, ..., h for the
classes that meet y only at the root. The classes with ``u ≤ t`` are exactly the leaves under y's
ancestor at depth h − t, so every sum over an ancestor of the target (its probability, its share of
the soft label) is a sum over the buckets ``u ≤ t``: a (B, |L|) index and (B, h + 1) buckets, never
an |L|×|L| matrix nor a [|L|, |L|, depth] tensor as the authors' code builds.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from hseval.core.errors import ConfigError
from hseval.nn.heads.plain import PlainHead
from hseval.tree.hierarchy import Hierarchy

__all__ = ["TargetBuckets", "BucketHead", "top_chain", "needs_two_classes", "bucket_sizes", "bucket_logsumexp"]


def top_chain(hierarchy: Hierarchy) -> int:
    """How many nodes below the root every class shares: the length of the single-child chain that
    starts at the root (0 when the root has two children or more). The largest distance between
    two classes is ``max_depth − top_chain``."""
    children, node, chain = hierarchy.children, -1, 0
    while len(children[node]) == 1 and not hierarchy.is_leaf(children[node][0]):
        node, chain = children[node][0], chain + 1
    return chain


def needs_two_classes(head: str, hierarchy: Hierarchy) -> None:
    """Refuse, for ``head``, a tree of one class: the largest distance between two classes, by which
    its targets are scaled, is 0 there."""
    if hierarchy.num_leaves < 2:
        raise ConfigError(f"head {head!r} needs a tree of two classes or more: its targets are scaled by the largest "
                          "distance between two classes, which is 0 here")


def bucket_sizes(hierarchy: Hierarchy) -> np.ndarray:
    """(|L|, max_depth + 1) int64: how many classes fall in bucket u for target y (1 for u = 0, y
    itself; 0 past y's depth)."""
    leaves = hierarchy.num_leaves
    under = np.asarray(hierarchy.H.sum(axis=1)).ravel()  # classes under each node
    table = hierarchy.ancestor_table[:leaves]
    # classes under y's ancestor at depth k: k = 0 the root (all), then down y's path; 0 past y
    inside = np.concatenate([np.full((leaves, 1), leaves), np.where(table >= 0, under[np.maximum(table, 0)], 0),
                             np.zeros((leaves, 1), dtype=np.int64)], axis=1)
    k = hierarchy.depth[:leaves, None] - np.arange(hierarchy.max_depth + 1)  # the LCA's depth for bucket u
    rows = np.arange(leaves)[:, None]
    return np.where(k >= 0, inside[rows, np.maximum(k, 0)] - inside[rows, np.maximum(k, 0) + 1], 0)


class TargetBuckets(nn.Module):
    """The bucket ``u`` of every class for a batch of targets (see the module's docstring).

    Holds the classes' ancestor rows and depths as buffers (they follow the head to its device);
    :meth:`forward` costs ``max_depth`` comparisons of (B, |L|) small integers."""

    def __init__(self, hierarchy: Hierarchy) -> None:
        super().__init__()
        rows = hierarchy.ancestor_table[: hierarchy.num_leaves]  # (|L|, max_depth), -1 past a class's depth
        self.register_buffer("ancestors", torch.as_tensor(rows.T.astype(np.int32)).contiguous(), persistent=False)
        self.register_buffer("depth", torch.tensor(hierarchy.depth[: hierarchy.num_leaves]), persistent=False)
        self.count = torch.uint8 if hierarchy.max_depth <= 255 else torch.int16  # depths up to MAX_DEPTH (1,000)

    def forward(self, target: torch.Tensor) -> torch.Tensor:
        """(B, |L|) int64 bucket of each class for each of the (B,) targets."""
        mine = self.ancestors[:, target]  # (max_depth, B): the targets' paths
        mine = torch.where(mine >= 0, mine, -2)  # a target's padding never equals a class's (-1)
        meet = torch.zeros(len(target), self.ancestors.shape[1], dtype=self.count, device=target.device)
        for row, own in zip(self.ancestors, mine):  # depth by depth: the paths agree down to the LCA
            meet += row[None, :] == own[:, None]
        return self.depth[target][:, None] - meet  # int64: depth(y) − depth(LCA)


class BucketHead(PlainHead):
    """A flat linear layer whose loss reads, for each target, its row of a per-class ``table``
    (|L|, max_depth + 1) by bucket: HXE's coefficients, the soft labels' targets."""

    def __init__(self, hierarchy: Hierarchy, in_features: int, table: np.ndarray) -> None:
        super().__init__(hierarchy, in_features)
        self.buckets = TargetBuckets(hierarchy)
        self.register_buffer("table", torch.tensor(table, dtype=torch.get_default_dtype()), persistent=False)


def bucket_logsumexp(logits: torch.Tensor, buckets: torch.Tensor, size: int) -> torch.Tensor:
    """(B, size) log-sum-exp of the ``logits`` (B, |L|) of the classes with bucket ``u ≤ t``, for
    t = 0..size−1: ``[:, t]`` is the log of the unnormalised probability of the target's ancestor t
    levels up (``[:, depth(y)]`` onwards, of every class).

    Each bucket is shifted by its own largest logit, so a subtree far below the best class keeps its
    (tiny) probability instead of underflowing to 0; the cumulative sums start from the target's
    bucket, which is never empty, so every value and gradient is finite."""
    shape = (logits.shape[0], size)
    peak = torch.full(shape, -torch.inf, dtype=logits.dtype, device=logits.device)
    peak = peak.scatter_reduce(1, buckets, logits.detach(), "amax")
    sums = torch.zeros(shape, dtype=logits.dtype, device=logits.device)
    sums = sums.scatter_add(1, buckets, (logits - peak.gather(1, buckets)).exp())
    # a bucket with classes sums to at least 1 (its peak), an empty one to 0: -inf once its peak is
    # added, which the cumulative sums ignore (the clamp never touches a bucket with classes)
    return torch.logcumsumexp(sums.clamp_min(0.5).log() + peak, dim=1)
