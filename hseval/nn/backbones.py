"""Feature extractors φθ: torchvision ResNets/DenseNets, a small CNN and any timm model
(``timm:NAME``, the optional extra ``hseval[timm]``), chosen by name.

Every backbone maps images (B, C, H, W) to features (B, d) and exposes ``out_features`` = d.
For small images (below 100 pixels a side unless ``small_stem`` says otherwise) the torchvision
models and timm's ResNet-style ones get the paper's CIFAR stem: a 3×3 first convolution with
stride 1 and no max-pool (paper, Sec. 4.1). ``embedding_dim`` adds a linear bottleneck without
bias, e.g. 2 for the paper's 2-D embedding figure. Weights are never downloaded: the paper trains
from scratch, and pretrained weights come from a file (``hseval train --init``). A frozen backbone
(:meth:`Backbone.freeze`, linear probing) keeps its body's weights and batch-norm statistics.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torchvision import models

from hseval.core.arguments import Size, checked
from hseval.core.errors import ConfigError
from hseval.core.extras import require
from hseval.core.registry import Registry

__all__ = ["Backbone", "BACKBONES", "create_backbone", "backbone_factory", "TIMM"]

BACKBONES: Registry[Callable[..., tuple[nn.Module, int]]] = Registry("backbone")
"""Factories ``(*, in_channels, small_stem) -> (body, features)``; :func:`create_backbone` adds the
options every backbone shares (image size, stem, bottleneck)."""
SMALL_IMAGE = 100
TIMM = "timm:"
"""Prefix of the backbones built by timm: ``timm:resnet50`` is ``timm.create_model("resnet50")``."""
CLASSIFIERS = {"resnet18": "fc", "resnet50": "fc", "densenet121": "classifier", "densenet161": "classifier",
               "small-cnn": "fc"}
"""The last layer of the full model of each backbone, which the backbone drops (and a file of the full
model holds, e.g. ImageNet's classifier)."""


class Backbone(nn.Module):
    """``body`` (images -> features) followed by an optional linear bottleneck."""

    def __init__(self, name: str, body: nn.Module, body_features: int, *, embedding_dim: int | None,
                 config: dict[str, Any], classifier: str | None = None) -> None:
        super().__init__()
        self.name = name
        self.body = body
        self.bottleneck = nn.Linear(body_features, embedding_dim, bias=False) if embedding_dim else None
        self.body_features = body_features
        self.out_features = embedding_dim or body_features
        self.classifier = classifier  # the full model's last layer, which ``body`` lacks (e.g. "fc")
        self.frozen = False
        self._config = config

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.project(self.features(x))

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The body's features (B, ``body_features``); without autograd when frozen."""
        if self.frozen:
            with torch.no_grad():
                return self.body(x)
        return self.body(x)

    def project(self, z: torch.Tensor) -> torch.Tensor:
        """Body features -> the backbone's output (the bottleneck, when there is one)."""
        return self.bottleneck(z) if self.bottleneck is not None else z

    def freeze(self) -> Backbone:
        """Linear probing: the body's weights stop learning and its batch-norm statistics stop
        moving (it stays in eval mode when the model trains); a bottleneck still learns."""
        self.body.requires_grad_(False)
        self.frozen = True
        self.body.eval()
        return self

    def train(self, mode: bool = True) -> Backbone:
        super().train(mode)
        if self.frozen:
            self.body.eval()
        return self

    def config(self) -> dict[str, Any]:
        """The keyword arguments of :func:`create_backbone` that rebuild this backbone."""
        return dict(self._config)

    @property
    def stem(self) -> str | None:
        """The key of the first convolution's weight (``body.conv1.weight``): the one tensor whose
        input channels are the images' and whose kernel is the stem's; None without a convolution."""
        return next((f"body.{k}" for k, v in self.body.state_dict().items() if v.dim() == 4), None)


def backbone_factory(name: str) -> Callable[..., tuple[nn.Module, int]]:
    """The factory of backbone ``name``: a registered one, or ``timm:MODEL`` for any model of
    ``timm.list_models()``; a one-line error for an unknown name."""
    if isinstance(name, str) and name.startswith(TIMM):
        return _timm(name.removeprefix(TIMM))
    if name not in BACKBONES:
        raise ConfigError(f"unknown backbone {name!r}; choose one of {', '.join(BACKBONES)}, or timm:MODEL for a "
                          "model of timm.list_models() (pip install 'hseval[timm]')")
    return BACKBONES.get(name)


@checked
def create_backbone(name: str, *, in_channels: Size = 3, image_size: Size = 224, small_stem: bool | None = None,
                    embedding_dim: Size | None = None) -> Backbone:
    """Build backbone ``name`` for images of ``in_channels`` × ``image_size``² (the options checked
    as every public function's: a run.json's, edited, is refused in one line)."""
    factory = backbone_factory(name)
    small = image_size < SMALL_IMAGE if small_stem is None else bool(small_stem)
    body, features = factory(in_channels=in_channels, small_stem=small)
    config = {"in_channels": in_channels, "image_size": image_size, "small_stem": small,
              "embedding_dim": embedding_dim}
    timm_cfg = getattr(body, "pretrained_cfg", {}) if name.startswith(TIMM) else {}
    classifier = timm_cfg.get("classifier") if timm_cfg else CLASSIFIERS.get(name)
    return Backbone(name, body, features, embedding_dim=embedding_dim, config=config, classifier=classifier)


def _resnet(factory: Callable[..., nn.Module]) -> Callable[..., tuple[nn.Module, int]]:
    def build(*, in_channels: int, small_stem: bool) -> tuple[nn.Module, int]:
        model = factory(weights=None)
        if small_stem:
            model.conv1 = nn.Conv2d(in_channels, 64, kernel_size=3, stride=1, padding=1, bias=False)
            model.maxpool = nn.Identity()
        elif in_channels != 3:
            model.conv1 = nn.Conv2d(in_channels, 64, kernel_size=7, stride=2, padding=3, bias=False)
        features = model.fc.in_features
        model.fc = nn.Identity()
        return model, features

    return build


def _densenet(factory: Callable[..., nn.Module]) -> Callable[..., tuple[nn.Module, int]]:
    def build(*, in_channels: int, small_stem: bool) -> tuple[nn.Module, int]:
        model = factory(weights=None)
        conv0 = model.features.conv0
        if small_stem:
            model.features.conv0 = nn.Conv2d(in_channels, conv0.out_channels, kernel_size=3, stride=1, padding=1,
                                             bias=False)
            model.features.pool0 = nn.Identity()
        elif in_channels != 3:
            model.features.conv0 = nn.Conv2d(in_channels, conv0.out_channels, kernel_size=7, stride=2, padding=3,
                                             bias=False)
        features = model.classifier.in_features
        model.classifier = nn.Identity()
        return model, features

    return build


def _timm(model_name: str) -> Callable[..., tuple[nn.Module, int]]:
    """A timm model without its classifier (``num_classes=0``: pooled features), never pretrained
    (weights come from a file: ``--init``). The small stem is the paper's for the models with a
    max-pool after their first convolution (timm's ResNets): that convolution 3×3 with stride 1."""

    def build(*, in_channels: int, small_stem: bool) -> tuple[nn.Module, int]:
        timm = require("timm", purpose=f"backbone '{TIMM}{model_name}'")
        if not timm.is_model(model_name):
            raise ConfigError(f"unknown backbone '{TIMM}{model_name}': timm {timm.__version__} has no model "
                              f"{model_name!r}; see timm.list_models()")
        model = timm.create_model(model_name, pretrained=False, num_classes=0, in_chans=in_channels)
        if small_stem:
            first = model.pretrained_cfg.get("first_conv")
            conv = model.get_submodule(first) if isinstance(first, str) else None
            if not isinstance(conv, nn.Conv2d) or not isinstance(getattr(model, "maxpool", None), nn.Module):
                raise ConfigError(f"backbone '{TIMM}{model_name}' has no small-image stem (the paper's is for "
                                  "ResNet-style models); pass --set model.small_stem=false")
            parent, _, attribute = first.rpartition(".")
            setattr(model.get_submodule(parent) if parent else model, attribute,
                    nn.Conv2d(conv.in_channels, conv.out_channels, kernel_size=3, stride=1, padding=1,
                              bias=conv.bias is not None))
            model.maxpool = nn.Identity()
        return model, int(model.num_features)

    return build


def _register_torchvision() -> None:
    BACKBONES.add("resnet18", _resnet(models.resnet18))
    BACKBONES.add("resnet50", _resnet(models.resnet50))
    BACKBONES.add("densenet121", _densenet(models.densenet121))
    BACKBONES.add("densenet161", _densenet(models.densenet161))


@BACKBONES.register("small-cnn")
def _small_cnn(*, in_channels: int, small_stem: bool) -> tuple[nn.Module, int]:
    """Three 3×3 conv layers (32, 64, 128 channels, ~93k weights), each wide layer after a 2×2
    max-pool, and global average pooling: 128-d features. 7.4 M multiply-adds per 28×28 image,
    half of a second 32-channel layer at full resolution (14.6 M), for the same accuracy on the
    demo's budget (see the fashion-mnist recipe's header): fast enough to train on a laptop CPU."""

    def block(cin: int, cout: int) -> list[nn.Module]:
        return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)]

    body = nn.Sequential(*block(in_channels, 32), nn.MaxPool2d(2), *block(32, 64), nn.MaxPool2d(2),
                         *block(64, 128), nn.AdaptiveAvgPool2d(1), nn.Flatten())
    return body, 128


_register_torchvision()
