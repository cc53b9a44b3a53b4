"""``hseval evaluate``: metrics, geometry and projections of trained runs, written as files.

Per run, into ``OUT/<run>/``: ``metrics.json``, ``per_node.csv``, ``geometry.csv``,
``pair_angles.csv``, ``embeddings.npz`` (a stratified sample, capped), ``projections.csv`` and
``predictions.npz`` (targets and top-k predictions of every sample, for confusion matrices); and
``OUT/index.json`` listing the evaluated runs. ``OUT`` is an output folder of kind "evaluations"
and each run's folder one of kind "evaluation" (:mod:`hseval.io.output`): staged and renamed into
place when complete, so a reader never sees a partial evaluation. Each run is loaded once;
embeddings are computed once per run, on the whole split, under ``torch.inference_mode``.
"""

from __future__ import annotations

import contextlib
import glob
import os
import time
import warnings
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from hseval.core import fileio
from hseval.core.errors import ConfigError, DataError, HsevalError, HsevalWarning, RunFormatError
from hseval.io import evaluation_format as eval_format
from hseval.io.folders import EvaluationMarker, read_marker
from hseval.io.output import OutputFolder
from hseval.io.run_format import META_FILE, Run, RunInfo, is_run_dir, load_run
from hseval.nn import radius_guard as logit_scale

__all__ = ["EvalOptions", "find_runs", "evaluate_run", "evaluate_runs", "evaluation_names", "EVAL_FILES", "KS",
           "per_node_table", "geometry_tables", "projection_table", "write_evaluation", "index_entry"]

EVAL_FILES = eval_format.FILES
KS = (1, 5, 20)
"""The k of the top-k metrics that ``hseval evaluate`` reports."""


def find_runs(patterns: list[str]) -> list[Path]:
    """Run folders named by ``patterns``: run folders, folders holding runs (searched
    recursively) or glob patterns; in sorted order, without duplicates."""
    found: dict[Path, None] = {}
    for pattern in patterns:
        matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        if not matches:
            raise ConfigError(f"{pattern}: matches no file")
        for match in matches:
            path = Path(match)
            if not path.exists():
                raise RunFormatError(f"{path}: no such run folder")
            if is_run_dir(path):
                found[path.resolve()] = None
            elif path.is_dir():
                for meta in sorted(path.rglob(META_FILE)):
                    if not any(part.startswith(".") for part in meta.relative_to(path).parts):
                        found[meta.parent.resolve()] = None
    if not found:
        raise RunFormatError(f"no runs (folders with run.json) in {', '.join(patterns)}; train some with "
                             "'hseval train-all'")
    return list(found)


def evaluation_names(runs: list[Path], taken: dict[str, str | None] | None = None) -> list[str]:
    """Distinct folder names for ``runs`` (resolved paths): the folder name where it is unique, else
    more of the path (``a__x`` for ``a/x``), else a numbered name (``x-2``).

    ``taken`` maps the names already used in the output folder to the run each evaluated (None:
    not an evaluation, or of an unknown run): a run evaluated there before keeps its name, so
    re-evaluating replaces a run's evaluation, and a name is never reused for another run."""
    from collections import Counter

    taken = dict(taken or {})
    paths = [str(r) for r in runs]
    before = {run: name for name, run in sorted(taken.items()) if run is not None}
    fixed = {before[p] for p in paths if p in before}
    parts = [[p for p in r.parts if p != r.anchor] or [r.name] for r in runs]
    common = Path(os.path.commonpath(paths)) if len(runs) > 1 else None
    # a name may take in the path below the runs' common folder, and at least the parent folder
    limit = [min(len(parts[i]), max(2, len(r.relative_to(common).parts) if common else 0))
             for i, r in enumerate(runs)]
    depth = [1] * len(runs)
    while True:
        names = ["__".join(parts[i][-depth[i]:]) for i in range(len(runs))]
        counts = Counter(names)
        clash = [i for i, n in enumerate(names) if counts[n] > 1 or taken.get(n, paths[i]) != paths[i]]
        grow = [i for i in clash if depth[i] < limit[i]]
        if not grow:
            break
        for i in grow:
            depth[i] += 1
    used = {n for n, run in taken.items() if run not in paths} | fixed
    out = []
    for i, n in enumerate(names):
        if paths[i] in before:
            out.append(before[paths[i]])
            continue
        candidate, k = n, 1
        while candidate in used or taken.get(candidate, paths[i]) != paths[i]:
            k += 1
            candidate = f"{n}-{k}"
        used.add(candidate)
        out.append(candidate)
    return out


