"""``multitask``: the plain head plus one linear head per super-class level (the paper's baseline)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from pydantic import NonNegativeFloat
from torch import nn

from hseval.nn.heads.base import PAPER, level_positions, register_head
from hseval.nn.heads.plain import PlainHead
from hseval.tree.hierarchy import Hierarchy

FUSED_ON_CPU = False
"""Whether the CPU takes the GPU's path (one matmul for the levels, a sync-free loss); tests set it."""


def _fused(device: torch.device) -> bool:
    return device.type != "cpu" or FUSED_ON_CPU


@register_head("multitask", citation=PAPER)
class MultitaskHead(PlainHead):
    """Leaf head + a head per depth 1..max_depth-1; loss = CE_leaf + λ·Σ_depth CE_depth."""

    def __init__(self, hierarchy: Hierarchy, in_features: int, *, level_weight: NonNegativeFloat = 1.0) -> None:
        super().__init__(hierarchy, in_features)
        self.level_weight = float(level_weight)
        self.levels = nn.ModuleList(
            nn.Linear(in_features, len(hierarchy.nodes_at_depth(depth)), bias=False)
            for depth in range(1, hierarchy.max_depth)
        )
        self.register_buffer("level_targets", torch.as_tensor(level_positions(hierarchy)), persistent=False)

    def level_logits(self, z: torch.Tensor) -> dict[int, torch.Tensor]:
        """Every level's logits. On a GPU one matmul with the level heads' weights stacked (one
        launch instead of one per level), split by level; on the CPU one small matmul per level,
        which measured faster there."""
        if not len(self.levels):
            return {}
        if not _fused(z.device):
            return {depth: head(z) for depth, head in enumerate(self.levels, start=1)}
        weight = torch.cat([head.weight for head in self.levels])
        parts = F.linear(z, weight).split([head.out_features for head in self.levels], dim=1)
        return dict(enumerate(parts, start=1))

    def loss(self, z: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """CE of the classes + level_weight × Σ_levels the mean CE over the samples whose class
        reaches the level (a level no sample of the batch reaches adds 0)."""
        logits = self(z)
        loss = F.cross_entropy(logits, target)
        targets = self.level_targets[target]
        fused = _fused(z.device)
        for depth, level_logits in self.level_logits(z).items():
            level_target = targets[:, depth - 1]
            if fused:  # the mean computed on the device: no host synchronisation in the step
                total = F.cross_entropy(level_logits, level_target, ignore_index=-100, reduction="sum")
                loss = loss + self.level_weight * total / (level_target >= 0).sum().clamp_min(1)
            elif (level_target >= 0).any():  # on the CPU asking costs nothing, and skips the level
                loss = loss + self.level_weight * F.cross_entropy(level_logits, level_target, ignore_index=-100)
        return loss, logits

    def config(self) -> dict:
        return {"level_weight": self.level_weight}
