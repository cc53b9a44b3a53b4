"""Every registered head honours the contract; each head's maths against the paper."""

from __future__ import annotations

import re
import typing

import geoopt
import pytest
import torch
import torch.nn.functional as F

from hseval.core.errors import ConfigError
from hseval.nn.heads import HEADS, create_head, list_heads
from hseval.nn.heads.hyperbolic import poincare_mlr
from tests.helpers import fashion_tree, random_tree, unbalanced

D = 16
DELTA_HEADS = ["hierarchy", "manifold", "manifold-learnable-radius", "riemann", "riemann-learnable-radius"]


PAPER_HEADS = ["plain", "multitask", "hierarchy", "manifold", "manifold-learnable-radius", "riemann",
               "riemann-learnable-radius", "hyperbolic"]
PEERS = ["hxe", "soft-labels", "barz-denzler", "nbdt"]


def test_registry_lists_every_head_of_the_design_by_group():
    assert list_heads("paper") == PAPER_HEADS
    assert list_heads("peers") == PEERS
    assert list_heads() == list_heads("all") == PAPER_HEADS + PEERS
    with pytest.raises(ConfigError, match="unknown group of heads 'others'; choose one of paper, peers, all"):
        list_heads("others")


@pytest.mark.parametrize("name", list_heads())
def test_every_head_says_what_it_is_and_cites_it(name):
    cls = HEADS.get(name)
    assert cls.description and "\n" not in cls.description
    assert cls.citation.count(",") >= 2 and any(str(year) in cls.citation for year in range(2015, 2026))


def _scores_from_class_vectors(head, z, W):
    """The head's scores from ``z @ W``: the logits themselves, the cosines of the embedding for
    Barz & Denzler, the soft inference over them for NBDT."""
    if head.name == "barz-denzler":
        return z @ W / torch.linalg.vector_norm(head.map(z), dim=1, keepdim=True)
    if head.name == "nbdt":
        return head.path_log_probs((z @ W).t())[0].t()
    return z @ W


@pytest.mark.parametrize("name", list_heads())
def test_head_contract(name, small_tree):
    head = create_head(name, small_tree, D)
    z = torch.randn(7, D, requires_grad=True)
    target = torch.randint(0, small_tree.num_leaves, (7,))
    logits = head(z)
    assert logits.shape == (7, small_tree.num_leaves)
    loss, loss_logits = head.loss(z, target)
    torch.testing.assert_close(loss_logits, logits)
    loss.backward()
    assert z.grad is not None and torch.isfinite(z.grad).all()
    assert any(p.grad is not None for p in head.parameters())
    W = head.class_weights()
    if W is not None:
        assert W.shape == (D, small_tree.num_leaves)
        torch.testing.assert_close(_scores_from_class_vectors(head, z.detach(), W), logits.detach(), rtol=1e-5,
                                   atol=1e-5)
    nodes = head.node_weights()
    if nodes is not None:
        assert nodes.shape == (D, small_tree.num_nodes)
        torch.testing.assert_close(nodes[:, : small_tree.num_leaves], W)
    levels = head.level_logits(z.detach())
    if levels is not None:
        assert sorted(levels) == list(range(1, small_tree.max_depth))
        for depth, level in levels.items():
            assert level.shape == (7, len(small_tree.nodes_at_depth(depth)))
    import json

    json.dumps(head.config())  # plain JSON types


@pytest.mark.parametrize("name", DELTA_HEADS)
def test_delta_head_superclass_logits_use_parent_columns(name):
    tree = fashion_tree()
    head = create_head(name, tree, D)
    z = torch.randn(5, D)
    nodes = head.node_weights()
    for depth, logits in head.level_logits(z).items():
        torch.testing.assert_close(logits, z @ nodes[:, tree.nodes_at_depth(depth)])


def test_radius_decay_matches_paper():
    tree = unbalanced()
    head = create_head("riemann", tree, D, radius=2.0, radius_decay=0.5)
    torch.testing.assert_close(head.radii(), torch.tensor(2.0 * 0.5 ** tree.depth, dtype=torch.float32))


