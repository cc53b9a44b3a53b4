"""The stages every evaluation goes through, whatever its source (a run's forward pass or a
prediction file): the scores' metrics (:class:`ScoreAccumulator`, then :func:`scores_stage`), the geometry of
the class vectors (:func:`geometry_stage`) and the projections of a sample of embeddings
(:func:`sample_stage`). Each fills in the one :class:`EvaluationContent` that
:mod:`hseval.evaluation.writer` writes; each metric a source cannot give is recorded with the reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from hseval.core.arguments import bounds
from hseval.core.errors import ConfigError
from hseval.evaluation.decisions import Decider, undecided
from hseval.evaluation.projections import check_available, project
from hseval.io import evaluation_format as eval_format
from hseval.io.records import Positive
from hseval.metrics import (
    HierarchicalMetrics,
    _checks,
    geometry,
    level_prediction_matrix,
    level_predictions_from_logits,
    statistics,
)
from hseval.metrics.calibration import sample_scores
from hseval.metrics.crm import CrmMetrics
from hseval.metrics.decisions import DEFAULT_RULES
from hseval.metrics.nodes import NodeBlock
from hseval.metrics.stream_state import NO_LEVEL_SCORES
from hseval.tree.hierarchy import Hierarchy

__all__ = ["KS", "beyond_the_classes", "BLOCK", "probability_metrics", "block_rows", "EvaluationContent",
           "ScoreAccumulator", "check_sample_options", "norm_summary", "scores_stage", "without_probabilities",
           "geometry_stage", "sample_stage"]

KS = (1, 5, 20)
"""The k of the top-k metrics that ``hseval evaluate`` reports, those a tree has (:func:`beyond_the_classes`);
predictions.npz keeps the top min(20, |L|) classes of each sample."""


def beyond_the_classes(tree: Hierarchy) -> dict[str, str]:
    """{metric key: why} for the top-k and distances@k of :data:`KS` that say nothing on ``tree``:
    with k ≥ |L| every class is among the top k, so top-k is 1 for any model (the metrics compute
    it so, as asked); the evaluation leaves them out with this reason."""
    classes = tree.num_leaves
    return {key.format(k=k): f"top-{k} needs more than {k} classes (with {k} or fewer every class is among the top "
                             f"{k}, so it is 1 for any model); this tree has {classes}"
            for k in KS if 1 < k and classes <= k for key in statistics.declared() if "{k}" in key}


BLOCK = 1 << 20
"""Scores go through the metrics in blocks of at most this many values (rows × classes), whatever
the batch: the metrics' temporaries take tens of megabytes at 10 or 100,000 classes alike."""


def block_rows(num_classes: int) -> int:
    """How many rows of scores make a block of at most :data:`BLOCK` values (at least one)."""
    return max(1, BLOCK // num_classes)


_THREADED = 1 << 18  # a block of this many scores or more: CRM's ranking in a thread of its own


def check_recorded_count(option: str, value: int | None) -> None:
    """Refuse, before any work, a count recorded in the evaluation's marker (``--max-points``,
    ``--subset``) that its record would refuse (:data:`hseval.io.records.Positive`)."""
    low, high = bounds(Positive)
    if value is not None and not low <= value <= high:
        raise ConfigError(f"{option} must be a positive integer of at most {high}, got {value}")


def check_sample_options(projections: tuple[str, ...] | list[str], max_points: int) -> None:
    """Refuse, before any work, a sample size the marker cannot record or a projection that cannot run."""
    check_recorded_count("--max-points", max_points)
    for method in projections:
        check_available(method)  # unknown, or its optional package missing: one line


@dataclass
class EvaluationContent:
    """One evaluation as the stages fill it in: metrics.json's content, the tables and the arrays.

    Parameters
    ----------
    name : its folder's name in the evaluation folder.
    source : what was evaluated (a run folder or a prediction file), recorded in its marker.
    inputs : what the result depends on (checksums, settings), recorded in its marker.
    tree : the class tree the scores are read against.
    """

    name: str
    source: str
    inputs: dict[str, Any]
    tree: Hierarchy
    metrics: dict[str, Any] = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    arrays: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)

    def describe(self, *, head: str, backbone: str | None, dataset: str, split: str, seed: int | None,
                 training: dict[str, Any] | None = None, history: list[dict[str, Any]] | None = None,
                 train_seconds: float | None = None, **more: Any) -> None:
        """metrics.json's facts about what was evaluated (after :func:`scores_stage`, whose samples it counts)."""
        self.metrics.update({"run": self.name, "run_path": self.source, "head": head, "backbone": backbone,
                             "dataset": dataset, "split": split, "seed": seed,
                             "samples": int(len(self.arrays[eval_format.PREDICTIONS]["targets"])),
                             "training": {} if training is None else training, "history": history or [],
                             "train_seconds": train_seconds, "hierarchy": self.tree.to_dict(), **more})


