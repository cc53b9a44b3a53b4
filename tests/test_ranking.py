"""The leaderboard and the metrics it ranks: every value equals a recomputation from the prediction
files by brute force (ancestor sets, LCAs by walking up), the paired bootstrap is index resampling,
and best, ties and p-values follow from the numbers."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy.special import logsumexp

from hseval.cli.main import main
from hseval.core.errors import ConfigError
from hseval.io.results import load_evaluation
from hseval.reporting import ranking, sample_metrics
from hseval.reporting.significance import holm, mcnemar_exact
from hseval.tree import write_hierarchy
from tests.helpers import random_tree

CLASSES, SAMPLES = 14, 300


def _ancestors(tree, node: int) -> list[int]:
    """The node and its ancestors up to the root's child, by walking the parents."""
    out = []
    while node >= 0:
        out.append(node)
        node = int(tree.parents[node])
    return out


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    """Three models of rising skill on the same 300 samples of a 14-class uneven tree, evaluated
    from prediction files into one folder: (the folder, the tree, targets, each model's logits)."""
    root = tmp_path_factory.mktemp("ranked")
    tree = random_tree(CLASSES, 3)
    write_hierarchy(tree, root / "tree.txt")
    rng = np.random.default_rng(0)
    targets = rng.integers(0, CLASSES, SAMPLES)
    logits = {}
    for name, skill in (("weak", 0.5), ("fair", 1.5), ("good", 2.5)):
        scores = rng.normal(size=(SAMPLES, CLASSES)).astype(np.float32)
        scores[np.arange(SAMPLES), targets] += skill
        np.savez(root / f"{name}.npz", targets=targets, logits=scores)
        logits[name] = scores
        assert main(["evaluate", "--predictions", str(root / f"{name}.npz"), "--hierarchy", str(root / "tree.txt"),
                     "--projections", "none", "--split", "val", "--out", str(root / "eval")]) == 0
    return root / "eval", tree, targets, logits


def _brute(tree, targets, scores, name: str) -> float:
    pred = scores.argmax(1)
    H = tree.max_depth
    sets = [(set(_ancestors(tree, int(p))), set(_ancestors(tree, int(t)))) for p, t in zip(pred, targets)]
    if name == "top1":
        return float(np.mean(pred == targets))
    if name.startswith("level"):
        depth = int(name[5:].split("_")[0])
        rows = [(a, b) for a, b in sets if any(tree.depth[n] == depth for n in b)]
        return float(np.mean([[n for n in a if tree.depth[n] == depth] == [n for n in b if tree.depth[n] == depth]
                              for a, b in rows]))
    if name == "mistake_severity":
        heights = [H - len(a & b) for a, b in sets if a != b]
        return float(np.mean(heights))
    if name == "hierarchical_f1":
        overlap = sum(len(a & b) for a, b in sets)
        return 2 * overlap / sum(len(a) + len(b) for a, b in sets)
    raise AssertionError(name)


def test_every_value_equals_a_recomputation_from_the_prediction_files(evaluated):
    folder, tree, targets, logits = evaluated
    runs = load_evaluation(folder).runs
    metrics = sample_metrics.chosen_metrics(None, runs)
    assert [m.name for m in metrics] == ["top1", *(f"level{d}_from_leaf" for d in range(1, tree.max_depth)),
                                         "mistake_severity", "hierarchical_f1"]
    frame, left_out = ranking.leaderboard([(r.name, [r]) for r in runs], metrics)
    assert not left_out and len(frame) == len(runs) * len(metrics)
    for row in frame.itertuples():
        assert row.value == pytest.approx(_brute(tree, targets, logits[row.entry], row.metric), abs=1e-12), row
        assert row.low <= row.value <= row.high
        metric = sample_metrics.sample_metric(row.metric)
        run = next(r for r in runs if r.name == row.entry)
        recorded = {"top1": run.metrics["top1"], "mistake_severity": run.metrics["mistake_severity"],
                    "hierarchical_f1": run.metrics["hierarchical_f1"]}
        recorded.update({f"level{d}_from_leaf": v for d, v in ((int(k), v) for k, v in
                                                                run.metrics["superclass_acc"].items())})
        assert metric.value(run) == pytest.approx(recorded[row.metric], abs=1e-12)  # metrics.json's number