@pytest.mark.parametrize("name", ["manifold", "riemann", "manifold-learnable-radius", "riemann-learnable-radius"])
def test_sphere_heads_place_children_at_radius_from_parent(name):
    """‖w_<p,i> − w_p‖ = R_<p,i>: each class vector lies on a sphere centred on its parent's."""
    tree = fashion_tree()
    head = create_head(name, tree, D, radius=3.0, radius_decay=0.7)
    nodes = head.node_weights().t()
    parents = torch.tensor(tree.parents)
    parent_w = torch.where((parents >= 0)[:, None], nodes[parents.clamp_min(0)], torch.zeros_like(nodes))
    torch.testing.assert_close(torch.linalg.vector_norm(nodes - parent_w, dim=1), head.radii(), rtol=1e-5, atol=1e-5)


def test_manifold_logits_are_invariant_to_rescaling_delta_columns():
    tree = fashion_tree()
    head = create_head("manifold", tree, D)
    z = torch.randn(6, D)
    before = head(z).detach()
    with torch.no_grad():
        head.delta.mul_(torch.rand(tree.num_nodes, 1) * 10 + 0.01)
    torch.testing.assert_close(head(z).detach(), before, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["manifold-learnable-radius", "riemann-learnable-radius"])
def test_learnable_radius_gets_gradients(name):
    tree = fashion_tree()
    head = create_head(name, tree, D)
    assert isinstance(head.radius, torch.nn.Parameter)
    loss, _ = head.loss(torch.randn(8, D), torch.randint(0, 10, (8,)))
    loss.backward()
    assert head.radius.grad is not None and head.radius.grad.abs().sum() > 0


def test_fixed_radius_is_a_buffer_not_a_parameter():
    head = create_head("riemann", fashion_tree(), D)
    assert "radius" not in dict(head.named_parameters())
    assert "radius" in dict(head.named_buffers())


