"""Every metric through the shared tester (tests/metric_tester.py): the public function, the
class fed uneven batches and two instances merged all give the reference's value (scikit-learn, a
brute force over the tree's paths, a direct loop) to 1e-12, on trees with shallow classes and on
scores with ties; then what is particular to the class: predicted classes only, probabilities,
torch input, a state that does not grow with the samples, bad input, and torch.distributed."""

from __future__ import annotations

import doctest
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import log_loss

import hseval.metrics.streaming
from hseval.metrics import HierarchicalMetrics, expected_calibration_error, level_predictions_from_logits
from hseval.metrics.streaming import NO_LEVEL_SCORES, NO_SCORES
from hseval.nn.heads import HEADS
from tests.helpers import appendix_a, examples, fashion_tree, flat_tree, random_tree, trees, unbalanced
from tests.metric_tester import KS, METRICS, argmax, check_metric, close, feed, make_data, softmax, streamed

RULES = ("leaf", "threshold:0.5", "plurality", "optimal:hf1")
"""Decoding rules whose sums the processes add up too."""
TREES = {"appendix_a": appendix_a, "fashion": fashion_tree, "unbalanced": unbalanced, "flat": lambda: flat_tree(4)}


@pytest.fixture(scope="module", params=[(name, ties) for name in TREES for ties in (False, True)],
                ids=lambda p: f"{p[0]}-{'ties' if p[1] else 'normal'}")
def fed(request):
    """A data set, the class fed it in uneven batches, and two instances fed its halves, merged."""
    name, ties = request.param
    data = make_data(TREES[name](), seed=len(name), ties=ties)
    halves = feed(data, lo=0, hi=70, sizes=(3,)), feed(data, lo=70, sizes=(50,))
    return data, feed(data), halves[0].merge(halves[1])


@pytest.mark.parametrize("key", sorted(METRICS))
def test_function_batches_and_merged_halves_give_the_reference(fed, key):
    check_metric(key, *fed)


def test_result_is_plain_json_and_keeps_every_sample(fed):
    data, whole, _ = fed
    result = whole.compute()
    assert result["samples"] == len(data["target"])
    assert sum(result["reliability"]["count"]) == len(data["target"])
    assert {len(column) for column in result["reliability"].values()} == {15}  # a table, one row per bin
    json.loads(json.dumps(result))  # plain types only


def test_state_does_not_grow_with_the_samples():
    data = make_data(unbalanced(), seed=5, ties=True)
    whole = feed(data)
    size = len(whole.pairs()[0])
    for _ in range(5):  # 5 more passes over the same samples: counts grow, the state does not
        feed(data, metrics=whole)
    targets, preds, counts = whole.pairs()
    assert len(targets) == size <= data["tree"].num_leaves ** 2 and counts.sum() == 6 * len(data["target"])
    assert {name: value.shape for name, value in whole._stream.sums.items()} == \
        {name: value.shape for name, value in HierarchicalMetrics(data["tree"], topk=KS)._stream.sums.items()}
    assert streamed(whole, "top1") == pytest.approx(METRICS["top1"][0](data), rel=1e-12)
    whole.reset()
    assert len(whole) == 0 and whole.compute()["samples"] == 0


def test_predicted_classes_only_give_the_top1_metrics_and_say_why_not_the_others():
    tree = fashion_tree()
    data = make_data(tree, seed=7)
    pred = argmax(data)
    levels = level_predictions_from_logits(data["level_logits"], tree)
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
    assert result["unavailable"]["avg_hdist@20"] == NO_SCORES  # asked for (k ≥ |L| too): said why not
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
    assert result["superclass_acc"] == {} and result["top1"] == 0.5 and result["top50"] == 1.0  # k ≥ |L|: all
    assert result["mistake_severity"] == 1.0 and result["hierarchical_f1"] == 0.5
    assert "superclass_acc_from_levels" not in result["unavailable"]  # a flat tree has no super-class to score


def test_every_k_asked_for_is_computed():
    """topk=(1, 5) on 4 classes gives top-5 (every class is among the top 5: 1), as topk_accuracy
    does; nothing asked for is dropped without a word."""
    tree = appendix_a()
    metrics = HierarchicalMetrics(tree, topk=(1, 5))
    metrics.update(np.array([[0.0, 1.0, 0.0, 0.0], [2.0, 0.0, 0.0, 1.0]]), np.array([0, 3]))
    result = metrics.compute()
    assert tree.num_leaves == 4 and result["top5"] == 1.0 and result["best_hdist@5"] == 0.0
    assert {"top5", "avg_hdist@5", "best_hdist@5"}.isdisjoint(result["unavailable"])


