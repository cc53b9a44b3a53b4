"""Backbones: the paper's small-image stem, channel counts, the 2-D bottleneck."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from hseval.core.errors import ConfigError
from hseval.nn.backbones import create_backbone, list_backbones

FEATURES = {"small-cnn": 128, "resnet18": 512, "resnet50": 2048, "densenet121": 1024, "densenet161": 2208}


def test_registry():
    assert set(list_backbones()) == set(FEATURES)


@pytest.mark.parametrize("name", list_backbones())
@pytest.mark.parametrize("channels", [1, 3])
def test_forward_backward_small_images(name, channels):
    backbone = create_backbone(name, in_channels=channels, image_size=28)
    z = backbone(torch.randn(2, channels, 28, 28))
    assert z.shape == (2, FEATURES[name]) == (2, backbone.out_features)
    z.sum().backward()
    assert all(p.grad is not None for p in backbone.parameters() if p.requires_grad)


def test_resnet_small_stem_is_the_papers_cifar_stem():
    small = create_backbone("resnet18", image_size=32)
    conv = small.body.conv1
    assert (conv.kernel_size, conv.stride, conv.bias) == ((3, 3), (1, 1), None)
    assert isinstance(small.body.maxpool, nn.Identity)
    large = create_backbone("resnet18", image_size=224)
    assert large.body.conv1.kernel_size == (7, 7) and isinstance(large.body.maxpool, nn.MaxPool2d)
    assert create_backbone("resnet18", image_size=224, small_stem=True).body.conv1.kernel_size == (3, 3)


def test_densenet_small_stem():
    small = create_backbone("densenet121", image_size=32, in_channels=1)
    assert small.body.features.conv0.kernel_size == (3, 3) and small.body.features.conv0.in_channels == 1
    assert isinstance(small.body.features.pool0, nn.Identity)


def test_no_bias_before_the_head_and_2d_bottleneck():
    backbone = create_backbone("resnet18", image_size=32, embedding_dim=2)
    assert backbone.out_features == 2 and backbone.bottleneck.bias is None
    assert backbone(torch.randn(3, 3, 32, 32)).shape == (3, 2)
    assert isinstance(backbone.body.fc, nn.Identity)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"name": "vgg"}, r"unknown backbone 'vgg'; choose one of"),
    ({"name": "resnet18", "in_channels": 0}, r"in_channels must be a positive integer, got 0"),
    ({"name": "resnet18", "image_size": -3}, r"image_size must be a positive integer, got -3"),
    ({"name": "resnet18", "embedding_dim": 0}, r"embedding_dim must be a positive integer or None, got 0"),
])
def test_bad_backbone_options(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        create_backbone(**kwargs)
