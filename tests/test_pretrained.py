"""``hseval train --init FILE`` and ``model.freeze_backbone``: the backbone starts from a state dict
on disk (torchvision's keys; the reader and key errors of ``hseval import``), the head starts fresh,
run.json records the file; a frozen backbone keeps its weights and batch-norm statistics."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
import torchvision
from safetensors.torch import load_file, save_file
from torch import nn

from hseval.cli.main import main
from hseval.core.errors import ConfigError
from hseval.core.fileio import sha256
from hseval.io.run_format import load_run, load_train_state
from hseval.io.state_dict import StateDictError
from hseval.nn.backbones import create_backbone
from hseval.train.config import load_config
from hseval.train.engine import load_data, train
from hseval.train.optim import build_optimizers
from hseval.train.pretrained import load_init, read_init
from hseval.train.session import initial_model
from tests.helpers import quick

QUICK = ["--quiet", "--set", "data.train_subset=64", "--set", "data.batch_size=16", "--set", "optim.epochs=1"]


def _randomise(module: nn.Module, seed: int = 1) -> None:
    """Every tensor far from its initial value (batch-norm statistics included): a wrong mapping shows."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, tensor in module.state_dict().items():
            if tensor.is_floating_point():
                tensor.copy_(torch.rand(tensor.shape, generator=generator) + (0.5 if "running_var" in name else -0.5))


def small_cnn_file(folder: Path, name: str = "cnn.pt", *, prefix: str = "") -> tuple[Path, dict[str, torch.Tensor]]:
    """The full model of the small CNN as another code base saves it: its layers and a classifier ``fc``."""
    body = create_backbone("small-cnn", in_channels=1).body
    _randomise(body)
    state = {f"{prefix}{k}": v.clone() for k, v in body.state_dict().items()}
    state[f"{prefix}fc.weight"], state[f"{prefix}fc.bias"] = torch.randn(7, 128), torch.randn(7)
    path = folder / name
    save_file(state, str(path)) if path.suffix == ".safetensors" else torch.save(state, path)
    return path, state


def test_torchvisions_keys_and_classifier(tmp_path):
    """An ImageNet ResNet-18 as torchvision saves it: every body tensor taken, ``fc`` dropped; into
    the small stem its 7×7 first convolution is one line that says which setting to change."""
    original = torchvision.models.resnet18()
    _randomise(original)
    path = tmp_path / "resnet18.pth"
    torch.save(original.state_dict(), path)
    config = load_config("paper", [f"model.init={path}"]).model
    backbone = create_backbone("resnet18", image_size=224)
    record = load_init(config, backbone)
    for key, tensor in backbone.body.state_dict().items():
        assert torch.equal(tensor, original.state_dict()[key]), key
    assert record["dropped"] == ["fc.bias", "fc.weight"] and record["sha256"] == sha256(path)
    assert record["mapping"]["backbone.body.layer4.1.bn2.running_var"] == "layer4.1.bn2.running_var"
    assert record["format"] == "torch" and record["path"] == str(path.resolve())
    with pytest.raises(StateDictError, match=r"resnet18.pth: 'conv1.weight' has shape \(64, 3, 7, 7\) but .*"
                                             r"small_stem=True.*pass --set model.small_stem=false"):
        read_init(config, create_backbone("resnet18", image_size=32))


def test_train_init_frozen_keeps_the_file_and_records_it(fashion_like, tmp_path, capsys):
    path, state = small_cnn_file(tmp_path)
    out = tmp_path / "run"
    assert main(["train", "--data-root", str(fashion_like), "--backbone", "small-cnn", "--init", str(path),
                 "--set", "model.freeze_backbone=true", *QUICK, "--out", str(out)]) == 0
    capsys.readouterr()
    weights = load_run(out).model.state_dict()
    for key, tensor in state.items():  # weights and batch-norm statistics: not one bit moved
        if not key.startswith("fc."):
            assert torch.equal(weights[f"backbone.body.{key}"], tensor), key
    meta = json.loads((out / "run.json").read_text())
    # the frozen body is the file's: referred to by path and SHA-256, not stored again
    stored, referred = load_file(out / "model.safetensors"), meta["by_reference"]
    assert referred["sha256"] == sha256(path) and referred["path"] == str(path.resolve())
    assert set(referred["tensors"]) == {f"backbone.body.{k}" for k in state if not k.startswith("fc.")}
    assert list(stored) == ["head.classifier.weight"]  # the plain head alone
    source = meta["initialised_from"]
    assert source["sha256"] == sha256(path) and source["dropped"] == ["fc.bias", "fc.weight"]
    assert source["mapping"]["backbone.body.0.weight"] == "0.weight"
    assert meta["training"]["model"]["init"] == str(path.absolute())
    assert meta["training"]["model"]["freeze_backbone"] is True


