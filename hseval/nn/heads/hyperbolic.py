"""``hyperbolic``: Poincaré-ball multinomial logistic regression (Ganea et al. 2018, as used by
Khrulkov et al. 2020), the paper's comparison in its Table 5.

Features are clipped to a norm of at most ``clip_radius`` (Guo et al. 2022; default 1) and
mapped into the ball of curvature ``c`` by geoopt's ``expmap0``. Class k has a point
p_k = expmap0(p̃_k) and a normal a_k = ã_k·(1 − c‖p_k‖²) (Khrulkov et al.'s parametrisation, so
that plain SGD applies), and

    logit_k(x) = λ_{p_k}‖a_k‖/√c · asinh( 2√c⟨(−p_k)⊕x, a_k⟩ / ((1 − c‖(−p_k)⊕x‖²)‖a_k‖) ).

The Möbius sum is expanded into inner products, so a batch costs two (B, d)×(d, K) matmuls
instead of a (B, K, d) tensor (:class:`_PoincareMLR` writes its backward pass out).
"""

from __future__ import annotations

import math

import torch
from pydantic import PositiveFloat
from torch import nn

from hseval.nn.heads.base import Head, full_precision, register_head
from hseval.nn.manifolds import geoopt
from hseval.tree.hierarchy import Hierarchy


def _mlr_terms(px: torch.Tensor, xa: torch.Tensor, xx: torch.Tensor, pp: torch.Tensor, pa: torch.Tensor,
               a_norm: torch.Tensor, c: float) -> dict[str, torch.Tensor]:
    """The elementwise chain from the inner products to the logits (each (B, K) or broadcast)."""
    alpha = 1 - 2 * c * px + c * xx          # coefficient of −p in (−p) ⊕ x
    beta = 1 - c * pp                        # coefficient of x
    g0 = 1 - 2 * c * px + c * c * pp * xx
    gamma = g0.clamp_min(1e-15)
    u_dot_a = (beta * xa - alpha * pa) / gamma
    u_norm2 = (alpha * alpha * pp - 2 * alpha * beta * px + beta * beta * xx) / (gamma * gamma)
    lam = 2 / (1 - c * pp).clamp_min(1e-15)
    d0 = 1 - c * u_norm2
    den = d0.clamp_min(1e-15)
    arg = 2 * c ** 0.5 * u_dot_a / (den * a_norm)
    return {"alpha": alpha, "beta": beta, "g0": g0, "gamma": gamma, "u_dot_a": u_dot_a, "u_norm2": u_norm2,
            "lam": lam, "d0": d0, "den": den, "arg": arg}


class _PoincareMLR(torch.autograd.Function):
    """Poincaré MLR logits from two matmuls, with the backward pass in closed form: only the two
    (B, K) inner products ⟨x, p_k⟩ and ⟨x, a_k⟩ are kept between forward and backward (autograd
    through the formula keeps about twenty (B, K) tensors: 2.5 GB at 100,000 classes, batch 256)."""

    @staticmethod
    def forward(ctx, x, p, a, c):  # type: ignore[override]
        px, xa = x @ p.t(), x @ a.t()
        xx = (x * x).sum(1, keepdim=True)
        pp, pa = (p * p).sum(1), (p * a).sum(1)
        a_norm = torch.linalg.vector_norm(a, dim=1)
        t = _mlr_terms(px, xa, xx, pp, pa, a_norm.clamp_min(1e-15), c)
        ctx.save_for_backward(x, p, a, px, xa)
        ctx.c = c
        return t["lam"] * a_norm.clamp_min(1e-15) / c ** 0.5 * torch.asinh(t["arg"])

    @staticmethod
    def backward(ctx, grad):  # type: ignore[override]
        x, p, a, px, xa = ctx.saved_tensors
        c = ctx.c
        s = c ** 0.5
        xx = (x * x).sum(1, keepdim=True)
        pp, pa = (p * p).sum(1), (p * a).sum(1)
        norm = torch.linalg.vector_norm(a, dim=1)
        n = norm.clamp_min(1e-15)
        t = _mlr_terms(px, xa, xx, pp, pa, n, c)
        alpha, beta, gamma, arg, lam = t["alpha"], t["beta"], t["gamma"], t["arg"], t["lam"]
        asinh = torch.asinh(arg)
        g_arg = grad * lam * n / (s * torch.sqrt(1 + arg * arg))
        g_lam = (grad * n / s * asinh).sum(0)                          # (K,)
        g_n = (grad * lam / s * asinh - g_arg * arg / n).sum(0)        # (K,)
        g_u = g_arg * 2 * s / (t["den"] * n)                           # ∂/∂u_dot_a
        g_un2 = -c * torch.where(t["d0"] > 1e-15, -g_arg * arg / t["den"], 0.0)
        g_num1, g_num2 = g_u / gamma, g_un2 / (gamma * gamma)
        g_gamma = -(g_u * t["u_dot_a"] + 2 * g_un2 * t["u_norm2"]) / gamma
        g_g0 = torch.where(t["g0"] > 1e-15, g_gamma, 0.0)
        g_alpha = -pa * g_num1 + g_num2 * (2 * alpha * pp - 2 * beta * px)
        g_beta = xa * g_num1 + g_num2 * (2 * beta * xx - 2 * alpha * px)
        g_px = -2 * c * g_g0 - 2 * g_num2 * alpha * beta - 2 * c * g_alpha
        g_xa = beta * g_num1
        g_xx = (c * c * pp * g_g0 + g_num2 * beta * beta + c * g_alpha).sum(1, keepdim=True)   # (B, 1)
        g_pp = (c * c * xx * g_g0 + g_num2 * alpha * alpha - c * g_beta).sum(0)                # (K,)
        g_pp = g_pp + g_lam * torch.where(1 - c * pp > 1e-15, 2 * c / (1 - c * pp) ** 2, 0.0)
        g_pa = -(alpha * g_num1).sum(0)                                                        # (K,)
        grad_x = g_px @ p + g_xa @ a + 2 * g_xx * x
        grad_p = g_px.t() @ x + 2 * g_pp[:, None] * p + g_pa[:, None] * a
        g_n = torch.where(norm > 1e-15, g_n / norm.clamp_min(1e-15), 0.0)
        grad_a = g_xa.t() @ x + g_pa[:, None] * p + g_n[:, None] * a
        return grad_x, grad_p, grad_a, None


