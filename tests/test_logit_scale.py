"""The radius guard: the range comes from the softmax bounds, the fix puts the scale back in it, the
engine warns before the first step without touching the model or the random streams, and
``evaluate`` / ``report`` flag what training saw."""

from __future__ import annotations

import dataclasses
import math
import warnings

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from hseval.cli.main import main
from hseval.core.device import resolve_device
from hseval.core.errors import HsevalWarning
from hseval.io.results import load_evaluation
from hseval.nn.model import build_model
from hseval.nn.radius_guard import check_metrics, check_scale, scale_range
from hseval.reporting.report import render
from hseval.train.checks import check_recipe_backbone, initial_logit_scale
from hseval.train.engine import load_data
from hseval.train.step import Context, model_spec
from tests.helpers import image_folder, quick


def test_the_range_is_the_softmax_bounds():
    low, high = scale_range(10)
    # at 2·scale = log(9·9) the best geometry puts exactly 90 % on the right class of 10
    p = math.exp(low) / (math.exp(low) + 9 * math.exp(-low))
    assert p == pytest.approx(0.9)
    assert high == pytest.approx(5 * math.log(999 * 9))
    assert scale_range(1) == scale_range(2)  # one class: no bound below the two-class one


@given(feature=st.floats(0.01, 100), norm=st.floats(0.01, 100), classes=st.integers(2, 100_000))
def test_the_fix_puts_the_scale_in_range(feature, norm, classes):
    check = check_scale(head="riemann", feature_norm=feature, class_norm=norm, classes=classes, radius=2.0)
    fixed = check.scale * check.suggested_radius / check.radius  # the class norm scales with the radius
    assert check.low <= fixed <= check.high
    verdict = check.verdict
    assert (verdict == "too small") == (check.scale < check.low)
    assert (verdict == "too large") == (check.scale > check.high)
    if verdict:
        assert f"is {verdict} for {classes} classes" in check.message("run")


@given(scale=st.floats(0.01, 1e6), loss=st.none() | st.floats(0, 1e6), classes=st.integers(2, 100_000))
def test_after_the_start_a_large_scale_is_judged_by_the_loss(scale, loss, classes):
    """After the first step a scale above the range says nothing alone (a confident head grows its
    features); with a held-out loss worse than a uniform guess's it is a run that diverged."""
    check = check_scale(head="riemann", feature_norm=scale, class_norm=1.0, classes=classes, radius=8.0,
                        at_start=False, loss=loss)
    diverged = check.scale > check.high and loss is not None and loss > math.log(classes)
    assert (check.verdict == "diverged") == diverged
    assert (check.verdict == "too small") == (check.scale < check.low) and check.verdict != "too large"
    if diverged:
        assert "diverged: held-out loss" in check.message("run") and "lower optim.lr" in check.message("run")


def test_only_sphere_heads_with_finite_numbers_are_checked():
    assert check_scale(head="plain", feature_norm=5, class_norm=5, classes=10, radius=1.0) is None
    assert check_scale(head="riemann", feature_norm=float("nan"), class_norm=5, classes=10, radius=1.0) is None
    assert check_scale(head="manifold-learnable-radius", feature_norm=50, class_norm=5, classes=10,
                       radius=8.0).verdict == "too large"


def test_the_first_reading_changes_nothing(fashion_like):
    config = quick(fashion_like, "riemann", "data.train_subset=64")
    data = load_data(config)
    model = build_model(model_spec(config, data), data.hierarchy)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    rng = torch.get_rng_state()
    ctx = Context(resolve_device("cpu"), amp=False, channels_last=False)
    x = torch.as_tensor(data.test.images[:32]).float()
    reading = initial_logit_scale(model, x, ctx)
    assert reading["initial_feature_norm"] > 0 and reading["initial_class_norm"] > 0
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert torch.equal(rng, torch.get_rng_state())


def test_training_warns_before_the_first_step_and_the_report_flags_it(fashion_like, tmp_path, capsys):
    code = main(["train-all", "--data-root", str(fashion_like), "--heads", "riemann,plain", "--quiet",
                 "--set", "optim.epochs=1", "--set", "data.train_subset=200", "--set", "data.batch_size=32",
                 "--set", "model.head_options.radius=400", "--out", str(tmp_path / "runs")])
    assert code == 0
    err = capsys.readouterr().err
    assert "riemann, before training: logit scale" in err and "is too large for 10 classes" in err
    assert "--set model.head_options.radius=" in err and "(now 400)" in err
    assert not any(line.startswith("hseval: warning: plain") for line in err.splitlines())  # the guard: riemann's
    assert main(["evaluate", str(tmp_path / "runs"), "--data-root", str(fashion_like), "--quiet",
                 "--projections", "pca", "--out", str(tmp_path / "eval")]) == 0
    assert "riemann, before training: logit scale" in capsys.readouterr().err
    evaluation = load_evaluation(tmp_path / "eval")
    riemann = evaluation.run("riemann")
    assert [when for when, check in check_metrics(riemann.metrics) if check.verdict][0] == "before training"
    assert riemann.metrics["radius"] == 400 and evaluation.run("plain").metrics["radius"] is None
    assert check_metrics(evaluation.run("plain").metrics) == []
    markdown = render(evaluation, tmp_path / "eval")["report.md"]
    assert "## Radius guard" in markdown and "| riemann | riemann | before training |" in markdown
    calm = dataclasses.replace(riemann, metrics={**riemann.metrics, "history": [], "feature_norm": {"mean": 1.0},
                                                  "class_vector_norm": {"mean": 5.0}})
    assert "## Radius guard" not in render(dataclasses.replace(evaluation, runs=[calm]), tmp_path)["report.md"]


