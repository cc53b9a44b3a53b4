"""Pretrained models by name: ``hseval predict`` and ``hseval evaluate --model``.

Random-weight torchvision and timm models saved to files stand in for the pretrained ones: the
images ``predict`` feeds are the library's own preprocessing of the same files, to the pixel; its
logits, embeddings and class vectors are a bare PyTorch loop's; an interrupted prediction goes on
from its chunks and ends with the same file; a model of other classes keeps the dataset's columns;
a weights file that does not fit its model is one line. Then a zoo of two models is evaluated and
reported with Making Better Mistakes' figure."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision
from PIL import Image
from safetensors.torch import save_file

from hseval.cli.main import main
from hseval.core.errors import ConfigError, DataError
from hseval.data import load_dataset
from hseval.evaluation import pretrained, zoo
from hseval.io.state_dict import StateDictError
from hseval.tree.builders.packaged import read_table

timm = pytest.importorskip("timm")

CLASSES = ("husky", "beagle", "tabby", "lynx")
TREE = "animal/dog/husky\nanimal/dog/beagle\nanimal/cat/tabby\nanimal/cat/lynx\n"


def _folders(root: Path, classes=CLASSES, per_class: int = 3) -> Path:
    """train/ and test/ image folders of random RGB images of different sizes and aspect ratios (a
    grey PNG among them), and the tree file beside them."""
    rng = np.random.default_rng(0)
    for split in ("train", "test"):
        for c, name in enumerate(classes):
            folder = root / "data" / split / name
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(per_class):
                size = (40 + 13 * i + c, 57 + 5 * c)
                pixels = rng.integers(0, 256, (*size, 3), dtype=np.uint8)
                if i == 1:
                    Image.fromarray(pixels[..., 0], "L").save(folder / f"{i}.png")
                else:
                    Image.fromarray(pixels).save(folder / f"{i}.jpg", quality=90)
    (root / "tree.txt").write_text("".join(line.replace("husky", classes[0]).replace("beagle", classes[1])
                                           .replace("tabby", classes[2]).replace("lynx", classes[3]) + "\n"
                                           for line in TREE.splitlines()))
    return root / "data"


def _data(root: Path, classes=CLASSES):
    return load_dataset("image-folder", _folders(root, classes), hierarchy=root / "tree.txt")


def _save(model: torch.nn.Module, path: Path, seed: int = 0) -> Path:
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            if tensor.is_floating_point() and "running_var" not in name:
                tensor.add_(torch.randn(tensor.shape, generator=generator) * 0.05)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, path)
    return path


def _bare(model: torch.nn.Module, transform, paths) -> tuple[np.ndarray, np.ndarray]:
    """A bare loop: the library's transform on each file, the model's output and its last layer's input."""
    seen = []
    head = model.fc if hasattr(model, "fc") else model.get_classifier()
    hook = head.register_forward_hook(lambda m, args, out: seen.append(args[0]))
    model.eval()
    with torch.no_grad():
        x = torch.stack([transform(Image.open(p).convert("RGB")) for p in paths])
        logits = model(x)
    hook.remove()
    return logits.numpy(), seen[0].numpy()


@pytest.mark.slow  # runs models on images: not in the fast lane
@pytest.mark.parametrize("library", ["torchvision", "timm"])
def test_predict_feeds_the_librarys_preprocessing_and_gives_a_bare_loops_outputs(tmp_path, library):
    data = _data(tmp_path)
    if library == "torchvision":
        model = torchvision.models.resnet18(num_classes=4)
        transform = torchvision.models.ResNet18_Weights.IMAGENET1K_V1.transforms()
    else:
        model = timm.create_model("resnet18", num_classes=4)
        transform = timm.data.create_transform(**timm.data.resolve_data_config({}, model=model))
    weights = _save(model, tmp_path / "w.safetensors")
    loaded = pretrained.load_model(f"{library}:resnet18", weights)
    inputs = pretrained.model_inputs(data.test, loaded.transform)
    for i, path in enumerate(data.test.paths):  # to the pixel
        assert torch.equal(inputs[i][0], transform(Image.open(path).convert("RGB")))
    out = zoo.predict(loaded, data, tmp_path / "preds.npz", batch_size=5, workers=0, progress=False, log=lambda m: None)
    got = np.load(out)
    logits, features = _bare(model, transform, data.test.paths)
    assert sorted(got.files) == ["class_weights", "embeddings", "logits", "targets"]
    np.testing.assert_array_equal(got["targets"], data.test.labels)
    np.testing.assert_allclose(got["logits"], logits, atol=1e-5, rtol=0)
    np.testing.assert_allclose(got["embeddings"], features, atol=1e-5, rtol=0)
    head = model.fc if library == "torchvision" else model.get_classifier()
    np.testing.assert_array_equal(got["class_weights"], head.weight.detach().numpy())
    assert not (tmp_path / "preds.npz.partial").exists()
    recipe = "IMAGENET1K_V1" if library == "torchvision" else "a1_in1k"
    assert loaded.about["recipe"] == recipe and loaded.about["weights"]["sha256"]


