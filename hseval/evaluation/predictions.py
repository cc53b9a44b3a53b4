"""``hseval evaluate --predictions``: a model trained elsewhere, evaluated from its saved outputs.

The file is read and checked by :mod:`hseval.io.prediction_format`; the metrics stream through
:class:`hseval.metrics.HierarchicalMetrics`, and the evaluation is written by the same stages as a
run's (:mod:`hseval.evaluation.runs`), so ``hseval report`` and the dashboard show it beside hseval's
own runs. Each metric the file does not allow is recorded with the reason.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from hseval.core import fileio
from hseval.core.errors import ConfigError
from hseval.evaluation.runs import (
    KS,
    EvalOptions,
    _evaluated_runs,
    _write_index,
    geometry_tables,
    index_entry,
    per_node_table,
    projection_table,
    write_evaluation,
)
from hseval.io import evaluation_format as eval_format
from hseval.io.output import OutputFolder

__all__ = ["evaluate_predictions"]


def _folder_name(name: str) -> str:
    if not name or name.startswith(".") or "/" in name or "\\" in name or name in ("..", ".") or \
            any(ord(c) < 32 for c in name) or len(name) > 200:
        raise ConfigError(f"--name {name!r} cannot name a folder; use letters, digits, '-', '_' or '.' "
                          "(not first), e.g. --name resnet50-imagenet")
    if name == eval_format.INDEX_FILE:
        raise ConfigError(f"--name {name!r} is the name of the evaluation folder's own index; choose another --name")
    return name


def evaluate_predictions(file: str | Path, out_dir: str | Path, *, hierarchy: str | Path,
                         classes: str | Path | None = None, name: str | None = None, dataset: str | None = None,
                         head: str | None = None, projections: list[str] = ("pca",), max_points: int = 5000,
                         seed: int = 0, log=print) -> dict[str, Any]:
    """Evaluate a prediction file (:mod:`hseval.io.prediction_format`: a model trained anywhere) into
    ``out_dir / name``, beside hseval's own runs; returns its index entry.

    Every metric the file allows is computed; each one it does not allow is listed in
    ``metrics.json``'s ``unavailable`` with the reason, which the report and the dashboard show."""
    from hseval.io.prediction_format import read_class_list, read_predictions
    from hseval.metrics import level_prediction_matrix, level_predictions_from_logits
    from hseval.tree import read_hierarchy

    start = time.perf_counter()
    file, out_dir = Path(file), Path(out_dir)
    name = _folder_name(name if name is not None else file.stem)
    options = EvalOptions(projections=tuple(projections), max_points=max_points, seed=seed)  # checked as evaluate's
    tree = read_hierarchy(hierarchy)
    order = None if classes is None else read_class_list(classes, tree)
    preds = read_predictions(file, tree, classes=order)
    source = str(file.resolve())

    root = OutputFolder(out_dir, "evaluations")
    owner = _evaluated_runs(out_dir).get(name, source)
    if owner != source:
        raise ConfigError(f"{out_dir / name} already holds the evaluation of {owner or 'something else'}; "
                          "choose another --name")
    with root:
        log(f"evaluating {file} ({len(preds.targets)} samples; {', '.join(preds.members)}) -> {out_dir / name}")
        streamed, metrics, unavailable, topk = _scores_stage(preds, tree)
        levels = level_prediction_matrix(level_predictions_from_logits(preds.level_scores, tree), tree,
                                         len(preds.targets))
        tables, embeddings = _vectors_stage(preds, tree, topk[:, 0], metrics, unavailable, options)
        targets = preds.targets
        metrics.update({"unavailable": unavailable, "run": name, "run_path": source, "head": head or "external",
                        "backbone": None, "dataset": dataset or "external", "split": "test",
                        "samples": int(len(targets)), "seed": None, "training": {}, "history": [],
                        "train_seconds": None, "eval_seconds": time.perf_counter() - start,
                        "hierarchy": tree.to_dict(),
                        "source": {"kind": "predictions", "path": source, "sha256": preds.sha256,
                                   "format": preds.format, "inputs": preds.members}})
        write_evaluation(
            root, name, source=source,
            inputs=fileio.json_ready({"sha256": preds.sha256, "hierarchy": tree.to_dict(), "projections":
                                      list(projections), "max_points": max_points, "seed": seed}),
            metrics=metrics, tables={eval_format.PER_NODE: per_node_table(tree, *streamed.per_node()), **tables},
            arrays={eval_format.EMBEDDINGS: embeddings,
                    eval_format.PREDICTIONS: {"targets": targets, "topk": topk, "levels": levels}})
        entry = index_entry(name, metrics)
        _write_index(out_dir, {name: entry})
    log(f"  leaf top-1 {entry['leaf_top1']:.4f} -> {out_dir / name}")
    return entry


