"""``hseval evaluate`` writes each run's decisions: decisions.csv, operating_curve.csv, their
summaries and the per-sample decisions, for prediction files of logits, probabilities and
predicted classes alone, and refuses a bad ``--rules`` in one line before writing anything."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hseval.cli.main import main
from hseval.io.results import load_evaluation
from hseval.metrics.curves import curve_summary
from hseval.metrics.decisions import DEFAULT_RULES, decode
from hseval.metrics.node_metrics import compare, node_metric
from hseval.metrics.nodes import layout_of, softmax
from hseval.tree import read_hierarchy
from tests.helpers import prediction_file


def _evaluate(tmp_path, file, *extra) -> int:
    return main(["evaluate", "--predictions", str(file), "--hierarchy", str(file.with_suffix(".txt")),
                 "--out", str(tmp_path / "eval"), "--projections", "none", *extra])


@pytest.fixture(scope="module")
def logits_file(tmp_path_factory):
    folder = tmp_path_factory.mktemp("decisions")
    prediction_file(folder / "model", classes=40, samples=300, seed=2)
    return folder / "model.npz"


def test_decisions_and_curves_equal_decoding_the_files_probabilities(logits_file, tmp_path):
    assert _evaluate(tmp_path, logits_file) == 0
    run = load_evaluation(tmp_path / "eval").runs[0]
    tree = read_hierarchy(logits_file.with_suffix(".txt"))
    data = np.load(logits_file)
    probs = softmax(data["logits"].astype(np.float64))
    targets = data["targets"]
    assert run.decisions["rule"].tolist() == list(DEFAULT_RULES)
    assert run.metrics["probabilities"] == "softmax"
    for k, name in enumerate(run.decisions["rule"]):
        nodes = decode(probs, tree, name)
        np.testing.assert_array_equal(run.decided[:, k], nodes)
        comparison = compare(layout_of(tree), nodes, targets)
        for metric in ("correct", "exact", "hf1", "tree_distance", "wu_palmer", "info_recall"):
            want = node_metric(metric).value(comparison).mean()
            assert run.decisions.loc[k, metric] == pytest.approx(want, abs=1e-12), (name, metric)
    assert run.decisions.set_index("rule").loc["leaf", "exact"] == pytest.approx(run.metrics["top1"])
    assert run.decisions.set_index("rule").loc["crm", "exact"] == pytest.approx(run.metrics["crm"]["top1"])
    for rule, part in run.curves.groupby("rule"):
        summary = curve_summary(part.reset_index(drop=True))
        assert run.metrics["operating_curve"][rule] == pytest.approx(summary)
        t = 0.37  # a point of the file's curve is the rule at that threshold
        row = part[part["threshold"] >= t].iloc[-1]
        decided = compare(layout_of(tree), decode(probs, tree, f"{rule}:{t}"), targets)
        assert row["correct"] == pytest.approx(decided.correct.mean(), abs=1e-12)
    best, nodes = run.depth_front
    assert best.shape == (300, tree.max_depth + 1) and (nodes[:, 0] == -1).all()


def test_probabilities_are_read_as_given_and_predicted_classes_get_the_leaf_row_alone(logits_file, tmp_path):
    data = dict(np.load(logits_file))
    probs = softmax(data.pop("logits").astype(np.float64))
    np.savez(tmp_path / "probs.npz", probs=probs, **data)
    pd.DataFrame({"target": data["targets"], "pred": probs.argmax(1)}).to_csv(tmp_path / "labels.csv", index=False)
    for file in (tmp_path / "probs.npz", tmp_path / "labels.csv"):
        file.with_suffix(".txt").write_bytes(logits_file.with_suffix(".txt").read_bytes())
        assert _evaluate(tmp_path, file, "--rules", "leaf,threshold:0.7,optimal:hf:2") == 0
    runs = {run.name: run for run in load_evaluation(tmp_path / "eval").runs}
    given, labels = runs["probs"], runs["labels"]
    assert given.metrics["probabilities"] == "given"
    assert given.decisions["rule"].tolist() == ["leaf", "threshold:0.7", "optimal:hf:2"]
    assert "hf:2" in given.decisions.columns and given.decisions["unavailable"].isna().all()
    table = labels.decisions.set_index("rule")
    assert table.loc["leaf", "exact"] == pytest.approx(labels.metrics["top1"])
    assert table.loc["threshold:0.7"].drop(["unavailable", "probabilities"]).isna().all()
    assert "no probabilities" in table.loc["threshold:0.7", "unavailable"]
    assert labels.curves.empty and "operating_curve" in labels.metrics["unavailable"]
    assert labels.depth_front[0].shape[0] == 0


@pytest.mark.parametrize("rules, fragment", [
    ("threshold:1.5", "--rules: rule 'threshold:1.5': the threshold must be a probability in [0, 1]"),
    ("leaf,nearest", "--rules: unknown decoding rule 'nearest'"),
    ("optimal:hf:0", "β must be a positive"), ("optimal:height", "unknown node metric 'height'"),
    (" , ", "--rules: give at least one decoding rule")])
def test_a_bad_rule_is_one_line_and_nothing_is_written(logits_file, tmp_path, capsys, rules, fragment):
    assert _evaluate(tmp_path, logits_file, "--rules", rules) == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err and len(err.splitlines()) == 1
    assert not (tmp_path / "eval").exists()


def test_the_files_read_back_as_tables_other_tools_read(logits_file, tmp_path):
    assert _evaluate(tmp_path, logits_file, "--rules", "leaf,plurality") == 0
    folder = tmp_path / "eval" / "model"
    decisions = pd.read_csv(folder / "decisions.csv")
    curve = pd.read_csv(folder / "operating_curve.csv")
    assert list(decisions.columns[:4]) == ["rule", "probabilities", "correct", "exact"]
    assert decisions["rule"].tolist() == ["leaf", "plurality"] and set(decisions["probabilities"]) == {"classes"}
    assert list(curve.columns) == ["rule", "probabilities", "threshold", "correct", "depth_recall", "info_recall"]
    assert set(curve["rule"]) == {"threshold", "info-threshold"}


def test_a_models_own_level_scores_are_decoded_too_and_said_so(logits_file, tmp_path):
    """Own super-class scores give their own rows (the rules that read node probabilities alone),
    equal to decoding the node probabilities those scores give; the classes' rows are unchanged."""
    from hseval.metrics.nodes import NodeBlock

    tree = read_hierarchy(logits_file.with_suffix(".txt"))
    data = dict(np.load(logits_file))
    rng = np.random.default_rng(5)
    levels = {d: rng.normal(size=(len(data["targets"]), tree.nodes_per_depth[d - 1])) * 2
              for d in range(1, tree.max_depth)}
    np.savez(tmp_path / "own.npz", **data, **{f"level_scores_{d}": v for d, v in levels.items()})
    (tmp_path / "own.txt").write_bytes(logits_file.with_suffix(".txt").read_bytes())
    assert _evaluate(tmp_path, tmp_path / "own.npz", "--rules", "leaf,threshold:0.6,top-down,optimal:hf1") == 0
    run = load_evaluation(tmp_path / "eval").runs[0]
    table = run.decisions
    assert list(zip(table["rule"], table["probabilities"])) == [
        ("leaf", "classes"), ("threshold:0.6", "classes"), ("top-down", "classes"), ("optimal:hf1", "classes"),
        ("threshold:0.6", "own scores"), ("top-down", "own scores")]
    probs = softmax(data["logits"].astype(np.float64))
    block = NodeBlock(layout_of(tree), probs).with_levels({d: softmax(v) for d, v in levels.items()})
    for k, name in ((4, "threshold:0.6"), (5, "top-down")):
        from hseval.metrics.decisions import rule

        nodes = rule(name).decode(block)
        np.testing.assert_array_equal(run.decided[:, k], nodes)
        correct = compare(layout_of(tree), nodes, data["targets"]).correct.mean()
        assert table.loc[k, "correct"] == pytest.approx(correct, abs=1e-12)
    assert set(run.curves["probabilities"]) == {"classes", "own scores"}
    assert set(run.metrics["operating_curve"]) == {"threshold", "info-threshold", "threshold (own scores)",
                                                   "info-threshold (own scores)"}


def test_no_rules_writes_the_decisions_files_empty_and_says_why(logits_file, tmp_path):
    assert _evaluate(tmp_path, logits_file, "--rules", "none") == 0
    run = load_evaluation(tmp_path / "eval").runs[0]
    assert run.decisions.empty and run.curves.empty and run.decided.shape == (300, 0)
    assert "--rules none" in run.unavailable["operating_curve"] and not len(run.depth_front[0])