@pytest.mark.slow  # runs models on images: not in the fast lane
def test_an_interrupted_prediction_goes_on_from_its_chunks(tmp_path, monkeypatch):
    data = _data(tmp_path)
    weights = _save(torchvision.models.mobilenet_v3_small(num_classes=4), tmp_path / "w.safetensors")
    model = pretrained.load_model("torchvision:mobilenet_v3_small", weights)
    monkeypatch.setattr(zoo, "CHUNK", 5)
    whole = np.load(zoo.predict(model, data, tmp_path / "whole.npz", batch_size=2, workers=0, progress=False,
                                log=lambda m: None))
    computed, real = [], zoo._chunk

    def interrupted(*args, **kwargs):
        computed.append(args[2])
        if len(computed) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(zoo, "_chunk", interrupted)
    with pytest.raises(KeyboardInterrupt):
        zoo.predict(model, data, tmp_path / "preds.npz", batch_size=2, workers=0, progress=False, log=lambda m: None)
    assert not (tmp_path / "preds.npz").exists() and len(list((tmp_path / "preds.npz.partial").iterdir())) == 1
    computed.clear()
    monkeypatch.setattr(zoo, "_chunk", lambda *a, **k: (computed.append(a[2]), real(*a, **k))[1])
    again = np.load(zoo.predict(model, data, tmp_path / "preds.npz", batch_size=2, workers=0, progress=False,
                                log=lambda m: None))
    assert computed == [5, 10]  # the first chunk was read back, not computed
    for name in whole.files:
        np.testing.assert_array_equal(again[name], whole[name])


def test_a_1000_way_model_keeps_the_columns_of_the_datasets_wnids(tmp_path):
    wnids = [row[0] for row in read_table("imagenet_wnids.tsv")]
    chosen = (wnids[7], wnids[100], wnids[3], wnids[999])  # class folders sort as the dataset's classes
    data = _data(tmp_path, chosen)
    model = torchvision.models.resnet18()
    weights = _save(model, tmp_path / "w.safetensors")
    notes = []
    loaded = pretrained.load_model("torchvision:resnet18", weights)
    got = np.load(zoo.predict(loaded, data, tmp_path / "preds.npz", workers=0, progress=False, log=notes.append))
    columns = [wnids.index(name) for name in data.class_names]
    logits, _ = _bare(model, torchvision.models.ResNet18_Weights.DEFAULT.transforms(), data.test.paths)
    np.testing.assert_allclose(got["logits"], logits[:, columns], atol=1e-5, rtol=0)
    np.testing.assert_array_equal(got["class_weights"], model.fc.weight.detach().numpy()[columns])
    assert any("kept 4 of torchvision:resnet18's 1,000 outputs" in n for n in notes)
    with pytest.raises(ConfigError, match=r"has 1,000 outputs but image-folder has 4 classes; pass --classes FILE"):
        zoo.predict(loaded, _data(tmp_path / "other"), tmp_path / "x.npz", workers=0, progress=False)
    names = [f"c{k}" for k in range(1000)]
    names[10] = "husky"
    with pytest.raises(DataError, match=r"outputs have no class 'beagle' of image-folder \(3 of its 4 classes"):
        zoo.predict(loaded, _data(tmp_path / "other"), tmp_path / "x.npz", classes=names, workers=0, progress=False)


