"""A new metric is one module plus its registration: the toy metric declared here, and nowhere else,
is computed by ``HierarchicalMetrics`` and ``hseval evaluate``, checked by metrics.json's schema,
and shown under its own name and help by the report and the dashboard."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from hseval.cli.main import main
from hseval.metrics import HierarchicalMetrics
from hseval.metrics.statistics import METRICS, Batch, Key, Metric, Sums
from hseval.reporting.columns import column_help, display_name
from tests.dashboard_helpers import app, table
from tests.helpers import fashion_tree

HELP = "The share of samples whose predicted class lies under another top-level super-class than the true class."


def _update(batch: Batch) -> dict[str, np.ndarray]:
    top = batch.hierarchy.ancestor_at_depth(np.stack([batch.top[:, 0], batch.targets]), 1)
    return {"far_wrong": np.array([int((top[0] != top[1]).sum())], np.int64)}


def _compute(sums: Sums) -> dict[str, float]:
    return {"far_mistakes": float(sums.state["far_wrong"][0]) / sums.n if sums.n else math.nan}


TOY = Metric(keys={"far_mistakes": Key("far mistakes", HELP, shown="headline")}, update=_update, compute=_compute,
             state=lambda hierarchy, num_ks, n_bins: {"far_wrong": np.zeros(1, np.int64)})


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(METRICS._items, "far mistakes", TOY)  # the registration, undone after the test


def _far(pred: np.ndarray, target: np.ndarray, tree) -> float:
    return float(np.mean(tree.ancestor_at_depth(pred, 1) != tree.ancestor_at_depth(target, 1)))


def test_a_declared_metric_is_streamed_batch_by_batch(toy):
    tree = fashion_tree()
    rng = np.random.default_rng(0)
    logits, target = rng.normal(size=(50, tree.num_leaves)), rng.integers(0, tree.num_leaves, 50)
    metrics = HierarchicalMetrics(tree)
    for part in np.array_split(np.arange(50), 3):
        metrics.update(logits[part], target[part])
    assert metrics.compute()["far_mistakes"] == pytest.approx(_far(logits.argmax(1), target, tree))
    assert display_name("far_mistakes") == "far mistakes" and column_help("far_mistakes") == HELP


def test_a_declared_metric_reaches_metrics_json_the_report_and_the_dashboard(toy, evaluated, fashion_like, tmp_path,
                                                                            monkeypatch, capsys):
    out = tmp_path / "eval"
    assert main(["evaluate", str(evaluated.parent / "runs" / "plain"), "--projections", "pca", "--quiet",
                 "--data-root", str(fashion_like), "--out", str(out)]) == 0
    metrics = json.loads((out / "plain" / "metrics.json").read_text())
    predictions = np.load(out / "plain" / "predictions.npz")
    tree = fashion_tree()
    assert metrics["far_mistakes"] == pytest.approx(_far(predictions["topk"][:, 0], predictions["targets"], tree))

    assert main(["report", str(out)]) == 0
    summary = pd.read_csv(out / "summary.csv")
    assert summary.loc[0, "far_mistakes"] == pytest.approx(metrics["far_mistakes"])
    report = (out / "report.md").read_text()
    runs = report.split("## Runs")[1].split("\n## ")[0]  # the headline table, with its help below it
    assert "far mistakes" in runs and f"{metrics['far_mistakes']:.4f}" in runs and HELP in runs

    at = app(out, monkeypatch).run()
    assert not at.exception, [e.message for e in at.exception]
    assert table(at, "far_mistakes")["far_mistakes"].tolist() == pytest.approx([metrics["far_mistakes"]])


    monkeypatch.delitem(METRICS._items, "far mistakes")  # what metrics.json may hold is what is declared
    capsys.readouterr()
    assert main(["report", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "plain/metrics.json" in err and "far_mistakes" in err
