"""The hierarchically connected layer ``logits = φᵀ Δ S H`` without a dense H.

``S = diag(scale)`` holds the per-node factor (the radius ``R_p`` of the paper's D, possibly
divided by ``‖δ_p‖`` for the normalised head). The class vectors follow the paper's recursion
``w_<p,i> = w_p + s_<p,i> δ_<p,i>`` with ``w_root = 0``: the super-classes are filled level by
level (they are sorted by depth in :class:`~hseval.tree.hierarchy.Hierarchy`), then each leaf adds its
own row to its parent's vector. The backward pass runs the recursion upwards, summing each
node's gradient into its parent's. Memory traffic is O(|P|·d) per step in both directions.

Rows are nodes: ``delta`` is ``(|P|, d)``, the layout of ``nn.Linear.weight``, so that a node's
vector is contiguous.

Why the code looks the way it does (measured on a 2-core CPU, ``bench/heads.py``): the matmuls
are the only arithmetic that matters, so the goal is to add as few passes over (|P|, d) memory
and as few kernel launches as possible on top of them.

- Small layers (W under about 2 MB), and every layer on a GPU, build W with one ``embedding_bag``
  over (leaf, ancestor) pairs, weighted by the scale, and sum the leaf gradients into every
  super-class with one more (bags of leaves): a fixed number of kernels at any |L|, and no
  zero-fill. Under autocast the sums stay float32 and only the two products run in the autocast
  dtype, as in ``nn.Linear``.
- Larger layers on the CPU process the leaf rows in chunks of about 1 MB: the chunk of W is built and immediately
  multiplied (forward), and the chunk of the leaf gradient is written by the matmul and then, while
  it is still in cache, pushed to the parents, dotted with δ for the scale's gradient and scaled
  (backward).
- The scale's gradient is a row-wise dot product done by ``linalg.vecdot``; ``einsum("pd,pd->p")``
  runs as a batched matmul, which is slower.
- On the CPU, big scratch tensors (W, the super-class table, the gradient) are reused across steps
  (:class:`_Workspace`): glibc gives every block above 32 MB a fresh ``mmap`` and a fresh mmap is
  paid again in page faults on first touch — more than the arithmetic at 20,000 classes. A buffer
  is reused only when nothing else holds its storage any more (see :func:`_is_free`), so a
  gradient that became ``param.grad`` is never overwritten while it is alive.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from hseval.tree.hierarchy import Hierarchy

__all__ = ["TreeIndex", "tree_linear", "leaf_weights", "all_node_weights"]

# rows of a chunk: about 1 MB of float32 at d=512, so a chunk of W (or of the gradient) and of Δ
# stay in a core's L2 cache between the kernels that use it
_CHUNK_BYTES = 1 << 20
# scratch tensors smaller than this come from the allocator as usual (glibc keeps them in its heap)
_WORKSPACE_MIN_BYTES = 4 << 20


# --------------------------------------------------------------------------- workspace buffers
def _storage_use_count(t: torch.Tensor) -> int:
    return torch._C._storage_Use_Count(t.untyped_storage()._cdata)


def _probe_base_count() -> int | None:
    """How many references a storage held by a single tensor reports, once checked that a live view
    raises the count and dropping it lowers it again; None (never reuse a buffer) when the private
    API is missing or means something else in this torch."""
    try:
        t = torch.empty(1)
        base = _storage_use_count(t)
        view = t.view(1)
        with_view = _storage_use_count(t)
        del view
        return base if with_view > base and _storage_use_count(t) == base else None
    except Exception:  # pragma: no cover - private API missing
        return None


_BASE_COUNT: int | None = _probe_base_count()


def _is_free(buffer: torch.Tensor) -> bool:
    """True when ``buffer`` is the only tensor on its storage: no view handed out earlier (a
    ``param.grad``, a tensor saved for backward, anything a caller kept) is alive any more."""
    return _BASE_COUNT is not None and _storage_use_count(buffer) <= _BASE_COUNT


class _Workspace:
    """Scratch tensors kept between steps, one per role; callers get a *view* (a new tensor object
    on the same storage), so that whatever keeps that view alive marks the buffer as in use."""

    def __init__(self) -> None:
        self.buffers: dict[tuple, torch.Tensor] = {}

    def empty(self, role: str, shape: tuple[int, ...], like: torch.Tensor) -> torch.Tensor:
        numel = int(np.prod(shape))
        if like.device.type != "cpu" or numel * like.element_size() < _WORKSPACE_MIN_BYTES or _BASE_COUNT is None:
            return like.new_empty(shape)  # the CUDA caching allocator already reuses blocks
        key = (role, like.dtype, like.device)
        buffer = self.buffers.get(key)
        if buffer is None or buffer.numel() != numel or not _is_free(buffer):
            buffer = like.new_empty(numel)
            self.buffers[key] = buffer
        return buffer.view(shape)


# --------------------------------------------------------------------------- index
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
        # small layers: (leaf, ancestor-or-self) pairs for embedding_bag, grouped by leaf (forward)
        # and, for the super-classes, by ancestor (backward); about depth·|L| pairs
        table = hierarchy.ancestor_table[:L]
        leaf, col = np.nonzero(table >= 0)  # row-major: grouped by leaf
        anc = table[leaf, col]
        self.register_buffer("leaf_anc", torch.as_tensor(anc), persistent=False)
        self.register_buffer("leaf_anc_offsets", torch.as_tensor(np.searchsorted(leaf, np.arange(L))),
                             persistent=False)
        is_super = anc >= L
        order = np.argsort(anc[is_super], kind="stable")
        owner = anc[is_super][order] - L
        self.register_buffer("super_leaves", torch.as_tensor(leaf[is_super][order]), persistent=False)
        self.register_buffer("super_leaves_offsets", torch.as_tensor(np.searchsorted(owner, np.arange(P - L))),
                             persistent=False)
        self._workspace = _Workspace()
        self._chunks: dict[int, list[tuple[int, int]]] = {}

    def level_parent(self, level: int) -> torch.Tensor:
        return getattr(self, f"level{level}_parent")

    def chunks(self, row_bytes: int) -> list[tuple[int, int]]:
        """Leaf row ranges of about ``_CHUNK_BYTES`` each (one range for small layers)."""
        ranges = self._chunks.get(row_bytes)
        if ranges is None:
            step = max(256, _CHUNK_BYTES // max(row_bytes, 1))
            L = self.num_leaves
            ranges = [(0, L)] if L <= 2 * step else [(a, min(a + step, L)) for a in range(0, L, step)]
            self._chunks[row_bytes] = ranges
        return ranges

    def __getstate__(self) -> dict:  # scratch buffers are not part of the model (pickling, deepcopy)
        state = self.__dict__.copy()
        state["_workspace"] = _Workspace()
        return state


# --------------------------------------------------------------------------- forward helpers
def _super_weights(delta: torch.Tensor, scale: torch.Tensor | None, index: TreeIndex,
                   out: torch.Tensor | None = None) -> torch.Tensor:
    """(n_super + 1, d): the super-class vectors w_q, plus a zero row for the root."""
    L, d = index.num_leaves, delta.shape[1]
    w = delta.new_empty(index.num_super + 1, d) if out is None else out
    w[index.num_super].zero_()
    sup = delta[L:]
    for level, (a, b) in enumerate(index.levels):
        if level == 0:  # children of the root: w = s·δ
            if scale is None:
                w[a:b].copy_(sup[a:b])
            else:
                torch.mul(sup[a:b], scale[L + a: L + b, None], out=w[a:b])
        else:  # w = w_parent + s·δ, the parents being on earlier (already filled) levels
            base = w[:a].index_select(0, index.level_parent(level))
            if scale is None:
                torch.add(base, sup[a:b], out=w[a:b])
            else:
                torch.addcmul(base, sup[a:b], scale[L + a: L + b, None], out=w[a:b])
    return w


def _leaf_rows(delta: torch.Tensor, scale: torch.Tensor | None, index: TreeIndex, table: torch.Tensor,
               a: int, b: int, out: torch.Tensor) -> torch.Tensor:
    """Leaf vectors ``w_l = w_parent(l) + s_l δ_l`` for leaves a..b-1, written into ``out``."""
    torch.index_select(table, 0, index.leaf_parent[a:b], out=out)
    if scale is None:
        return out.add_(delta[a:b])
    return out.addcmul_(delta[a:b], scale[a:b, None])


def leaf_weights(delta: torch.Tensor, scale: torch.Tensor | None, index: TreeIndex) -> torch.Tensor:
    """(|L|, d) class vectors W (not tracked by autograd; use :func:`tree_linear` to train)."""
    with torch.no_grad():
        L = index.num_leaves
        table = _super_weights(delta, scale, index)
        return _leaf_rows(delta, scale, index, table, 0, L, delta.new_empty(L, delta.shape[1]))


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


# --------------------------------------------------------------------------- autograd


def _bag_sum(weight, indices, offsets, per_sample_weights=None):
    return torch.embedding_bag(weight, indices, offsets, False, 0, False, per_sample_weights)[0]


_EPS = 1e-12


def _effective_scale(delta: torch.Tensor, scale: torch.Tensor | None, normalize: bool
                     ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """(s, ‖δ‖): the per-node factor, ``scale / ‖δ_p‖`` when normalising (the norms are kept for
    the backward pass), else ``scale`` itself."""
    if not normalize:
        return scale, None
    norms = torch.linalg.vector_norm(delta, dim=1).clamp_min(_EPS)
    return scale / norms, norms


def _parameter_grads(g: torch.Tensor, delta: torch.Tensor, eff: torch.Tensor | None, norms: torch.Tensor | None, *,
                     need_delta: bool, grad_scale: torch.Tensor | None) -> None:
    """Turn rows ``g`` of the subtree-summed gradient (∂L/∂(s_p δ_p), already handed to the
    parents) into ∂L/∂δ in place, and write ∂L/∂scale into ``grad_scale``.

    With s = r/‖δ‖ (normalising): ∂L/∂δ = s·(g − (⟨g, δ⟩/‖δ‖²)·δ) and ∂L/∂r = ⟨g, δ⟩/‖δ‖; this
    replaces autograd through the norm, which cost two extra |P|×d tensors per step."""
    dots = None
    if grad_scale is not None or (need_delta and norms is not None):
        dots = torch.linalg.vecdot(g, delta, dim=1)
    if grad_scale is not None:
        grad_scale.copy_(dots if norms is None else dots / norms)
    if need_delta and eff is not None:
        g.mul_(eff[:, None])
        if norms is not None:
            g.addcmul_(delta, (-eff * dots / norms.square())[:, None])


class _TreeLinearWhole(torch.autograd.Function):
    """W built at once (one ``embedding_bag`` over (leaf, ancestor) pairs), one matmul each way:
    a fixed number of kernels whatever |L| (the path of every GPU, and of small layers on the CPU).

    ``compute_dtype`` (the autocast dtype, or None): W is summed in float32 and only the products
    run in ``compute_dtype``, as ``nn.Linear`` does under autocast; the logits are float32."""

    @staticmethod
    def forward(ctx, x, delta, scale, index, normalize, compute_dtype):  # type: ignore[override]
        eff, norms = _effective_scale(delta, scale, normalize)
        psw = None if eff is None else eff.index_select(0, index.leaf_anc)
        weight = _bag_sum(delta, index.leaf_anc, index.leaf_anc_offsets, psw)
        if compute_dtype is not None and compute_dtype != weight.dtype:
            x, weight = x.to(compute_dtype), weight.to(compute_dtype)
        ctx.save_for_backward(x, weight, delta, eff, norms)
        ctx.index = index
        out = torch.mm(x, weight.t())
        return out if out.dtype == delta.dtype else out.to(delta.dtype)

    @staticmethod
    def backward(ctx, grad_out):  # type: ignore[override]
        x, weight, delta, eff, norms = ctx.saved_tensors
        index: TreeIndex = ctx.index
        need_x, need_delta, need_scale = ctx.needs_input_grad[:3]
        grad_out = grad_out.to(weight.dtype)
        grad_x = torch.mm(grad_out, weight) if need_x else None
        if not (need_delta or need_scale):
            return grad_x, None, None, None, None, None
        L, P, d = index.num_leaves, index.num_nodes, delta.shape[1]
        grad = delta.new_empty(P, d)
        if grad_out.dtype == grad.dtype:
            torch.mm(grad_out.t(), x, out=grad[:L])
        else:
            grad[:L].copy_(torch.mm(grad_out.t(), x))
        if P > L:  # each super-class: the sum of its leaves' rows, one bag per super-class
            grad[L:].copy_(_bag_sum(grad[:L], index.super_leaves, index.super_leaves_offsets))
        grad_scale = delta.new_empty(P) if need_scale else None
        _parameter_grads(grad, delta, eff, norms, need_delta=need_delta, grad_scale=grad_scale)
        return grad_x, (grad if need_delta else None), grad_scale, None, None, None


class _TreeLinearChunked(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, delta, scale, index, normalize):  # type: ignore[override]
        L, d = index.num_leaves, delta.shape[1]
        eff, norms = _effective_scale(delta, scale, normalize)
        ws = index._workspace
        table = _super_weights(delta, eff, index, out=ws.empty("table", (index.num_super + 1, d), delta))
        weight = ws.empty("weight", (L, d), delta)
        out = x.new_empty(x.shape[0], L)
        # build each chunk of W and multiply it while it is still in cache
        for a, b in index.chunks(d * delta.element_size()):
            w = _leaf_rows(delta, eff, index, table, a, b, out=weight[a:b])
            torch.mm(x, w.t(), out=out[:, a:b])
        ctx.save_for_backward(x, weight, delta, eff, norms)
        ctx.index = index
        return out

    @staticmethod
    def backward(ctx, grad_out):  # type: ignore[override]
        x, weight, delta, eff, norms = ctx.saved_tensors
        index: TreeIndex = ctx.index
        need_x, need_delta, need_scale = ctx.needs_input_grad[:3]
        grad_x = torch.mm(grad_out, weight) if need_x else None
        if not (need_delta or need_scale):
            return grad_x, None, None, None, None
        L, P, d = index.num_leaves, index.num_nodes, delta.shape[1]
        # rows 0..L-1: leaves (written by the matmul); L..P-1: super-classes; P: the root (a sink)
        grad = index._workspace.empty("grad", (P + 1, d), delta)
        sup = grad[L:]
        sup.zero_()
        grad_scale = delta.new_empty(P) if need_scale else None

        def finish(rows: slice, parent_rows: torch.Tensor | None, parents: torch.Tensor | None) -> None:
            """Rows whose gradient (the sum over their subtree) is complete: hand it to the parents,
            then turn it into the gradients of the scale and δ, per chunk, while the rows are cached."""
            g = grad[rows]
            if parents is not None:
                parent_rows.index_add_(0, parents, g)
            _parameter_grads(g, delta[rows], None if eff is None else eff[rows],
                             None if norms is None else norms[rows], need_delta=need_delta,
                             grad_scale=None if grad_scale is None else grad_scale[rows])

        for a, b in index.chunks(d * delta.element_size()):
            torch.mm(grad_out[:, a:b].t(), x, out=grad[a:b])
            finish(slice(a, b), sup, index.leaf_parent[a:b])
        for level in range(len(index.levels) - 1, -1, -1):  # deepest first: children before parents
            a, b = index.levels[level]
            parents = index.level_parent(level) if level else None
            finish(slice(L + a, L + b), sup[:a] if level else None, parents)
        return grad_x, (grad[:P] if need_delta else None), grad_scale, None, None


def tree_linear(x: torch.Tensor, delta: torch.Tensor, scale: torch.Tensor | None, index: TreeIndex, *,
                normalize: bool = False, compute_dtype: torch.dtype | None = None) -> torch.Tensor:
    """Leaf logits ``x @ (Δ S H)``: x (B, d), delta (|P|, d), scale (|P|,) or None -> (B, |L|),
    in delta's dtype (float32).

    ``normalize=True`` uses ``S = diag(scale / ‖δ_p‖)`` (the manifold heads' normalised columns,
    ``scale`` being the radii) with its gradient computed in closed form. ``compute_dtype`` (e.g.
    the autocast dtype) runs the two products in that dtype while the tree sums stay in float32.
    Which of the two paths runs is the module docstring's rule."""
    if normalize and scale is None:
        raise ValueError("normalize=True needs the radii as scale")
    whole = delta.device.type != "cpu" or len(index.chunks(delta.shape[1] * delta.element_size())) == 1
    if whole:
        if compute_dtype is None and x.dtype != delta.dtype:
            x = x.to(delta.dtype)
        return _TreeLinearWhole.apply(x, delta, scale, index, normalize, compute_dtype)
    return _TreeLinearChunked.apply(x.to(delta.dtype), delta, scale, index, normalize)
