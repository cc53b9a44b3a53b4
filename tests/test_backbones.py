"""Backbones: the paper's small-image stem, channel counts, the 2-D bottleneck."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from hseval.core.errors import ConfigError
from hseval.nn.backbones import BACKBONES, create_backbone
from tests.helpers import by_weight

FEATURES = {"small-cnn": 128, "resnet18": 512, "resnet50": 2048, "densenet121": 1024, "densenet161": 2208}


def test_registry():
    assert set(BACKBONES.names()) == set(FEATURES)


@pytest.mark.parametrize("name", [by_weight(name, backbone=name) for name in BACKBONES.names()])
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


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"name": "vgg"}, ConfigError, r"unknown backbone 'vgg'; choose one of"),
    ({"name": "resnet18", "in_channels": 0}, ValueError, r"create_backbone\(\): in_channels must be >= 1, got 0"),
    ({"name": "resnet18", "image_size": -3}, ValueError, r"image_size must be >= 1, got -3"),
    ({"name": "resnet18", "image_size": 28.0}, TypeError, r"image_size must be an integer, got float 28.0"),
    ({"name": "resnet18", "embedding_dim": 0}, ValueError, r"embedding_dim must be >= 1, got 0"),
    ({"name": "resnet18", "small_stem": "yes"}, TypeError, r"small_stem must be true or false, got str .yes."),
])
def test_bad_backbone_options(kwargs, error, message):
    with pytest.raises(error, match=message):
        create_backbone(**kwargs)


# ------------------------------------------------------------------ timm:NAME (a tiny timm model, no download)
def test_timm_backbone_small_stem_and_channels():
    small = create_backbone("timm:test_resnet", in_channels=1, image_size=28)
    first = small.body.get_submodule(small.body.pretrained_cfg["first_conv"])
    assert (first.in_channels, first.kernel_size, first.stride) == (1, (3, 3), (1, 1))
    assert isinstance(small.body.maxpool, nn.Identity) and small.classifier == "fc"
    z = small(torch.randn(2, 1, 28, 28))
    assert z.shape == (2, small.out_features) and small.out_features == small.body.num_features
    large = create_backbone("timm:test_resnet", image_size=224)
    assert large.body.get_submodule("conv1.0").stride == (2, 2) and isinstance(large.body.maxpool, nn.MaxPool2d)
    with torch.device("meta"):  # what the checks before training build
        assert create_backbone("timm:test_resnet", image_size=32, embedding_dim=2).out_features == 2


def test_timm_backbone_takes_timms_keys(tmp_path):
    """A timm model's state dict (its classifier included) starts the backbone (``--init``)."""
    import timm
    from safetensors.torch import save_file

    from hseval.train.config import load_config
    from hseval.train.pretrained import load_init

    full = timm.create_model("test_resnet", pretrained=False, num_classes=7)
    with torch.no_grad():
        for tensor in full.state_dict().values():
            tensor.copy_(torch.rand(tensor.shape) if tensor.is_floating_point() else tensor)
    save_file(full.state_dict(), str(tmp_path / "timm.safetensors"))
    backbone = create_backbone("timm:test_resnet", image_size=224)
    record = load_init(load_config("paper", [f"model.init={tmp_path / 'timm.safetensors'}"]).model, backbone)
    for key, tensor in backbone.body.state_dict().items():
        assert torch.equal(tensor, full.state_dict()[key]), key
    assert record["dropped"] == ["fc.bias", "fc.weight"]


@pytest.mark.parametrize(("name", "kwargs", "message"), [
    ("timm:no_such_model", {}, r"unknown backbone 'timm:no_such_model': timm .* has no model 'no_such_model'"),
    ("timm:test_vit", {"image_size": 32}, r"'timm:test_vit' has no small-image stem .*model.small_stem=false"),
    ("vgg", {}, r"unknown backbone 'vgg'; choose one of .*, or timm:MODEL"),
])
def test_bad_timm_backbones(name, kwargs, message):
    with pytest.raises(ConfigError, match=message):
        create_backbone(name, **kwargs)


def test_without_timm_the_error_names_the_extra(monkeypatch):
    from hseval.core import extras

    monkeypatch.setattr(extras, "installed", lambda module: module != "timm")
    with pytest.raises(ConfigError, match=r"backbone 'timm:resnet18' needs the package 'timm'.*pip install "
                                          r"'hseval\[timm\]'"):
        create_backbone("timm:resnet18")
