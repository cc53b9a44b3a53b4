"""``hseval demo --quick`` end to end, through the real Fashion-MNIST loader on a small set in its
on-disk format (the full-size demo is README's first command): every file of the run, evaluation
and report contracts exists and parses, and a second demo reuses the runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hseval.cli.main import main
from hseval.io.evaluation_format import FILES as EVAL_FILES
from hseval.io.run_format import load_run, load_train_state
from hseval.nn.heads import list_heads
from hseval.reporting.ranking import BASELINE_METRICS

README = Path(__file__).resolve().parents[1] / "README.md"


def record_of(out: Path) -> dict:
    return json.loads((out / "demo.json").read_text())


def test_demo_quick_end_to_end(fashion_like, tmp_path, capsys):
    out = tmp_path / "demo"
    demo = ["demo", "--quick", "--quiet", "--data-root", str(fashion_like), "--out", str(out)]
    assert main(demo) == 0
    printed = capsys.readouterr().out
    heads = list_heads()
    for head in heads:  # the run contract
        run = out / "runs" / head
        assert {"run.json", "model.safetensors", "train_state.pt", "history.csv"} <= {p.name for p in run.iterdir()}
        loaded = load_run(run)
        assert loaded.head_name == head and loaded.meta["dataset"]["train_size"] == 600
        assert load_train_state(run)["epoch"] == 1
        assert len(pd.read_csv(run / "history.csv")) == 1
    for head in heads:  # the evaluation contract
        folder = out / "eval" / head
        for name in EVAL_FILES:
            assert (folder / name).is_file(), (head, name)
        metrics = json.loads((folder / "metrics.json").read_text())
        assert metrics["samples"] == 200 and metrics["top1"] > 0.15
        for name in ("per_node.csv", "geometry.csv", "pair_angles.csv", "projections.csv"):
            assert len(pd.read_csv(folder / name).columns) >= 5, (head, name)  # a header even when empty
        with np.load(folder / "predictions.npz", allow_pickle=False) as data:
            assert data["targets"].shape == (200,) and data["topk"].shape[0] == 200, head
        with np.load(folder / "embeddings.npz", allow_pickle=False) as data:
            assert len(data["embeddings"]) == len(data["labels"]) > 0, head
    for name in ("summary.csv", "summary_grouped.csv", "superclass_accuracy.csv", "superclass_accuracy.md",
                 "report.md", "report.html"):  # the report contract
        assert (out / "eval" / name).is_file(), name
    summary = pd.read_csv(out / "eval" / "summary.csv")
    assert sorted(summary["head"]) == sorted(heads) and (summary["split"] == "test").all()
    # README's count of the tests against plain: every level both ways (own scores against plain's from its
    # leaf) and each metric of the bootstrap where both runs have it (this tiny set has no mistakes to rate)
    tests = pd.read_csv(out / "eval" / "significance.csv")
    others = [json.loads((out / "eval" / h / "metrics.json").read_text()) for h in heads if h != "plain"]
    own = sum(len(m.get("superclass_acc_from_levels") or {}) for m in others)
    plain = json.loads((out / "eval" / "plain" / "metrics.json").read_text())
    rated = sum(m.get(k) is not None and plain.get(k) is not None for m in others for k in BASELINE_METRICS)
    assert len(tests[tests["note"].isna()]) == 3 * len(others) + own + rated
    stated = re.search(r"the demo's eleven runs against `plain` are (\d+) tests", README.read_text()).group(1)
    calibrated = sum("ece" in m for m in others)  # cross-entropy and ECE: the runs whose scores are probabilities
    assert int(stated) == 3 * len(others) + own + len(others) * (len(BASELINE_METRICS) - 2) + 2 * calibrated
    assert record_of(out)["budget"] == "quick"
    # the printed table: one line per head and the dashboard command
    for head in heads:
        assert re.search(rf"^{re.escape(head)}\s+[01]\.\d{{4}}", printed, re.M), head
    assert f"hseval dashboard {out / 'eval'}" in printed
    record = json.loads((out / "demo.json").read_text())  # where the time went, stage by stage
    assert list(record["stages"]) == ["training", "evaluation", "report"]
    assert sum(record["stages"].values()) == pytest.approx(record["seconds"])
    assert re.search(r"done in \d+ s \(training \d+ s, evaluation \d+ s, report \d+ s\)", printed)

    # a second demo reuses the finished runs instead of training again
    assert main(demo) == 0
    again = capsys.readouterr().out
    assert again.count("is finished with these settings; reusing it") == len(heads) and "] training" not in again
