"""``hseval evaluate RUN...``: trained runs as a source of evaluations.

Each run is loaded once and its forward pass (:func:`_forward`, under ``torch.inference_mode``)
goes over the whole split once: the class scores feed :class:`~hseval.evaluation.stages.ScoreAccumulator`,
and the embeddings of a stratified sample are kept. Then the stages every source shares
(:mod:`hseval.evaluation.stages`) and the one writer (:mod:`hseval.evaluation.writer`) give, per
run, ``OUT/<run>/`` with ``metrics.json``, ``per_node.csv``, ``geometry.csv``,
``pair_angles.csv``, ``embeddings.npz``, ``projections.csv`` and ``predictions.npz``, and
``OUT/index.json`` listing the evaluated runs.
"""

from __future__ import annotations

import contextlib
import glob
import time
import warnings
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hseval.core import fileio
from hseval.core.arguments import Threads, bounds
from hseval.core.device import resolve_device, torch_threads
from hseval.core.errors import ConfigError, DataError, HsevalWarning, RunFormatError
from hseval.core.perf import available_cores, spare_cores
from hseval.core.progress import bar as progress_bar
from hseval.core.sampling import check_split, stratified_subset
from hseval.data import load_with_tree
from hseval.data.base import DATASETS, check_classes
from hseval.data.sampling import eval_batches
from hseval.evaluation.stages import (
    EvaluationContent,
    ScoreAccumulator,
    check_recorded_count,
    check_sample_options,
    geometry_stage,
    norm_summary,
    sample_stage,
    scores_stage,
    without_probabilities,
)
from hseval.evaluation.writer import (
    Index,
    evaluated_sources,
    evaluation_folder,
    evaluation_names,
    one_split,
    up_to_date,
    write_evaluation,
)
from hseval.io.data_identity import data_changes, data_identity, split_label
from hseval.io.output import OutputFolder
from hseval.io.run_format import META_FILE, Run, is_run_dir, load_run
from hseval.metrics.decisions import DEFAULT_RULES
from hseval.metrics.decisions import rules as decoding_rules
from hseval.metrics.geometry import node_vectors
from hseval.nn import radius_guard

__all__ = ["EvalOptions", "find_runs", "evaluate_runs"]


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


def _dataset_for(run: Run, data_root: str | None, cache: dict):
    """The dataset ``run`` was trained on (``data_root`` overrides where it was), checked to hold
    the run's classes in the run's order."""
    dataset = run.meta.get("dataset") or {}
    name = dataset.get("name")
    if not isinstance(name, str):
        raise RunFormatError(f"{run.path / META_FILE}: no 'dataset.name'; cannot tell which data to evaluate on")
    root = data_root or dataset.get("root")
    key = (name, root, run.hierarchy if "hierarchy" in DATASETS.options(name) else None)  # image folders: the run's
    if key not in cache:
        try:
            cache[key] = load_with_tree(name, root, run.hierarchy)
        except DataError as exc:
            raise DataError(f"{run.path}: its dataset {name!r} is not available: {exc}") from None
    data = cache[key]
    try:
        check_classes(data, run.hierarchy)
    except DataError as exc:
        raise DataError(f"{run.path}: {exc}") from None
    return data


def _split_of(run: Run, data, split: str):
    """The images of ``split`` that ``run`` was trained, validated or tested on, and their content's
    SHA-256: with the validation split it held out of the training split (its ``data.val_fraction``),
    which must be the one it recorded (the same images); a run without a validation split has no "val"."""
    fraction = ((run.meta.get("training") or {}).get("data") or {}).get("val_fraction")
    recorded = (run.meta.get("dataset") or {}).get("validation")
    try:
        data = data.with_validation(fraction)
    except ConfigError as exc:
        raise DataError(f"{run.path}: {exc}") from None
    if split == "val" and recorded is None:
        raise ConfigError(f"{run.path}: the run was trained without a validation split; evaluate it on --split test "
                          "or train, or train it with --set data.val_fraction=F")
    changed = data_changes(run.meta.get("dataset"), data.describe(), derived=False) if split == "val" else []
    if changed:  # held out of other images (the same count of them, maybe): not the run's validation split
        raise DataError(f"{run.path}: --split val: the data under {data.root} is not the data the run was trained "
                        f"on ({_said(changed)}), so its validation images are not the ones the run held out; "
                        "evaluate on the data it was trained on (--data-root)")
    now = data.info.get("validation") or {}
    if recorded is not None and now != recorded:  # also where the run records no content (an older hseval)
        raise DataError(f"{run.path}: the validation split found under {data.root} is not the one the run recorded "
                        f"in run.json ({recorded.get('samples')} images then, {now.get('samples', 'none')} now: the "
                        "data changed); evaluate on the data the run was trained on (--data-root)")
    return data.split(split), data.split_sha256(split)