def test_riemann_step_is_appendix_b_projection_then_retraction():
    """One RiemannianSGD step equals δ⁺ = (δ + h s)/‖δ + h s‖ with s = (δᵀ∇f)δ − ∇f (Appendix B)."""
    tree = fashion_tree()
    head = create_head("riemann", tree, D)
    assert isinstance(head.delta, geoopt.ManifoldParameter) and isinstance(head.delta.manifold, geoopt.Sphere)
    opt = geoopt.optim.RiemannianSGD(head.parameters(), lr=0.3)
    loss, _ = head.loss(torch.randn(16, D), torch.randint(0, 10, (16,)))
    loss.backward()
    x = head.delta.detach().clone().double()
    g = head.delta.grad.detach().clone().double()
    s = (x * g).sum(1, keepdim=True) * x - g
    expected = (x + 0.3 * s) / torch.linalg.vector_norm(x + 0.3 * s, dim=1, keepdim=True)
    opt.step()
    torch.testing.assert_close(head.delta.detach().double(), expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(torch.linalg.vector_norm(head.delta.detach(), dim=1), torch.ones(tree.num_nodes))


def test_riemann_step_worked_example_by_hand():
    """Appendix B on numbers: x = e1, ∇f = (1, 2), h = 0.5 → s = (0, −2), x⁺ = (1, −1)/√2."""
    x = torch.tensor([[1.0, 0.0]])
    param = geoopt.ManifoldParameter(x.clone(), manifold=geoopt.Sphere())
    opt = geoopt.optim.RiemannianSGD([param], lr=0.5)
    param.grad = torch.tensor([[1.0, 2.0]])
    opt.step()
    torch.testing.assert_close(param.detach(), torch.tensor([[1.0, -1.0]]) / 2 ** 0.5)


def test_riemann_weight_decay_has_no_effect_on_the_sphere():
    """geoopt adds weight_decay·δ before projecting; the projection removes that radial term."""
    start = torch.nn.functional.normalize(torch.randn(5, 4), dim=1)
    grad = torch.randn(5, 4)
    results = []
    for wd in (0.0, 0.5):
        p = geoopt.ManifoldParameter(start.clone(), manifold=geoopt.Sphere())
        opt = geoopt.optim.RiemannianSGD([p], lr=0.1, weight_decay=wd)
        p.grad = grad.clone()
        opt.step()
        results.append(p.detach())
    torch.testing.assert_close(results[0], results[1])


def test_multitask_loss_is_leaf_ce_plus_weighted_level_ce():
    tree = unbalanced()  # leaves at depths 1, 2, 3 and 4: shallow classes are ignored at deep levels
    head = create_head("multitask", tree, D, level_weight=0.3)
    z = torch.randn(9, D)
    target = torch.arange(9) % tree.num_leaves
    loss, logits = head.loss(z, target)
    expected = F.cross_entropy(logits, target)
    for depth, level_logits in head.level_logits(z).items():
        nodes = list(tree.nodes_at_depth(depth))
        terms = [F.cross_entropy(level_logits[i:i + 1], torch.tensor([nodes.index(int(a))]))
                 for i, a in enumerate(tree.ancestor_at_depth(target.numpy(), depth)) if a >= 0]
        if terms:
            expected = expected + 0.3 * torch.stack(terms).mean()
    torch.testing.assert_close(loss, expected)


def _direct_poincare_mlr(x, p, a, ball):
    """Ganea et al.'s formula term by term, with geoopt's own Möbius addition."""
    c = ball.c.item()
    out = torch.empty(x.shape[0], p.shape[0], dtype=x.dtype)
    for k in range(p.shape[0]):
        u = ball.mobius_add(-p[k].expand_as(x), x, project=False)
        lam = 2 / (1 - c * p[k].pow(2).sum())
        an = a[k].norm()
        arg = 2 * c ** 0.5 * (u * a[k]).sum(1) / ((1 - c * u.pow(2).sum(1)) * an)
        out[:, k] = lam * an / c ** 0.5 * torch.asinh(arg)
    return out


@pytest.mark.parametrize("c", [0.01, 0.1, 1.0])
def test_hyperbolic_logits_match_direct_formula_and_geoopt_dist2plane(c):
    head = create_head("hyperbolic", fashion_tree(), D, curvature=c)
    z = torch.randn(6, D, dtype=torch.float64)
    head = head.double()
    logits = head(z)
    p, a = head.hyperplanes()
    x = head.to_ball(z)
    c = head.ball.c.item()  # geoopt stores c through a float32 softplus: use the ball's own value
    torch.testing.assert_close(logits, _direct_poincare_mlr(x, p, a, head.ball), rtol=1e-7, atol=1e-9)
    torch.testing.assert_close(poincare_mlr(x, p, a, c), logits)
    # geoopt's signed, scaled distance to the hyperplane is the logit divided by λ_p
    dist = head.ball.dist2plane(x[:, None, :], p[None], a[None], signed=True, scaled=True)
    lam = 2 / (1 - c * p.pow(2).sum(1))
    torch.testing.assert_close(logits, lam * dist, rtol=1e-7, atol=1e-9)


def test_hyperbolic_head_is_float32_under_autocast():
    head = create_head("hyperbolic", fashion_tree(), D)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = head(torch.randn(4, D).bfloat16())
    assert out.dtype == torch.float32


@pytest.mark.parametrize("name", DELTA_HEADS)
def test_delta_heads_are_float32_under_autocast(name):
    head = create_head(name, fashion_tree(), D)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = head(torch.randn(4, D).bfloat16())
    assert out.dtype == torch.float32


@pytest.mark.parametrize("name", list_heads())
def test_heads_scale_to_a_large_tree(name):
    tree = random_tree(3000, seed=1)
    head = create_head(name, tree, 8)
    loss, logits = head.loss(torch.randn(4, 8), torch.randint(0, 3000, (4,)))
    loss.backward()
    assert logits.shape == (4, 3000) and torch.isfinite(loss)


@pytest.mark.parametrize(("name", "options", "message"), [
    ("nope", {}, r"unknown head 'nope'; choose one of plain, multitask"),
    ("riemann", {"radius": -1.0}, r"head 'riemann': option 'radius' must be > 0, got -1.0"),
    ("manifold", {"radius_decay": 0.0}, r"head 'manifold': option 'radius_decay' must be > 0, got 0.0"),
    ("hyperbolic", {"curvature": 0}, r"head 'hyperbolic': option 'curvature' must be > 0, got 0"),
    ("multitask", {"level_weight": -2}, r"head 'multitask': option 'level_weight' must be >= 0, got -2"),
    ("plain", {"radius": 1.0}, r"head 'plain' has no option 'radius'; its options are: \(none\)"),
])
def test_bad_head_options_have_clear_errors(name, options, message):
    with pytest.raises(ConfigError, match=message):
        create_head(name, fashion_tree(), D, **options)


OUTSIDE = {"gt": lambda bound: bound, "ge": lambda bound: bound - 1, "lt": lambda bound: bound,
           "le": lambda bound: bound + 1}


@pytest.mark.parametrize("name", list_heads())
def test_every_option_is_refused_outside_the_type_and_bounds_its_head_declares(name):
    """One check of a head's options, where they enter (create_head), from what its ``__init__``
    annotates: each option, given a string, NaN or a number just outside each of its bounds, is a
    one-line ConfigError naming the head and the option."""
    for option, kind in HEADS.options(name).items():
        marks = [m for arg in typing.get_args(kind)[1:] for m in getattr(arg, "metadata", [arg])]
        outside = [OUTSIDE[key](getattr(m, key)) for m in marks for key in OUTSIDE if getattr(m, key, None) is not None]
        assert outside, f"{name}: option {option!r} declares no bound"
        for value in ("big", float("nan"), *outside):
            with pytest.raises(ConfigError, match=rf"^head '{name}': option '{option}' must be [^,]+, got "
                                                  rf"{re.escape(repr(value))}$"):
                create_head(name, fashion_tree(), D, **{option: value})


@pytest.mark.parametrize("fused", [False, True])
def test_multitask_fused_levels_give_the_per_level_loss(monkeypatch, fused):
    """The GPU's path (one matmul for every level, a sync-free mean) and the CPU's give the loss of
    one head per level, with a level skipped when no sample of the batch reaches it."""
    import torch.nn.functional as F

    import hseval.nn.heads.multitask
    from tests.helpers import unbalanced

    monkeypatch.setattr(hseval.nn.heads.multitask, "FUSED_ON_CPU", fused)
    tree = unbalanced()
    head = create_head("multitask", tree, 6, level_weight=0.5)
    z = torch.randn(5, 6, dtype=torch.float64)
    head = head.double()
    for target in (torch.tensor([0, 1, 2, 3, 4]), torch.tensor([2, 2, 2, 2, 2])):  # class 2 is a depth-1 leaf
        loss, logits = head.loss(z, target)
        want = F.cross_entropy(z @ head.classifier.weight.t(), target)
        table = head.level_targets[target]
        for depth, level in enumerate(head.levels, start=1):
            t = table[:, depth - 1]
            if (t >= 0).any():
                want = want + 0.5 * F.cross_entropy(level(z), t, ignore_index=-100)
        torch.testing.assert_close(loss, want)
        levels = head.level_logits(z)
        for depth, level in enumerate(head.levels, start=1):
            torch.testing.assert_close(levels[depth], level(z))


@pytest.mark.parametrize("c", [0.05, 1.0])
@pytest.mark.parametrize("scale", [0.3, 0.999])  # inside the ball, and near its boundary
def test_poincare_mlr_closed_form_backward_equals_autograd(c, scale):
    torch.manual_seed(0)
    r = scale / c ** 0.5
    x = torch.nn.functional.normalize(torch.randn(7, 5, dtype=torch.float64), dim=1) * r * torch.rand(7, 1)
    p = torch.nn.functional.normalize(torch.randn(4, 5, dtype=torch.float64), dim=1) * r * torch.rand(4, 1)
    a = torch.randn(4, 5, dtype=torch.float64)
    inputs = [t.clone().requires_grad_() for t in (x, p, a)]
    grad_out = torch.randn(7, 4, dtype=torch.float64)
    got = poincare_mlr(*inputs, c, closed_form=True)
    want = poincare_mlr(*inputs, c, closed_form=False)  # autograd through every (B, K) step
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    for g, w in zip(torch.autograd.grad(got, inputs, grad_out), torch.autograd.grad(want, inputs, grad_out)):
        torch.testing.assert_close(g, w, rtol=1e-9, atol=1e-9)
    if scale < 0.9:
        assert torch.autograd.gradcheck(lambda *t: poincare_mlr(*t, c, closed_form=True), inputs)


def test_hyperbolic_closed_form_keeps_only_two_batch_by_class_tensors_for_backward():
    """Saved between forward and backward on a GPU's path: x, p, a and the two (B, K) inner products."""
    head = create_head("hyperbolic", random_tree(300, seed=3), 8)
    z = torch.randn(16, 8)
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t.shape) or t, lambda t: t):
        p, a = head.hyperplanes()
        poincare_mlr(head.to_ball(z), p, a, head.ball.c, closed_form=True)
    big = [s for s in saved if len(s) == 2 and s[0] == 16 and s[1] == 300]
    assert len(big) == 2, saved