def norm_summary(norms: np.ndarray) -> dict[str, float]:
    """Mean, standard deviation and largest of the (N,) norms of feature vectors."""
    return {"mean": float(norms.mean()), "std": float(norms.std()), "max": float(norms.max())}


class ScoreAccumulator:
    """A model's class scores, fed batch by batch: the streamed metrics, CRM's re-ranking, the
    decisions of ``rules`` and the operating curves (:mod:`hseval.metrics.decisions`), and the
    per-sample arrays of predictions.npz (targets, top-k classes, own super-class predictions,
    each rule's node, the depth front, the top-1 confidence and -log p(target) that the ECE and
    the cross-entropy sum). A batch of more than :data:`BLOCK` scores goes through in
    blocks of :func:`block_rows` rows, and what reads the probabilities (CRM, the decisions) in a
    thread beside the metrics for a large block (the results do not depend on it).

    Parameters
    ----------
    tree : the class tree.
    softmax : the probabilities of a batch of logits; None: the scores are probabilities.
    rules : the decoding rules of decisions.csv; none: no decisions and no curves at all.
    """

    def __init__(self, tree: Hierarchy, *, softmax: Callable[[Any], np.ndarray] | None,
                 rules: tuple[str, ...] | list[str] = DEFAULT_RULES) -> None:
        self.tree, self.softmax = tree, softmax
        self.metrics = HierarchicalMetrics(tree, topk=KS, scores="probs" if softmax is None else "logits")
        self.crm = CrmMetrics(tree, topk=KS)
        self.crm_skipped: str | None = None
        self.decisions = Decider(tree, rules)
        self.targets: list[np.ndarray] = []
        self.topk: list[np.ndarray] = []
        self.levels: list[np.ndarray] = []
        self.calibration: list[tuple[np.ndarray, np.ndarray]] = []

    def update(self, scores: Any, targets: np.ndarray, level_scores: dict[int, np.ndarray] | None = None) -> None:
        """A batch: (B, |L|) scores (numpy or torch), (B,) targets and the model's own level scores
        {level: (B, #nodes of that depth)} or None."""
        rows = block_rows(self.tree.num_leaves)
        if len(targets) > rows:
            for lo in range(0, len(targets), rows):
                self.update(scores[lo: lo + rows], targets[lo: lo + rows],
                            None if level_scores is None else {k: v[lo: lo + rows] for k, v in level_scores.items()})
            return
        if len(targets) * self.tree.num_leaves < _THREADED:
            self._add(self.metrics.update(scores, targets, level_scores), targets, level_scores)
            self._probabilities(scores, targets, level_scores)
            return
        with ThreadPoolExecutor(1) as pool:  # beside the metrics: numpy lets go of the GIL, two cores work
            side = pool.submit(self._probabilities, scores, targets, level_scores)
            top = self.metrics.update(scores, targets, level_scores)  # its error, if any, once the side is done
            side.result()
        self._add(top, targets, level_scores)

    def _probabilities(self, scores: Any, targets: np.ndarray, level_scores: dict[int, np.ndarray] | None) -> None:
        """What reads a batch's probabilities: CRM's re-ranking, the decisions and the curves; and
        each sample's confidence and -log p(target), from the scores as the metrics read them (the
        same bits as their sums)."""
        targets = np.asarray(targets, dtype=np.int64)
        self.calibration.append(sample_scores(_checks.to_numpy(scores, "scores", floating=True), targets,
                                              logits=self.softmax is not None))  # checked by the metrics
        probs = np.asarray(scores if self.softmax is None else self.softmax(scores), dtype=np.float64)
        block = NodeBlock(self.decisions.layout, probs)
        self.crm.update(probs, targets, block)
        self.decisions.update(block, targets, level_scores)

    def update_labels(self, predictions: np.ndarray, targets: np.ndarray) -> None:
        """A batch of predicted classes without scores: only the top-1 metrics and the leaf rule,
        no re-ranking."""
        self.metrics.update_labels(predictions, targets)
        self.crm_skipped = "the predictions give one class per sample, no scores to re-rank"
        self.decisions.update_labels(predictions, targets)
        self._add(np.asarray(predictions)[:, None], targets, None)

    def _add(self, topk: np.ndarray, targets: np.ndarray, level_scores: dict[int, np.ndarray] | None) -> None:
        self.topk.append(topk)
        self.targets.append(np.asarray(targets, dtype=np.int64))
        levels = level_predictions_from_logits(level_scores or {}, self.tree)
        self.levels.append(level_prediction_matrix(levels, self.tree, len(targets)))


