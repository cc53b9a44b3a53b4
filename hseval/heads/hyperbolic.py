"""``hyperbolic``: Poincaré-ball multinomial logistic regression (Ganea et al. 2018, as used by
Khrulkov et al. 2020), the paper's comparison in its Table 5.

Features are clipped to a norm of at most ``clip_radius`` (Guo et al. 2022; default 1) and
mapped into the ball of curvature ``c`` by geoopt's ``expmap0``. Class k has a point
p_k = expmap0(p̃_k) and a normal a_k = ã_k·(1 − c‖p_k‖²) (Khrulkov et al.'s parametrisation, so
that plain SGD applies), and

    logit_k(x) = λ_{p_k}‖a_k‖/√c · asinh( 2√c⟨(−p_k)⊕x, a_k⟩ / ((1 − c‖(−p_k)⊕x‖²)‖a_k‖) ).

The Möbius sum is expanded into inner products, so a batch costs two (B, d)×(d, K) matmuls
instead of a (B, K, d) tensor; ``tests/test_heads.py`` checks it against geoopt's ``mobius_add``.
"""

from __future__ import annotations

import math

import geoopt
import torch
from torch import nn

from hseval.errors import ConfigError
from hseval.heads.base import Head, full_precision, register_head
from hseval.hierarchy import Hierarchy


def poincare_mlr(x: torch.Tensor, p: torch.Tensor, a: torch.Tensor, c: float | torch.Tensor) -> torch.Tensor:
    """Logits (B, K) of points ``x`` (B, d) in the ball for hyperplanes (p, a), each (K, d)."""
    sqrt_c = c ** 0.5
    px = x @ p.t()
    xa = x @ a.t()
    pp = (p * p).sum(1)
    pa = (p * a).sum(1)
    xx = (x * x).sum(1, keepdim=True)
    a_norm = torch.linalg.vector_norm(a, dim=1).clamp_min(1e-15)
    alpha = 1 - 2 * c * px + c * xx          # coefficient of −p in (−p) ⊕ x
    beta = 1 - c * pp                        # coefficient of x
    gamma = (1 - 2 * c * px + c * c * pp * xx).clamp_min(1e-15)
    u_dot_a = (beta * xa - alpha * pa) / gamma
    u_norm2 = (alpha * alpha * pp - 2 * alpha * beta * px + beta * beta * xx) / (gamma * gamma)
    lam = 2 / (1 - c * pp).clamp_min(1e-15)
    arg = 2 * sqrt_c * u_dot_a / ((1 - c * u_norm2).clamp_min(1e-15) * a_norm)
    return lam * a_norm / sqrt_c * torch.asinh(arg)


@register_head("hyperbolic")
class HyperbolicHead(Head):
    """Poincaré-ball MLR on geoopt's PoincareBall(c) after expmap0 (Khrulkov et al. 2020)."""

    def __init__(self, hierarchy: Hierarchy, in_features: int, *, curvature: float = 0.05,
                 clip_radius: float = 1.0) -> None:
        super().__init__(hierarchy, in_features)
        if not (curvature > 0 and math.isfinite(curvature)):
            raise ConfigError(f"hyperbolic curvature must be a positive number, got {curvature}")
        if not (clip_radius > 0 and math.isfinite(clip_radius)):
            raise ConfigError(f"hyperbolic clip_radius must be a positive number, got {clip_radius}")
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
