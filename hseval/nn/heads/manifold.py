"""``manifold``: columns of Δ normalised in the forward pass (paper, Sec. 3.2, "Integration of
the constraint in the model"), and its learnable-radius variant."""

from __future__ import annotations

import torch
from torch import nn

from hseval.nn.heads.base import PAPER, register_head
from hseval.nn.heads.delta import RadiusHead

_EPS = 1e-12


@register_head("manifold", citation=PAPER)
class ManifoldHead(RadiusHead):
    """φᵀ normalize_cols(Δ) D H: Δ free, but the model only sees δ_p/‖δ_p‖."""

    def initial_delta(self, nodes: int, features: int) -> nn.Parameter:
        return nn.Parameter(torch.randn(nodes, features) / features ** 0.5)

    def scale(self) -> torch.Tensor:
        return self.radius / torch.linalg.vector_norm(self.delta, dim=1).clamp_min(_EPS)

    def tree_inputs(self) -> tuple[torch.Tensor, bool]:
        return self.radius, True


@register_head("manifold-learnable-radius", citation=PAPER)
class ManifoldLearnableRadiusHead(ManifoldHead):
    """As ``manifold``, with D a learnable diagonal initialised at R0·γ^|p| (paper, Table 4)."""

    learnable = True