def scores_stage(evaluation: EvaluationContent, scores: ScoreAccumulator, *, indices: np.ndarray,
                 no_level_scores: str) -> None:
    """The metrics of ``scores`` (``no_level_scores``: why the model has no super-class scores of
    its own, where it has none), per_node.csv and predictions.npz, whose ``indices`` are the
    positions of the scored samples in the split they were drawn from (increasing)."""
    tree, streamed = evaluation.tree, scores.metrics
    metrics = statistics.json_levels(streamed.compute())
    beyond = beyond_the_classes(tree)
    metrics = {k: v for k, v in metrics.items() if k not in beyond}
    metrics["unavailable"] = {**beyond, **{k: no_level_scores if v == NO_LEVEL_SCORES else v
                                           for k, v in metrics["unavailable"].items() if k not in beyond}}
    if scores.crm_skipped is None:
        crm = statistics.json_levels(scores.crm.compute())
        metrics["unavailable"].update({f"crm.{k}": why for k, why in crm.pop("unavailable").items()})
        metrics["crm"] = {k: v for k, v in crm.items() if k not in beyond}
    else:
        metrics["unavailable"]["crm"] = scores.crm_skipped
    evaluation.metrics.update(metrics)
    support, correct = streamed.per_node()
    with np.errstate(invalid="ignore", divide="ignore"):
        evaluation.tables[eval_format.PER_NODE] = pd.DataFrame({
            "node": np.arange(tree.num_nodes), "name": tree.node_names, "depth": tree.depth,
            "parent": [tree.node_names[p] if p >= 0 else tree.root_name for p in tree.parents.tolist()],
            "is_leaf": np.arange(tree.num_nodes) < tree.num_leaves, "support": support, "correct": correct,
            "accuracy": correct / support})
    evaluation.arrays[eval_format.PREDICTIONS] = {"targets": np.concatenate(scores.targets),
                                                  "topk": np.concatenate(scores.topk),
                                                  "levels": np.concatenate(scores.levels),
                                                  "indices": np.asarray(indices, dtype=np.int64),
                                                  **_calibration_arrays(scores.calibration)}
    scores.decisions.write(evaluation, probabilities="given" if scores.softmax is None else "softmax",
                           labels_only=scores.crm_skipped)


def _calibration_arrays(parts: list[tuple[np.ndarray, np.ndarray]]) -> dict[str, np.ndarray]:
    """predictions.npz's ``confidence`` and ``nll`` (N,) float64, empty without scores."""
    return {name: np.concatenate([p[i] for p in parts]) if parts else np.zeros(0)
            for i, name in enumerate(("confidence", "nll"))}


def probability_metrics() -> list[str]:
    """The metrics that read a softmax of the scores as the model's probabilities: those declared
    to need scores (calibration, cross-entropy), and CRM's."""
    return [*(key for key, (metric, _) in statistics.declared().items() if metric.needs == "scores"), "crm"]


def without_probabilities(evaluation: EvaluationContent, why: str) -> None:
    """The metrics of :func:`probability_metrics` marked unavailable (``why``), for scores whose
    softmax is no probability; so are the decisions of every rule but ``leaf`` and the curves."""
    for key in [*probability_metrics(), "operating_curve", "probabilities"]:
        evaluation.metrics.pop(key, None)
        evaluation.metrics["unavailable"][key] = why
    evaluation.arrays[eval_format.PREDICTIONS].update(_calibration_arrays([]))
    undecided(evaluation, why)