def _dataset_for(run: RunInfo, data_root: str | None, cache: dict):
    """The dataset ``run`` was trained on (``data_root`` overrides where it was), checked to hold
    the run's classes in the run's order."""
    from hseval.data import load_dataset
    from hseval.data.base import dataset_options

    dataset = run.meta.get("dataset") or {}
    name = dataset.get("name")
    if not isinstance(name, str):
        raise RunFormatError(f"{run.path / META_FILE}: no 'dataset.name'; cannot tell which data to evaluate on")
    root = data_root or dataset.get("root")
    options = {}
    if "hierarchy" in dataset_options(name):  # image folders: the tree the run carries
        options["hierarchy"] = run.hierarchy
    key = (name, root, tuple(options.items()))
    if key not in cache:
        try:
            cache[key] = load_dataset(name, root, **options)
        except DataError as exc:
            raise DataError(f"{run.path}: its dataset {name!r} is not available: {exc}") from None
    data = cache[key]
    if list(data.class_names) != list(run.hierarchy.leaf_names):
        differ = next((i for i, (a, b) in enumerate(zip(data.class_names, run.hierarchy.leaf_names)) if a != b),
                      min(len(data.class_names), run.hierarchy.num_leaves))
        raise DataError(f"{run.path}: the run's classes do not match the classes of {name!r} found at {data.root} "
                        f"({run.hierarchy.num_leaves} against {len(data.class_names)} classes, first difference at "
                        f"class {differ}); evaluate on the data the run was trained on (--data-root)")
    return data


def _batches(split, batch_size: int, device: torch.device):
    from torch.utils.data import DataLoader

    from hseval.data import TensorImages
    from hseval.data.base import worker_errors

    if isinstance(split, TensorImages):
        labels = torch.as_tensor(split.labels)
        for start in range(0, len(split), batch_size):
            images = split.images[start: start + batch_size].to(device)
            yield split.preprocess(images, train=False), labels[start: start + batch_size]
        return
    loader = DataLoader(split, batch_size=batch_size, shuffle=False, drop_last=False,
                        num_workers=min(8, os.cpu_count() or 1), pin_memory=device.type == "cuda")
    for x, y in worker_errors(loader):
        yield x.to(device, non_blocking=True), y


