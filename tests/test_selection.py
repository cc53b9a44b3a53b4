"""Choosing on validation, reporting on test: ``hseval select`` picks each method's best setting on a
validation evaluation only, and ``hseval report --selection`` reports those runs on the test split;
every way of mixing the splits or the data is one line, exit 2, nothing written."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from hseval.cli.main import main
from hseval.io.results import load_evaluation
from hseval.io.selection_format import read_selection
from hseval.reporting import sample_metrics
from hseval.tree import write_hierarchy
from tests.helpers import random_tree

CLASSES, SAMPLES = 10, 200


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Prediction files of two heads on one tree: hxe in three settings of rising skill, plain in one."""
    root = tmp_path_factory.mktemp("select")
    write_hierarchy(random_tree(CLASSES, 1), root / "tree.txt")
    rng = np.random.default_rng(0)
    targets = rng.integers(0, CLASSES, SAMPLES)
    for name, skill in (("hxe-4", 0.8), ("hxe-10", 2.0), ("hxe-30", 1.2), ("plain", 1.5)):
        scores = rng.normal(size=(SAMPLES, CLASSES)).astype(np.float32)
        scores[np.arange(SAMPLES), targets] += skill
        np.savez(root / f"{name}.npz", targets=targets, logits=scores)
    pd.DataFrame({"target": targets, "pred": scores.argmax(1)}).to_csv(root / "plain-labels.csv", index=False)
    return root


def _evaluate(files, out, *names, split="val", dataset=None):
    for name in names:
        file = next(files / f"{name}.{ext}" for ext in ("npz", "csv") if (files / f"{name}.{ext}").is_file())
        assert main(["evaluate", "--predictions", str(file), "--hierarchy", str(files / "tree.txt"),
                     "--head", name.split("-")[0], "--projections", "none", "--split", split, "--out", str(out),
                     *(["--dataset", dataset] if dataset else [])]) == 0


def test_each_head_gets_its_validation_best_setting(files, tmp_path, capsys):
    _evaluate(files, tmp_path / "val", "hxe-4", "hxe-10", "hxe-30", "plain")
    out = tmp_path / "selection.json"
    assert main(["select", str(tmp_path / "val"), "--metric", "top1", "--out", str(out)]) == 0
    assert "next: hseval report TEST_EVAL --selection" in capsys.readouterr().out
    chosen = read_selection(out)
    runs = {r.name: r for r in load_evaluation(tmp_path / "val").runs}
    top1 = {name: sample_metrics.sample_metric("top1").value(run) for name, run in runs.items()}
    assert chosen.metric == "top1" and chosen.split == "validation" and chosen.samples == SAMPLES
    by_head = {c.method: c for c in chosen.choices}
    assert set(by_head) == {"hxe", "plain"}
    hxe = by_head["hxe"]
    assert hxe.chosen.runs == [max(("hxe-4", "hxe-10", "hxe-30"), key=top1.get)]
    values = sorted((top1[n] for n in ("hxe-4", "hxe-10", "hxe-30")), reverse=True)
    assert hxe.margin == pytest.approx(values[0] - values[1]) and len(hxe.candidates) == 3
    assert by_head["plain"].margin is None and by_head["plain"].chosen.runs == ["plain"]
    assert main(["select", str(tmp_path / "val"), "--metric", "mistake_severity", "--per", "all", "--out",
                 str(tmp_path / "low.json")]) == 0
    (only,) = read_selection(tmp_path / "low.json").choices  # lower is better: the least severe of all four
    severity = {n: sample_metrics.sample_metric("mistake_severity").value(r) for n, r in runs.items()}
    assert only.chosen.runs == [min(severity, key=severity.get)]