def test_the_head_starts_fresh_and_the_backbone_learns_unless_frozen(fashion_like, tmp_path):
    """--init changes the backbone alone: the head is the one the seed gives without it."""
    path, _ = small_cnn_file(tmp_path, "cnn.safetensors")
    base = quick(fashion_like, "riemann", "model.backbone=small-cnn")
    data = load_data(base)
    plain, _ = initial_model(base, data)
    started, record = initial_model(base.model_copy(update={"model": base.model.model_copy(
        update={"init": str(path), "freeze_backbone": True})}), data)
    for key, tensor in plain.head.state_dict().items():
        assert torch.equal(tensor, started.head.state_dict()[key])
    assert record["format"] == "safetensors"
    assert not any(p.requires_grad for p in started.backbone.body.parameters())
    started.train()
    assert not any(m.training for m in started.backbone.body.modules()) and started.head.training
    trained = {id(p) for o in build_optimizers(started, base.optim).optimizers.values()
               for g in o.param_groups for p in g["params"]}
    assert trained == {id(p) for p in started.head.parameters()}


def test_prefix_and_map_as_import(fashion_like, tmp_path, capsys):
    path, state = small_cnn_file(tmp_path, prefix="encoder.")
    state["encoder.stem.weight"] = state.pop("encoder.0.weight")
    torch.save(state, path)
    out = tmp_path / "run"
    assert main(["train", "--data-root", str(fashion_like), "--backbone", "small-cnn", "--init", str(path),
                 "--prefix", "encoder.", "--map", "0.weight=encoder.stem.weight", *QUICK, "--out", str(out)]) == 0
    capsys.readouterr()
    source = json.loads((out / "run.json").read_text())["initialised_from"]
    assert source["prefix"] == "encoder." and source["mapping"]["backbone.body.0.weight"] == "encoder.stem.weight"


