"""The training engine: every head learns, runs load back, resume after kill -9 is bit-identical,
DDP on CPU (gloo) keeps both ranks equal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from hseval.cli.main import main
from hseval.core.errors import ConfigError
from hseval.io.folders import kind_of
from hseval.io.run_format import load_run
from hseval.nn.heads import list_heads
from hseval.train.config import load_config
from hseval.train.engine import load_data, train
from hseval.train.session import initial_model
from tests.helpers import image_folder, quick

ROOT = Path(__file__).parents[1]



@pytest.mark.parametrize("head", list_heads())
def test_every_head_learns(fashion_like, tmp_path, head):
    config = quick(fashion_like, head, "optim.epochs=2", "optim.milestones=[10]", "data.train_subset=320",
                   "data.batch_size=16")
    out = train(config, tmp_path / head, log=lambda _: None)
    history = json.loads((out / "run.json").read_text())["history"]
    assert history[-1]["train_loss"] < history[0]["train_loss"]
    assert history[-1]["test_acc"] > 0.3  # 10 classes: chance is 0.1
    run = load_run(out)
    if head.startswith("riemann"):
        norms = torch.linalg.vector_norm(run.model.head.delta, dim=1)
        torch.testing.assert_close(norms, torch.ones_like(norms), atol=1e-5, rtol=0)
    assert set(history[-1]["test_superclass_acc"]) == {"1", "2"}


def test_optimizers_split_manifold_parameters(fashion_like):
    from hseval.nn.model import build_model
    from hseval.train.engine import load_data
    from hseval.train.optim import build_optimizers
    from hseval.train.step import model_spec

    config = quick(fashion_like, "riemann")
    data = load_data(config)
    model = build_model(model_spec(config, data), data.hierarchy)
    optimizers = build_optimizers(model, config.optim).optimizers
    assert set(optimizers) == {"sgd", "riemannian_sgd"}
    assert optimizers["riemannian_sgd"].param_groups[0]["params"] == [model.head.delta]
    assert optimizers["sgd"].param_groups[0]["weight_decay"] == 1e-4


def test_a_thread_count_applies_to_the_training_alone(fashion_like, tmp_path):
    before = torch.get_num_threads()
    threads = 1 if before > 1 else 2
    config = quick(fashion_like, "plain", "optim.epochs=1", "data.train_subset=100", f"engine.threads={threads}")
    out = train(config, tmp_path / "run", log=lambda _: None)
    assert load_run(out).meta["device"]["threads"] == threads
    assert torch.get_num_threads() == before


def test_run_folder_rules(fashion_like, tmp_path):
    config = quick(fashion_like, "plain", "optim.epochs=1", "data.train_subset=100")
    train(config, tmp_path / "r", log=lambda _: None)
    with pytest.raises(ConfigError, match=r"already holds a finished run; pass --force"):
        train(config, tmp_path / "r", log=lambda _: None)
    with pytest.raises(ConfigError, match=r"the run is already finished with these settings; nothing to resume"):
        train(config, tmp_path / "r", resume=True, log=lambda _: None)
    with pytest.raises(ConfigError, match=r"no training state to resume"):
        train(config, tmp_path / "other", resume=True, log=lambda _: None)
    train(config, tmp_path / "r", force=True, log=lambda _: None)
    assert (tmp_path / "r" / "history.csv").read_text().count("\n") == 2


def test_resume_refuses_a_changed_config(fashion_like, tmp_path):
    config = quick(fashion_like, "plain", "optim.epochs=1", "data.train_subset=100")
    train(config, tmp_path / "r", log=lambda _: None)
    (tmp_path / "r" / "run.json").unlink()  # pretend it was interrupted after the epoch
    changed = quick(fashion_like, "plain", "optim.epochs=2", "data.train_subset=100", "optim.lr=0.5")
    with pytest.raises(ConfigError, match=r"an unfinished run that --resume cannot continue: it was trained with "
                       r"optim.lr=0.05, 0.5 asked"):
        train(changed, tmp_path / "r", resume=True, log=lambda _: None)


def test_train_all_writes_one_loadable_run_per_head(fashion_like, tmp_path, capsys):
    code = main(["train-all", "--data-root", str(fashion_like), "--heads", "plain,riemann,hyperbolic", "--quiet",
                 "--set", "optim.epochs=1", "--set", "data.train_subset=200", "--out", str(tmp_path / "runs")])
    assert code == 0
    runs = sorted(p.name for p in (tmp_path / "runs").iterdir() if not p.name.startswith("."))
    assert runs == ["hyperbolic", "plain", "riemann"]
    assert kind_of(tmp_path / "runs") == "runs"  # the folder of runs carries hseval's marker
    loaded = [load_run(tmp_path / "runs" / r) for r in runs]
    first = [json.loads((tmp_path / "runs" / r / "run.json").read_text())["history"][0] for r in runs]
    assert {f["epoch"] for f in first} == {1}
    assert [r.head_name for r in loaded] == runs


def test_every_head_starts_from_the_same_backbone(fashion_like):
    """The same seed gives every head the same backbone initialisation, so that heads differ only by
    their head: the models a training starts from hold equal backbone tensors, for every head."""
    data = load_data(quick(fashion_like))
    bodies = [{k: v for k, v in initial_model(quick(fashion_like, head), data)[0].state_dict().items()
               if k.startswith("backbone.")} for head in list_heads()]
    assert bodies[0] and all(body.keys() == bodies[0].keys() for body in bodies)
    assert all(torch.equal(body[k], bodies[0][k]) for body in bodies[1:] for k in body)


def test_train_all_resume_keeps_only_runs_trained_with_the_same_settings(fashion_like, tmp_path, capsys):
    """A finished run with these settings is reused and an interrupted one continued; a finished run
    that --resume cannot reuse (other settings, a run.json that does not verify) is refused, naming
    why, and left as it is: only --force trains it again."""
    base = ["train-all", "--data-root", str(fashion_like), "--heads", "plain,riemann", "--quiet", "--set",
            "optim.epochs=1", "--set", "data.train_subset=100", "--out", str(tmp_path / "runs")]
    assert main(base) == 0
    plain = tmp_path / "runs" / "plain"
    weights = (plain / "model.safetensors").read_bytes()
    (tmp_path / "runs" / "riemann" / "run.json").unlink()  # interrupted after its last checkpoint
    capsys.readouterr()
    assert main([*base, "--resume"]) == 0
    out = capsys.readouterr().out
    assert "plain is finished with these settings; reusing it" in out and "continuing riemann" in out
    assert (plain / "model.safetensors").read_bytes() == weights
    before = {p.name: p.read_bytes() for p in plain.iterdir() if p.is_file()}
    assert main([*base, "--resume", "--set", "optim.lr=0.01"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "plain: a finished run that --resume cannot reuse: it was trained with " \
        "optim.lr=0.05, 0.01 asked; train it again with --force" in err, err
    meta = json.loads((plain / "run.json").read_text())
    meta["epochs_run"] = "damaged"  # no longer matches its checksum
    (plain / "run.json").write_text(json.dumps(meta))
    damaged = (plain / "run.json").read_bytes()
    assert main([*base, "--resume"]) == 2
    assert "cannot reuse: it does not verify" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in plain.iterdir() if p.is_file()} == {**before, "run.json": damaged}
    assert main([*base, "--resume", "--force", "--set", "optim.lr=0.01"]) == 0
    out = capsys.readouterr().out
    assert "training plain" in out and "reusing" not in out
    assert json.loads((plain / "run.json").read_text())["training"]["optim"]["lr"] == 0.01


def test_train_all_grid_names(fashion_like, tmp_path):
    import argparse

    from hseval.cli.train_plan import plan_runs

    args = argparse.Namespace(heads="plain,riemann", seeds="0,1",
                              sweep=["model.head_options.radius_decay=0.5,0.9"])
    notes = []
    plan = plan_runs(args, note=notes.append)
    names = [name for _, _, name in plan]
    # the sweep applies to the heads that take the option: plain is trained once per seed, not twice
    assert names == ["plain-seed0", "plain-seed1", "riemann-radius_decay=0.5-seed0", "riemann-radius_decay=0.5-seed1",
                     "riemann-radius_decay=0.9-seed0", "riemann-radius_decay=0.9-seed1"]
    assert [o for h, o, _ in plan if h == "plain"] == [["engine.seed=0"], ["engine.seed=1"]]
    assert notes == ["--sweep model.head_options.radius_decay does not apply to plain (it has no option "
                     "'radius_decay'); training it once"]
    # a non-head setting applies to every head
    plan = plan_runs(argparse.Namespace(heads="plain,riemann", seeds=None, sweep=["optim.lr=0.1,0.2"]))
    assert [name for _, _, name in plan] == ["plain-lr=0.1", "plain-lr=0.2", "riemann-lr=0.1", "riemann-lr=0.2"]
    with pytest.raises(ConfigError, match=r"--seeds takes non-negative integers"):
        plan_runs(argparse.Namespace(heads="plain", seeds="a", sweep=[]))


@pytest.mark.parametrize(("heads", "seeds", "sweep"), [
    ("plain", "0,0", []), ("plain,plain", None, []), ("riemann", None, ["model.head_options.radius=1,1"])])
def test_train_all_refuses_two_runs_in_one_folder(heads, seeds, sweep):
    import argparse

    from hseval.cli.train_plan import plan_runs

    with pytest.raises(ConfigError, match=r"two runs would be written to '.*'; a head, seed or sweep value is "
                                          r"listed twice"):
        plan_runs(argparse.Namespace(heads=heads, seeds=seeds, sweep=sweep))


@pytest.mark.parametrize(("argv", "message"), [
    (["train", "--out", "x", "--head", "nope"], r"unknown head 'nope'"),
    (["train", "--out", "x", "--set", "optim.lr=-1"], r"optim.lr must be > 0, got -1"),
    (["train", "--out", "x", "--set", "optim.epochs=two"], r"optim.epochs must be an integer, got 'two'"),
    (["train", "--out", "x", "--set", "lr"], r"--set expects key=value, got 'lr'"),
    (["train", "--out", "x", "--recipe", "nope"], r"unknown recipe 'nope'; choose one of"),
    (["train", "--out", "x", "--dataset", "mnist"], r"unknown dataset 'mnist'; choose one of"),
    (["train", "--out", "x", "--set", "model.head_options.foo=1"], r"model.head_options.foo is not an option"),
    (["train", "--out", "x", "--backbone", "vgg"], r"unknown backbone 'vgg'"),
    (["train-all", "--out", "x", "--heads", "plain,nope"], r"unknown head 'nope'"),
])
def test_bad_training_arguments(tmp_path, capsys, argv, message, fashion_like):
    import re

    os.chdir(tmp_path)
    code = main([*argv, "--data-root", str(fashion_like)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and re.search(message, err), err
    assert not (tmp_path / "x" / "run.json").exists()


def test_recipes_all_load():
    from hseval.train.config import list_recipes

    recipes = list_recipes()
    assert {"paper", "fashion-mnist", "cifar100-resnet18", "tiny-imagenet-densenet161"} <= set(recipes)
    for name in recipes:
        config = load_config(name)
        if name.startswith("tiny-imagenet"):
            assert config.model.head_options["radius_decay"] == 0.9
        elif name != "fashion-mnist":
            assert (config.optim.lr, config.optim.epochs, config.optim.milestones, config.data.batch_size) == \
                (0.1, 300, [150, 225], 64)


def test_ddp_gloo_two_processes_on_cpu(fashion_like, tmp_path):
    """torchrun with 2 CPU processes: rank 0 writes one loadable run; the engine checks that both
    ranks ended with bit-identical weights (a gathered SHA-256) before writing it."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29517",
           "-m", "hseval.train", "train", "--head", "riemann", "--data-root", str(fashion_like), "--quiet",
           "--set", "optim.epochs=1", "--set", "data.train_subset=256", "--set", "data.batch_size=32",
           "--out", str(tmp_path / "ddp")]
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)  # README's
    assert result.returncode == 0, result.stderr[-3000:]
    run = load_run(tmp_path / "ddp")
    assert run.meta["world_size"] == 2 and run.meta["device"]["world_size"] == 2
    assert run.meta["history"][0]["images_per_s"] > 0