@pytest.mark.parametrize(("case", "message"), [
    ("test", "holds an evaluation of the test split; choose on a validation evaluation"),
    ("metric", "unknown metric 'accuracy'"),
    ("absent", "metric 'level1_own_scores': none of the 2 run(s) has it"),
    ("datasets", "holds runs of 2 datasets (a, b); choose among the runs of one dataset"),
    ("lacking", "metric 'ece': the runs of plain do not have it (ECE and cross-entropy need scores that are "
                "probabilities"),
])
def test_a_selection_that_cannot_be_made_is_one_line_and_writes_nothing(files, tmp_path, capsys, case, message):
    if case == "datasets":
        _evaluate(files, tmp_path / "e", "hxe-4", dataset="a")
        _evaluate(files, tmp_path / "e", "plain", dataset="b")
    else:
        plain = "plain-labels" if case == "lacking" else "plain"
        _evaluate(files, tmp_path / "e", "hxe-4", plain, split="test" if case == "test" else "val")
    metric = {"metric": "accuracy", "absent": "level1_own_scores", "lacking": "ece"}.get(case, "top1")
    capsys.readouterr()
    assert main(["select", str(tmp_path / "e"), "--metric", metric, "--out", str(tmp_path / "s.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "s.json").exists()


def test_a_report_of_a_selection_on_its_own_split_or_without_its_runs_is_refused(files, tmp_path, capsys):
    _evaluate(files, tmp_path / "val", "hxe-4", "plain")
    _evaluate(files, tmp_path / "test", "hxe-10", "plain", split="test")
    assert main(["select", str(tmp_path / "val"), "--metric", "top1", "--out", str(tmp_path / "s.json")]) == 0
    capsys.readouterr()
    assert main(["report", str(tmp_path / "val"), "--selection", str(tmp_path / "s.json")]) == 2
    assert "it was chosen on this evaluation's split (validation)" in capsys.readouterr().err
    assert not (tmp_path / "val" / "report.html").exists()
    assert main(["report", str(tmp_path / "test"), "--selection", str(tmp_path / "s.json")]) == 2
    err = capsys.readouterr().err  # prediction files: a validation file is not its test file
    assert "chosen run(s) are not evaluated in" in err and "hxe-4.npz" in err, err
    assert not (tmp_path / "test" / "report.html").exists()
    (tmp_path / "bad.json").write_text(json.dumps({"metric": "top1"}))
    assert main(["report", str(tmp_path / "test"), "--selection", str(tmp_path / "bad.json")]) == 2
    assert "bad.json" in capsys.readouterr().err


TINY = ["--quiet", "--set", "optim.epochs=1", "--set", "optim.milestones=[5]", "--set", "data.batch_size=64",
        "--set", "engine.threads=1", "--set", "data.val_fraction=0.2"]


@pytest.mark.slow  # trains six runs
def test_sweep_evaluate_on_val_select_report_on_test(fashion_like, tmp_path, capsys):
    """README's recipe as written: the runs chosen are the validation-best of each head, chosen
    before the test split was evaluated at all, and the report holds only them, on the test split."""
    runs = tmp_path / "runs"
    assert main(["train-all", "--heads", "plain,soft-labels", "--data-root", str(fashion_like), *TINY,
                 "--sweep", "model.head_options.beta=2,30", "--out", str(runs)]) == 0
    assert main(["evaluate", str(runs), "--split", "val", "--projections", "none", "--quiet",
                 "--out", str(tmp_path / "eval-val")]) == 0
    assert main(["select", str(tmp_path / "eval-val"), "--metric", "hierarchical_f1", "--out",
                 str(tmp_path / "selection.json")]) == 0
    assert not (tmp_path / "eval").exists()  # nothing of the test split existed when the choice was made
    chosen = read_selection(tmp_path / "selection.json")
    val = load_evaluation(tmp_path / "eval-val").runs
    f1 = sample_metrics.sample_metric("hierarchical_f1")
    soft = [r for r in val if r.head == "soft-labels"]
    assert len(soft) == 2
    best = max(soft, key=f1.value)
    choice = next(c for c in chosen.choices if c.method == "soft-labels")
    assert choice.chosen.runs == [best.name] and len(choice.candidates) == 2
    assert "model.head_options.beta=" in choice.chosen.setting
    assert main(["evaluate", str(runs), "--projections", "none", "--quiet", "--out", str(tmp_path / "eval")]) == 0
    capsys.readouterr()
    assert main(["report", str(tmp_path / "eval"), "--selection", str(tmp_path / "selection.json")]) == 0
    summary = pd.read_csv(tmp_path / "eval" / "summary.csv")
    assert len(summary) == 2 and set(summary["head"]) == {"plain", "soft-labels"}
    assert (summary["split"] == "test").all() and summary["selection"].str.contains("hierarchical_f1").all()
    picked = summary.loc[summary["head"] == "soft-labels", "run"].item()
    assert load_evaluation(tmp_path / "eval").run(picked).metrics["run_path"] == best.metrics["run_path"]
    report = (tmp_path / "eval" / "report.md").read_text()
    assert "# hseval report: test split" in report and "## Selection" in report and "## Leaderboard" in report
