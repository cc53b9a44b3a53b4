"""The streaming metrics: fed in uneven batches, merged from parts or all-reduced over processes,
they give the one-shot functions' (and scikit-learn's) values to 1e-12, on trees with shallow
classes and on scores with ties; their state does not grow with the number of samples."""

from __future__ import annotations

import doctest
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.metrics import accuracy_score, log_loss, top_k_accuracy_score

import hseval.metrics.streaming
from hseval.metrics import (
    HierarchicalMetrics,
    expected_calibration_error,
    hierarchical_prf,
    level_agreement,
    level_predictions_from_logits,
    mistake_metrics,
    per_node_accuracy,
    reliability_bins,
    superclass_accuracy_from_leaf,
    superclass_accuracy_from_levels,
    topk_predictions,
)
from hseval.metrics.streaming import NO_LEVEL_SCORES, NO_SCORES
from tests.helpers import appendix_a, fashion_tree, flat_tree, unbalanced

KS = (1, 5, 20)


def softmax(x):
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def sk_topk(k):
    def reference(data):
        if data["ties"]:  # scikit-learn does not say how it breaks ties: count the stable top-k
            return float((topk_predictions(data["scores"], k) == data["target"][:, None]).any(1).mean())
        with warnings.catch_warnings():  # sklearn warns that k >= number of classes gives 1
            warnings.simplefilter("ignore")
            return top_k_accuracy_score(data["target"], data["scores"], k=min(k, data["tree"].num_leaves),
                                        labels=range(data["tree"].num_leaves))
    return reference


def by_level(values):
    return {str(k): v for k, v in values.items()}


def level_pred(data):
    return level_predictions_from_logits(data["level_logits"], data["tree"])


def argmax(data):
    return data["scores"].argmax(1)


# key of compute() -> reference over all samples at once
REFERENCES = {
    "top1": lambda d: accuracy_score(d["target"], argmax(d)),
    "top5": sk_topk(5),
    "top20": sk_topk(20),
    "cross_entropy": lambda d: log_loss(d["target"], softmax(d["scores"]), labels=range(d["tree"].num_leaves)),
    "superclass_acc": lambda d: by_level(superclass_accuracy_from_leaf(argmax(d), d["target"], d["tree"])),
    "superclass_acc_from_levels": lambda d: by_level(superclass_accuracy_from_levels(level_pred(d), d["target"],
                                                                                     d["tree"])),
    "level_agreement": lambda d: by_level(level_agreement(level_pred(d), argmax(d), d["target"], d["tree"])),
    **{key: (lambda d, key=key: mistake_metrics(d["scores"], d["target"], d["tree"], ks=KS)[key])
       for key in ["mistake_severity", "avg_hdist@1", "best_hdist@1", "avg_hdist@5", "best_hdist@5", "avg_hdist@20",
                   "best_hdist@20"]},
    **{f"hierarchical_{key}": (lambda d, key=key: hierarchical_prf(argmax(d), d["target"], d["tree"])[key])
       for key in ["precision", "recall", "f1"]},
    "ece": lambda d: expected_calibration_error(softmax(d["scores"]), d["target"]),
    "reliability": lambda d: {k: v.tolist() for k, v in reliability_bins(softmax(d["scores"]), d["target"]).items()},
}

TREES = {"appendix_a": appendix_a, "fashion": fashion_tree, "unbalanced": unbalanced, "flat": lambda: flat_tree(4)}


def make_data(tree, seed, n=157, ties=False):
    rng = np.random.default_rng(seed)
    target = rng.integers(0, tree.num_leaves, n)
    if ties:  # few distinct values: many equal scores, so the tie rule decides top-k and argmax
        scores = rng.integers(-1, 2, size=(n, tree.num_leaves)).astype(np.float64)
    else:
        scores = rng.normal(size=(n, tree.num_leaves)) * 2
        scores[np.arange(n), target] += 2.0  # a mix of right and wrong predictions
    level_logits = {k: rng.normal(size=(n, tree.nodes_per_depth[k - 1])) for k in range(1, tree.max_depth)}
    return {"tree": tree, "target": target, "scores": scores, "level_logits": level_logits, "ties": ties}


def feed(data, sizes=(0, 1, 40, 64), *, lo=0, hi=None, metrics=None, as_torch=False):
    hi = len(data["target"]) if hi is None else hi
    metrics = metrics or HierarchicalMetrics(data["tree"], topk=KS)
    edges = np.minimum(np.cumsum([lo, *sizes, hi]), hi)
    floats = (lambda x: torch.as_tensor(x, dtype=torch.float64)) if as_torch else np.asarray
    labels = torch.as_tensor if as_torch else np.asarray
    levels = data["level_logits"] or None
    for a, b in zip(edges[:-1], edges[1:]):
        metrics.update(floats(data["scores"][a:b]), labels(data["target"][a:b]),
                       None if levels is None else {k: floats(v[a:b]) for k, v in levels.items()})
    return metrics


