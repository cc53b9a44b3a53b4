"""The public API checks its arguments as the command line checks its options: every function and
constructor of the public surface (``hseval.metrics``, ``hseval.nn.create_head``, the
``Hierarchy`` constructors, ``load_run``, ``read_hierarchy``/``write_hierarchy``), called with a
wrong type or value in any one argument, raises a ``TypeError`` or ``ValueError`` whose one line
names that argument; never an ``AttributeError`` from deep inside, nor a silently wrong result.

Each callable has one valid call; the walk replaces one argument at a time by values of the wrong
kind for it (chosen by the kind of the valid value) and by the wrong values that argument's own
rule refuses."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import hseval
import hseval.metrics as metrics
from hseval.io.run_format import save_run
from hseval.nn import create_head
from hseval.nn.model import build_model
from hseval.tree import Hierarchy
from tests.helpers import appendix_a

TREE = appendix_a()  # fruit -> apple, orange; animal -> cat, dog
N = 4
SCORES = np.array([[2.0, 1.0, 0.0, 0.0], [0.0, 2.0, 1.0, 0.0], [0.0, 0.0, 2.0, 1.0], [1.0, 0.0, 0.0, 2.0]])
PROBS = SCORES / SCORES.sum(axis=1, keepdims=True)
TARGET = np.array([0, 1, 2, 3])
PRED = np.array([0, 1, 3, 2])
TOPK = np.array([[0, 1], [1, 2], [3, 2], [2, 3]])
LEVEL1 = {1: TREE.ancestor_at_depth(TARGET, 1)}
LEVEL1_LOGITS = {1: np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])}


def valid_calls(folder: Path) -> dict[str, tuple[object, dict]]:
    """name -> (callable, keyword arguments of a call that works once :func:`write_files` wrote
    ``folder``'s files)."""
    tree_file, run = folder / "tree.json", folder / "run"
    m = metrics
    calls = {
        "HierarchicalMetrics": (m.HierarchicalMetrics, dict(hierarchy=TREE, topk=(1, 2), n_bins=5, scores="logits",
                                                            sync_on_compute=False)),
        "topk_accuracy": (m.topk_accuracy, dict(scores=SCORES, target=TARGET, k=2)),
        "topk_predictions": (m.topk_predictions, dict(scores=SCORES, k=2)),
        "level_accuracy": (m.level_accuracy, dict(pred_node=LEVEL1[1], target_leaf=TARGET, hierarchy=TREE, depth=1)),
        "superclass_accuracy_from_leaf": (m.superclass_accuracy_from_leaf, dict(pred_leaf=PRED, target=TARGET,
                                                                                hierarchy=TREE)),
        "per_node_accuracy": (m.per_node_accuracy, dict(pred_leaf=PRED, target=TARGET, hierarchy=TREE)),
        "expected_calibration_error": (m.expected_calibration_error, dict(probs=PROBS, target=TARGET, n_bins=5)),
        "reliability_bins": (m.reliability_bins, dict(probs=PROBS, target=TARGET, n_bins=5)),
        "confusion_matrix": (m.confusion_matrix, dict(pred=PRED, target=TARGET, hierarchy=TREE, depth=1)),
        "tree_order": (m.tree_order, dict(hierarchy=TREE)),
        "hierarchical_prf": (m.hierarchical_prf, dict(pred_leaf=PRED, target=TARGET, hierarchy=TREE)),
        "level_predictions_from_leaf": (m.level_predictions_from_leaf, dict(pred_leaf=PRED, hierarchy=TREE, depth=1)),
        "level_predictions_from_logits": (m.level_predictions_from_logits, dict(level_logits=LEVEL1_LOGITS,
                                                                                hierarchy=TREE)),
        "level_prediction_matrix": (m.level_prediction_matrix, dict(levels=LEVEL1, hierarchy=TREE, n=N)),
        "superclass_accuracy_from_levels": (m.superclass_accuracy_from_levels, dict(level_pred=LEVEL1, target=TARGET,
                                                                                    hierarchy=TREE)),
        "level_agreement": (m.level_agreement, dict(level_pred=LEVEL1, pred_leaf=PRED, target=TARGET,
                                                    hierarchy=TREE)),
        "hierarchical_distance": (m.hierarchical_distance, dict(pred=PRED, target=TARGET, hierarchy=TREE)),
        "mistake_severity": (m.mistake_severity, dict(pred_top1=PRED, target=TARGET, hierarchy=TREE)),
        "avg_hierarchical_distance_at_k": (m.avg_hierarchical_distance_at_k, dict(topk_pred=TOPK, target=TARGET,
                                                                                  hierarchy=TREE, k=2)),
        "best_hierarchical_distance_at_k": (m.best_hierarchical_distance_at_k, dict(topk_pred=TOPK, target=TARGET,
                                                                                    hierarchy=TREE, k=2)),
        "mistake_metrics_from_topk": (m.mistake_metrics_from_topk, dict(topk_pred=TOPK, target=TARGET, hierarchy=TREE,
                                                                        ks=(1, 2))),
        "mistake_metrics": (m.mistake_metrics, dict(scores=SCORES, target=TARGET, hierarchy=TREE, ks=(1, 2))),
        "decode": (m.decode, dict(probs=PROBS, tree=TREE, rule_name="threshold:0.5")),
        "node_probabilities": (m.node_probabilities, dict(probs=PROBS, tree=TREE)),
        "HierarchicalMetrics.update": (lambda **kw: m.HierarchicalMetrics(TREE).update(**kw),
                                       dict(logits=SCORES, targets=TARGET, level_scores=LEVEL1_LOGITS)),
        "HierarchicalMetrics.update_labels": (lambda **kw: m.HierarchicalMetrics(TREE).update_labels(**kw),
                                              dict(predictions=PRED, targets=TARGET, level_predictions=LEVEL1)),
        "HierarchicalMetrics.merge": (lambda **kw: m.HierarchicalMetrics(TREE).merge(**kw),
                                      dict(other=m.HierarchicalMetrics(TREE))),
        "create_head": (create_head, dict(name="plain", hierarchy=TREE, in_features=4)),
        "Hierarchy": (Hierarchy, dict(names=["a", "b", "s"], parents=[2, 2, -1], num_leaves=2, root_name="root",
                                      source="mine")),
        "Hierarchy.from_edges": (Hierarchy.from_edges, dict(edges=[("r", "s"), ("s", "a"), ("s", "b")],
                                                            classes=["a", "b"], source="mine")),
        "Hierarchy.from_paths": (Hierarchy.from_paths, dict(paths=[["s", "a"], ["s", "b"]], root_name="root",
                                                            source="mine")),
        "Hierarchy.from_dict": (Hierarchy.from_dict, dict(data=TREE.to_dict())),
        "read_hierarchy": (hseval.read_hierarchy, dict(path=tree_file, format="nbdt", classes=list(TREE.leaf_names))),
        "write_hierarchy": (hseval.write_hierarchy, dict(hierarchy=TREE, path=folder / "out.json", format="nbdt")),
        "load_run": (hseval.load_run, dict(run_dir=run, device="cpu")),
    }
    assert set(metrics.__all__) <= set(calls)  # every public metric is walked
    return calls


def write_files(folder: Path) -> None:
    """The tree file and the run that the valid calls read."""
    hseval.write_hierarchy(TREE, folder / "tree.json")
    spec = {"backbone": {"name": "small-cnn", "config": {"in_channels": 1, "image_size": 28}},
            "head": {"name": "plain", "config": {}}}
    save_run(folder / "run", build_model(spec, TREE), {"dataset": {"name": "x", "class_names": list(TREE.leaf_names)}})


STRANGER = object()
BAD_BY_KIND = {  # the kind of a valid value -> values of the wrong kind
    Hierarchy: ["tree.txt", Path("tree.txt"), None, 5, STRANGER],
    bool: ["yes", 1, None, STRANGER],
    int: [7.5, "3", True, None, STRANGER],
    str: [5, None, STRANGER],
    Path: [5, None, STRANGER],
    np.ndarray: [None, "abc", {}, STRANGER],
    tuple: [5, "12", (1, 2.5), STRANGER],
    list: [5, "abc", STRANGER],
    dict: [[1, 2], "x", 5, STRANGER],
    metrics.HierarchicalMetrics: [TREE, "metrics", None, STRANGER],
}
BAD_VALUES = {  # wrong values that an argument's own rule refuses (beyond its kind)
    "k": [0, -1], "n_bins": [0, -3], "in_features": [0, -1], "topk": [(0, 1)], "ks": [(1, -2)], "n": [-1],
    "depth": [0, 9], "scores": ["softmax"], "name": ["no-such-head"], "format": ["no-such-format"],
    "num_leaves": [0, 99], "parents": [[0.5, 2.0, -1.0], [2, 2]], "edges": [[("r", "s", "t")], [("r",)]],
    "paths": [["s", "a"]], "level_pred": [{"one": LEVEL1[1]}], "levels": [{"one": LEVEL1[1]}],
    "level_logits": [{0: LEVEL1_LOGITS[1]}, {5: LEVEL1_LOGITS[1]}], "classes": [["a", "nope"]],
    "level_scores": [{0: LEVEL1_LOGITS[1]}, {"1": LEVEL1_LOGITS[1]}], "level_predictions": [{"one": LEVEL1[1]}],
    "logits": [SCORES[:, :3], SCORES[:2]], "targets": [TARGET[:2], TARGET + 10],
}
"""(A value that fits the argument but not the rest of the call may be named instead of the argument.)"""
NOT_CHECKED = {("write_hierarchy", "format")}  # None picks the format by the suffix: every str is a choice


def _kind(value: object) -> type:
    for kind in (Hierarchy, bool, int, str, Path, np.ndarray, tuple, list, dict, metrics.HierarchicalMetrics):
        if isinstance(value, kind):
            return kind
    raise AssertionError(f"no wrong values for {type(value).__name__}")


def walk(calls: dict[str, tuple[object, dict]]) -> list[tuple[str, str, object]]:
    cases = []
    for name, (_, kwargs) in calls.items():
        for argument, value in kwargs.items():
            for bad in BAD_BY_KIND[_kind(value)] + BAD_VALUES.get(argument, []):
                if bad is None and argument in ("depth", "format", "classes", "source", "level_scores",
                                                "level_predictions"):
                    continue  # None is a valid choice there
                cases.append((name, argument, bad))
    return cases


@pytest.fixture(scope="module")
def calls(tmp_path_factory) -> dict[str, tuple[object, dict]]:
    folder = tmp_path_factory.mktemp("api")
    write_files(folder)
    return valid_calls(folder)


def test_every_valid_call_works(calls):
    for function, kwargs in calls.values():
        function(**kwargs)


CASES = walk(valid_calls(Path("api")))


@pytest.mark.parametrize("name, argument, bad", CASES, ids=[f"{n}-{a}-{type(b).__name__}:{str(b)[:12]}"
                                                           for n, a, b in CASES])
def test_a_wrong_argument_is_named(calls, name, argument, bad):
    function, kwargs = calls[name]
    with pytest.raises((TypeError, ValueError)) as info:
        function(**{**kwargs, argument: bad})
    message = str(info.value)
    assert "\n" not in message, message
    named = re.search(rf"\b{re.escape(argument)}\b", message) or (
        argument in BAD_VALUES and any(repr(v) in message for v in (bad if isinstance(bad, list) else [bad])))
    assert named or (name, argument) in NOT_CHECKED, f"{name}({argument}={bad!r}): {message}"


def test_the_issues_examples():
    with pytest.raises(TypeError, match=r"HierarchicalMetrics\(\): hierarchy must be a Hierarchy, got str "
                                        r"'tree.txt'; read the file first: hseval.read_hierarchy\('tree.txt'\)"):
        metrics.HierarchicalMetrics("tree.txt")
    with pytest.raises(TypeError, match=r"n_bins must be an integer, got float 7.5"):
        metrics.HierarchicalMetrics(TREE, n_bins=7.5)