def _said(changes: list[tuple[str, Any, Any]]) -> str:
    """What changed in the data (:func:`~hseval.io.data_identity.data_changes`), as a clause."""
    def short(value: Any) -> str:
        text = repr(value)
        return text if len(text) <= 40 else text[:37] + "..."

    def one(key: str, then: Any, now: Any) -> str:
        if key == "content_sha256":
            return f"its images or labels changed: SHA-256 {str(then)[:12]}… then, {str(now)[:12]}… now"
        return f"its {key} was {short(then)}, now {short(now)}"

    return "; ".join(one(*change) for change in changes[:2]) + (f"; and {len(changes) - 2} more" if len(changes) > 2
                                                                  else "")


@dataclass(frozen=True)
class EvalOptions:
    """How runs are evaluated: the data, the embedding pass, the sample and its projections.

    Parameters
    ----------
    data_root : where the runs' dataset lies (default: where each was trained from).
    split : "test" or "train".
    subset : evaluate a class-stratified random subset of this many samples of the split (None: all).
    projections : methods of :data:`hseval.evaluation.projections.PROJECTIONS` for the embedding sample.
    max_points : size of the stratified sample of embeddings kept and projected.
    device, batch_size : where and in what batches the embeddings are computed.
    seed : the sample's and the projections' seed.
    progress : draw progress bars.
    rules : the decoding rules of decisions.csv (:mod:`hseval.metrics.decisions`).
    """

    data_root: str | None = None
    split: str = "test"
    subset: int | None = None
    projections: tuple[str, ...] = ("pca",)
    max_points: int = 5000
    device: str = "auto"
    batch_size: int = 512
    seed: int = 0
    progress: bool = True
    rules: tuple[str, ...] = DEFAULT_RULES

    def __post_init__(self) -> None:
        """The options checked once, with the command line's names in the errors."""
        check_sample_options(self.projections, self.max_points)
        check_recorded_count("--subset", self.subset)
        check_split(self.split)
        decoding_rules(self.rules)

    def inputs(self, run: Run, data_sha256: str | None) -> dict[str, Any]:
        """What an evaluation of ``run`` on a split whose images and labels have ``data_sha256``
        depends on: the run's checksums, the split's content (where it lies only for a split that cannot
        tell its content: a copy elsewhere is the same data) and these settings (recorded in its
        marker, so that an evaluation that is up to date can be reused)."""
        return fileio.json_ready({"model_sha256": run.meta.get("model_sha256"),
                                  "meta_sha256": run.meta.get("meta_sha256"), "data_sha256": data_sha256,
                                  "data_root": self.data_root if data_sha256 is None else None,
                                  "split": self.split, "subset": self.subset, "projections": list(self.projections),
                                  "max_points": self.max_points, "seed": self.seed, "rules": list(self.rules)})


