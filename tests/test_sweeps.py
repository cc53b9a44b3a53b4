"""``train-all --sweep``: every run of a sweep is the run trained alone with that setting, byte for
byte, and records the settings it was trained with (one dataset loaded per distinct data setting);
a setting given twice on the command line is refused."""

from __future__ import annotations

import argparse
import json
import os

import pytest

from hseval.cli.main import main
from hseval.cli.train_plan import plan_runs
from hseval.tree import write_hierarchy
from hseval.tree.transforms import random_hierarchy
from tests.helpers import fashion_tree, write_fashion_like

SETTINGS = {"optim.epochs": "1", "optim.milestones": "[5]", "data.train_subset": "64", "data.batch_size": "32",
            "engine.threads": "1"}
BASE = ["--quiet", *(f"--set={k}={v}" for k, v in SETTINGS.items())]


def _base(swept: str) -> list[str]:
    """The tiny run's settings, less the swept one (a setting is given once)."""
    return ["--quiet", *(f"--set={k}={v}" for k, v in SETTINGS.items() if k != swept)]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, fashion_like):
    """Two trees over the Fashion-MNIST classes and a second Fashion-MNIST-like folder."""
    root = tmp_path_factory.mktemp("sweep-inputs")
    write_hierarchy(fashion_tree(), root / "trees" / "a.txt", format="pairs")
    write_hierarchy(random_hierarchy(fashion_tree(), seed=3), root / "trees" / "b.txt", format="pairs")
    return {"fashion": fashion_like, "fashion2": write_fashion_like(root / "fashion2", seed=7), "trees": root / "trees"}


# (setting, its two values, head): what a data setting varies, then what each run builds itself
SWEEPS = [("data.hierarchy", ("{trees}/a.txt", "{trees}/b.txt"), "riemann"),
          ("data.root", ("{fashion}", "{fashion2}"), "plain"),
          ("data.train_subset", ("64", "96"), "plain"),
          ("optim.lr", ("0.05", "0.2"), "hierarchy"),
          ("model.head_options.radius_decay", ("0.5", "0.9"), "riemann")]


def _weights(run) -> dict[str, tuple[str, bytes]]:
    """Each tensor's dtype and bytes (the file's own bytes are not comparable: safetensors writes its
    metadata mapping in no fixed order)."""
    from safetensors.torch import load_file

    return {name: (str(t.dtype), t.numpy().tobytes()) for name, t in load_file(run / "model.safetensors").items()}


@pytest.mark.parametrize(("key", "values", "head"), SWEEPS, ids=[s[0] for s in SWEEPS])
def test_each_swept_run_is_the_run_trained_alone(inputs, tmp_path, key, values, head):
    values = [v.format(**inputs) for v in values]
    root = ["--data-root", str(inputs["fashion"])] if key != "data.root" else []
    sweep = ["train-all", *root, *_base(key), "--heads", head, "--sweep", f"{key}={','.join(values)}",
             "--out", str(tmp_path / "runs")]
    assert main(sweep) == 0
    names = [name for _, _, name in plan_runs(argparse.Namespace(heads=head, seeds=None, sweep=[sweep[-3]]))]
    assert len(names) == 2 and len(set(names)) == 2
    for name, value in zip(names, values):
        alone = tmp_path / f"alone-{values.index(value)}"
        assert main(["train", *root, *_base(key), "--head", head, "--set", f"{key}={value}", "--out", str(alone)]) == 0
        swept = tmp_path / "runs" / name
        assert _weights(swept) == _weights(alone), (key, value)
        recorded = json.loads((swept / "run.json").read_text())
        section, _, field = key.partition(".")
        setting = recorded["training"][section]
        for part in field.split("."):
            setting = setting[part]
        assert str(setting) == value
        assert recorded["hierarchy"] == json.loads((alone / "run.json").read_text())["hierarchy"]


def test_the_hierarchy_flag_is_the_recorded_setting(inputs, tmp_path):
    """``--hierarchy`` is ``data.hierarchy``: recorded in run.json, so that --resume compares it."""
    tree = str(inputs["trees"] / "b.txt")
    out = tmp_path / "run"
    assert main(["train", "--data-root", str(inputs["fashion"]), *BASE, "--head", "riemann", "--hierarchy", tree,
                 "--out", str(out)]) == 0
    assert json.loads((out / "run.json").read_text())["training"]["data"]["hierarchy"] == tree


@pytest.mark.parametrize(("argv", "message"), [
    (["train", "--set", "optim.lr=0.1", "--set", "optim.lr=0.2"], r"optim\.lr: --set gives it twice"),
    (["train", "--hierarchy", "a.txt", "--set", "data.hierarchy=b.txt"],
     r"data\.hierarchy: --hierarchy and --set both set it"),
    (["train", "--device", "cpu", "--set", "engine.device=cuda"], r"engine\.device: --device and --set both set it"),
    (["train", "--quiet", "--set", "engine.progress=true"], r"engine\.progress: --quiet and --set both set it"),
    (["train", "--head", "plain", "--set", "model.head=riemann"], r"model\.head: --head and --set both set it"),
    (["train-all", "--set", "model.head=riemann"], r"model\.head: --heads and --set both set it"),
    (["train-all", "--set", "optim.lr=0.1", "--sweep", "optim.lr=0.2,0.3"], r"optim\.lr: --set and --sweep both"),
    (["train-all", "--seeds", "0,1", "--sweep", "engine.seed=2,3"], r"engine\.seed: --seeds and --sweep both set"),
    (["train-all", "--heads", "riemann", "--set", "model.head_options={radius: 2}", "--sweep",
      "model.head_options.radius=2,3"], r"model\.head_options\.radius: --set and --sweep both set it"),
])
def test_a_setting_given_twice_is_refused(tmp_path, capsys, argv, message):
    import re

    os.chdir(tmp_path)
    assert main([*argv, "--data-root", "no-data", "--out", "x"]) == 2  # were it not refused: no data, no training
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and re.search(message, err) and "give each setting once" in err, err
    assert not (tmp_path / "x").exists()


def test_a_path_in_a_sweep_names_one_folder():
    plan = plan_runs(argparse.Namespace(heads="riemann", seeds=None, sweep=["data.hierarchy=trees/a.txt,trees/b.txt"]))
    assert [name for _, _, name in plan] == ["riemann-hierarchy=trees_a.txt", "riemann-hierarchy=trees_b.txt"]
    assert [overrides for _, overrides, _ in plan] == [["data.hierarchy=trees/a.txt"], ["data.hierarchy=trees/b.txt"]]