def test_weights_that_do_not_fit_the_model_are_one_line(tmp_path):
    model = torchvision.models.resnet18(num_classes=4)
    state = model.state_dict()
    save_file({k: v for k, v in state.items() if k != "layer1.0.conv1.weight"}, tmp_path / "missing.safetensors")
    save_file({**state, "extra.weight": torch.zeros(3)}, tmp_path / "extra.safetensors")
    save_file({**state, "conv1.weight": torch.zeros(64, 3, 3, 3)}, tmp_path / "shape.safetensors")
    with pytest.raises(StateDictError, match=r"missing.safetensors: has no tensor for layer1.0.conv1.weight of shape "
                                             r"\(64, 64, 3, 3\); it is not a state dict of torchvision:resnet18"):
        pretrained.load_model("torchvision:resnet18", tmp_path / "missing.safetensors")
    with pytest.raises(StateDictError, match=r"'extra.weight' of shape \(3,\) is not used by torchvision:resnet18; it "
                                             "is not a state dict of torchvision:resnet18"):
        pretrained.load_model("torchvision:resnet18", tmp_path / "extra.safetensors")
    with pytest.raises(StateDictError, match=r"'conv1.weight' has shape \(64, 3, 3, 3\) but torchvision:resnet18 needs "
                                             r"\(64, 3, 7, 7\)"):
        pretrained.load_model("torchvision:resnet18", tmp_path / "shape.safetensors")
    with pytest.raises(StateDictError, match="is not a state dict of torchvision:resnet34"):
        pretrained.load_model("torchvision:resnet34", tmp_path / "extra.safetensors")


