"""``plain``: a linear last layer without bias, the paper's baseline."""

from __future__ import annotations

import torch
from torch import nn

from hseval.nn.heads.base import PAPER, Head, register_head
from hseval.tree.hierarchy import Hierarchy


@register_head("plain", citation=PAPER)
class PlainHead(Head):
    """φᵀW with W free (nn.Linear without bias); ignores the hierarchy while training."""

    def __init__(self, hierarchy: Hierarchy, in_features: int) -> None:
        super().__init__(hierarchy, in_features)
        self.classifier = nn.Linear(in_features, hierarchy.num_leaves, bias=False)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.classifier(z)

    def class_weights(self) -> torch.Tensor:
        return self.classifier.weight.detach().t()