def close(got, want):
    if isinstance(want, dict):
        assert set(got) == set(want)
        for key in want:
            close(got[key], want[key])
    elif isinstance(want, list):
        np.testing.assert_allclose(np.asarray(got, float), np.asarray(want, float), rtol=1e-12, atol=1e-15)
    else:
        assert got == pytest.approx(want, rel=1e-12, abs=1e-15, nan_ok=True)


@pytest.fixture(scope="module", params=[(name, ties) for name in TREES for ties in (False, True)],
                ids=lambda p: f"{p[0]}-{'ties' if p[1] else 'normal'}")
def batched(request):
    name, ties = request.param
    data = make_data(TREES[name](), seed=len(name), ties=ties)
    return data, feed(data).compute()


@pytest.mark.parametrize("key", sorted(REFERENCES))
def test_batches_give_the_one_shot_value(batched, key):
    data, result = batched
    if key in ("superclass_acc_from_levels", "level_agreement") and data["tree"].max_depth == 1:
        assert key not in result and key not in result["unavailable"]  # no super-class level to score
        return
    k = int(key.split("@")[-1].removeprefix("top")) if key.startswith(("top", "avg_hdist@", "best_hdist@")) else 1
    if k > 1 and k >= data["tree"].num_leaves:  # every class is in the top k: not reported
        assert key not in result and key not in result["unavailable"]
        return
    close(result[key], REFERENCES[key](data))


def test_result_is_plain_json_and_keeps_every_sample(batched):
    data, result = batched
    assert result["samples"] == len(data["target"])
    assert sum(result["reliability"]["count"]) == len(data["target"])
    assert {len(column) for column in result["reliability"].values()} == {15}  # a table, one row per bin
    json.loads(json.dumps(result))  # plain types only


def test_merge_of_two_halves_equals_the_whole_and_state_does_not_grow():
    data = make_data(unbalanced(), seed=5, ties=True)
    whole = feed(data)
    first, second = feed(data, lo=0, hi=70, sizes=(3,)), feed(data, lo=70, sizes=(50,))
    close(first.merge(second).compute(), whole.compute())
    per_node = whole.per_node()
    reference = per_node_accuracy(argmax(data), data["target"], data["tree"])
    np.testing.assert_array_equal(per_node[0], reference[0])
    np.testing.assert_array_equal(per_node[1], reference[1])
    size = len(whole.pairs()[0])
    for _ in range(5):  # 5 more passes over the same samples: counts grow, the state does not
        feed(data, metrics=whole)
    targets, preds, counts = whole.pairs()
    assert len(targets) == size <= data["tree"].num_leaves ** 2 and counts.sum() == 6 * len(data["target"])
    assert whole.compute()["top1"] == pytest.approx(REFERENCES["top1"](data), rel=1e-12)
    whole.reset()
    assert len(whole) == 0 and whole.compute()["samples"] == 0


def test_predicted_classes_only_give_the_top1_metrics_and_say_why_not_the_others():
    tree = fashion_tree()
    data = make_data(tree, seed=7)
    pred = argmax(data)
    levels = level_pred(data)
    metrics = HierarchicalMetrics(tree, topk=KS)
    metrics.update_labels(pred[:100], data["target"][:100], {k: v[:100] for k, v in levels.items()})
    metrics.update_labels(pred[100:], data["target"][100:], {k: v[100:] for k, v in levels.items()})
    result = metrics.compute()
    scored = feed(data).compute()
    for key in ("top1", "superclass_acc", "superclass_acc_from_levels", "level_agreement", "mistake_severity",
                "avg_hdist@1", "best_hdist@1", "hierarchical_f1"):
        close(result[key], scored[key])
    for key in ("top5", "avg_hdist@5", "ece", "cross_entropy", "reliability"):
        assert key not in result and result["unavailable"][key] == NO_SCORES
    assert "avg_hdist@20" not in result["unavailable"]  # k ≥ |L| = 10: not reported at all
    with pytest.raises(ValueError, match="this batch gives scores but earlier batches gave predicted classes"):
        metrics.update(data["scores"], data["target"])