@pytest.mark.parametrize(("damage", "message"), [
    ("missing", r"cnn.pt: has no '4.weight' of shape \(64, 32, 3, 3\) for backbone 'small-cnn'.*is it a small-cnn "
                r"state dict\?"),
    ("shape", r"cnn.pt: '0.weight' has shape \(32, 3, 3, 3\) but backbone 'small-cnn' .* needs \(32, 1, 3, 3\) for "
              r"body.0.weight: the file's first convolution takes 3 channel\(s\), the data has 1"),
    ("unused", r"cnn.pt: 'extra.weight' of shape \(2,\) is not used by backbone 'small-cnn'.*--ignore extra.weight"),
    ("pickle", r"cnn.pt: holds Python objects that a weights-only load refuses"),
    ("prefix", r"model.init_prefix applies to the file of model.init"),
])
def test_a_bad_init_file_is_one_line_and_writes_nothing(fashion_like, tmp_path, capsys, damage, message):
    path, state = small_cnn_file(tmp_path)
    if damage == "missing":
        del state["4.weight"]
    elif damage == "shape":
        state["0.weight"] = torch.randn(32, 3, 3, 3)
    elif damage == "unused":
        state["extra.weight"] = torch.randn(2)
    elif damage == "pickle":
        state = {"weights": state, "opts": Path("x")}
    torch.save(state, path)
    init = ["--prefix", "x."] if damage == "prefix" else ["--init", str(path)]
    assert main(["train", "--data-root", str(fashion_like), "--backbone", "small-cnn", *init, *QUICK,
                 "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hseval: error: ") and re.search(message, err[0]), err
    assert not (tmp_path / "run").exists()


def test_init_map_needs_init():
    with pytest.raises(ConfigError, match=r"model.init_map applies to the file of model.init"):
        load_config("paper", ["model.init_map=['a=b']"])


def test_a_timm_backbone_trains_from_timms_file_and_loads_back(fashion_like, tmp_path, capsys):
    import timm

    full = timm.create_model("test_resnet", pretrained=False, num_classes=5, in_chans=1)
    _randomise(full)
    torch.save(full.state_dict(), tmp_path / "timm.pth")
    out = tmp_path / "run"
    assert main(["train", "--data-root", str(fashion_like), "--backbone", "timm:test_resnet", "--init",
                 str(tmp_path / "timm.pth"), "--set", "model.freeze_backbone=true", *QUICK, "--out", str(out)]) == 0
    capsys.readouterr()
    run = load_run(out)
    assert run.meta["model"]["backbone"]["name"] == "timm:test_resnet"
    for key, tensor in run.model.backbone.body.state_dict().items():
        assert torch.equal(tensor, full.state_dict()[key]), key
    assert run.model(torch.zeros(2, 1, 28, 28)).shape == (2, 10)


def test_a_frozen_run_resumes_bit_identically_without_saving_its_backbone(fashion_like, tmp_path):
    """The training state leaves the frozen body out (it is rebuilt from the seed and the file),
    and a resumed run ends as the straight one; a file changed in between is refused."""
    path, _ = small_cnn_file(tmp_path)
    settings = [f"model.init={path}", "model.backbone=small-cnn", "model.freeze_backbone=true", "data.train_subset=64",
                "data.batch_size=16", "optim.milestones=[1]"]
    straight = train(quick(fashion_like, "plain", *settings, "optim.epochs=2"), tmp_path / "a", log=lambda _: None)
    halfway = train(quick(fashion_like, "plain", *settings, "optim.epochs=1"), tmp_path / "b", log=lambda _: None)
    (halfway / "run.json").unlink()  # interrupted after epoch 1: its training state is there
    assert torch.load(halfway / "train_state.pt", weights_only=True)["model"] is None  # model.safetensors' weights
    state = load_train_state(halfway)
    assert state["model"] and not any(k.startswith("backbone.body.") for k in state["model"])
    train(quick(fashion_like, "plain", *settings, "optim.epochs=2"), halfway, resume=True, log=lambda _: None)
    assert (straight / "model.safetensors").read_bytes() == (halfway / "model.safetensors").read_bytes()
    (halfway / "run.json").unlink()
    small_cnn_file(tmp_path)  # the same file name, other weights
    with pytest.raises(ConfigError, match=r"cannot continue: it was trained from .*cnn.pt with SHA-256 "
                                          r"[0-9a-f]{12}…, the file now"):
        train(quick(fashion_like, "plain", *settings, "optim.epochs=3"), halfway, resume=True, log=lambda _: None)


@pytest.mark.parametrize("backbone", ["small-cnn", "resnet18"])
def test_a_misshapen_tensor_is_named_with_what_the_backbone_needs(tmp_path, backbone):
    """Each convolution of a real init file in turn given another number of input channels: the
    line names that tensor, the shape the backbone needs for it, and blames the data's channels
    only for the first convolution (a third one was said to be "the file's first convolution",
    whose 48 channels met the data's 32, on 1-channel images)."""
    model = create_backbone(backbone, in_channels=1, image_size=28)
    if backbone == "small-cnn":
        path, state = small_cnn_file(tmp_path)
    else:
        original = torchvision.models.resnet18()
        original.conv1 = nn.Conv2d(1, 64, 3, 1, 1, bias=False)  # the small stem of 1-channel images
        state, path = original.state_dict(), tmp_path / "resnet18.pth"
    convolutions = [k for k, v in state.items() if v.dim() == 4]
    assert len(convolutions) >= 3 and f"body.{convolutions[0]}" == model.stem
    config = load_config("fashion-mnist", [f"model.init={path}", f"model.backbone={backbone}"]).model
    for key in convolutions:
        tensor = state[key]
        bad = {**state, key: torch.zeros(tensor.shape[0], tensor.shape[1] + 16, *tensor.shape[2:])}
        torch.save(bad, path)
        with pytest.raises(StateDictError) as info:
            read_init(config, model)
        message = str(info.value)
        assert f"{path}: '{key}' has shape {tuple(bad[key].shape)} but backbone '{backbone}'" in message, message
        assert f"needs {tuple(tensor.shape)} for body.{key}" in message, message
        stem = f"body.{key}" == model.stem
        assert ("the file's first convolution takes 17 channel(s), the data has 1" in message) == stem, message
        assert "\n" not in message


@pytest.mark.slow  # trains two runs
def test_an_hseval_run_folder_gives_its_backbone_and_drops_its_head(fashion_like, tmp_path, capsys):
    first = tmp_path / "first"
    assert main(["train", "--data-root", str(fashion_like), "--head", "multitask", *QUICK, "--out", str(first)]) == 0
    second = tmp_path / "second"
    assert main(["train", "--data-root", str(fashion_like), "--head", "riemann", "--init", str(first), "--set",
                 "model.freeze_backbone=true", *QUICK, "--out", str(second)]) == 0
    before, after = load_run(first).model.state_dict(), load_run(second).model.state_dict()
    body = [k for k in before if k.startswith("backbone.")]
    assert body and all(torch.equal(before[k], after[k]) for k in body)  # frozen: the first run's backbone
    source = json.loads((second / "run.json").read_text())["initialised_from"]
    assert source["prefix"] == "backbone." and source["sha256"] == sha256(first / "model.safetensors")
    assert source["dropped"] and all(k.startswith("head.") for k in source["dropped"])  # multitask's own head
    capsys.readouterr()
    assert main(["train", "--data-root", str(fashion_like), "--init", str(first), "--prefix", "x.", *QUICK,
                 "--out", str(tmp_path / "third")]) == 2
    assert "is an hseval run, whose backbone's keys hseval knows; leave --prefix out" in capsys.readouterr().err
    assert not (tmp_path / "third").exists()