@torch.inference_mode()
def _forward(run: Run, split, *, sample: np.ndarray, options: EvalOptions,
             device: torch.device) -> tuple[ScoreAccumulator, np.ndarray, dict[str, Any]]:
    """One pass over ``split``: its scores, the embeddings of ``sample`` and the norms' metrics."""
    model, tree = run.model, run.hierarchy
    scores = ScoreAccumulator(tree, softmax=lambda logits: torch.softmax(logits.double(), dim=1).cpu().numpy(),
                              rules=options.rules)
    in_sample = np.zeros(len(split), dtype=bool)
    in_sample[sample] = True
    kept, feature_norms, max_logits = [], [], []
    bar = progress_bar(total=len(split), desc=f"embed {run.path.name}", unit="img", unit_scale=True, leave=False,
                       enabled=options.progress)
    seen = 0
    workers = min(8, available_cores())  # loader processes: at most the CPUs this process may use
    for x, y in eval_batches(split, batch_size=options.batch_size, device=device, workers=workers):
        z = model.embed(x).float()
        logits = model.head(z).float()
        levels = model.head.level_logits(z)
        levels = None if levels is None else {k: v.float().cpu().numpy() for k, v in levels.items()}
        scores.update(logits, y.cpu().numpy(), levels)
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
    return scores, torch.cat(kept).numpy() if kept else np.zeros((0, 0)), {
        "feature_norm": norm_summary(torch.cat(feature_norms).numpy()),
        "max_logit": {"mean": float(torch.cat(max_logits).mean())}}


def _stages(run: Run, part, root: OutputFolder, *, name: str, inputs: dict[str, Any], options: EvalOptions,
            threads: int, log) -> Callable[[], dict[str, Any]]:
    """The stages of one run on ``part``, its split (:func:`_split_of`), made from ``inputs``
    (:meth:`EvalOptions.inputs`): the forward pass (on the
    device), the metrics and the geometry, done now; the projections (CPU-bound) and the write
    returned as a function, which :func:`evaluate_runs` may run in a worker thread while the next
    run's embeddings are computed."""
    evaluation = EvaluationContent(name, str(run.path), inputs, run.hierarchy)
    device = resolve_device(options.device)
    run.model.to(device, memory_format=torch.channels_last)  # as training tests it: faster convolutions
    indices = stratified_subset(part.labels, options.subset, seed=options.seed, setting="--subset")  # all: 0..N-1
    if options.subset is not None:
        part = part.subset(indices)
    sample = stratified_subset(part.labels, options.max_points, seed=options.seed)
    started = time.perf_counter()
    scores, embeddings, norms = _forward(run, part, sample=sample, options=options, device=device)
    embedded = time.perf_counter()
    head, meta = run.model.head, run.meta
    scores_stage(evaluation, scores, indices=indices,
                 no_level_scores=f"head {run.head_name!r} has no super-class scores of its own (only its class scores)")
    if head.scores != "logits":
        without_probabilities(evaluation, f"head {run.head_name!r} scores the classes by {head.scores}, whose softmax "
                                          "is no probability")
    evaluation.describe(head=run.head_name, backbone=meta["model"]["backbone"]["name"], dataset=meta["dataset"]["name"],
                        split=options.split, seed=meta.get("seed"), training=meta.get("training", {}),
                        radius=meta["model"]["head"]["config"].get("radius"), method=head.about(),
                        initialised_from={k: v for k, v in (meta.get("initialised_from") or {}).items()
                                          if k in ("path", "sha256")} or None,
                        history=meta.get("history", []), train_seconds=meta.get("train_seconds"),
                        trained_on=data_identity(meta["dataset"]), **norms)
    radii = head.radii()
    class_vectors = geometry_stage(evaluation, node_vectors(head), None if radii is None else radii.cpu().numpy(),
                                   seed=options.seed, skipped=f"head {run.head_name!r} has no class vectors")
    for when, scale in radius_guard.check_metrics(evaluation.metrics):
        if scale.verdict:
            warnings.warn(scale.message(f"{name}, {when}"), HsevalWarning, stacklevel=2)

    measured = time.perf_counter()
    log(f"  forward pass {embedded - started:.1f} s ({len(part) / max(embedded - started, 1e-9):,.0f} img/s), "
        f"metrics and geometry {measured - embedded:.1f} s")

    def finish() -> dict[str, Any]:  # projections, then the write
        start = time.perf_counter()
        sample_stage(evaluation, embeddings, sample, class_vectors, methods=options.projections, seed=options.seed,
                     threads=threads)
        entry = write_evaluation(root, evaluation)
        return {**entry, "projected": (", ".join(options.projections) or "none", time.perf_counter() - start)}

    return finish


