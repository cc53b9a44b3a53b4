"""``train-all --probe``: the frozen backbone's features extracted once (resumably) to a features
file, every head trained on them; a probe run is the frozen-backbone run trained on the images."""

from __future__ import annotations

import json

import pytest
import torch

from hseval.cli.main import main
from hseval.core.errors import DataError
from hseval.core.fileio import sha256
from hseval.io.run_format import load_run
from hseval.train import probe
from hseval.train.engine import train
from hseval.train.runs import train_runs
from tests.helpers import quick
from tests.test_pretrained import small_cnn_file

SETTINGS = ["model.backbone=small-cnn", "model.freeze_backbone=true", "data.augment=false", "optim.epochs=2",
            "optim.milestones=[1]", "data.train_subset=96", "data.batch_size=16", "data.eval_batch_size=64",
            "engine.threads=1"]


@pytest.fixture(scope="module")
def init_file(tmp_path_factory):
    return small_cnn_file(tmp_path_factory.mktemp("init"))[0]


def test_a_probe_run_is_the_frozen_run_trained_on_the_images(fashion_like, init_file, tmp_path):
    """Same seed, same data order, no augmentation, batch-norm in eval mode: a probe on cached
    features ends with the weights and history of the frozen run trained on the images."""
    config = quick(fashion_like, "riemann", f"model.init={init_file}", *SETTINGS)  # riemann: the radius guard too
    images = train(config, tmp_path / "images", log=lambda _: None)
    outcomes = train_runs([(config, "riemann")], tmp_path / "probe", resume=False, force=False, probe=True,
                          log=lambda _: None)
    probed = tmp_path / "probe" / "riemann"
    assert outcomes["riemann"].state == "trained"
    assert (images / "model.safetensors").read_bytes() == (probed / "model.safetensors").read_bytes()
    meta_a, meta_b = (json.loads((run / "run.json").read_text()) for run in (images, probed))
    speed = ("images_per_s", "seconds")
    assert [{k: v for k, v in h.items() if k not in speed} for h in meta_a["history"]] == \
        [{k: v for k, v in h.items() if k not in speed} for h in meta_b["history"]]
    assert meta_a["training"] == meta_b["training"]
    files = list((tmp_path / "probe" / probe.FEATURES).glob("*.safetensors"))
    assert len(files) == 1 and meta_b["features"]["sha256"] == sha256(files[0]) and "features" not in meta_a
    assert meta_b["initialised_from"] == meta_a["initialised_from"]
    run = load_run(probed)  # a normal run: the whole model, evaluated on images as any other
    assert run.model(torch.zeros(2, 1, 28, 28)).shape == (2, 10)


def test_extraction_continues_where_it_stopped(fashion_like, init_file, tmp_path, monkeypatch):
    from hseval.train.runs import Datasets, probe_features

    config = quick(fashion_like, "plain", f"model.init={init_file}", *SETTINGS)
    data = Datasets()
    monkeypatch.setattr(probe, "CHUNK", 128)  # 600 + 200 images: 5 + 2 chunks of two batches
    computed, limit, real = [], [3], probe._chunk

    def counted(*args, **kwargs):
        if len(computed) == limit[0]:
            raise KeyboardInterrupt
        computed.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(probe, "_chunk", counted)
    with pytest.raises(KeyboardInterrupt):
        probe_features([(config, "plain")], data, tmp_path / "a", log=lambda _: None)
    assert len(list((tmp_path / "a").glob("*.partial/*.safetensors"))) == 3
    computed.clear()
    limit[0] = None
    resumed = probe_features([(config, "plain")], data, tmp_path / "a", log=lambda _: None)["plain"]
    assert len(computed) == 4 and not list((tmp_path / "a").glob("*.partial"))
    straight = probe_features([(config, "plain")], data, tmp_path / "b", log=lambda _: None)["plain"]
    assert resumed.sha256 == straight.sha256 and resumed.key == straight.key
    lines = []
    again = probe_features([(config, "plain"), (config, "other")], data, tmp_path / "a", log=lines.append)
    assert again["other"] is again["plain"] and lines == [f"reusing the features in {resumed.path}"]
    (resumed.path).write_bytes(resumed.path.read_bytes()[:100])
    with pytest.raises(DataError, match=r"cannot be read as a features file .*remove it"):
        probe.read_features(resumed.path)


def test_train_all_probe(fashion_like, init_file, tmp_path, capsys):
    out = tmp_path / "probes"
    argv = ["train-all", "--probe", "--data-root", str(fashion_like), "--backbone", "small-cnn", "--init",
            str(init_file), "--heads", "plain,hierarchy,nbdt", "--quiet", "--set", "optim.epochs=1", "--set",
            "data.train_subset=64", "--set", "data.batch_size=32", "--set", "data.test_subset=100", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "plain:" in printed and "hierarchy:" in printed and "nbdt:" in printed and "on cpu" in printed
    for head in ("plain", "hierarchy", "nbdt"):  # a peer probes as the paper's heads do
        meta = load_run(out / head).meta
        assert meta["training"]["model"]["freeze_backbone"] is True and meta["training"]["data"]["augment"] is False
        assert meta["features"]["path"].startswith(str(out / probe.FEATURES))
        assert meta["history"][-1]["test_samples"] == 100  # the features of data.test_subset's images
    assert main([*argv, "--resume"]) == 0 and "(kept)" in capsys.readouterr().out
    assert main([*argv[:-2], "--launcher", "local", "--out", str(tmp_path / "x")]) == 2
    assert "--probe trains on cached features" in capsys.readouterr().err
