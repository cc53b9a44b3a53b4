"""The Δ-heads: class vectors W = Δ S H built through the tree (paper, Sec. 2.4 and 3).

:class:`DeltaHead` holds Δ (one row δ_p per non-root node) and the radius decay
``R_p = R0·γ^|p|``; subclasses choose the per-node factor S (:meth:`DeltaHead.scale`). The
``hierarchy`` head itself (W = ΔH, no radii, δ kept small by weight decay) lives here too.
"""

from __future__ import annotations

import math

import torch
from pydantic import PositiveFloat
from torch import nn

from hseval.nn.heads.base import PAPER, Head, full_precision, register_head
from hseval.nn.heads.tree import TreeIndex, all_node_weights, leaf_weights, tree_linear
from hseval.tree.hierarchy import Hierarchy


def decayed_radii(hierarchy: Hierarchy, radius: float, decay: float) -> torch.Tensor:
    """(|P|,) float32: ``R_p = radius · decay^depth(p)`` (the paper's D, Eq. 10)."""
    depth = torch.tensor(hierarchy.depth, dtype=torch.float64)
    return (radius * decay ** depth).float()


class DeltaHead(Head):
    """Base of the heads whose class vectors follow w_<p,i> = w_p + s_<p,i> δ_<p,i>."""

    def __init__(self, hierarchy: Hierarchy, in_features: int) -> None:
        super().__init__(hierarchy, in_features)
        self.index = TreeIndex(hierarchy)
        self._depth_nodes = [torch.as_tensor(hierarchy.nodes_at_depth(k)) for k in range(1, hierarchy.max_depth)]

    delta: torch.Tensor

    def scale(self) -> torch.Tensor | None:
        """(|P|,) per-node factor s_p, or None for 1."""
        return None

    def tree_inputs(self) -> tuple[torch.Tensor | None, bool]:
        """(scale, normalize) for :func:`tree_linear`: the factor itself, or the radii with the
        normalisation done inside the layer (its gradient in closed form)."""
        return self.scale(), False

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        # under autocast the tree sums and normalisations stay in float32; only the products run in
        # the autocast dtype (as nn.Linear's do), and the logits are float32
        device = z.device.type
        compute = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else None
        scale, normalize = self.tree_inputs()
        with torch.autocast(device, enabled=False):
            return tree_linear(z, self.delta, scale, self.index, normalize=normalize, compute_dtype=compute)

    def node_weights(self) -> torch.Tensor:
        with torch.no_grad():
            return all_node_weights(self.delta, self.scale(), self.index).t()

    def class_weights(self) -> torch.Tensor:
        with torch.no_grad():
            return leaf_weights(self.delta, self.scale(), self.index).t()

    def level_logits(self, z: torch.Tensor) -> dict[int, torch.Tensor]:
        """Super-class logits from the parent δ columns: φᵀ w_p over the nodes of each depth."""
        with torch.autocast(z.device.type, enabled=False):
            node = all_node_weights(self.delta, self.scale(), self.index)
            logits = full_precision(z) @ node.t()
        return {depth: logits[:, nodes.to(z.device)] for depth, nodes in enumerate(self._depth_nodes, start=1)}


@register_head("hierarchy", citation=PAPER)
class HierarchyHead(DeltaHead):
    """φᵀΔH: Δ free, its columns kept small by weight decay (the paper's "Hierarchy")."""

    def __init__(self, hierarchy: Hierarchy, in_features: int) -> None:
        super().__init__(hierarchy, in_features)
        bound = 1.0 / math.sqrt(in_features)  # nn.Linear's default initialisation
        self.delta = nn.Parameter(torch.empty(hierarchy.num_nodes, in_features).uniform_(-bound, bound))


class RadiusHead(DeltaHead):
    """A Δ-head with radius decay R_p = R0·γ^|p|, fixed or (``learnable``) trained; Δ starts where
    its ``initial_delta(nodes, features)`` says."""

    learnable: bool = False

    def __init__(self, hierarchy: Hierarchy, in_features: int, *, radius: PositiveFloat = 1.0,
                 radius_decay: PositiveFloat = 0.5) -> None:
        super().__init__(hierarchy, in_features)
        self.radius0, self.gamma = float(radius), float(radius_decay)
        radii = decayed_radii(hierarchy, self.radius0, self.gamma)
        if self.learnable:
            self.radius = nn.Parameter(radii)
        else:
            self.register_buffer("radius", radii)
        self.delta = self.initial_delta(hierarchy.num_nodes, in_features)

    def radii(self) -> torch.Tensor:
        return self.radius.detach()

    def config(self) -> dict:
        return {"radius": self.radius0, "radius_decay": self.gamma}
