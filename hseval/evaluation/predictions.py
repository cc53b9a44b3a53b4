"""``hseval evaluate --predictions``: a model trained elsewhere, evaluated from its saved outputs.

The file is read and checked by :mod:`hseval.io.prediction_format`; its scores (or labels),
embeddings and class vectors go through the same stages as a run's forward pass
(:mod:`hseval.evaluation.stages`) into the same writer, so ``hseval report`` and the dashboard show
it beside hseval's own runs. Each metric the file does not allow is recorded with the reason.

The per-sample matrices are read once, in blocks of rows (:func:`_one_pass`), as a run's forward
pass goes over its batches: the memory is that of a few blocks, not of the file. Everything is
computed before the output folder is claimed, so that a damaged row found late writes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from hseval.core import fileio
from hseval.core.sampling import check_split, stratified_subset
from hseval.evaluation.stages import (
    EvaluationContent,
    ScoreAccumulator,
    block_rows,
    check_sample_options,
    geometry_stage,
    norm_summary,
    sample_stage,
    scores_stage,
)
from hseval.evaluation.writer import Index, evaluation_folder, folder_name, one_split, write_evaluation
from hseval.io.data_identity import split_label
from hseval.io.prediction_format import Predictions, read_class_list, read_predictions
from hseval.metrics.decisions import DEFAULT_RULES
from hseval.metrics.decisions import rules as decoding_rules
from hseval.metrics.geometry import vectors_from
from hseval.metrics.nodes import softmax
from hseval.tree import read_hierarchy
from hseval.tree.hierarchy import Hierarchy

__all__ = ["evaluate_predictions"]

MISSING = "the predictions file has no {}"
_BATCH = 8192


def evaluate_predictions(file: str | Path, out_dir: str | Path, *, hierarchy: str | Path | Hierarchy,
                         classes: str | Path | None = None, name: str | None = None, dataset: str | None = None,
                         head: str | None = None, scores: str | None = None, projections: list[str] = ("pca",),
                         max_points: int = 5000, seed: int = 0, rules: tuple[str, ...] = DEFAULT_RULES,
                         split: str = "test", model: dict[str, Any] | None = None, log=print) -> dict[str, Any]:
    """Evaluate a prediction file (:mod:`hseval.io.prediction_format`: a model trained anywhere) into
    ``out_dir / name``, beside hseval's own runs; returns its index entry.

    Every metric the file allows is computed; each one it does not allow is listed in
    ``metrics.json``'s ``unavailable`` with the reason, which the report and the dashboard show.
    ``scores`` ("logits" or "probs"): what a CSV's ``score_<i>`` columns hold; ``rules``: the
    decoding rules of decisions.csv (:mod:`hseval.metrics.decisions`); ``hierarchy``: a tree file,
    or the tree itself (a dataset's); ``split``: the split the file holds; ``model``: what the model
    is (``hseval predict``'s record: its name, weights, preprocessing), kept in metrics.json."""
    file, out_dir = Path(file), Path(out_dir)
    source = str(file.resolve())
    name = folder_name(name if name is not None else file.stem, out_dir, source)
    check_sample_options(projections, max_points)
    check_split(split)
    decoding_rules(rules)  # an unknown rule: refused before any work
    root = evaluation_folder(out_dir, inputs=[p for p in (file, hierarchy, classes) if isinstance(p, (str, Path))],
                             names=[name])
    one_split(out_dir, [split_label(split)])
    tree = hierarchy if isinstance(hierarchy, Hierarchy) else read_hierarchy(hierarchy)
    preds = read_predictions(file, tree, classes=None if classes is None else read_class_list(classes, tree),
                             scores=scores)
    evaluation = EvaluationContent(name, source, fileio.json_ready({"sha256": preds.sha256, "hierarchy": tree.to_dict(),
                                                             "projections": list(projections),
                                                             "max_points": max_points, "seed": seed,
                                                             "rules": list(rules)}), tree)
    log(f"evaluating {file} ({len(preds.targets)} samples; {', '.join(preds.members)}) -> {out_dir / name}")
    sample = stratified_subset(preds.targets, max_points, seed=seed)
    scored, max_logits, feature_norms, embeddings = _one_pass(preds, tree, sample, rules)
    scores_stage(evaluation, scored, indices=np.arange(len(preds.targets)),  # the file's rows
                 no_level_scores=MISSING.format("level_scores_<k> arrays (the model's own super-class scores)"))
    evaluation.describe(head=head or "external", backbone=None, dataset=dataset or "external", split=split,
                        seed=None, source={"kind": "predictions", "path": source, "sha256": preds.sha256,
                                           "format": preds.format, "inputs": preds.members,
                                           **({"model": model} if model else {})})
    metrics, unavailable = evaluation.metrics, evaluation.metrics["unavailable"]
    if preds.kind == "logits":
        metrics["max_logit"] = {"mean": float(max_logits.mean())}
    else:
        unavailable["max_logit"] = "the predictions file gives probabilities, not logits" \
            if preds.kind == "probs" else MISSING.format("scores")
    vectors = vectors_from(tree, class_weights=preds.class_weights, node_weights=preds.node_weights)
    class_vectors = geometry_stage(evaluation, vectors, None, seed=seed,
                                   skipped=MISSING.format("'class_weights' or 'node_weights'"))
    if embeddings is not None:
        metrics["feature_norm"] = norm_summary(feature_norms)
    else:
        unavailable["feature_norm"] = unavailable["projections"] = MISSING.format("'embeddings' (N, d)")
        sample = np.zeros(0, np.int64)
    sample_stage(evaluation, embeddings, sample, class_vectors, methods=projections, seed=seed)
    with root:
        entry = write_evaluation(root, evaluation)
        Index(out_dir, writing=[name]).write({name: entry})
    log(f"  leaf top-1 {entry['leaf_top1']:.4f} -> {out_dir / name}")
    return entry


def _one_pass(preds: Predictions, tree, sample: np.ndarray, rules: tuple[str, ...]
              ) -> tuple[ScoreAccumulator, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """The file's scores (or labels), level scores and embeddings, read together in blocks of rows:
    (the scores' metrics, each row's largest score, the embeddings' norms and the embeddings of the
    sample; None without embeddings)."""
    scores = ScoreAccumulator(tree, softmax=softmax if preds.kind == "logits" else None, rules=rules)
    rows = min(_BATCH, block_rows(tree.num_leaves))
    embeddings = None if preds.embeddings is None else preds.embeddings.blocks(rows)
    if preds.kind == "labels":
        scores.update_labels(preds.predictions, preds.targets)
        blocks = (None for _ in range(0, len(preds.targets), rows))
    else:
        blocks = preds.scores.blocks(rows)
    levels = {k: v.blocks(rows) for k, v in preds.level_scores.items()}
    in_sample = np.zeros(len(preds.targets), dtype=bool)
    in_sample[sample] = True
    max_logits, norms, kept = [], [], []
    for lo, block in zip(range(0, len(preds.targets), rows), blocks):
        if block is not None:
            scores.update(block, preds.targets[lo: lo + len(block)], {k: next(v) for k, v in levels.items()} or None)
            max_logits.append(block.max(axis=1))
        if embeddings is not None:
            emb = next(embeddings)
            norms.append(np.linalg.norm(emb, axis=1))
            kept.append(emb[in_sample[lo: lo + len(emb)]])
    for rest in (blocks, embeddings, *levels.values()):  # to the end, where a damaged archive shows
        for _ in rest or ():
            pass
    return (scores, np.concatenate(max_logits) if max_logits else np.zeros(0),
            None if embeddings is None else np.concatenate(norms), None if embeddings is None else np.concatenate(kept))