def test_best_ties_and_p_values_follow_from_the_numbers(evaluated):
    folder, *_ = evaluated
    runs = load_evaluation(folder).runs
    metrics = sample_metrics.chosen_metrics(["top1", "mistake_severity"], runs)
    frame, _ = ranking.leaderboard([(r.name, [r]) for r in runs], metrics)
    for name, part in frame.groupby("metric"):
        lower = sample_metrics.sample_metric(name).lower
        best = part.loc[part["value"].idxmin() if lower else part["value"].idxmax()]
        assert part["best"].sum() == 1 and bool(best["best"]) and best["entry"] == "good"
        assert part.loc[part["best"], "p_value"].isna().all()
    assert np.allclose(frame["p_holm"], holm(frame["p_value"]), equal_nan=True)
    assert (frame["tied"] == (~frame["best"] & (frame["p_holm"] >= 0.05))).all()
    top = frame[frame["metric"] == "top1"].set_index("entry")
    by = {r.name: r for r in runs}
    for name in ("weak", "fair"):  # an accuracy of two runs: the exact McNemar test on the discordant samples
        a, b = by[name].topk[:, 0] == by[name].targets, by["good"].topk[:, 0] == by["good"].targets
        assert top.loc[name, "test"] == "exact McNemar"
        assert top.loc[name, "p_value"] == mcnemar_exact(int((a & ~b).sum()), int((b & ~a).sum()))
    assert (frame[frame["metric"] == "mistake_severity"].query("not best")["test"] == "paired bootstrap").all()
    table = ranking.leaderboard_table(frame, metrics)
    assert list(table.columns) == ["run", "top-1", "mistake severity ↓"]
    assert table["run"].tolist() == ["good", "fair", "weak"]  # best first by the first metric
    assert table.set_index("run").loc["good"].str.endswith("★").all()


def test_the_bootstrap_is_index_resampling_applied_to_every_column_at_once():
    columns = np.random.default_rng(5).random((40, 3))
    got = ranking.bootstrap(columns, resamples=230, seed=9, block=100)
    draws, expected = np.random.default_rng(9), []
    for rows in (100, 100, 30):
        for idx in draws.integers(0, 40, size=(rows, 40)):
            expected.append(columns[idx].sum(0))
    assert np.allclose(got, np.array(expected), rtol=1e-12)


def test_a_seed_group_pools_its_seeds(evaluated):
    folder, *_ = evaluated
    runs = load_evaluation(folder).runs
    top1, severity = sample_metrics.sample_metric("top1"), sample_metrics.sample_metric("mistake_severity")
    assert sample_metrics.entry_value(runs, top1) == pytest.approx(np.mean([top1.value(r) for r in runs]), abs=1e-12)
    wrong = [(r.topk[:, 0] != r.targets) for r in runs]
    assert sample_metrics.entry_value(runs, severity) == pytest.approx(
        sum(severity.parts(r)[:, 0].sum() for r in runs) / sum(w.sum() for w in wrong), abs=1e-12)


def _calibration(scores: np.ndarray, targets: np.ndarray) -> dict[str, float]:
    """ECE over 15 right-closed bins and the cross-entropy, from logits, by a direct loop over the bins."""
    log_p = scores - logsumexp(scores, axis=1, keepdims=True)
    confidence, correct = np.exp(log_p.max(1)), scores.argmax(1) == targets
    bins = np.clip(np.ceil(confidence * 15) - 1, 0, 14)
    ece = sum(abs((confidence - correct)[bins == b].sum()) for b in range(15)) / len(targets)
    return {"ece": ece, "cross_entropy": -log_p[np.arange(len(targets)), targets].mean()}


def test_calibration_is_ranked_and_equals_a_recomputation_and_metrics_json(evaluated):
    folder, tree, targets, logits = evaluated
    runs = load_evaluation(folder).runs
    metrics = sample_metrics.chosen_metrics(["ece", "cross_entropy"], runs)
    assert all(m.lower for m in metrics)
    frame, _ = ranking.leaderboard([(r.name, [r]) for r in runs], metrics)
    assert len(frame) == 6
    for row in frame.itertuples():
        run = next(r for r in runs if r.name == row.entry)
        assert row.value == pytest.approx(_calibration(logits[row.entry].astype(float), targets)[row.metric], rel=1e-6)
        assert row.value == pytest.approx(run.metrics[row.metric], abs=1e-12)  # metrics.json's number
        assert row.low <= row.value <= row.high
    pooled = np.concatenate([logits[r.name] for r in runs]).astype(float)  # a seed group: its samples pooled
    assert sample_metrics.entry_value(runs, metrics[0]) == pytest.approx(
        _calibration(pooled, np.tile(targets, len(runs)))["ece"], rel=1e-6)


def test_decision_metrics_equal_decisions_csv(evaluated):
    folder, *_ = evaluated
    for run in load_evaluation(folder).runs:
        for row in run.decisions.itertuples():
            for column in ("hf1", "correct", "depth_recall", "mistake_severity", "wu_palmer"):
                name = f"{column}@{row.rule}" + (" (own scores)" if row.probabilities == "own scores" else "")
                value, recorded = sample_metrics.sample_metric(name).value(run), getattr(row, column)
                assert (math.isnan(value) and math.isnan(recorded)) or value == pytest.approx(recorded, abs=1e-9), name


@pytest.mark.parametrize(("name", "message"), [
    ("top0", "unknown metric 'top0'"), ("accuracy", "unknown metric 'accuracy'"),
    ("nonsense@leaf", "unknown metric"), ("level1_own_scores", "none of the 3 run(s) has it"),
    ("hf1@threshold:0.7", "none of the 3 run(s) has it")])
def test_a_metric_the_runs_do_not_have_is_one_line(evaluated, name, message):
    runs = load_evaluation(evaluated[0]).runs
    with pytest.raises(ConfigError, match=re.escape(message)):
        sample_metrics.chosen_metrics([name], runs)