@torch.inference_mode()
def _extract(run: Run, split, *, sample: np.ndarray, batch_size: int, device: torch.device,
             progress: bool) -> dict[str, Any]:
    from hseval.core.progress import bar as progress_bar
    from hseval.metrics import HierarchicalMetrics, level_prediction_matrix, level_predictions_from_logits
    from hseval.metrics.crm import CrmMetrics

    model = run.model
    tree = run.hierarchy
    metrics = HierarchicalMetrics(tree, topk=KS)
    crm = CrmMetrics(tree, topk=KS)
    in_sample = np.zeros(len(split), dtype=bool)
    in_sample[sample] = True
    kept, feature_norms, max_logits, targets, tops, levels = [], [], [], [], [], []
    bar = progress_bar(total=len(split), desc=f"embed {run.path.name}", unit="img", unit_scale=True, leave=False,
                       enabled=progress)
    seen = 0
    for x, y in _batches(split, batch_size, device):
        z = model.embed(x).float()
        logits = model.head(z).float()
        level_logits = model.head.level_logits(z)
        level_logits = None if level_logits is None else {k: v.float().cpu().numpy() for k, v in level_logits.items()}
        tops.append(metrics.update(logits, y, level_logits))
        if crm.skipped is None:
            crm.update(torch.softmax(logits, dim=1).cpu().numpy(), y)
        levels.append(level_prediction_matrix(level_predictions_from_logits(level_logits or {}, tree), tree, len(y)))
        targets.append(y.cpu().numpy())
        mask = in_sample[seen: seen + len(y)]
        if mask.any():
            kept.append(z[torch.as_tensor(mask, device=z.device)].cpu())
        feature_norms.append(torch.linalg.vector_norm(z, dim=1).cpu())
        max_logits.append(logits.max(1).values.cpu())
        seen += len(y)
        bar.update(len(y))
    bar.close()
    if seen != len(split):
        raise DataError(f"{run.path}: evaluated {seen} samples but the split has {len(split)}")
    norms = torch.cat(feature_norms).numpy()
    return {"metrics": metrics, "crm": crm,
            "embeddings": torch.cat(kept).numpy() if kept else np.zeros((0, 0)),
            "targets": np.concatenate(targets).astype(np.int64), "topk": np.concatenate(tops),
            "levels": np.concatenate(levels) if levels else np.zeros((0, max(tree.max_depth - 1, 0)), np.int64),
            "feature_norm": {"mean": float(norms.mean()), "std": float(norms.std()), "max": float(norms.max())},
            "max_logit": {"mean": float(torch.cat(max_logits).mean())}}


def _level_columns(tree, leaves: np.ndarray) -> dict[str, list[str]]:
    cols = {}
    for depth in range(1, tree.max_depth):
        nodes = tree.ancestor_at_depth(leaves, depth)
        cols[f"level{depth}"] = [tree.node_names[n] if n >= 0 else "" for n in nodes.tolist()]
    return cols


def projection_table(tree, emb: np.ndarray, labels: np.ndarray, pred: np.ndarray, methods: list[str],
                     vectors: np.ndarray | None, seed: int, *, indices: np.ndarray) -> pd.DataFrame:
    """projections.csv: the 2-D projections of the sampled embeddings (labels, predictions, and
    ``indices``, their positions in the evaluated split) and of the class vectors, one block per
    method; the header only with fewer than 4 samples."""
    from hseval.evaluation.projections import project

    if len(indices) != len(labels):
        raise ValueError(f"projection_table: {len(indices)} indices for {len(labels)} samples")
    if len(emb) < 4 or not methods:
        return pd.DataFrame(columns=["method", "kind", "x", "y", "label", *_level_columns(tree, labels), "correct",
                                     "index"])
    frames = []
    for method in methods:
        xy, cxy = project(emb, method, class_vectors=vectors, seed=seed)
        frame = pd.DataFrame({"method": method, "kind": "sample", "x": xy[:, 0], "y": xy[:, 1],
                              "label": [tree.node_names[i] for i in labels.tolist()],
                              **_level_columns(tree, labels), "correct": pred == labels,
                              "index": pd.array(np.asarray(indices, dtype=np.int64), dtype="Int64")})
        frames.append(frame)
        if cxy is not None:
            nodes = np.arange(len(cxy))
            leaf_of = np.where(nodes < tree.num_leaves, nodes, 0)
            cols = _level_columns(tree, leaf_of)
            for depth in range(1, tree.max_depth):  # a super-class vector belongs to its own ancestors
                cols[f"level{depth}"] = [tree.node_names[a] if a >= 0 else "" for a in
                                         tree.ancestor_at_depth(nodes, depth).tolist()]
            frames.append(pd.DataFrame({"method": method, "kind": "class_vector", "x": cxy[:, 0], "y": cxy[:, 1],
                                        "label": [tree.node_names[i] for i in nodes.tolist()], **cols,
                                        "correct": np.nan, "index": pd.array([pd.NA] * len(nodes), dtype="Int64")}))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _inputs(meta: dict[str, Any], options: EvalOptions) -> dict[str, Any]:
    """What an evaluation depends on: the run's checksums and the evaluation's settings (recorded
    in its marker, so that an evaluation that is up to date can be reused)."""
    return fileio.json_ready({"model_sha256": meta.get("model_sha256"), "meta_sha256": meta.get("meta_sha256"),
                              "data_root": options.data_root, "split": options.split,
                              "projections": list(options.projections), "max_points": options.max_points,
                              "seed": options.seed})


