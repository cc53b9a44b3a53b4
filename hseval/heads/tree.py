"""The hierarchically connected layer ``logits = φᵀ Δ S H`` without a dense H.

``S = diag(scale)`` holds the per-node factor (the radius ``R_p`` of the paper's D, possibly
divided by ``‖δ_p‖`` for the normalised head). The class vectors follow the paper's recursion
``w_<p,i> = w_p + s_<p,i> δ_<p,i>`` with ``w_root = 0``: the super-classes are filled level by
level (they are sorted by depth in :class:`~hseval.hierarchy.Hierarchy`), then each leaf adds its
own column to its parent's vector. The backward pass runs the recursion upwards, summing each
node's gradient into its parent's. Memory traffic is O(|P|·d) per step in both directions; the
leaf rows of the gradient are written by the matmul itself, straight into the result.

Rows are nodes: ``delta`` is ``(|P|, d)``, the layout of ``nn.Linear.weight``, so that a node's
vector is contiguous.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from hseval.hierarchy import Hierarchy

__all__ = ["TreeIndex", "tree_linear", "leaf_weights", "all_node_weights"]


class TreeIndex(nn.Module):
    """Index tensors of a hierarchy, as non-persistent buffers so that they follow ``.to()``.

    Super-class ``q`` (canonical index ``L + q``) is row ``q`` of the super-class table; row
    ``n_super`` is the root (all zeros).
    """

    def __init__(self, hierarchy: Hierarchy) -> None:
        super().__init__()
        L, P = hierarchy.num_leaves, hierarchy.num_nodes
        self.num_leaves, self.num_nodes = L, P
        self.num_super = P - L
        parents = hierarchy.parents
        root_row = self.num_super
        super_parent = np.where(parents >= 0, parents - L, root_row)
        self.register_buffer("leaf_parent", torch.as_tensor(super_parent[:L], dtype=torch.long), persistent=False)
        depth = hierarchy.depth[L:]
        self.levels: list[tuple[int, int]] = []
        for k in range(1, int(depth.max(initial=0)) + 1):
            rows = np.flatnonzero(depth == k)
            if len(rows):
                start, stop = int(rows[0]), int(rows[-1]) + 1
                assert stop - start == len(rows), "super-classes must be sorted by depth"
                self.levels.append((start, stop))
                if k > 1:
                    self.register_buffer(f"level{len(self.levels) - 1}_parent",
                                         torch.as_tensor(super_parent[L + start: L + stop], dtype=torch.long),
                                         persistent=False)

    def level_parent(self, level: int) -> torch.Tensor:
        return getattr(self, f"level{level}_parent")


def _super_weights(delta: torch.Tensor, scale: torch.Tensor | None, index: TreeIndex) -> torch.Tensor:
    """(n_super + 1, d): the super-class vectors w_q, plus a zero row for the root."""
    L, d = index.num_leaves, delta.shape[1]
    w = delta.new_empty(index.num_super + 1, d)
    w[index.num_super].zero_()
    sup = delta[L:]
    for level, (a, b) in enumerate(index.levels):
        if level == 0:
            if scale is None:
                w[a:b].copy_(sup[a:b])
            else:
                torch.mul(sup[a:b], scale[L + a: L + b, None], out=w[a:b])
        else:
            base = w[:a].index_select(0, index.level_parent(level))
            if scale is None:
                torch.add(base, sup[a:b], out=w[a:b])
            else:
                torch.addcmul(base, sup[a:b], scale[L + a: L + b, None], out=w[a:b])
    return w


def leaf_weights(delta: torch.Tensor, scale: torch.Tensor | None, index: TreeIndex) -> torch.Tensor:
    """(|L|, d) class vectors W (not tracked by autograd; use :func:`tree_linear` to train)."""
    with torch.no_grad():
        L = index.num_leaves
        w = _super_weights(delta, scale, index).index_select(0, index.leaf_parent)
        if scale is None:
            return w.add_(delta[:L])
        return w.addcmul_(delta[:L], scale[:L, None])


def all_node_weights(delta: torch.Tensor, scale: torch.Tensor | None, index: TreeIndex) -> torch.Tensor:
    """(|P|, d) vectors w_p of every non-root node, differentiable (for evaluation and tests)."""
    L = index.num_leaves
    scaled = delta if scale is None else delta * scale[:, None]
    levels: list[torch.Tensor] = []
    for level, (a, b) in enumerate(index.levels):
        own = scaled[L + a: L + b]
        if level:
            own = own + torch.cat(levels).index_select(0, index.level_parent(level))
        levels.append(own)
    zero = scaled.new_zeros(1, scaled.shape[1])
    table = torch.cat([*levels, zero])
    return torch.cat([scaled[:L] + table.index_select(0, index.leaf_parent), table[:-1]])


class _TreeLinear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, delta, scale, index):  # type: ignore[override]
        weight = leaf_weights(delta, scale, index)
        ctx.save_for_backward(x, weight, delta, scale)
        ctx.index = index
        return F.linear(x, weight)

    @staticmethod
    def backward(ctx, grad_out):  # type: ignore[override]
        x, weight, delta, scale = ctx.saved_tensors
        index: TreeIndex = ctx.index
        L, P = index.num_leaves, index.num_nodes
        grad_out = grad_out.contiguous()
        grad_x = grad_out @ weight if ctx.needs_input_grad[0] else None
        if not (ctx.needs_input_grad[1] or ctx.needs_input_grad[2]):
            return grad_x, None, None, None
        # rows 0..L-1: leaf gradients (written by the matmul); L..P-1: super-classes; P: root
        grad = delta.new_empty(P + 1, delta.shape[1])
        torch.mm(grad_out.t(), x, out=grad[:L])
        sup = grad[L:]
        sup.zero_()
        sup.index_add_(0, index.leaf_parent, grad[:L])
        for level in range(len(index.levels) - 1, 0, -1):
            a, b = index.levels[level]
            sup[:a].index_add_(0, index.level_parent(level), sup[a:b])
        grad = grad[:P]
        grad_scale = None
        if ctx.needs_input_grad[2]:
            grad_scale = torch.einsum("pd,pd->p", grad, delta)
        if scale is not None:
            grad.mul_(scale[:, None])
        return grad_x, (grad if ctx.needs_input_grad[1] else None), grad_scale, None


def tree_linear(x: torch.Tensor, delta: torch.Tensor, scale: torch.Tensor | None, index: TreeIndex) -> torch.Tensor:
    """Leaf logits ``x @ (Δ S H)``: x (B, d), delta (|P|, d), scale (|P|,) or None -> (B, |L|)."""
    return _TreeLinear.apply(x, delta, scale, index)
