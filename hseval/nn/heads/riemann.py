"""``riemann``: every column of Δ on the unit sphere as a geoopt ``ManifoldParameter``, trained
with geoopt's ``RiemannianSGD`` (paper, Sec. 3.2 and Appendix B), and its learnable-radius variant.

geoopt's RiemannianSGD adds ``weight_decay · δ`` to the gradient before projecting it onto the
tangent space, where the radial part is removed: weight decay does nothing on the sphere, which
is why the radii R_p take its place.
"""

from __future__ import annotations

import torch

from hseval.nn.heads.base import PAPER, register_head
from hseval.nn.heads.delta import RadiusHead
from hseval.nn.manifolds import geoopt


@register_head("riemann", citation=PAPER)
class RiemannHead(RadiusHead):
    """φᵀΔDH with ‖δ_p‖ = 1 kept by Riemannian SGD on spheres."""

    def initial_delta(self, nodes: int, features: int) -> geoopt.ManifoldParameter:
        start = torch.nn.functional.normalize(torch.randn(nodes, features), dim=1)
        return geoopt.ManifoldParameter(start, manifold=geoopt.Sphere())

    def scale(self) -> torch.Tensor:
        return self.radius


@register_head("riemann-learnable-radius", citation=PAPER)
class RiemannLearnableRadiusHead(RiemannHead):
    """As ``riemann``, with D a learnable diagonal initialised at R0·γ^|p| (paper, Table 4)."""

    learnable = True