def _up_to_date(folder: Path, run_dir: Path, inputs: dict[str, Any]) -> dict[str, Any] | None:
    """The index entry of ``folder`` when it is a readable evaluation of ``run_dir`` with these
    ``inputs``, else None."""
    from hseval.io.results import read_run

    try:
        marker = read_marker(folder, error=RunFormatError)
        if not isinstance(marker, EvaluationMarker) or marker.source != str(run_dir) or marker.inputs != inputs:
            return None
        metrics = read_run(folder).metrics
    except HsevalError:
        return None
    return {**index_entry(folder.name, metrics), "path": str(run_dir)}


def per_node_table(tree, support: np.ndarray, correct: np.ndarray) -> pd.DataFrame:
    """per_node.csv: support, correct and recall of every non-root node."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return pd.DataFrame({"node": np.arange(tree.num_nodes), "name": tree.node_names, "depth": tree.depth,
                             "parent": [tree.node_names[p] if p >= 0 else tree.root_name
                                        for p in tree.parents.tolist()],
                             "is_leaf": np.arange(tree.num_nodes) < tree.num_leaves,
                             "support": support, "correct": correct, "accuracy": correct / support})


def geometry_tables(tree, vectors: tuple[np.ndarray, str] | None, radii: np.ndarray | None, *, seed: int,
                    skipped: str) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """geometry.csv, pair_angles.csv and the metrics they give, from the node vectors
    (:func:`hseval.metrics.geometry.node_vectors`); without vectors the tables hold their header only and
    the metrics say why (``skipped``)."""
    from hseval.metrics import geometry

    if vectors is None:
        table = pd.DataFrame(columns=["vectors", "node", "name", "depth", "is_leaf", "parent", "norm",
                                      "angle_to_parent", "delta_norm", "radius"])
        return table, pd.DataFrame(columns=["depth", "kind", "node_a", "node_b", "angle"]), {
            "geometry": {"skipped": skipped}, "unavailable": {"geometry": skipped, "class_vector_norm": skipped}}
    node_vec, kind = vectors
    table = geometry.parent_child_table(tree, node_vec, radii)
    table.insert(0, "vectors", kind)
    pairs = geometry.pair_angles(tree, node_vec, seed=seed)
    agreement = geometry.tree_agreement(tree, node_vec[: tree.num_leaves])
    return table, pairs, {"geometry": geometry.geometry_summary(tree, table, pairs, kind, agreement),
                          "class_vector_norm": {"mean": float(np.linalg.norm(node_vec[: tree.num_leaves],
                                                                             axis=1).mean())}}


def write_evaluation(root: OutputFolder, name: str, *, source: str, inputs: dict[str, Any], metrics: dict[str, Any],
                     tables: dict[str, pd.DataFrame], arrays: dict[str, dict[str, np.ndarray]]) -> None:
    """Write one evaluation into ``root / name`` (``root``: the evaluation folder this command
    holds) through :mod:`hseval.io.evaluation_format`: staged, then put in place of the earlier
    evaluation of the same ``source`` (a run folder or a predictions file), which is replaced only
    when it holds nothing but what hseval wrote; a reader never sees a partial one."""
    with OutputFolder(root.path / name, "evaluation", replace=True, staged=True, lock=False, parent=root,
                      source=source, inputs=inputs, schema_version=eval_format.SCHEMA_VERSION) as folder:
        eval_format.write_run(folder.target, metrics=metrics, tables=tables, arrays=arrays)


def index_entry(name: str, metrics: dict[str, Any]) -> dict[str, Any]:
    """The line of index.json for one evaluation."""
    return {"run": name, "path": metrics.get("run_path"), "head": metrics["head"], "dataset": metrics["dataset"],
            "backbone": metrics.get("backbone"), "seed": metrics.get("seed"), "split": metrics.get("split"),
            "leaf_top1": metrics["top1"]}


@dataclass(frozen=True)
class EvalOptions:
    """How runs are evaluated: the data, the embedding pass, the sample and its projections.

    Parameters
    ----------
    data_root : where the runs' dataset lies (default: where each was trained from).
    split : "test" or "train".
    projections : methods of :data:`hseval.evaluation.projections.PROJECTIONS` for the embedding sample.
    max_points : size of the stratified sample of embeddings kept and projected.
    device, batch_size : where and in what batches the embeddings are computed.
    seed : the sample's and the projections' seed.
    progress : draw progress bars.
    """

    data_root: str | None = None
    split: str = "test"
    projections: tuple[str, ...] = ("pca",)
    max_points: int = 5000
    device: str = "auto"
    batch_size: int = 512
    seed: int = 0
    progress: bool = True

    def __post_init__(self) -> None:
        """The options checked once, with the command line's names in the errors."""
        from hseval.data.base import check_split
        from hseval.evaluation.projections import check_available

        if self.max_points < 1:
            raise ConfigError(f"--max-points must be a positive integer, got {self.max_points}")
        for method in self.projections:
            check_available(method)  # unknown, or its optional package missing: one line
        check_split(self.split)


