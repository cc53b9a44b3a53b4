"""A classifier = backbone φθ + head, rebuilt from a plain-JSON spec."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from hseval.core.errors import ConfigError
from hseval.core.registry import keyword_options, refuse_unknown_options
from hseval.nn.backbones import Backbone, create_backbone
from hseval.nn.heads import Head, create_head
from hseval.tree.hierarchy import Hierarchy

__all__ = ["HierarchicalClassifier", "build_model"]


class HierarchicalClassifier(nn.Module):
    """``forward(x)`` -> leaf logits; ``embed(x)`` -> features φθ(x)."""

    def __init__(self, backbone: Backbone, head: Head) -> None:
        super().__init__()
        if backbone.out_features != head.in_features:
            raise ConfigError(f"backbone gives {backbone.out_features}-d features but the head expects "
                              f"{head.in_features}")
        self.backbone = backbone
        self.head = head

    @property
    def hierarchy(self) -> Hierarchy:
        return self.head.hierarchy

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return self.backbone(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.backbone(x))

    def spec(self) -> dict[str, Any]:
        """What :func:`build_model` needs (minus the hierarchy), as plain JSON types."""
        return {"backbone": {"name": self.backbone.name, "config": self.backbone.config()},
                "head": {"name": self.head.name, "config": self.head.config()}}


def build_model(spec: dict[str, Any], hierarchy: Hierarchy) -> HierarchicalClassifier:
    """Build the model described by ``spec`` (``{"backbone": {name, config}, "head": {name, config}}``)."""
    config = dict(spec["backbone"].get("config", {}))
    refuse_unknown_options("backbone", config, keyword_options(create_backbone))
    backbone = create_backbone(spec["backbone"]["name"], **config)
    head = create_head(spec["head"]["name"], hierarchy, backbone.out_features, **spec["head"].get("config", {}))
    return HierarchicalClassifier(backbone, head)