def test_probabilities_give_the_calibration_of_those_probabilities():
    tree = appendix_a()
    data = make_data(tree, seed=2)
    probs = softmax(data["scores"] / 3)
    metrics = HierarchicalMetrics(tree, scores="probs")
    metrics.update(probs, data["target"])
    result = metrics.compute()
    close(result["ece"], expected_calibration_error(probs, data["target"]))
    close(result["cross_entropy"], log_loss(data["target"], probs, labels=range(tree.num_leaves)))
    with pytest.raises(ValueError, match="probs row 0 sums to 2, not 1"):
        metrics.update(np.full((2, 4), 0.5), np.array([0, 1]))


def test_torch_float32_input():
    data = make_data(fashion_tree(), seed=3)
    got = feed(data, as_torch=True).compute()
    reference = feed(data).compute()
    assert got["top1"] == reference["top1"] and got["superclass_acc"] == reference["superclass_acc"]
    assert got["ece"] == pytest.approx(reference["ece"], rel=1e-12)


def test_edge_cases_empty_and_large_topk():
    empty = HierarchicalMetrics(fashion_tree()).compute()
    assert empty["samples"] == 0 and np.isnan(empty["top1"]) and np.isnan(empty["ece"])
    assert empty["unavailable"]["superclass_acc_from_levels"] == NO_LEVEL_SCORES
    metrics = HierarchicalMetrics(flat_tree(3), topk=(50,))
    metrics.update(np.array([[3.0, 0.0, 0.0], [0.0, 2.0, 1.0]]), np.array([0, 2]))
    result = metrics.compute()
    assert result["superclass_acc"] == {} and result["top1"] == 0.5 and "top50" not in result  # k ≥ |L|
    assert result["mistake_severity"] == 1.0 and result["hierarchical_f1"] == 0.5
    assert "superclass_acc_from_levels" not in result["unavailable"]  # a flat tree has no super-class to score


def test_bad_input_is_refused_with_a_message():
    tree = fashion_tree()
    metrics = HierarchicalMetrics(tree)
    with pytest.raises(ValueError, match="logits has 9 columns but the hierarchy has 10 classes"):
        metrics.update(np.zeros((2, 9)), np.array([0, 1]))
    with pytest.raises(ValueError, match="logits and targets hold 2 and 3 samples"):
        metrics.update(np.zeros((2, 10)), np.array([0, 1, 2]))
    metrics.update(np.zeros((2, 10)), np.array([0, 1]), {1: np.zeros((2, 3))})
    with pytest.raises(ValueError, match=r"level scores for levels None but earlier batches had \[1\]"):
        metrics.update(np.zeros((2, 10)), np.array([0, 1]))
    with pytest.raises(ValueError, match="level 3 is not a super-class level of the tree"):
        metrics.update(np.zeros((2, 10)), np.array([0, 1]), {3: np.zeros((2, 7))})
    with pytest.raises(ValueError, match="every k of topk must be at least 1"):
        HierarchicalMetrics(tree, topk=(0,))
    with pytest.raises(ValueError, match="same tree"):
        metrics.merge(HierarchicalMetrics(appendix_a()))


def test_module_example_runs():
    assert doctest.testmod(hseval.metrics.streaming, raise_on_error=True).attempted > 0


def _distributed_part(rank: int, world: int, store: str, out: str) -> None:
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    try:
        data = make_data(unbalanced(), seed=11, ties=True)
        bounds = [0, 61, len(data["target"])]
        metrics = feed(data, lo=bounds[rank], hi=bounds[rank + 1], sizes=(7,))
        result = metrics.compute()
        assert json.dumps(metrics.compute()) == json.dumps(result)  # compute does not change the local state
        with open(f"{out}.{rank}", "w") as f:
            json.dump(result, f)
    finally:
        dist.destroy_process_group()


def test_compute_all_reduces_across_two_gloo_processes(tmp_path):
    # two fresh interpreters (not multiprocessing's spawn, which re-runs whatever __main__ the test process has)
    code = "import sys; from tests.test_metrics_streaming import _distributed_part as part; " \
           "part(int(sys.argv[1]), 2, sys.argv[2], sys.argv[3])"
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root), OMP_NUM_THREADS="1")
    workers = [subprocess.Popen([sys.executable, "-c", code, str(rank), str(tmp_path / "store"),
                                 str(tmp_path / "result")], cwd=root, env=env, stderr=subprocess.PIPE, text=True)
               for rank in range(2)]
    errors = [w.communicate(timeout=120)[1] for w in workers]
    assert [w.returncode for w in workers] == [0, 0], errors
    whole = json.loads(json.dumps(feed(make_data(unbalanced(), seed=11, ties=True)).compute()))
    for rank in range(2):
        close(json.loads((tmp_path / f"result.{rank}").read_text()), whole)