def evaluate_run(run_dir: Path, out_dir: Path, *, name: str, options: EvalOptions = EvalOptions(),
                 data_cache: dict | None = None) -> dict[str, Any]:
    """Evaluate one run into ``out_dir / name`` and return its index entry.

    Parameters
    ----------
    run_dir : a run folder (``run.json``, ``model.safetensors``), checked against its checksums.
    out_dir : the evaluation folder; the run's files go to ``out_dir / name``, all at once.
    name : the run's name in the evaluation folder.
    options : see :class:`EvalOptions`.
    data_cache : datasets already loaded, by (name, root), shared between runs.

    Returns
    -------
    The run's entry of ``index.json`` (name, path, head, dataset, leaf top-1).

    Raises
    ------
    RunFormatError, DataError, ConfigError, OwnershipError
        one line naming the file or argument; nothing is written then.
    """
    root = OutputFolder(out_dir, "evaluations")
    run = load_run(run_dir)
    with root:
        entry = _evaluate_run_stages(run, root, name=name, options=options, data_cache=data_cache)()
        _write_index(root.path, {name: entry})
    return entry


def _evaluate_run_stages(run: Run, root: OutputFolder, *, name: str, options: EvalOptions,
                         data_cache: dict | None) -> Callable[[], dict[str, Any]]:
    """The stages of one run: extract (the embedding pass, on the device), metrics and geometry,
    done now; projections (CPU-bound) and the one staged write returned as a function, which
    :func:`evaluate_runs` may run in a worker thread while the next run's embeddings are computed."""
    from hseval.core.device import resolve_device
    from hseval.evaluation.projections import stratified_sample

    start = time.perf_counter()
    torch_device = resolve_device(options.device)
    run.model.to(torch_device)
    data = _dataset_for(run, options.data_root, {} if data_cache is None else data_cache)
    part = data.split(options.split)
    sample = stratified_sample(part.labels, options.max_points, seed=options.seed)
    result = _extract(run, part, sample=sample, batch_size=options.batch_size, device=torch_device,
                      progress=options.progress)
    metrics = _metrics_stage(run, result, name=name, split=options.split)
    tables, class_vectors, node_vectors = _geometry_stage(run, result, metrics, seed=options.seed)
    inputs = _inputs(run.meta, options)
    tree = run.hierarchy
    targets, topk, levels, emb = result["targets"], result["topk"], result["levels"], result["embeddings"]
    del run, result  # the model and the full embeddings are not needed by the rest

    def finish() -> dict[str, Any]:  # projections, then the write
        pred = topk[:, 0]
        proj = projection_table(tree, emb, targets[sample], pred[sample], list(options.projections), class_vectors,
                                options.seed, indices=sample)
        metrics["eval_seconds"] = time.perf_counter() - start
        write_evaluation(
            root, name, source=metrics["run_path"], inputs=inputs, metrics=metrics,
            tables={**tables, eval_format.PROJECTIONS: proj},
            arrays={eval_format.EMBEDDINGS: {"embeddings": emb.astype(np.float32), "labels": targets[sample],
                                             "predictions": pred[sample], "indices": sample,
                                             "node_vectors": node_vectors},
                    eval_format.PREDICTIONS: {"targets": targets, "topk": topk, "levels": levels}})
        return index_entry(name, metrics)

    return finish