def geometry_stage(evaluation: EvaluationContent, vectors: tuple[np.ndarray, str] | None, radii: np.ndarray | None, *,
                   seed: int, skipped: str) -> np.ndarray | None:
    """geometry.csv, pair_angles.csv and their metrics from the node vectors
    (:func:`hseval.metrics.geometry.node_vectors`); without vectors the tables hold their header
    only and the metrics say why (``skipped``). Returns the class vectors (or None)."""
    tree, metrics = evaluation.tree, evaluation.metrics
    if vectors is None:
        evaluation.tables[eval_format.GEOMETRY] = pd.DataFrame(columns=[
            "vectors", "node", "name", "depth", "is_leaf", "parent", "norm", "angle_to_parent", "delta_norm", "radius"])
        evaluation.tables[eval_format.PAIRS] = pd.DataFrame(columns=["depth", "kind", "node_a", "node_b", "angle"])
        metrics["geometry"] = {"skipped": skipped}
        metrics["unavailable"].update({"geometry": skipped, "class_vector_norm": skipped})
        return None
    node_vec, kind = vectors
    table = geometry.parent_child_table(tree, node_vec, radii)
    table.insert(0, "vectors", kind)
    pairs, pair_stats = geometry.pair_angles(tree, node_vec, seed=seed)
    agreement = geometry.tree_agreement(tree, node_vec[: tree.num_leaves])
    evaluation.tables[eval_format.GEOMETRY], evaluation.tables[eval_format.PAIRS] = table, pairs
    metrics["geometry"] = geometry.geometry_summary(tree, table, pair_stats, kind, agreement)
    if agreement.get("skipped"):
        metrics["unavailable"]["geometry.tree_agreement"] = f"no tree agreement: {agreement['skipped']}"
    metrics["class_vector_norm"] = {"mean": float(np.linalg.norm(node_vec[: tree.num_leaves], axis=1).mean())}
    return node_vec


def sample_stage(evaluation: EvaluationContent, embeddings: np.ndarray | None, sample: np.ndarray,
                 class_vectors: np.ndarray | None, *, methods: tuple[str, ...] | list[str], seed: int,
                 threads: int | None = None) -> None:
    """projections.csv and embeddings.npz: the ``embeddings`` of the samples ``sample`` (their
    positions in the evaluated split, from :func:`hseval.core.sampling.stratified_subset`) with their
    labels and predictions, and the class vectors, projected by each of ``methods``. Without
    embeddings (None) the sample is empty, and as wide as the class vectors (the format's rule)."""
    if embeddings is None:
        embeddings = np.zeros((0, 0 if class_vectors is None else class_vectors.shape[1]), np.float32)
    predictions = evaluation.arrays[eval_format.PREDICTIONS]
    labels, predicted = predictions["targets"][sample], predictions["topk"][sample, 0]
    evaluation.tables[eval_format.PROJECTIONS] = _projection_table(
        evaluation.tree, embeddings, labels, predicted, list(methods), class_vectors, seed, indices=sample,
        threads=threads)
    evaluation.arrays[eval_format.EMBEDDINGS] = {
        "embeddings": embeddings.astype(np.float32), "labels": labels, "predictions": predicted, "indices": sample,
        "node_vectors": np.zeros((0, 0), np.float32) if class_vectors is None else class_vectors.astype(np.float32)}


def _level_columns(tree: Hierarchy, nodes: np.ndarray) -> dict[str, list[str]]:
    """The ancestor of each of ``nodes`` at each super-class depth (its own name at its depth)."""
    return {f"level{depth}": [tree.node_names[a] if a >= 0 else "" for a in tree.ancestor_at_depth(nodes, depth)
                              .tolist()] for depth in range(1, tree.max_depth)}


def _projection_table(tree: Hierarchy, emb: np.ndarray, labels: np.ndarray, pred: np.ndarray, methods: list[str],
                      vectors: np.ndarray | None, seed: int, *, indices: np.ndarray,
                      threads: int | None = None) -> pd.DataFrame:
    """projections.csv: one block per method, of the sampled embeddings (labels, predictions, and
    ``indices``, their positions in the evaluated split) and of the class vectors; the header only
    with fewer than 4 samples."""
    if len(emb) < 4 or not methods:
        return pd.DataFrame(columns=["method", "kind", "x", "y", "label", *_level_columns(tree, labels), "correct",
                                     "index"])
    frames = []
    for method in methods:
        xy, cxy = project(emb, method, class_vectors=vectors, seed=seed, threads=threads)
        frames.append(pd.DataFrame({"method": method, "kind": "sample", "x": xy[:, 0], "y": xy[:, 1],
                                    "label": [tree.node_names[i] for i in labels.tolist()],
                                    **_level_columns(tree, labels), "correct": pred == labels,
                                    "index": pd.array(np.asarray(indices, dtype=np.int64), dtype="Int64")}))
        if cxy is not None:  # a super-class vector belongs to its own ancestors
            nodes = np.arange(len(cxy))
            frames.append(pd.DataFrame({"method": method, "kind": "class_vector", "x": cxy[:, 0], "y": cxy[:, 1],
                                        "label": [tree.node_names[i] for i in nodes.tolist()],
                                        **_level_columns(tree, nodes), "correct": np.nan,
                                        "index": pd.array([pd.NA] * len(nodes), dtype="Int64")}))
    return pd.concat(frames, ignore_index=True)