@pytest.mark.parametrize("head", ["riemann", "hyperbolic"])  # the heads with custom autograd functions
def test_compiled_training_gives_the_eager_losses(fashion_like, tmp_path, monkeypatch, head):
    """engine.compile=true: the training step under torch.compile gives the eager losses to 1e-5, step
    after step, and a whole run trains. The backend is AOTAutograd without code generation here
    (inductor's C++ build takes a minute per model on 2 cores): it traces what inductor would
    compile, the custom autograd functions of the heads included; inductor's numerics are torch's."""
    from hseval.train.engine import load_data
    from hseval.train.optim import build_optimizers
    from hseval.train.step import TrainStep, compiled, model_spec

    real = torch.compile
    monkeypatch.setattr(torch, "compile", lambda model, mode=None: real(model, mode=mode, backend="aot_eager"))
    config = quick(fashion_like, head, "optim.epochs=1", "data.train_subset=64", "data.batch_size=16",
                   "engine.compile=true")
    data = load_data(config)
    x = data.train.preprocess(data.train.images[:16], train=False)
    y = torch.as_tensor(data.train.labels[:16])
    losses = {}
    for mode in (False, True):
        torch.manual_seed(0)
        from hseval.nn.model import build_model

        model = build_model(model_spec(config, data), data.hierarchy)
        optimizers = build_optimizers(model, config.optim)
        step = compiled(TrainStep(model), type(config.engine)(compile=mode))
        losses[mode] = []
        for _ in range(4):
            loss, _ = step(x, y)
            optimizers.zero_grad()
            loss.backward()
            optimizers.step()
            losses[mode].append(loss.item())
    torch.testing.assert_close(torch.tensor(losses[True]), torch.tensor(losses[False]), rtol=1e-5, atol=1e-5)
    if head != "riemann":
        return
    out = train(config, tmp_path / "run", log=lambda _: None)
    assert json.loads((out / "run.json").read_text())["training"]["engine"]["compile"] is True


