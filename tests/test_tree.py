"""The hierarchically connected layer against the paper: W = ΔDH, the recursion
w_<p,i> = w_p + R δ_<p,i>, a dense reference, and gradients."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hseval.nn.heads.tree import TreeIndex, all_node_weights, leaf_weights, tree_linear
from tests.helpers import examples, random_tree, trees


def dense_reference(hierarchy, delta, scale):
    """W = (Δ S) H with a dense H (the paper's Proposition 1), as (|L|, d)."""
    H = torch.tensor(hierarchy.H.toarray(), dtype=delta.dtype)
    scaled = delta if scale is None else delta * scale[:, None]
    return H.t() @ scaled


def recursive_reference(hierarchy, delta, scale):
    """w_root = 0, w_<p,i> = w_p + s_<p,i> δ_<p,i>, walking each node's path in plain Python."""
    out = []
    for node in range(hierarchy.num_nodes):
        w = torch.zeros(delta.shape[1], dtype=delta.dtype)
        for a in hierarchy.path(node):
            w = w + (1.0 if scale is None else scale[a]) * delta[a]
        out.append(w)
    return torch.stack(out)


@settings(max_examples=examples(60), deadline=None)
@given(tree=trees(), d=st.integers(1, 9), use_scale=st.booleans())
def test_tree_weights_equal_recursion_and_dense_product(tree, d, use_scale):
    delta = torch.randn(tree.num_nodes, d, dtype=torch.float64)
    scale = torch.rand(tree.num_nodes, dtype=torch.float64) + 0.1 if use_scale else None
    index = TreeIndex(tree)
    nodes = all_node_weights(delta, scale, index)
    torch.testing.assert_close(nodes, recursive_reference(tree, delta, scale))
    torch.testing.assert_close(leaf_weights(delta, scale, index), dense_reference(tree, delta, scale))
    torch.testing.assert_close(nodes[: tree.num_leaves], leaf_weights(delta, scale, index))


@settings(max_examples=examples(40), deadline=None)
@given(tree=trees(max_leaves=20), batch=st.integers(1, 5), use_scale=st.booleans())
def test_tree_linear_forward_and_gradients_match_dense_autograd(tree, batch, use_scale):
    d = 4
    x = torch.randn(batch, d, dtype=torch.float64, requires_grad=True)
    delta = torch.randn(tree.num_nodes, d, dtype=torch.float64, requires_grad=True)
    scale = (torch.rand(tree.num_nodes, dtype=torch.float64) + 0.1).requires_grad_(use_scale)
    index = TreeIndex(tree)
    grad_out = torch.randn(batch, tree.num_leaves, dtype=torch.float64)

    out = tree_linear(x, delta, scale, index)
    grads = torch.autograd.grad(out, [x, delta, scale] if use_scale else [x, delta], grad_out)
    ref = x @ dense_reference(tree, delta, scale).t()
    ref_grads = torch.autograd.grad(ref, [x, delta, scale] if use_scale else [x, delta], grad_out)
    torch.testing.assert_close(out, ref)
    for got, want in zip(grads, ref_grads):
        torch.testing.assert_close(got, want)


def test_tree_linear_passes_gradcheck():
    tree = random_tree(12, seed=3)
    index = TreeIndex(tree)
    x = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    delta = torch.randn(tree.num_nodes, 5, dtype=torch.float64, requires_grad=True)
    scale = torch.rand(tree.num_nodes, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b, c: tree_linear(a, b, c, index), (x, delta, scale))
    assert torch.autograd.gradcheck(lambda a, b: tree_linear(a, b, None, index), (x, delta))


def test_tree_linear_handles_flat_tree_and_frozen_inputs():
    from hseval.tree.hierarchy import Hierarchy

    flat = Hierarchy([f"c{i}" for i in range(4)], [-1] * 4, 4)
    index = TreeIndex(flat)
    delta = torch.randn(4, 3, requires_grad=True)
    x = torch.randn(2, 3)  # no gradient wanted for x
    out = tree_linear(x, delta, None, index)
    torch.testing.assert_close(out, x @ delta.t())
    out.sum().backward()
    torch.testing.assert_close(delta.grad, torch.ones(2, 4).t() @ x)


def test_dense_h_is_never_built_for_large_trees(monkeypatch):
    """The scalable path must not touch H (|P|×|L|): forbid it and run a 5,000-class tree."""
    from hseval.tree.hierarchy import Hierarchy

    tree = random_tree(5000, seed=0)
    monkeypatch.setattr(Hierarchy, "H", property(lambda self: (_ for _ in ()).throw(AssertionError("dense H"))))
    index = TreeIndex(tree)
    delta = torch.randn(tree.num_nodes, 8, requires_grad=True)
    out = tree_linear(torch.randn(4, 8), delta, torch.ones(tree.num_nodes), index)
    out.sum().backward()
    assert out.shape == (4, 5000) and np.isfinite(delta.grad.numpy()).all()


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("scale_kind", ["none", "fixed", "learnable"])
def test_chunked_path_for_large_layers_matches_dense(dtype, scale_kind):
    """|L| = 1,500 at d = 512 runs the chunked path (several ~1 MB chunks); same values and grads."""
    tree = random_tree(1500, seed=7)
    index = TreeIndex(tree)
    assert len(index.chunks(512 * torch.finfo(dtype).bits // 8)) > 1
    x = torch.randn(6, 512, dtype=dtype, requires_grad=True)
    delta = torch.randn(tree.num_nodes, 512, dtype=dtype, requires_grad=True)
    scale = None if scale_kind == "none" else \
        (torch.rand(tree.num_nodes, dtype=dtype) + 0.5).requires_grad_(scale_kind == "learnable")
    inputs = [x, delta] + ([scale] if scale_kind == "learnable" else [])
    grad_out = torch.randn(6, 1500, dtype=dtype)
    out = tree_linear(x, delta, scale, index)
    got = torch.autograd.grad(out, inputs, grad_out)
    ref = x @ dense_reference(tree, delta, scale).t()
    want = torch.autograd.grad(ref, inputs, grad_out)
    tol = {"rtol": 1e-9, "atol": 1e-9} if dtype == torch.float64 else {"rtol": 2e-4, "atol": 2e-3}
    torch.testing.assert_close(out, ref, **tol)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, **tol)


def test_reused_buffers_never_overwrite_live_gradients():
    """Gradient accumulation without reset, a kept .grad, two forwards before one backward: the
    scratch buffers of the large-layer path must not alias anything still alive."""
    tree = random_tree(3000, seed=2)
    index = TreeIndex(tree)
    delta = torch.nn.Parameter(torch.randn(tree.num_nodes, 512))
    x1, x2 = torch.randn(4, 512), torch.randn(4, 512)

    def grad_of(x):
        d = delta.detach().clone().requires_grad_()
        (tree_linear(x, d, None, TreeIndex(tree)) ** 2).sum().backward()
        return d.grad

    g1, g2 = grad_of(x1), grad_of(x2)
    (tree_linear(x1, delta, None, index) ** 2).sum().backward()
    kept = delta.grad
    snapshot = kept.clone()
    (tree_linear(x2, delta, None, index) ** 2).sum().backward()  # accumulates into .grad
    torch.testing.assert_close(delta.grad, g1 + g2, rtol=1e-4, atol=1e-3)
    delta.grad = None
    a = tree_linear(x1, delta, None, index)
    b = tree_linear(x2, delta, None, index)
    ((a ** 2).sum() + (b ** 2).sum()).backward()
    torch.testing.assert_close(delta.grad, g1 + g2, rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(snapshot + g2, kept, rtol=1e-4, atol=1e-3)  # the kept tensor was only added to


@pytest.mark.parametrize("size", [12, 1500])
def test_normalized_scale_matches_autograd_through_the_norm(size):
    """normalize=True (the manifold heads): the closed-form gradient equals autograd's through
    s = r / ‖δ‖, on the small and the chunked path, for δ and for learnable radii."""
    tree = random_tree(size, seed=5)
    index = TreeIndex(tree)
    d = 5 if size < 100 else 512
    x = torch.randn(3, d, dtype=torch.float64, requires_grad=True)
    delta = torch.randn(tree.num_nodes, d, dtype=torch.float64, requires_grad=True)
    radius = (torch.rand(tree.num_nodes, dtype=torch.float64) + 0.5).requires_grad_()
    grad_out = torch.randn(3, size, dtype=torch.float64)
    out = tree_linear(x, delta, radius, index, normalize=True)
    got = torch.autograd.grad(out, [x, delta, radius], grad_out)
    scale = radius / torch.linalg.vector_norm(delta, dim=1)
    ref = x @ dense_reference(tree, delta, scale).t()
    want = torch.autograd.grad(ref, [x, delta, radius], grad_out)
    torch.testing.assert_close(out, ref)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    if size < 100:
        assert torch.autograd.gradcheck(lambda a, b, c: tree_linear(a, b, c, index, normalize=True),
                                        (x, delta, radius))


@pytest.mark.parametrize("normalize", [False, True])
def test_whole_path_on_a_large_layer_matches_dense(monkeypatch, normalize):
    """The path every GPU takes at any |L| (W built whole, one matmul each way), forced here on the
    CPU for a layer the CPU would chunk: same values and gradients as the dense reference."""
    tree = random_tree(1500, seed=7)
    index = TreeIndex(tree)
    assert len(index.chunks(512 * 8)) > 1
    monkeypatch.setattr(TreeIndex, "chunks", lambda self, row_bytes: [(0, self.num_leaves)])
    x = torch.randn(4, 512, dtype=torch.float64, requires_grad=True)
    delta = torch.randn(tree.num_nodes, 512, dtype=torch.float64, requires_grad=True)
    radius = (torch.rand(tree.num_nodes, dtype=torch.float64) + 0.5).requires_grad_()
    grad_out = torch.randn(4, 1500, dtype=torch.float64)
    out = tree_linear(x, delta, radius, index, normalize=normalize)
    got = torch.autograd.grad(out, [x, delta, radius], grad_out)
    scale = radius / torch.linalg.vector_norm(delta, dim=1) if normalize else radius
    ref = x @ dense_reference(tree, delta, scale).t()
    want = torch.autograd.grad(ref, [x, delta, radius], grad_out)
    torch.testing.assert_close(out, ref)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)


@pytest.mark.parametrize("name", ["hierarchy", "manifold", "riemann-learnable-radius"])
def test_autocast_keeps_tree_sums_float32_and_runs_products_in_bfloat16(name):
    """Under bf16 autocast a Δ-head sums W = ΔSH in float32 and multiplies in bfloat16, like
    nn.Linear: logits float32, equal to bf16(x) @ bf16(W)ᵀ with W from float32 sums; gradients of
    Δ and the radii float32 and within bf16 rounding of the float32 ones; x's gradient in x's dtype."""
    from hseval.nn.heads import create_head
    from tests.helpers import fashion_tree

    torch.manual_seed(0)
    head = create_head(name, fashion_tree(), 32)
    z = torch.randn(16, 32).bfloat16().requires_grad_()
    target = torch.randint(0, 10, (16,))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = head(z)
        loss = torch.nn.functional.cross_entropy(logits, target)
    assert logits.dtype == torch.float32
    weight = head.class_weights().t()  # float32 sums
    expected = (z.detach() @ weight.bfloat16().t()).float()
    torch.testing.assert_close(logits.detach(), expected, rtol=0, atol=0)
    loss.backward()
    assert z.grad.dtype == torch.bfloat16 and head.delta.grad.dtype == torch.float32
    grads = [p.grad.clone() for p in head.parameters()]
    head.zero_grad()
    torch.nn.functional.cross_entropy(head(z.detach().float()), target).backward()
    for got, want in zip(grads, (p.grad for p in head.parameters())):
        torch.testing.assert_close(got, want, rtol=0.05, atol=0.02 * want.abs().max().item())


def test_the_private_storage_count_still_means_what_the_workspace_needs():
    """The CPU workspace reuses a scratch buffer only while no view of it is alive, read through
    torch's private ``_storage_Use_Count``. If a torch upgrade changes what it counts, this fails
    loudly (the layer itself then stops reusing buffers instead of overwriting a live tensor)."""
    from hseval.nn.heads import tree

    assert tree._BASE_COUNT is not None, "torch._C._storage_Use_Count changed: buffer reuse is off"
    space = tree._Workspace()
    like = torch.empty(0)
    shape = (tree._WORKSPACE_MIN_BYTES // 4,)
    first = space.empty("g", shape, like)
    kept = first * 0  # a new storage: does not hold the buffer
    assert space.empty("g", shape, like).data_ptr() != first.data_ptr()  # `first` is alive: a new buffer
    second = space.empty("g", shape, like)
    pointer = second.data_ptr()
    del first, second
    assert space.empty("g", shape, like).data_ptr() == pointer  # no view left: reused
    saved = space.empty("g", shape, like).requires_grad_()
    out = (saved * saved).sum()  # autograd saves `saved` for backward
    del saved
    assert space.empty("g", shape, like).data_ptr() != pointer and out.requires_grad and kept.numel()