@pytest.mark.parametrize(("argv", "message"), [
    (["--model", "keras:resnet50"], r"--model 'keras:resnet50': name a model as torchvision:NAME"),
    (["--model", "torchvision:resnet51"], r"torchvision has no classification model 'resnet51'; did you mean resnet"),
    (["--model", "timm:no_such_net"], r"--model timm:no_such_net: Unknown model"),
    (["--recipe", "IMAGENET9K"], r"--recipe IMAGENET9K: ResNet18_Weights has IMAGENET1K_V1, DEFAULT"),
    (["--weights", "nowhere.pt"], r"nowhere.pt: no such checkpoint file"),
    (["--split", "val"], r"image-folder has no validation split here"),
    (["--out", "preds.csv"], r"--out .*preds.csv: a prediction file is written as .npz; name it preds.npz"),
], ids=["library", "torchvision-name", "timm-name", "recipe", "weights", "split", "suffix"])
def test_predict_refuses_bad_input_in_one_line_and_writes_nothing(tmp_path, capsys, monkeypatch, argv, message):
    _folders(tmp_path)
    _save(torchvision.models.resnet18(num_classes=4), tmp_path / "w.safetensors")
    monkeypatch.chdir(tmp_path)
    given = {"--model": "torchvision:resnet18", "--weights": "w.safetensors", "--out": "preds.npz",
             **dict(zip(argv[::2], argv[1::2]))}
    args = [x for pair in given.items() for x in pair]
    assert main(["predict", *args, "--dataset", "image-folder", "--data-root", "data", "--hierarchy", "tree.txt",
                 "--device", "cpu", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and re.search(message, err), err
    assert not list(tmp_path.glob("preds*"))


@pytest.mark.slow  # runs models on images: not in the fast lane
def test_a_zoo_is_evaluated_reported_and_read_again(tmp_path, capsys):
    _folders(tmp_path, per_class=4)
    tv = _save(torchvision.models.mobilenet_v3_small(num_classes=4), tmp_path / "tv.safetensors", seed=1)
    tm = _save(timm.create_model("mobilenetv3_small_050", num_classes=4), tmp_path / "timm.safetensors", seed=2)
    argv = ["evaluate", "--model", "torchvision:mobilenet_v3_small", "--weights", str(tv), "--model",
            "timm:mobilenetv3_small_050",
            "--weights", str(tm), "--dataset", "image-folder", "--data-root", str(tmp_path / "data"),
            "--hierarchy", str(tmp_path / "tree.txt"), "--out", str(tmp_path / "eval"), "--predictions-dir",
            str(tmp_path / "cache"), "--projections", "pca", "--device", "cpu", "--quiet", "--loader-workers", "1"]
    assert main(argv) == 0
    assert sorted(p.name for p in (tmp_path / "eval").iterdir() if not p.name.startswith(".")) == \
        ["index.json", "mobilenet_v3_small", "mobilenetv3_small_050"]
    metrics = json.loads((tmp_path / "eval" / "mobilenetv3_small_050" / "metrics.json").read_text())
    assert metrics["head"] == "timm:mobilenetv3_small_050" and metrics["dataset"] == "image-folder"
    assert metrics["source"]["model"]["weights"]["sha256"] and metrics["source"]["model"]["recipe"] == "lamb_in1k"
    assert "geometry" in metrics and len(list((tmp_path / "cache").glob("*.npz"))) == 2
    capsys.readouterr()
    assert main(argv) == 0  # the predictions are read again
    assert capsys.readouterr().out.count("made before") == 2
    assert main(["report", str(tmp_path / "eval")]) == 0
    html = (tmp_path / "eval" / "report.html").read_text()
    assert "Top-1 error against mistake severity" in html and "Making Better Mistakes" in html
    assert main(["evaluate", "--model", "torchvision:resnet18", "--model", "timm:resnet18", "--weights", str(tv),
                 "--dataset", "image-folder", "--out", str(tmp_path / "eval2")]) == 2
    assert "2 --model but 1 --weights" in capsys.readouterr().err and not (tmp_path / "eval2").exists()


def test_the_mistake_intervals_are_a_bootstrap_of_the_runs_own_numbers():
    from hseval.metrics import mistake_severity
    from hseval.reporting.ranking import mistake_intervals
    from tests.helpers import fashion_tree

    tree = fashion_tree()
    rng = np.random.default_rng(3)
    targets = rng.integers(0, 10, 400)
    pred = np.where(rng.random(400) < 0.7, targets, rng.integers(0, 10, 400))

    class Run:
        name, hierarchy = "r", tree
        topk = pred[:, None]

    Run.targets = targets
    row = mistake_intervals([Run], resamples=400).iloc[0]
    assert row["error"] == pytest.approx(np.mean(pred != targets))
    assert row["severity"] == pytest.approx(mistake_severity(pred, targets, tree))
    assert row["error_low"] < row["error"] < row["error_high"] and row["severity_low"] < row["severity"] \
        < row["severity_high"]
    se = np.sqrt(row["error"] * (1 - row["error"]) / 400)  # the binomial standard error
    assert (row["error_high"] - row["error_low"]) / (2 * 1.96 * se) == pytest.approx(1, abs=0.15)


@pytest.mark.slow  # runs models on images: not in the fast lane
@pytest.mark.parametrize("dataset", ["imagenet", "inaturalist"])
def test_a_zoo_on_the_fields_benchmarks_in_their_real_layouts(tmp_path, capsys, dataset):
    """The issue's command on a tiny ImageNet copy (Kaggle's layout, no training images) and on
    iNaturalist 2021's JSON: a torchvision and a timm model, evaluated against the dataset's tree,
    reported."""
    from hseval.tree.builders.wordnet import find_wordnet
    from tests.fake_datasets import write_imagenet, write_inaturalist

    if dataset == "imagenet":
        if find_wordnet() is None:
            pytest.skip("no WordNet 3.0 data installed")
        write_imagenet(tmp_path / "data", layout="kaggle", train=0, val=24)
        classes, extra = 1000, []
    else:
        write_inaturalist(tmp_path / "data", year="2021", per_class=(1, 2))
        classes, extra = 10, ["--year", "2021"]
    tv = _save(torchvision.models.mobilenet_v3_small(num_classes=classes), tmp_path / "tv.safetensors")
    tm = _save(timm.create_model("mobilenetv3_small_050", num_classes=classes), tmp_path / "timm.safetensors", seed=3)
    out = tmp_path / "zoo"
    assert main(["evaluate", "--model", "torchvision:mobilenet_v3_small", "--weights", str(tv), "--model",
                 "timm:mobilenetv3_small_050",
                 "--weights", str(tm), "--dataset", dataset, "--data-root", str(tmp_path / "data"), *extra,
                 "--out", str(out), "--predictions-dir", str(tmp_path / "cache"), "--projections", "none",
                 "--device", "cpu", "--quiet"]) == 0, capsys.readouterr().err
    data = load_dataset(dataset, tmp_path / "data", **({"year": "2021"} if extra else {}))
    for name in ("mobilenet_v3_small", "mobilenetv3_small_050"):
        metrics = json.loads((out / name / "metrics.json").read_text())
        assert (metrics["dataset"], metrics["samples"]) == (dataset, len(data.test))
        assert metrics["hierarchy"] == json.loads(json.dumps(data.hierarchy.to_dict()))
    assert main(["report", str(out), "--baseline", "mobilenet_v3_small"]) == 0
    assert "Top-1 error against mistake severity" in (out / "report.html").read_text()
