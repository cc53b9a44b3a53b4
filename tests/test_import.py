"""``hseval import``: checkpoints trained elsewhere (torchvision ResNet-18, a small CNN, an hseval
model's tensors under foreign names) become run folders whose logits are the original model's, and
``hseval evaluate`` accepts them; a damaged checkpoint is one line naming the key, and no folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import torchvision
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors.torch import save_file
from torch import nn

from hseval.cli.main import main
from hseval.core.errors import HsevalError, HsevalWarning
from hseval.io.checkpoint_import import import_checkpoint
from hseval.io.run_format import load_run, verify_run
from hseval.io.state_dict import read_state_dict
from hseval.nn.heads import list_heads
from hseval.nn.model import build_model
from hseval.tree import write_hierarchy
from tests.helpers import examples, fashion_tree

ATOL = 1e-5


def _randomise_batch_norm(model: nn.Module, seed: int = 1) -> None:
    """Running statistics and affine weights far from their initial values: a wrong mapping of any
    of them changes the logits."""
    generator = torch.Generator().manual_seed(seed)
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            n = module.num_features
            module.running_mean.copy_(torch.randn(n, generator=generator) * 0.1)
            module.running_var.copy_(torch.rand(n, generator=generator) + 0.5)
            module.weight.data.copy_(torch.rand(n, generator=generator) + 0.5)
            module.bias.data.copy_(torch.randn(n, generator=generator) * 0.1)
            module.num_batches_tracked.fill_(7)


@pytest.fixture(scope="module")
def tree_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("tree") / "fashion.json"
    write_hierarchy(fashion_tree(), path)
    return path


def resnet18_small_stem(classes: int, in_channels: int = 1) -> nn.Module:
    """A torchvision ResNet-18 as trained on small grey images elsewhere: 3×3 stride-1 first conv,
    no max-pool; its bias zero (hseval's heads have none)."""
    model = torchvision.models.resnet18(num_classes=classes)
    model.conv1 = nn.Conv2d(in_channels, 64, kernel_size=3, stride=1, padding=1, bias=False)
    model.maxpool = nn.Identity()
    _randomise_batch_norm(model)
    nn.init.zeros_(model.fc.bias)
    return model.eval()


class ForeignSmallCNN(nn.Module):
    """hseval's small CNN as another code base holds it: ``features.*`` and a bias-free ``fc``."""

    def __init__(self, classes: int) -> None:
        super().__init__()
        from hseval.nn.backbones import create_backbone

        self.features = create_backbone("small-cnn", in_channels=1).body
        self.fc = nn.Linear(128, classes, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.features(x))


def small_cnn_checkpoint(folder: Path, name: str = "cnn.pt") -> tuple[Path, nn.Module]:
    model = ForeignSmallCNN(10)
    _randomise_batch_norm(model)
    model.eval()
    path = folder / name
    if path.suffix == ".safetensors":
        save_file(model.state_dict(), str(path))
    else:
        torch.save(model.state_dict(), path)
    return path, model


def logits_equal(run_dir: Path, original: nn.Module, shape: tuple[int, ...]) -> None:
    run = load_run(run_dir)
    x = torch.randn(4, *shape, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        expected, got = original.eval()(x), run.model(x)
    assert got.shape == expected.shape
    torch.testing.assert_close(got, expected, atol=ATOL, rtol=0)


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hseval: error: "), err
    return err[0]


# ------------------------------------------------------------------ the mapping is right: same logits
@pytest.mark.parametrize("suffix", [".pt", ".safetensors"])
def test_torchvision_resnet18_imports_with_its_logits(tmp_path, tree_file, fashion_like, suffix, capsys):
    original = resnet18_small_stem(10)
    path = tmp_path / f"resnet18{suffix}"
    state = original.state_dict()
    if suffix == ".pt":  # as a DDP training loop saves it: nested, every key under "module."
        torch.save({"epoch": 90, "model_state_dict": {f"module.{k}": v for k, v in state.items()}}, path)
    else:
        save_file(state, str(path))
    out = tmp_path / "run"
    assert main(["import", str(path), "--backbone", "resnet18", "--head", "plain", "--hierarchy", str(tree_file),
                 "--dataset", "fashion-mnist", "--data-root", str(fashion_like), "--out", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    logits_equal(out, original, (1, 28, 28))
    meta = verify_run(out).meta
    config = meta["model"]["backbone"]["config"]
    assert config["in_channels"] == 1 and config["small_stem"] is True  # read off conv1's (64, 1, 3, 3)
    source = meta["imported_from"]
    assert source["format"] == ("torch" if suffix == ".pt" else "safetensors")
    assert source["container"] == ("model_state_dict" if suffix == ".pt" else None)
    assert source["mapping"]["head.classifier.weight"].endswith("fc.weight")
    assert source["mapping"]["backbone.body.layer4.1.bn2.running_var"].endswith("layer4.1.bn2.running_var")
    assert source["dropped"] == [("module." if suffix == ".pt" else "") + "fc.bias"]  # zero: dropped
    assert len(source["sha256"]) == 64 and meta["seed"] is None and "history" not in meta
    assert meta["dataset"]["class_names"] == list(fashion_tree().leaf_names)


def test_imagenet_resnet18_without_the_dataset_at_hand(tmp_path, tree_file, capsys):
    """The 7×7 ImageNet stem, 3 channels; the dataset is not there: a warning, and the run records it."""
    original = torchvision.models.resnet18(num_classes=10)
    _randomise_batch_norm(original)
    nn.init.zeros_(original.fc.bias)
    torch.save(original.state_dict(), tmp_path / "r.pth")
    with pytest.warns(HsevalWarning, match="dataset 'cifar100' is not at hand"):
        out = import_checkpoint(tmp_path / "r.pth", tmp_path / "run", backbone="resnet18", head="plain",
                                hierarchy=tree_file, dataset="cifar100", data_root=tmp_path / "nowhere")
    logits_equal(out, original, (3, 64, 64))
    meta = verify_run(out).meta
    assert meta["model"]["backbone"]["config"]["small_stem"] is False
    assert meta["dataset"]["name"] == "cifar100" and meta["dataset"]["root"] == str((tmp_path / "nowhere").resolve())


def test_small_cnn_with_prefix_and_evaluate(tmp_path, tree_file, fashion_like, capsys):
    path, original = small_cnn_checkpoint(tmp_path, "cnn.safetensors")
    out = tmp_path / "run"
    assert main(["import", str(path), "--backbone", "small-cnn", "--head", "plain", "--hierarchy", str(tree_file),
                 "--dataset", "fashion-mnist", "--data-root", str(fashion_like), "--prefix", "features.",
                 "--out", str(out)]) == 0
    logits_equal(out, original, (1, 28, 28))
    evaluation = tmp_path / "eval"
    assert main(["evaluate", str(out), "--out", str(evaluation), "--projections", "none", "--quiet"]) == 0
    metrics = json.loads((evaluation / "run" / "metrics.json").read_text())
    assert metrics["samples"] == 200 and metrics["head"] == "plain" and metrics["seed"] is None
    # the accuracy evaluate reports is the original model's on the same preprocessed images
    from hseval.data import load_dataset

    data = load_dataset("fashion-mnist", fashion_like, download=False)
    with torch.no_grad():
        pred = original(data.test.preprocess(data.test.images, train=False)).argmax(1).numpy()
    assert metrics["top1"] == pytest.approx(float((pred == data.test.labels).mean()))


@pytest.mark.parametrize("head", list_heads())
def test_every_head_imports_with_map(tmp_path, tree_file, fashion_like, head):
    """An hseval model's tensors under foreign names (Δ as 'hc.delta', ...) come back with --map,
    with the same logits; the head's options come with --set."""
    options = {"riemann": {"radius": 2.0, "radius_decay": 0.7}, "hyperbolic": {"curvature": 0.1}}.get(head, {})
    spec = {"backbone": {"name": "small-cnn", "config": {"in_channels": 1, "image_size": 28}},
            "head": {"name": head, "config": options}}
    original = build_model(spec, fashion_tree())
    _randomise_batch_norm(original)
    with torch.no_grad():
        for name, parameter in original.head.named_parameters():
            if parameter.requires_grad:
                parameter.add_(torch.randn_like(parameter) * 0.01)
                if head.startswith("riemann") and name == "delta":
                    parameter.copy_(torch.nn.functional.normalize(parameter, dim=1))
    state = original.state_dict()
    trained = [f"head.{n}" for n, p in original.head.named_parameters() if p.requires_grad]
    foreign = {k.removeprefix("backbone.body."): v for k, v in state.items() if k.startswith("backbone.")}
    foreign.update({k.replace("head.", "hc."): state[k] for k in trained})
    save_file(foreign, str(tmp_path / "model.safetensors"))
    maps = [f"{k}={k.replace('head.', 'hc.')}" for k in trained]
    sets = [f"head.{k}={v}" for k, v in options.items()]
    out = import_checkpoint(tmp_path / "model.safetensors", tmp_path / "run", backbone="small-cnn", head=head,
                            hierarchy=tree_file, dataset="fashion-mnist", data_root=fashion_like,
                            image_size=28, head_options=sets, mapping=maps)
    logits_equal(out, original, (1, 28, 28))
    assert load_run(out).model.spec() == original.spec()


def test_delta_head_without_map_names_what_it_needs(tmp_path, tree_file, fashion_like, capsys):
    path, _ = small_cnn_checkpoint(tmp_path)
    out = tmp_path / "run"
    code = main(["import", str(path), "--backbone", "small-cnn", "--head", "riemann", "--hierarchy", str(tree_file),
                 "--dataset", "fashion-mnist", "--data-root", str(fashion_like), "--prefix", "features.",
                 "--out", str(out)])
    line = one_error_line(capsys)
    assert code == 2 and "head 'riemann' needs head.delta of shape (13, 128)" in line
    assert "--map head.delta=KEY" in line and not out.exists()


# ------------------------------------------------------------------ refusals
def cli_import(path: Path, tree: Path, data: Path, out: Path, *extra: str) -> list[str]:
    return ["import", str(path), "--backbone", "small-cnn", "--head", "plain", "--hierarchy", str(tree), "--dataset",
            "fashion-mnist", "--data-root", str(data), "--prefix", "features.", "--out", str(out), *extra]


def test_nonzero_bias_is_refused_unless_ignored(tmp_path, tree_file, fashion_like, capsys):
    original = resnet18_small_stem(10)
    nn.init.constant_(original.fc.bias, 0.5)
    torch.save(original.state_dict(), tmp_path / "r.pt")
    argv = ["import", str(tmp_path / "r.pt"), "--backbone", "resnet18", "--head", "plain", "--hierarchy",
            str(tree_file), "--dataset", "fashion-mnist", "--data-root", str(fashion_like), "--out",
            str(tmp_path / "run")]
    assert main(argv) == 2
    assert "'fc.bias' is a bias (largest |value| 0.5) but head 'plain' has none" in one_error_line(capsys)
    assert not (tmp_path / "run").exists()
    assert main([*argv, "--ignore", "fc.bias"]) == 0
    assert verify_run(tmp_path / "run").meta["imported_from"]["dropped"] == ["fc.bias"]


def test_out_holding_a_run_needs_force(tmp_path, tree_file, fashion_like, capsys):
    path, original = small_cnn_checkpoint(tmp_path)
    out = tmp_path / "run"
    assert main(cli_import(path, tree_file, fashion_like, out)) == 0
    before = (out / "run.json").read_bytes()
    assert main(cli_import(path, tree_file, fashion_like, out)) == 2
    assert "already holds a run; choose another --out or pass --force" in one_error_line(capsys)
    assert (out / "run.json").read_bytes() == before
    assert main(cli_import(path, tree_file, fashion_like, out, "--force")) == 0
    logits_equal(out, original, (1, 28, 28))


def test_foreign_folder_is_refused(tmp_path, tree_file, fashion_like, capsys):
    path, _ = small_cnn_checkpoint(tmp_path)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    assert main(cli_import(path, tree_file, fashion_like, tmp_path / "mine")) == 2
    assert "was not written by hseval" in one_error_line(capsys)
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == ["notes.txt"]


def test_tree_in_another_class_order_is_put_in_the_data_order(tmp_path, fashion_like, capsys):
    """A class is its name (the one class-order rule): a tree file listing the classes in another
    order is the dataset's tree, put in the dataset's order; one with a class the dataset lacks is
    refused, naming it, before anything is written."""
    import json

    tree = fashion_tree()
    leaves = list(tree.leaf_names)
    lines = []  # a paths file with the first two classes swapped
    for leaf in [1, 0, *range(2, tree.num_leaves)]:
        lines.append("/".join(tree.node_names[a].replace("/", "\\/") for a in tree.path(leaf)))
    (tmp_path / "tree.txt").write_text("\n".join(lines) + "\n")
    path, _ = small_cnn_checkpoint(tmp_path)
    assert main(cli_import(path, tmp_path / "tree.txt", fashion_like, tmp_path / "run")) == 0
    assert json.loads((tmp_path / "run" / "run.json").read_text())["dataset"]["class_names"] == leaves
    (tmp_path / "other.txt").write_text("\n".join([lines[0].replace(leaves[1], "Jumper"), *lines[1:]]) + "\n")
    capsys.readouterr()
    assert main(cli_import(path, tmp_path / "other.txt", fashion_like, tmp_path / "run2")) == 2
    line = one_error_line(capsys)
    assert f"class {leaves[1]!r} is not a leaf of the tree" in line
    assert "the tree must hold the dataset's classes" in line
    assert not (tmp_path / "run2").exists()


def test_read_state_dict_refuses_what_is_not_a_state_dict(tmp_path):
    torch.save([torch.zeros(2)], tmp_path / "list.pt")
    torch.save({"w": torch.zeros(2), "step": 3}, tmp_path / "mixed.pt")
    (tmp_path / "text.pt").write_text("not a checkpoint")
    (tmp_path / "a.npz").write_bytes(b"")
    for name, expected in (("list.pt", "holds a list; expected a mapping of names to tensors"),
                           ("mixed.pt", "'step' is a int, not a tensor"),
                           ("text.pt", "cannot be read as a PyTorch checkpoint (UnpicklingError)"),
                           ("a.npz", "unknown checkpoint type '.npz'"),
                           ("missing.pt", "no such checkpoint file")):
        with pytest.raises(HsevalError, match=None) as info:
            read_state_dict(tmp_path / name)
        assert expected in str(info.value), (name, str(info.value))


def test_planted_pickle_is_refused_and_never_runs(tmp_path):
    from tests.bad_inputs.builders import MARKER_NAME, planted_pickle

    (tmp_path / "evil.pt").write_bytes(planted_pickle(tmp_path / MARKER_NAME))
    with pytest.raises(HsevalError, match="holds Python objects that a weights-only load refuses"):
        read_state_dict(tmp_path / "evil.pt")
    assert not (tmp_path / MARKER_NAME).exists()


# ------------------------------------------------------------------ property: any damage is one line, no folder
GOOD = ForeignSmallCNN(10).state_dict()
KEYS = [k for k in GOOD if not k.endswith("num_batches_tracked")]
names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=20)


@st.composite
def damages(draw):
    key = draw(st.sampled_from(KEYS))
    kind = draw(st.sampled_from(["drop", "rename", "reshape", "extra", "integer", "nan"]))
    return kind, key, draw(names), draw(st.integers(0, 3))


@settings(max_examples=examples(150), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(damage=damages())
def test_damaged_checkpoint_is_one_line_naming_the_key(damage, tree_file, fashion_like, tmp_path, capsys):
    import shutil
    import tempfile

    kind, key, new_name, axis = damage
    tensors = dict(GOOD)
    named = key
    if kind == "drop":
        del tensors[key]
    elif kind == "rename":
        if new_name in tensors:
            new_name += "_renamed"
        tensors[new_name] = tensors.pop(key)
    elif kind == "reshape":
        shape = list(tensors[key].shape)
        shape[axis % len(shape)] += 1
        tensors[key] = torch.zeros(shape)
    elif kind == "extra":
        named = new_name if new_name not in tensors else new_name + "_extra"
        tensors[named] = torch.zeros(2, 3)
    elif kind == "integer":
        tensors[key] = tensors[key].to(torch.int32)
    else:
        value = tensors[key].clone()
        value.view(-1)[0] = float("nan")
        tensors[key] = value
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    try:
        torch.save(tensors, folder / "ckpt.pt")
        out = folder / "run"
        capsys.readouterr()
        code = main(cli_import(folder / "ckpt.pt", tree_file, fashion_like, out))
        err = capsys.readouterr().err
        lines = err.strip().splitlines()
        assert code == 2 and "Traceback" not in err and len(lines) == 1, err
        assert lines[0].startswith("hseval: error: ") and "ckpt.pt" in lines[0], lines[0]
        # a missing key is named as hseval looked for it, after stripping --prefix
        shown = named.removeprefix("features.") if kind in ("drop", "rename") else named
        assert repr(shown) in lines[0], (kind, named, lines[0])
        assert not out.exists()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# ------------------------------------------------------------------ every tensor, every bad value
def _bad_values(kind: str) -> list[tuple[str, torch.Tensor]]:
    """(key, damaged tensor) for every tensor of ``GOOD`` that ``kind`` applies to."""
    out = []
    for key, tensor in GOOD.items():
        if kind in ("nan", "inf") and tensor.is_floating_point():
            value = tensor.clone()
            value.view(-1)[-1] = float(kind)
        elif kind == "negative variance" and key.endswith("running_var"):
            value = tensor.clone()
            value[0] = -0.25
        elif kind == "wrong shape":
            value = tensor.reshape(1) if tensor.dim() == 0 else torch.cat([tensor, tensor[:1]])
        else:
            continue
        out.append((key, value))
    return out


@pytest.mark.parametrize("kind, fragment", [
    ("nan", "holds NaN or infinite values"), ("inf", "holds NaN or infinite values"),
    ("negative variance", "holds a negative running variance (-0.25"), ("wrong shape", "has shape")])
def test_every_tensor_with_a_bad_value_is_refused_in_one_line(kind, fragment, tree_file, fashion_like, tmp_path,
                                                              capsys):
    """Each tensor of a real checkpoint damaged in turn: import refuses it before writing, in one
    line naming the tensor, as a trained run's tensors are refused when loaded."""
    damaged = _bad_values(kind)
    assert len(damaged) >= (3 if kind == "negative variance" else 16)
    for key, value in damaged:
        folder = tmp_path / f"{kind}-{key}"
        folder.mkdir()
        torch.save({**GOOD, key: value}, folder / "ckpt.pt")
        capsys.readouterr()
        assert main(cli_import(folder / "ckpt.pt", tree_file, fashion_like, folder / "run")) == 2, key
        line = one_error_line(capsys)
        assert repr(key) in line and fragment in line, (key, line)
        assert sorted(p.name for p in folder.iterdir()) == ["ckpt.pt"], key


def test_a_run_with_a_negative_variance_is_refused_when_loaded(tmp_path, tree_file, fashion_like):
    """The same check guards a run's own tensors (an edited model.safetensors, checksum updated)."""
    from tests.bad_inputs.builders import resave_tensors

    path, _ = small_cnn_checkpoint(tmp_path)
    out = tmp_path / "run"
    assert main(cli_import(path, tree_file, fashion_like, out)) == 0
    resave_tensors(out, lambda t: t["backbone.body.1.running_var"].mul_(-1))
    with pytest.raises(HsevalError, match=r"tensor 'backbone.body.1.running_var' holds a negative running variance"):
        load_run(out)


def test_the_readmes_import_example_is_evaluated_and_reported(tmp_path, tree_file, fashion_like, capsys):
    """README: ``hseval import model.safetensors --backbone resnet18 --head riemann ... --map
    head.delta=hc.delta --set head.radius_decay=0.7``, then evaluate and report. The imported run
    has no training settings; the paper's tables show "n/a" where they need one (the report once
    failed with an internal TypeError there)."""
    spec = {"backbone": {"name": "resnet18", "config": {"in_channels": 1, "image_size": 28, "small_stem": True}},
            "head": {"name": "riemann", "config": {"radius_decay": 0.7}}}
    original = build_model(spec, fashion_tree())
    state = original.state_dict()
    foreign = {k.removeprefix("backbone.body."): v for k, v in state.items() if k.startswith("backbone.")}
    foreign["hc.delta"] = state["head.delta"]
    save_file(foreign, str(tmp_path / "model.safetensors"))
    run, evaluation = tmp_path / "runs" / "imported-riemann", tmp_path / "eval"
    assert main(["import", str(tmp_path / "model.safetensors"), "--backbone", "resnet18", "--head", "riemann",
                 "--hierarchy", str(tree_file), "--dataset", "fashion-mnist", "--data-root", str(fashion_like),
                 "--map", "head.delta=hc.delta", "--set", "head.radius_decay=0.7", "--out", str(run)]) == 0
    assert main(["evaluate", str(run), "--out", str(evaluation), "--projections", "none", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["report", str(evaluation)]) == 0, capsys.readouterr().err
    tables = (evaluation / "paper_tables.md").read_text()
    assert "| n/a |" in tables and "n/a: the radius decay is not recorded" in tables