def evaluate_runs(patterns: list[str], out_dir: str | Path, *, data_root: str | None = None, split: str = "test",
                  subset: int | None = None, projections: list[str] = ("pca",), max_points: int = 5000,
                  device: str = "auto", batch_size: int = 512, progress: bool = True, reuse: bool = False,
                  workers: int | None = None, rules: tuple[str, ...] = DEFAULT_RULES,
                  log=print) -> list[dict[str, Any]]:
    """Evaluate every run matched by ``patterns`` into ``out_dir``; returns the index entries.

    ``workers`` (default: a quarter of the cores, at least 1): threads that compute the
    projections and write the files of finished runs while the next run's embeddings are computed
    (t-SNE and UMAP are CPU-bound, the embedding pass is on the device); with 1 the runs are done
    one after the other. The results do not depend on it.

    ``reuse``: keep an evaluation already in ``out_dir`` that was made from the same run (its
    checksums), on the same images (their content) and with the same settings, instead of computing
    it again (``hseval demo`` continuing).

    Everything that can be checked is checked before the output folder is touched: the
    arguments, the device, the folder and the folder of every run's evaluation (which it may
    replace, only when it holds nothing but what hseval wrote), every run (its files and checksums)
    and its data. Then the folder is claimed (created with its marker, or checked to be an
    evaluation folder) and locked."""
    options = EvalOptions(data_root=data_root, split=split, subset=subset, projections=tuple(projections),
                          max_points=max_points, device=device, batch_size=batch_size, progress=progress,
                          rules=tuple(rules))
    low, high = bounds(Threads)
    if workers is not None and not low <= workers <= high:
        raise ConfigError(f"--workers must be a positive integer of at most {high}, got {workers}")
    resolve_device(device)  # a device this machine lacks: refused before anything is read
    runs = find_runs(patterns)
    out_dir = Path(out_dir)
    names = evaluation_names(runs, evaluated_sources(out_dir))
    root = evaluation_folder(out_dir, inputs=runs, names=names)  # every run's evaluation, before the first is written
    cache: dict = {}
    loaded, splits = {}, []
    for run_dir in runs:  # every run whole (checksums, tensors, model) and its data, before writing anything
        run = load_run(run_dir)
        part, content = _split_of(run, _dataset_for(run, data_root, cache), split)
        loaded[run_dir] = run, part, options.inputs(run, content)
        splits.append(split_label(split, run.meta["dataset"].get("validation")))
        if subset is not None:  # a subset this split cannot give is refused here too
            stratified_subset(part.labels, subset, seed=options.seed, setting="--subset")
    one_split(out_dir, splits)
    entries: dict[str, dict[str, Any]] = {}
    cores = spare_cores()  # the CPUs not busy now: threads beyond them wait on each other
    with root, torch_threads(cores):
        index = Index(out_dir, writing=names)
        threads = workers or max(1, min(len(runs), cores // 4))
        pending: list[tuple[str, Future]] = []

        def done(name: str, entry: dict[str, Any]) -> None:
            methods, seconds = entry.pop("projected")
            entries[name] = entry
            index.write({name: entry})
            log(f"  {name}: projections ({methods}) and files {seconds:.1f} s; leaf top-1 {entry['leaf_top1']:.4f} "
                f"-> {out_dir / name}")

        with ThreadPoolExecutor(threads) if threads > 1 else contextlib.nullcontext() as pool:
            for k, (run_dir, name) in enumerate(zip(runs, names), start=1):
                log(f"[{k}/{len(runs)}] {run_dir}")
                run, part, inputs = loaded.pop(run_dir)  # released once evaluated
                entry = up_to_date(out_dir / name, str(run_dir), inputs) if reuse else None
                if entry is not None:
                    entries[name] = entry
                    log(f"  up to date: {out_dir / name}")
                    continue
                finish = _stages(run, part, root, name=name, inputs=inputs, options=options,
                                 threads=max(1, cores // threads), log=log)
                del run, part
                if pool is None:
                    done(name, finish())
                    continue
                pending.append((name, pool.submit(finish)))
                while pending and pending[0][1].done():  # report finished runs in order
                    finished, future = pending.pop(0)
                    done(finished, future.result())
            for finished, future in pending:
                done(finished, future.result())
        index.write(entries)  # also when every run was up to date
    return list(entries.values())