def test_cuda_graphs_are_refused_on_the_cpu_before_training(fashion_like, tmp_path):
    config = quick(fashion_like, "plain", "engine.compile=true", "engine.cuda_graphs=true", "engine.device=cpu")
    with pytest.raises(ConfigError, match="engine.cuda_graphs=true needs a CUDA device"):
        train(config, tmp_path / "run", log=lambda _: None)
    assert not (tmp_path / "run").exists()


@pytest.mark.slow  # seconds each: the fast lane keeps units and contracts
def test_settings_listed_as_neutral_do_not_change_the_run(tmp_path):
    """eval_every (and the other RESULT_NEUTRAL settings) may differ between runs that resume,
    reuse or group as seeds of one configuration: with a DataLoader-backed dataset (whose
    iterators take a seed from torch's global stream) evaluating every epoch or only at the end
    gives the same weights, and the two runs share a configuration key."""
    import dataclasses

    from safetensors.torch import load_file

    from hseval.io.run_settings import RESULT_NEUTRAL
    from hseval.reporting.summary import config_key

    assert "eval_every" in RESULT_NEUTRAL["engine"]
    root, tree_file = image_folder(tmp_path)
    weights, metas = [], []
    for every in (1, 2):
        out = tmp_path / f"every{every}"
        assert main(["train", "--dataset", "image-folder", "--data-root", str(root), "--hierarchy", str(tree_file),
                     "--head", "plain", "--backbone", "small-cnn", "--recipe", "paper", "--quiet", "--set",
                     "optim.epochs=2", "--set", "data.batch_size=2", "--set", "data.workers=0", "--set",
                     f"engine.eval_every={every}", "--out", str(out)]) == 0
        weights.append(load_file(out / "model.safetensors"))
        metas.append(json.loads((out / "run.json").read_text()))
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    runs = [dataclasses.make_dataclass("R", ["metrics"])({"training": m["training"]}) for m in metas]
    assert config_key(runs[0]) == config_key(runs[1])


