"""The metrics' shared tester (as torchmetrics' ``MetricTester``): every metric of
:class:`HierarchicalMetrics` is checked against a reference that shares no code with hseval
(scikit-learn, a brute force over the paths of the tree, or a direct loop), three ways: the
public function on all the samples at once, the class fed uneven batches, and two instances fed
halves and merged. The brute forces here are also used by the per-metric test files.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.metrics import confusion_matrix as sk_confusion_matrix
from sklearn.metrics import log_loss, top_k_accuracy_score

from hseval.metrics import (
    HierarchicalMetrics,
    confusion_matrix,
    expected_calibration_error,
    hierarchical_prf,
    level_agreement,
    level_predictions_from_logits,
    mistake_metrics,
    per_node_accuracy,
    reliability_bins,
    superclass_accuracy_from_leaf,
    superclass_accuracy_from_levels,
    topk_accuracy,
    tree_order,
)
from hseval.metrics.confusion import Pairs, _matrix_compute
from tests.helpers import path

KS = (1, 5, 20)


# ------------------------------------------------------------------ brute forces (no hseval code)
def brute_distance(tree, a, b):
    """Making Better Mistakes' distance by walking the two paths of strict ancestors: H - the length
    of their common prefix (the two full paths' common prefix for any two classes)."""
    if a == b:
        return 0
    pa, pb = path(tree, a)[:-1], path(tree, b)[:-1]
    common = 0
    while common < min(len(pa), len(pb)) and pa[common] == pb[common]:
        common += 1
    return tree.max_depth - common


def brute_prf(pred, target, tree):
    """Micro hierarchical P/R/F1 from ancestor sets."""
    overlap = predicted = true = 0
    for p, t in zip(pred, target):
        y_hat, y = set(path(tree, p)), set(path(tree, t))
        overlap += len(y_hat & y)
        predicted += len(y_hat)
        true += len(y)
    precision, recall = overlap / predicted, overlap / true
    return {"precision": precision, "recall": recall,
            "f1": 2 * precision * recall / (precision + recall) if overlap else 0.0}


def brute_superclass_accuracy(pred, target, tree, depth):
    """Level-``depth`` accuracy of the predicted class's ancestor, over the samples whose class reaches it."""
    hits = [path(tree, p)[depth - 1] == path(tree, t)[depth - 1] if len(path(tree, p)) >= depth else False
            for p, t in zip(pred, target) if len(path(tree, t)) >= depth]
    return np.mean(hits) if hits else np.nan


def brute_per_node(pred, target, tree):
    """(support, correct) of every node by testing, for each sample, whether the node is on its path."""
    support, correct = np.zeros(tree.num_nodes, np.int64), np.zeros(tree.num_nodes, np.int64)
    for p, t in zip(pred, target):
        for depth, node in enumerate(path(tree, t), start=1):
            support[node] += 1
            correct[node] += len(path(tree, p)) >= depth and path(tree, p)[depth - 1] == node
    return support, correct


def loop_ece(probs, target, n_bins):
    """The definition, bin by bin, with bins (lo, hi] and 0 put in the first."""
    confidence, pred = probs.max(1), probs.argmax(1)
    total = 0.0
    for b in range(n_bins):
        lo, hi = b / n_bins, (b + 1) / n_bins
        members = [i for i, c in enumerate(confidence) if lo < c <= hi or (b == 0 and c == 0)]
        if members:
            accuracy = np.mean([pred[i] == target[i] for i in members])
            total += len(members) / len(target) * abs(accuracy - np.mean(confidence[members]))
    return total


def loop_reliability(probs, target, n_bins=15):
    confidence, pred = probs.max(1), probs.argmax(1)
    out = {"lower": [], "upper": [], "count": [], "accuracy": [], "confidence": []}
    for b in range(n_bins):
        members = [i for i, c in enumerate(confidence) if b / n_bins < c <= (b + 1) / n_bins or (b == 0 and c == 0)]
        out["lower"].append(b / n_bins)
        out["upper"].append((b + 1) / n_bins)
        out["count"].append(len(members))
        out["accuracy"].append(np.mean([pred[i] == target[i] for i in members]) if members else np.nan)
        out["confidence"].append(np.mean(confidence[members]) if members else np.nan)
    return out


def stable_topk(scores, k):
    """The k best classes of each row by sorting (−score, class index) in Python: ties to the lower index."""
    return [sorted(range(len(row)), key=lambda j: (-row[j], j))[:k] for row in scores.tolist()]


def softmax(x):
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


# ------------------------------------------------------------------ data, feeding, comparing
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
    """``data``'s samples lo..hi in batches of ``sizes`` (then the rest) into ``metrics``."""
    import torch

    hi = len(data["target"]) if hi is None else hi
    metrics = HierarchicalMetrics(data["tree"], topk=KS) if metrics is None else metrics  # an empty one is falsy
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
    elif isinstance(want, (list, tuple, np.ndarray)):
        np.testing.assert_allclose(np.asarray(got, float), np.asarray(want, float), rtol=1e-12, atol=1e-15)
    else:
        assert got == pytest.approx(want, rel=1e-12, abs=1e-15, nan_ok=True)


# ------------------------------------------------------------------ the metrics: reference, function, stream
def argmax(data):
    return data["scores"].argmax(1)


def _level_nodes(data):
    tree = data["tree"]
    return {k: tree.nodes_at_depth(k)[logits.argmax(1)] for k, logits in data["level_logits"].items()}


def _brute_levels(data, against_prediction):
    """Per level, the share of the samples reaching it whose head-predicted node is the truth's ancestor
    (or, ``against_prediction``, the predicted class's ancestor)."""
    tree, out = data["tree"], {}
    for k, nodes in _level_nodes(data).items():
        rows = [(node, path(tree, t), path(tree, p)) for node, t, p in zip(nodes, data["target"], argmax(data))]
        hits = [node == (pp[k - 1] if len(pp) >= k else -1) if against_prediction else node == pt[k - 1]
                for node, pt, pp in rows if len(pt) >= k]
        out[k] = np.mean(hits) if hits else np.nan
    return out


def _brute_paths(data, consistent):
    """The share of samples whose own level predictions (at the levels the truth, or the predicted
    class for ``consistent``, reaches) are the truth's (and the predicted class is right) or the
    predicted class's ancestors."""
    tree, nodes = data["tree"], _level_nodes(data)
    hits = []
    for i, (t, p) in enumerate(zip(data["target"], argmax(data))):
        along = path(tree, p if consistent else t)
        ok = all(nodes[k][i] == along[k - 1] for k in nodes if len(along) >= k)
        hits.append(ok if consistent else ok and p == t)
    return np.mean(hits) if hits else np.nan


def _sk_topk(data, k):
    if data["ties"]:  # scikit-learn does not say how it breaks ties: the stable sort's top k
        return np.mean([t in row for t, row in zip(data["target"], stable_topk(data["scores"], k))])
    with warnings.catch_warnings():  # sklearn warns that k >= number of classes gives 1
        warnings.simplefilter("ignore")
        return top_k_accuracy_score(data["target"], data["scores"], k=min(k, data["tree"].num_leaves),
                                    labels=range(data["tree"].num_leaves))


def _brute_distances(data, k):
    tree = data["tree"]
    rows = [[brute_distance(tree, p, t) for p in row]
            for t, row in zip(data["target"], stable_topk(data["scores"], min(k, tree.num_leaves)))]
    return np.mean([np.mean(r) for r in rows]), np.mean([min(r) for r in rows])


def _brute_severity(data):
    tree = data["tree"]
    wrong = [brute_distance(tree, p, t) for p, t in zip(argmax(data), data["target"]) if p != t]
    return np.mean(wrong) if wrong else np.nan


def _sk_confusion(data):
    order = tree_order(data["tree"])
    matrix = sk_confusion_matrix(data["target"], argmax(data), labels=range(data["tree"].num_leaves))
    return matrix[np.ix_(order, order)]


def _mistakes(data, key):
    return mistake_metrics(data["scores"], data["target"], data["tree"], ks=KS)[key]


# key -> (reference, the public function on all samples, the streamed value from the fed HierarchicalMetrics)
METRICS = {
    **{f"top{k}": (lambda d, k=k: _sk_topk(d, k), lambda d, k=k: topk_accuracy(d["scores"], d["target"], k), None)
       for k in KS},
    "cross_entropy": (lambda d: log_loss(d["target"], softmax(d["scores"]), labels=range(d["tree"].num_leaves)),
                      None, None),
    "superclass_acc": (
        lambda d: {k: brute_superclass_accuracy(argmax(d), d["target"], d["tree"], k)
                   for k in range(1, d["tree"].max_depth)},
        lambda d: superclass_accuracy_from_leaf(argmax(d), d["target"], d["tree"]), None),
    "superclass_acc_from_levels": (
        lambda d: _brute_levels(d, against_prediction=False),
        lambda d: superclass_accuracy_from_levels(level_predictions_from_logits(d["level_logits"], d["tree"]),
                                                  d["target"], d["tree"]), None),
    "level_agreement": (
        lambda d: _brute_levels(d, against_prediction=True),
        lambda d: level_agreement(level_predictions_from_logits(d["level_logits"], d["tree"]), argmax(d),
                                  d["target"], d["tree"]), None),
    "full_path_accuracy": (lambda d: _brute_paths(d, consistent=False), None, None),
    "consistency": (lambda d: _brute_paths(d, consistent=True), None, None),
    "mistake_severity": (_brute_severity, lambda d: _mistakes(d, "mistake_severity"), None),
    **{f"{kind}_hdist@{k}": (lambda d, k=k, i=i: _brute_distances(d, k)[i],
                             lambda d, key=f"{kind}_hdist@{k}": _mistakes(d, key), None)
       for k in KS for i, kind in enumerate(("avg", "best"))},
    **{f"hierarchical_{key}": (lambda d, key=key: brute_prf(argmax(d), d["target"], d["tree"])[key],
                               lambda d, key=key: hierarchical_prf(argmax(d), d["target"], d["tree"])[key], None)
       for key in ("precision", "recall", "f1")},
    "ece": (lambda d: loop_ece(softmax(d["scores"]), d["target"], 15),
            lambda d: expected_calibration_error(softmax(d["scores"]), d["target"]), None),
    "reliability": (lambda d: loop_reliability(softmax(d["scores"]), d["target"]),
                    lambda d: {k: v.tolist() for k, v in reliability_bins(softmax(d["scores"]), d["target"]).items()},
                    None),
    "per_node": (lambda d: brute_per_node(argmax(d), d["target"], d["tree"]),
                 lambda d: per_node_accuracy(argmax(d), d["target"], d["tree"]), lambda m: m.per_node()),
    "confusion": (_sk_confusion, lambda d: confusion_matrix(argmax(d), d["target"], d["tree"])[0],
                  lambda m: _matrix_compute(Pairs(*m.pairs()), m.hierarchy, None)[0]),
}


def streamed(metrics, key):
    """The value of ``key`` from a fed :class:`HierarchicalMetrics`."""
    read = METRICS[key][2]
    return metrics.compute()[key] if read is None else read(metrics)


def reported(data, key):
    """Whether ``compute`` reports ``key`` for ``data``: every metric asked for (a k ≥ |L| too, as
    "all classes"), but level scores on a tree without super-class levels."""
    if key in ("superclass_acc_from_levels", "level_agreement", "full_path_accuracy", "consistency"):
        return data["tree"].max_depth > 1
    return True


def check_metric(key, data, whole, merged):
    """``key`` of ``data`` equals its reference three ways: the public function on all the samples,
    ``whole`` (the class fed uneven batches) and ``merged`` (two instances fed halves, merged)."""
    reference, function, _ = METRICS[key]
    want = reference(data)
    if function is not None:
        close(function(data), want)
    if not reported(data, key):
        result = whole.compute()
        assert key not in result and key not in result["unavailable"]
        return
    close(streamed(whole, key), want)
    close(streamed(merged, key), want)