def test_a_backbone_other_than_the_recipes_is_pointed_at_the_radius():
    from hseval.cli.main import build_parser
    from hseval.cli.train_plan import run_config

    args = build_parser().parse_args(["train", "--backbone", "resnet18", "--out", "x"])
    config = run_config(args, "riemann", [])
    assert config.data.dataset == "fashion-mnist"  # no --recipe, no --dataset: the default
    with pytest.warns(HsevalWarning, match=r"recipe fashion-mnist is written for small-cnn \(radius R0 = 8.0\)"):
        check_recipe_backbone(config)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_recipe_backbone(run_config(args, "plain", []))  # no radius: nothing to say
        args = build_parser().parse_args(["train", "--backbone", "resnet18", "--out", "x", "--set",
                                          "model.head_options.radius=1"])
        check_recipe_backbone(run_config(args, "riemann", []))  # the radius was chosen


@pytest.mark.slow  # trains a run: not in the fast lane
def test_the_guard_leaves_training_bit_identical(tmp_path, monkeypatch):
    """The reading before the first step draws a batch through a DataLoader (which takes a seed from
    torch's global stream) and runs a train-mode forward: with and without it, the same weights."""
    from safetensors.torch import load_file

    from hseval.nn import radius_guard as logit_scale

    root, tree_file = image_folder(tmp_path)

    def run(out):
        assert main(["train", "--dataset", "image-folder", "--data-root", str(root), "--hierarchy", str(tree_file),
                     "--head", "riemann", "--backbone", "small-cnn", "--recipe", "paper", "--quiet", "--set",
                     "optim.epochs=1", "--set", "data.batch_size=2", "--set", "data.workers=0", "--out", str(out)]) == 0
        return load_file(out / "model.safetensors")

    guarded = run(tmp_path / "guarded")
    monkeypatch.setattr(logit_scale, "takes_radius", lambda head: False)
    plain = run(tmp_path / "unguarded")
    assert guarded.keys() == plain.keys() and all(torch.equal(guarded[k], plain[k]) for k in guarded)


def test_the_report_reads_the_guard_from_metrics_json_without_torch():
    """``hseval report`` judges the radius from metrics.json alone (the radius the head was built
    with is written there): the guard's reading imports no torch."""
    import subprocess
    import sys

    code = ("import sys; from hseval.nn.radius_guard import check_metrics; "
            "m = {'radius': 400.0, 'hierarchy': {'num_leaves': 10}, 'history': [{'initial_feature_norm': 4.8, "
            "'initial_class_norm': 400.0}], 'feature_norm': {'mean': 1.0}, 'class_vector_norm': {'mean': 5.0}}; "
            "r = check_metrics(m); assert [(w, c.verdict) for w, c in r] == [('before training', 'too large'), "
            "('after training', None)], r; assert check_metrics({**m, 'radius': None}) == []; "
            "assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_diverged_run_is_flagged_after_training_and_in_evaluate_and_the_report(fashion_like, tmp_path, capsys):
    """A huge learning rate blows the small CNN's logits up (the issue's ResNet-18 with R0 = 8 did so
    in one epoch): training warns after training, and evaluate and the report find the first epoch
    that went wrong in the history and the evaluated reading after training."""
    assert main(["train", "--head", "riemann", "--data-root", str(fashion_like), "--quiet", "--set", "optim.lr=5",
                 "--set", "optim.epochs=2", "--set", "data.train_subset=300", "--set", "data.batch_size=32",
                 "--out", str(tmp_path / "run")]) == 0
    err = capsys.readouterr().err
    assert "riemann, after training (epoch 2): diverged: held-out loss" in err and "lower optim.lr" in err
    assert main(["evaluate", str(tmp_path / "run"), "--data-root", str(fashion_like), "--quiet", "--projections",
                 "none", "--out", str(tmp_path / "eval")]) == 0
    err = capsys.readouterr().err
    assert "run, after epoch 1: diverged" in err and "run, after training: diverged" in err
    evaluation = load_evaluation(tmp_path / "eval")
    found = dict((when, check.verdict) for when, check in check_metrics(evaluation.run("run").metrics))
    assert found["after epoch 1"] == found["after training"] == "diverged"
    markdown = render(evaluation, tmp_path / "eval")["report.md"]
    assert "| run | riemann | after epoch 1 |" in markdown and "| run | riemann | after training |" in markdown


def test_the_reading_before_training_does_not_depend_on_the_subsets(fashion_like, tmp_path):
    """The radius the guard proposes is read on the first training batch in the split's order, so
    runs that differ in data.train_subset or data.test_subset read the same scale (README's figure
    and a user's run with --set data.test_subset=500 once proposed 0.86 and 0.85)."""
    import json

    readings = []
    for i, subsets in enumerate((["data.train_subset=64"], ["data.train_subset=96", "data.test_subset=50"])):
        out = tmp_path / f"run{i}"
        assert main(["train", "--head", "riemann", "--data-root", str(fashion_like), "--quiet", "--set",
                     "optim.epochs=1", "--set", "data.batch_size=32", *[a for s in subsets for a in ("--set", s)],
                     "--out", str(out)]) == 0
        first = json.loads((out / "run.json").read_text())["history"][0]
        readings.append((first["initial_feature_norm"], first["initial_class_norm"]))
    assert readings[0] == readings[1]