def _undefined(result: dict) -> set[str]:
    """The keys of ``result`` whose value is NaN, a level's as "key.level"."""
    out = set()
    for key, value in result.items():
        if isinstance(value, dict) and key not in ("reliability", "unavailable"):
            out |= {f"{key}.{level}" for level, v in value.items() if v != v}
        elif isinstance(value, float) and value != value:
            out.add(key)
    return out


@settings(max_examples=examples(60), deadline=None)
@given(tree=trees(max_leaves=12), n=st.integers(0, 12), right=st.floats(0, 1), seed=st.integers(0, 2**16),
       labels=st.booleans(), levels=st.booleans())
def test_every_undefined_value_says_why(tree, n, right, seed, labels, levels):
    """Whatever the tree and the samples (none, no mistakes, none at a level), every NaN that
    compute returns has its reason in ``unavailable``, under its key or the record it lies in."""
    rng = np.random.default_rng(seed)
    targets = rng.integers(0, tree.num_leaves, n)
    scores = rng.normal(size=(n, tree.num_leaves))
    scores[np.arange(n), targets] += np.where(rng.random(n) < right, 100.0, 0.0)
    level_scores = {k: rng.normal(size=(n, tree.nodes_per_depth[k - 1])) for k in range(1, tree.max_depth)}
    metrics = HierarchicalMetrics(tree, topk=(1, 5))
    if labels:
        metrics.update_labels(scores.argmax(1), targets)
    else:
        metrics.update(scores, targets, level_scores if levels and level_scores else None)
    result = metrics.compute()
    reasons = result["unavailable"]
    for key in _undefined(result):
        assert key in reasons or key.split(".")[0] in reasons, key
    if n and (scores.argmax(1) == targets).all():
        assert "every sample is right" in reasons["mistake_severity"]


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
    with pytest.raises(ValueError, match=r"HierarchicalMetrics\(\): topk\[0\] must be >= 1, got 0"):
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
        metrics = feed(data, lo=bounds[rank], hi=bounds[rank + 1], sizes=(7,),
                       metrics=HierarchicalMetrics(data["tree"], topk=KS, rules=RULES))
        result = metrics.compute()
        assert json.dumps(metrics.compute()) == json.dumps(result)  # compute does not change the local state
        local = feed(data, lo=bounds[rank], hi=bounds[rank + 1], sizes=(7,),
                     metrics=HierarchicalMetrics(data["tree"], topk=KS, sync_on_compute=False)).compute()
        assert local["samples"] == bounds[rank + 1] - bounds[rank]  # this process's samples alone, no collective
        with open(f"{out}.{rank}", "w") as f:
            json.dump(result, f)
    finally:
        dist.destroy_process_group()


@pytest.mark.slow  # seconds each: the fast lane keeps units and contracts
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
    data = make_data(unbalanced(), seed=11, ties=True)
    whole = feed(data, metrics=HierarchicalMetrics(data["tree"], topk=KS, rules=RULES)).compute()
    whole = json.loads(json.dumps(whole))
    assert set(whole["decisions"]) == set(RULES)
    for rank in range(2):
        close(json.loads((tmp_path / f"result.{rank}").read_text()), whole)


@pytest.mark.parametrize("name", list(HEADS))
def test_levels_are_keyed_alike_in_and_out(name):
    """What a head's ``level_logits`` keys its levels by is what ``compute`` keys them by: a user
    reads ``compute()["superclass_acc_from_levels"][d]`` with the ``d`` of ``level_logits``."""
    import torch

    from hseval.nn.heads import create_head  # torch: this test only

    tree = random_tree(9, 4)
    head = create_head(name, tree, 6)
    z = torch.randn(20, 6)
    levels = head.level_logits(z)
    metrics = HierarchicalMetrics(tree)
    metrics.update(head(z).detach(), np.arange(20) % 9,
                   None if levels is None else {d: v.detach() for d, v in levels.items()})
    result = metrics.compute()
    assert set(result["superclass_acc"]) == set(range(1, tree.max_depth))
    if levels is not None:
        assert set(result["superclass_acc_from_levels"]) == set(levels) == set(result["level_agreement"])