def test_a_test_subset_is_the_same_images_in_training_and_in_the_evaluation(fashion_like, tmp_path):
    """data.test_subset (training's tests) and ``evaluate --subset`` (same seed) draw the same
    class-stratified images: the evaluation's top-1 is the training's last test accuracy, on as
    many samples; a probe extracts the subset's features and trains from them."""
    from hseval.core.sampling import stratified_subset
    from hseval.data import load_dataset

    out = train(quick(fashion_like, "plain", "data.train_subset=100", "data.test_subset=60", "data.batch_size=20"),
                tmp_path / "run", log=lambda _: None)
    last = json.loads((out / "run.json").read_text())["history"][-1]
    assert last["test_samples"] == 60
    assert main(["evaluate", str(out), "--subset", "60", "--projections", "none", "--quiet",
                 "--out", str(tmp_path / "eval")]) == 0
    metrics = json.loads((tmp_path / "eval" / "run" / "metrics.json").read_text())
    assert metrics["samples"] == 60 and metrics["top1"] == pytest.approx(last["test_acc"], abs=1e-9)
    assert main(["evaluate", str(out), "--subset", "5", "--out", str(tmp_path / "few")]) == 2
    assert not (tmp_path / "few").exists()  # refused before the output folder is touched
    labels = load_dataset("fashion-mnist", fashion_like, download=False).test.labels
    with np.load(tmp_path / "eval" / "run" / "predictions.npz") as arrays:
        targets = arrays["targets"]
    np.testing.assert_array_equal(targets, labels[stratified_subset(labels, 60, seed=0)])
    assert np.bincount(targets).min() == np.bincount(targets).max()  # 6 of each class
    with pytest.raises(ConfigError, match="data.test_subset=5 is smaller than the 10 classes"):
        train(quick(fashion_like, "plain", "data.test_subset=5"), tmp_path / "few", log=lambda _: None)
