"""``hseval evaluate --predictions``: a model trained elsewhere, evaluated from its saved outputs.

The file is read and checked by :mod:`hseval.io.prediction_format`; its scores (or labels),
embeddings and class vectors go through the same stages as a run's forward pass
(:mod:`hseval.evaluation.stages`) into the same writer, so ``hseval report`` and the dashboard show
it beside hseval's own runs. Each metric the file does not allow is recorded with the reason.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import softmax

from hseval.core import fileio
from hseval.data.sampling import stratified_subset
from hseval.evaluation.stages import (
    Evaluation,
    Scores,
    check_sample_options,
    geometry_stage,
    norm_summary,
    sample_stage,
    scores_stage,
)
from hseval.evaluation.writer import evaluation_folder, folder_name, update_index, write_evaluation
from hseval.io.prediction_format import Predictions, read_class_list, read_predictions
from hseval.metrics.geometry import vectors_from
from hseval.tree import read_hierarchy

__all__ = ["evaluate_predictions"]

MISSING = "the predictions file has no {}"
_BATCH = 8192


def evaluate_predictions(file: str | Path, out_dir: str | Path, *, hierarchy: str | Path,
                         classes: str | Path | None = None, name: str | None = None, dataset: str | None = None,
                         head: str | None = None, scores: str | None = None, projections: list[str] = ("pca",),
                         max_points: int = 5000, seed: int = 0, log=print) -> dict[str, Any]:
    """Evaluate a prediction file (:mod:`hseval.io.prediction_format`: a model trained anywhere) into
    ``out_dir / name``, beside hseval's own runs; returns its index entry.

    Every metric the file allows is computed; each one it does not allow is listed in
    ``metrics.json``'s ``unavailable`` with the reason, which the report and the dashboard show.
    ``scores`` ("logits" or "probs"): what a CSV's ``score_<i>`` columns hold."""
    file, out_dir = Path(file), Path(out_dir)
    source = str(file.resolve())
    name = folder_name(name if name is not None else file.stem, out_dir, source)
    check_sample_options(projections, max_points)
    tree = read_hierarchy(hierarchy)
    preds = read_predictions(file, tree, classes=None if classes is None else read_class_list(classes, tree),
                             scores=scores)
    evaluation = Evaluation(name, source, fileio.json_ready({"sha256": preds.sha256, "hierarchy": tree.to_dict(),
                                                             "projections": list(projections),
                                                             "max_points": max_points, "seed": seed}), tree)
    root = evaluation_folder(out_dir, inputs=[p for p in (file, hierarchy, classes) if p is not None])
    with root:
        log(f"evaluating {file} ({len(preds.targets)} samples; {', '.join(preds.members)}) -> {out_dir / name}")
        scores_stage(evaluation, _scores(preds, tree),
                     no_level_scores=MISSING.format("level_scores_<k> arrays (the model's own super-class scores)"))
        evaluation.describe(head=head or "external", backbone=None, dataset=dataset or "external", split="test",
                            seed=None, source={"kind": "predictions", "path": source, "sha256": preds.sha256,
                                               "format": preds.format, "inputs": preds.members})
        metrics, unavailable = evaluation.metrics, evaluation.metrics["unavailable"]
        if preds.kind == "logits":
            metrics["max_logit"] = {"mean": float(preds.scores.max(axis=1).mean())}
        else:
            unavailable["max_logit"] = "the predictions file gives probabilities, not logits" \
                if preds.kind == "probs" else MISSING.format("scores")
        vectors = vectors_from(tree, class_weights=preds.class_weights, node_weights=preds.node_weights)
        class_vectors = geometry_stage(evaluation, vectors, None, seed=seed,
                                       skipped=MISSING.format("'class_weights' or 'node_weights'"))
        emb = preds.embeddings
        if emb is not None:
            metrics["feature_norm"] = norm_summary(np.linalg.norm(emb, axis=1))
            sample = stratified_subset(preds.targets, max_points, seed=seed)
            emb = emb[sample]
        else:
            unavailable["feature_norm"] = unavailable["projections"] = MISSING.format("'embeddings' (N, d)")
            sample = np.zeros(0, np.int64)
        sample_stage(evaluation, emb, sample, class_vectors, methods=projections, seed=seed)
        entry = write_evaluation(root, evaluation)
        update_index(out_dir, {name: entry})
    log(f"  leaf top-1 {entry['leaf_top1']:.4f} -> {out_dir / name}")
    return entry


def _scores(preds: Predictions, tree) -> Scores:
    """The file's scores (or labels), streamed in batches."""
    scores = Scores(tree, softmax=partial(softmax, axis=1) if preds.kind == "logits" else None)
    if preds.kind == "labels":
        scores.update_labels(preds.predictions, preds.targets)
        return scores
    for lo in range(0, len(preds.targets), _BATCH):
        scores.update(preds.scores[lo: lo + _BATCH], preds.targets[lo: lo + _BATCH],
                      {k: v[lo: lo + _BATCH] for k, v in preds.level_scores.items()} or None)
    return scores