def _metrics_stage(run: Run, result: dict[str, Any], *, name: str, split: str) -> dict[str, Any]:
    """metrics.json's content from the embedding pass: the streamed metrics, CRM, the run's facts,
    and the radius guard's warning where it applies."""
    from hseval.metrics.streaming import NO_LEVEL_SCORES

    streamed = result["metrics"]
    metrics: dict[str, Any] = {**streamed.compute(), "feature_norm": result["feature_norm"],
                               "max_logit": result["max_logit"]}
    own = f"head {run.head_name!r} has no super-class scores of its own (only its class scores)"
    metrics["unavailable"] = {k: own if v == NO_LEVEL_SCORES else v for k, v in metrics["unavailable"].items()}
    if result["crm"].skipped is None:
        metrics["crm"] = result["crm"].compute()
    else:
        metrics["unavailable"]["crm"] = result["crm"].skipped
    meta = run.meta
    metrics.update({"run": name, "run_path": str(run.path), "head": run.head_name,
                    "backbone": meta["model"]["backbone"]["name"], "dataset": meta["dataset"]["name"],
                    "split": split, "samples": int(len(result["targets"])), "seed": meta.get("seed"),
                    "training": meta.get("training", {}), "history": meta.get("history", []),
                    "train_seconds": meta.get("train_seconds"), "hierarchy": run.hierarchy.to_dict()})
    return metrics


def _geometry_stage(run: Run, result: dict[str, Any], metrics: dict[str, Any], *,
                    seed: int) -> tuple[dict[str, pd.DataFrame], np.ndarray | None, np.ndarray]:
    """The hyperplanes' geometry (its metrics go into ``metrics``), the per-node table, and the
    class and node vectors; then the radius guard, which reads the class-vector norms."""
    from hseval.metrics import geometry

    tree, head = run.hierarchy, run.model.head
    vectors = geometry.node_vectors(head)
    radii = head.radii()
    geometry_table, pairs, geometry_metrics = geometry_tables(
        tree, vectors, None if radii is None else radii.cpu().numpy(), seed=seed,
        skipped=f"head {run.head_name!r} has no class vectors")
    metrics["unavailable"].update(geometry_metrics.pop("unavailable", {}))
    metrics.update(geometry_metrics)
    for when, scale in logit_scale.check_metrics(metrics):
        if scale.verdict:
            warnings.warn(scale.message(f"{metrics['run']}, {when}"), HsevalWarning, stacklevel=3)
    tables = {eval_format.PER_NODE: per_node_table(tree, *result["metrics"].per_node()),
              eval_format.GEOMETRY: geometry_table, eval_format.PAIRS: pairs}
    class_vectors = None if vectors is None else vectors[0]
    node_vectors = np.zeros((0, 0), np.float32) if vectors is None else vectors[0].astype(np.float32)
    return tables, class_vectors, node_vectors


def _evaluated_runs(out_dir: Path) -> dict[str, str | None]:
    """Name -> the source it evaluated, for every entry of ``out_dir``; None for an entry that is
    not an evaluation hseval wrote (its name is taken, and it is kept)."""
    out: dict[str, str | None] = {}
    for entry in sorted(out_dir.iterdir()) if out_dir.is_dir() else []:
        if entry.name.startswith("."):
            continue
        try:
            marker = read_marker(entry) if entry.is_dir() else None
        except HsevalError:
            marker = None
        out[entry.name] = marker.source if isinstance(marker, EvaluationMarker) else None
    return out