MISSING = "the predictions file has no {}"


def _vectors_stage(preds, tree, pred: np.ndarray, metrics: dict[str, Any], unavailable: dict[str, str],
                   options: EvalOptions) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Feature norms, the geometry of the file's class/node vectors and the projections of a
    stratified sample of its embeddings, each where the file allows it (``metrics`` and
    ``unavailable`` are filled in). Returns the tables and the arrays of embeddings.npz."""
    from hseval.evaluation.projections import stratified_sample
    from hseval.metrics import geometry

    targets, emb = preds.targets, preds.embeddings
    if emb is not None:
        norms = np.linalg.norm(emb, axis=1)
        metrics["feature_norm"] = {"mean": float(norms.mean()), "std": float(norms.std()), "max": float(norms.max())}
        sample = stratified_sample(targets, options.max_points, seed=options.seed)
        emb = emb[sample]
    else:
        unavailable["feature_norm"] = unavailable["projections"] = MISSING.format("'embeddings' (N, d)")
        emb, sample = np.zeros((0, 0)), np.zeros(0, np.int64)
    vectors = geometry.vectors_from(tree, class_weights=preds.class_weights, node_weights=preds.node_weights)
    geometry_table, pairs, geometry_metrics = geometry_tables(
        tree, vectors, None, seed=options.seed, skipped=MISSING.format("'class_weights' or 'node_weights'"))
    unavailable.update(geometry_metrics.pop("unavailable", {}))
    metrics.update(geometry_metrics)
    class_vectors = None if vectors is None else vectors[0]
    proj = projection_table(tree, emb, targets[sample], pred[sample], list(options.projections), class_vectors,
                            options.seed, indices=sample)
    node_vectors = np.zeros((0, 0), np.float32) if vectors is None else vectors[0].astype(np.float32)
    return ({eval_format.GEOMETRY: geometry_table, eval_format.PAIRS: pairs, eval_format.PROJECTIONS: proj},
            {"embeddings": emb.astype(np.float32), "labels": targets[sample], "predictions": pred[sample],
             "indices": sample, "node_vectors": node_vectors})


def _scores_stage(preds, tree) -> tuple[Any, dict[str, Any], dict[str, str], np.ndarray]:
    """The metrics of the file's scores (or labels): the accumulator (for its per-node table), the
    metrics, what the file does not allow and why, and the (N, k) top-k predictions."""
    from hseval.metrics import HierarchicalMetrics
    from hseval.metrics.streaming import NO_LEVEL_SCORES

    streamed = HierarchicalMetrics(tree, topk=KS, scores="probs" if preds.kind == "probs" else "logits")
    if preds.kind == "labels":
        streamed.update_labels(preds.predictions, preds.targets)
        topk = preds.predictions[:, None]
    else:
        topk = np.concatenate([
            streamed.update(preds.scores[lo: lo + 8192], preds.targets[lo: lo + 8192],
                            {k: v[lo: lo + 8192] for k, v in preds.level_scores.items()} or None)
            for lo in range(0, len(preds.targets), 8192)])
    metrics: dict[str, Any] = streamed.compute()
    unavailable = {k: MISSING.format("level_scores_<k> arrays (the model's own super-class scores)")
                   if v == NO_LEVEL_SCORES else v for k, v in metrics["unavailable"].items()}
    crm = _crm(preds, tree)
    if isinstance(crm, str):
        unavailable["crm"] = crm
    else:
        metrics["crm"] = crm
    if preds.kind == "logits":
        metrics["max_logit"] = {"mean": float(preds.scores.max(axis=1).mean())}
    else:
        unavailable["max_logit"] = "the predictions file gives probabilities, not logits" \
            if preds.kind == "probs" else MISSING.format("scores")
    return streamed, metrics, unavailable, topk


def _crm(preds, tree) -> dict[str, Any] | str:
    """CRM re-ranking's metrics from the file's scores, or why there are none."""
    from scipy.special import softmax

    from hseval.metrics.crm import CrmMetrics

    if preds.kind == "labels":
        return "the predictions give one class per sample, no scores to re-rank"
    crm = CrmMetrics(tree, topk=KS)
    if crm.skipped:
        return crm.skipped
    for lo in range(0, len(preds.targets), 8192):
        scores = preds.scores[lo: lo + 8192]
        crm.update(softmax(scores, axis=1) if preds.kind == "logits" else scores, preds.targets[lo: lo + 8192])
    return crm.compute()
