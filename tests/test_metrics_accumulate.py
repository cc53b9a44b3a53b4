"""The accumulator: fed in uneven batches it gives the one-shot pure functions' (and scikit-learn's)
values, for every metric, on every small tree; edge cases and input checks."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import torch
from sklearn.metrics import accuracy_score, log_loss, top_k_accuracy_score

from hseval.metrics import (
    EvaluationAccumulator,
    expected_calibration_error,
    hierarchical_prf,
    level_agreement,
    level_predictions_from_logits,
    mistake_metrics,
    superclass_accuracy_from_leaf,
    superclass_accuracy_from_levels,
)
from tests.conftest import fashion_tree
from tests.test_metrics_accuracy import flat_tree


def softmax(x):
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def sk_topk(k):
    def reference(data):
        with warnings.catch_warnings():  # sklearn warns that k >= number of classes gives 1
            warnings.simplefilter("ignore")
            return top_k_accuracy_score(data["target"], data["scores"], k=min(k, data["tree"].num_leaves),
                                        labels=range(data["tree"].num_leaves))
    return reference


def by_level(values):
    return {str(k): v for k, v in values.items()}


def level_pred(data):
    return level_predictions_from_logits(data["level_logits"], data["tree"])


# key of compute() -> reference over all samples at once
REFERENCES = {
    "top1": lambda d: accuracy_score(d["target"], d["scores"].argmax(1)),
    "top5": sk_topk(5),
    "top20": sk_topk(20),
    "cross_entropy": lambda d: log_loss(d["target"], softmax(d["scores"]), labels=range(d["tree"].num_leaves)),
    "superclass_acc": lambda d: by_level(superclass_accuracy_from_leaf(d["scores"].argmax(1), d["target"], d["tree"])),
    "superclass_acc_from_levels": lambda d: by_level(superclass_accuracy_from_levels(level_pred(d), d["target"],
                                                                                     d["tree"])),
    "level_agreement": lambda d: by_level(level_agreement(level_pred(d), d["scores"].argmax(1), d["target"],
                                                          d["tree"])),
    **{key: (lambda d, key=key: mistake_metrics(d["scores"], d["target"], d["tree"])[key])
       for key in ["mistake_severity", "avg_hdist@1", "avg_hdist@5", "best_hdist@5", "avg_hdist@20", "best_hdist@20"]},
    **{f"hierarchical_{key}": (lambda d, key=key: hierarchical_prf(d["scores"].argmax(1), d["target"], d["tree"])[key])
       for key in ["precision", "recall", "f1"]},
    "ece": lambda d: expected_calibration_error(softmax(d["scores"]), d["target"]),
}


def make_data(tree, seed, n=157):
    rng = np.random.default_rng(seed)
    target = rng.integers(0, tree.num_leaves, n)
    scores = rng.normal(size=(n, tree.num_leaves)) * 2
    scores[np.arange(n), target] += 2.0  # a mix of right and wrong predictions
    level_logits = {k: rng.normal(size=(n, tree.nodes_per_depth[k - 1])) for k in range(1, tree.max_depth)}
    return {"tree": tree, "target": target, "scores": scores, "level_logits": level_logits}


def accumulate(data, sizes=(0, 1, 40, 64), *, as_torch=False):
    acc = EvaluationAccumulator(data["tree"])
    edges = np.cumsum([0, *sizes, len(data["target"])])
    edges = np.minimum(edges, len(data["target"]))
    floats = (lambda x: torch.as_tensor(x, dtype=torch.float32)) if as_torch else np.asarray
    labels = torch.as_tensor if as_torch else np.asarray
    for lo, hi in zip(edges[:-1], edges[1:]):
        acc.update(floats(data["scores"][lo:hi]), labels(data["target"][lo:hi]),
                   {k: floats(v[lo:hi]) for k, v in data["level_logits"].items()})
    return acc


@pytest.fixture(scope="module", params=["appendix_a", "fashion", "unbalanced"])
def batched(request):
    from tests.conftest import appendix_a, unbalanced

    tree = {"appendix_a": appendix_a, "fashion": fashion_tree, "unbalanced": unbalanced}[request.param]()
    data = make_data(tree, seed=len(request.param))
    return data, accumulate(data).compute()


@pytest.mark.parametrize("key", sorted(REFERENCES))
def test_batches_give_the_one_shot_value(batched, key):
    data, result = batched
    assert result[key] == pytest.approx(REFERENCES[key](data), nan_ok=True)


def test_result_is_plain_json_and_keeps_every_sample(batched):
    data, result = batched
    assert result["samples"] == len(data["target"])
    assert sum(result["reliability"]["count"]) == len(data["target"])
    assert {len(column) for column in result["reliability"].values()} == {15}  # a table, one row per bin
    json.loads(json.dumps(result))  # plain types only


def test_torch_input_and_stored_state():
    data = make_data(fashion_tree(), seed=3)
    acc = accumulate(data, as_torch=True)
    reference = accumulate(data).compute()
    got = acc.compute()
    for key in REFERENCES:  # float32 tensors: equal up to float32 rounding
        assert got[key] == pytest.approx(reference[key], rel=1e-5, nan_ok=True)
    assert len(acc) == 157 and acc.topk_pred.shape == (157, 10)  # topk 20 capped at 10 classes
    np.testing.assert_array_equal(acc.target, data["target"])
    np.testing.assert_allclose(acc.confidence, softmax(data["scores"]).max(1), rtol=1e-5)
    acc.reset()
    assert len(acc) == 0


def test_edge_cases_empty_flat_tree_and_large_topk():
    empty = EvaluationAccumulator(fashion_tree()).compute()
    assert empty["samples"] == 0 and np.isnan(empty["top1"]) and np.isnan(empty["ece"])
    assert "superclass_acc_from_levels" not in empty
    acc = EvaluationAccumulator(flat_tree(3), topk=50)
    acc.update(np.array([[3.0, 0.0, 0.0], [0.0, 2.0, 1.0]]), np.array([0, 2]))
    result = acc.compute()
    assert result["superclass_acc"] == {} and result["top1"] == 0.5 and result["top50"] == 1.0
    assert result["mistake_severity"] == 1.0 and result["hierarchical_f1"] == 0.5
    assert acc.topk_pred.shape == (2, 3)


def test_bad_input_is_refused_with_a_message():
    tree = fashion_tree()
    acc = EvaluationAccumulator(tree)
    with pytest.raises(ValueError, match="logits has 9 columns but the hierarchy has 10 classes"):
        acc.update(np.zeros((2, 9)), np.array([0, 1]))
    with pytest.raises(ValueError, match="logits and target hold 2 and 3 samples"):
        acc.update(np.zeros((2, 10)), np.array([0, 1, 2]))
    acc.update(np.zeros((2, 10)), np.array([0, 1]), {1: np.zeros((2, 3))})
    with pytest.raises(ValueError, match=r"level logits for levels None but earlier batches had \[1\]"):
        acc.update(np.zeros((2, 10)), np.array([0, 1]))
    with pytest.raises(ValueError, match="topk must be at least 1"):
        EvaluationAccumulator(tree, topk=0)