def _write_index(out_dir: Path, entries: dict[str, dict[str, Any]]) -> None:
    """index.json: the runs evaluated in ``out_dir``, rebuilt from its folders (so that no earlier
    entry is lost and none outlives its folder)."""
    previous = {e.get("run"): e for e in eval_format.read_index(out_dir)}
    rows = [entries.get(name) or previous.get(name) or {"run": name, "path": run_path}
            for name, run_path in _evaluated_runs(out_dir).items() if run_path is not None]
    eval_format.write_index(out_dir, rows)


def evaluate_runs(patterns: list[str], out_dir: str | Path, *, data_root: str | None = None, split: str = "test",
                  projections: list[str] = ("pca",), max_points: int = 5000, device: str = "auto",
                  progress: bool = True, reuse: bool = False, workers: int | None = None,
                  log=print) -> list[dict[str, Any]]:
    """Evaluate every run matched by ``patterns`` into ``out_dir``; returns the index entries.

    ``workers`` (default: a quarter of the cores, at least 1): threads that compute the
    projections and write the files of finished runs while the next run's embeddings are computed
    (t-SNE and UMAP are CPU-bound, the embedding pass is on the device); with 1 the runs are done
    one after the other. The results do not depend on it.

    ``reuse``: keep an evaluation already in ``out_dir`` that was made from the same run (its
    checksums) with the same settings, instead of computing it again (``hseval demo`` continuing).

    Everything that can be checked is checked before the output folder is touched: the
    arguments, the device, every run (its files and checksums) and its data. Then the folder is
    claimed (created with its marker, or checked to be an evaluation folder) and locked."""
    from hseval.core.device import resolve_device

    options = EvalOptions(data_root=data_root, split=split, projections=tuple(projections), max_points=max_points,
                          device=device, progress=progress)
    if workers is not None and workers < 1:
        raise ConfigError(f"--workers must be a positive integer, got {workers}")
    if resolve_device(device).type == "cpu":
        from hseval.core.perf import tune_malloc

        tune_malloc()  # the large activations of each batch stay in the heap: 1.6x faster on 2 cores
    runs = find_runs(patterns)
    root = OutputFolder(out_dir, "evaluations")
    cache: dict = {}
    loaded, inputs = {}, {}
    for run_dir in runs:  # every run whole (checksums, tensors, model) and its data, before writing anything
        loaded[run_dir] = load_run(run_dir)
        _dataset_for(loaded[run_dir], data_root, cache)
        inputs[run_dir] = _inputs(loaded[run_dir].meta, options)
    entries: dict[str, dict[str, Any]] = {}
    with root:
        out_dir = Path(out_dir)
        names = evaluation_names(runs, _evaluated_runs(out_dir))
        threads = workers or max(1, min(len(runs), (os.cpu_count() or 1) // 4))
        pending: list[tuple[str, Future]] = []

        def done(name: str, entry: dict[str, Any]) -> None:
            entries[name] = entry
            _write_index(out_dir, entries)
            log(f"  leaf top-1 {entry['leaf_top1']:.4f} -> {out_dir / name}")

        with ThreadPoolExecutor(threads) if threads > 1 else contextlib.nullcontext() as pool:
            for k, (run_dir, name) in enumerate(zip(runs, names), start=1):
                log(f"[{k}/{len(runs)}] {run_dir}")
                run = loaded.pop(run_dir)  # released once evaluated
                entry = _up_to_date(out_dir / name, run_dir, inputs[run_dir]) if reuse else None
                if entry is not None:
                    entries[name] = entry
                    log(f"  up to date: {out_dir / name}")
                    continue
                finish = _evaluate_run_stages(run, root, name=name, options=options, data_cache=cache)
                del run
                if pool is None:
                    done(name, finish())
                    continue
                pending.append((name, pool.submit(finish)))
                while pending and pending[0][1].done():  # report finished runs in order
                    finished, future = pending.pop(0)
                    done(finished, future.result())
            for finished, future in pending:
                done(finished, future.result())
    return list(entries.values())