def poincare_mlr(x: torch.Tensor, p: torch.Tensor, a: torch.Tensor, c: float | torch.Tensor, *,
                 closed_form: bool | None = None) -> torch.Tensor:
    """Logits (B, K) of points ``x`` (B, d) in the ball for hyperplanes (p, a), each (K, d).

    ``closed_form`` (default: on every device but the CPU, where arithmetic rather than memory is
    the cost and autograd through the same formula is faster) uses :class:`_PoincareMLR`."""
    c = float(c)
    if closed_form if closed_form is not None else x.device.type != "cpu":
        return _PoincareMLR.apply(x, p, a, c)
    a_norm = torch.linalg.vector_norm(a, dim=1).clamp_min(1e-15)
    t = _mlr_terms(x @ p.t(), x @ a.t(), (x * x).sum(1, keepdim=True), (p * p).sum(1), (p * a).sum(1), a_norm, c)
    return t["lam"] * a_norm / c ** 0.5 * torch.asinh(t["arg"])


@register_head("hyperbolic", citation="Ganea et al., Hyperbolic Neural Networks, NeurIPS 2018; Khrulkov et al., "
               "Hyperbolic Image Embeddings, CVPR 2020")
class HyperbolicHead(Head):
    """Poincaré-ball MLR on geoopt's PoincareBall(c) after expmap0 (Khrulkov et al. 2020)."""

    def __init__(self, hierarchy: Hierarchy, in_features: int, *, curvature: PositiveFloat = 0.05,
                 clip_radius: PositiveFloat = 1.0) -> None:
        super().__init__(hierarchy, in_features)
        self.curvature = float(curvature)
        # Feature clipping (Guo et al., CVPR 2022, who found r = 1 robust): features longer than r
        # are shortened to r before expmap0, keeping points away from the boundary where gradients
        # vanish or explode. Without it, training diverged at lr 0.05 in our tests.
        self.clip_radius = float(clip_radius)
        self.ball = geoopt.PoincareBall(c=self.curvature)
        bound = 1.0 / math.sqrt(in_features)
        self.p_tangent = nn.Parameter(torch.empty(hierarchy.num_leaves, in_features).uniform_(-bound, bound))
        self.a_tangent = nn.Parameter(torch.empty(hierarchy.num_leaves, in_features).uniform_(-bound, bound))

    def hyperplanes(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Points p (K, d) in the ball and normals a (K, d) of the class hyperplanes."""
        p = self.ball.expmap0(self.p_tangent)
        a = self.a_tangent * (1 - self.ball.c * (p * p).sum(1, keepdim=True))
        return p, a

    def to_ball(self, z: torch.Tensor) -> torch.Tensor:
        """Clip the features to norm ≤ clip_radius, then map them into the ball with expmap0."""
        norm = torch.linalg.vector_norm(z, dim=-1, keepdim=True).clamp_min(1e-15)
        z = z * (self.clip_radius / norm).clamp(max=1.0)
        return self.ball.projx(self.ball.expmap0(z))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        # hyperbolic maths is unstable in half precision: keep it in float32 under autocast
        with torch.autocast(z.device.type, enabled=False):
            p, a = self.hyperplanes()
            # the ball's own c (a float32 buffer), so that every step uses the same curvature
            return poincare_mlr(self.to_ball(full_precision(z)), p, a, self.ball.c)

    def config(self) -> dict:
        return {"curvature": self.curvature, "clip_radius": self.clip_radius}
