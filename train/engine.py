"""The training loop: ``load_data``, ``train_one_epoch``, ``evaluate`` and ``train`` (the only
place in hseval with a training loop); beside it the step and its context (:mod:`.step`), the
checks and the radius guard (:mod:`.checks`), what the epochs share (:mod:`.session`) and what a
training writes (:mod:`.history`).

Device-agnostic: CPU, one GPU (bf16 autocast, channels_last, the dataset on the GPU when it fits)
or several through ``torchrun`` (DDP; rank 0 writes). A checkpoint of the whole training state is
written atomically after every epoch; ``resume=True`` continues from it and, on CPU with the same
seed, ends with weights bit-identical to an uninterrupted run (data order and augmentation depend
only on the seed and the epoch). A probe (``features``) takes the frozen backbone's features from
a file instead of computing them, and otherwise trains as the same frozen run does on the images.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from hseval.core.device import torch_threads
from hseval.core.errors import ConfigError, DataError
from hseval.core.progress import bar as progress_bar
from hseval.data import LoadedDataset, load_with_tree
from hseval.io.output import OutputFolder
from hseval.metrics import HierarchicalMetrics
from hseval.nn.model import HierarchicalClassifier
from hseval.train import distributed, loader
from hseval.train.checks import check_before_training, guard_after_epoch, guard_before_training, head_options_for
from hseval.train.config import TrainConfig
from hseval.train.optim import Optimizers
from hseval.train.probe import Features
from hseval.train.run_folder import Reuse, check_run_folder, resumes, reuse
from hseval.train.session import Session, open_session
from hseval.train.step import Context

__all__ = ["train", "train_one_epoch", "evaluate", "load_data", "data_settings"]

Batches = Iterable[tuple[torch.Tensor, torch.Tensor]]


def data_settings(config: TrainConfig) -> tuple[str, str | None, str | None]:
    """What :func:`load_data` reads of ``config``: runs whose settings are equal train on the same data."""
    return config.data.dataset, config.data.root, config.data.hierarchy


def load_data(config: TrainConfig) -> LoadedDataset:
    """The dataset of ``config`` with, when ``data.hierarchy`` names a file, that tree in place of its own;
    a copy without training images (ImageNet's validation images only) is refused in one line."""
    name, root, path = data_settings(config)
    data = load_with_tree(name, root, path, download=True)
    if len(data.train) == 0:
        why = data.info.get("no_training_images", f"the training split of {data.root} is empty")
        raise DataError(f"data.dataset={name}: nothing to train on: {why}; add the training images, or evaluate a "
                        "model trained elsewhere (hseval import)")
    return data


def train_one_epoch(step: nn.Module, optimizers: Optimizers, batches: Batches, ctx: Context, *, total: int,
                    desc: str, progress: bool) -> dict[str, float]:
    """One pass over ``batches``; returns mean loss, accuracy and images/s (this rank)."""
    step.train()
    loss_sum = torch.zeros((), device=ctx.device, dtype=torch.float64)
    correct = torch.zeros((), device=ctx.device, dtype=torch.int64)
    seen = 0
    start = time.perf_counter()
    bar = progress_bar(total=total, desc=desc, unit="img", unit_scale=True, leave=False,
                       enabled=progress and ctx.rank == 0)
    for i, (x, y) in enumerate(batches):
        with ctx.autocast():
            loss, logits = step(ctx.prepare(x), y)
        optimizers.zero_grad()
        loss.backward()
        optimizers.step()
        loss_sum += loss.detach() * len(y)
        correct += (logits.detach().argmax(1) == y).sum()
        seen += len(y)
        bar.update(len(y) * ctx.world)
        if i % 20 == 0:  # reading the loss synchronises the GPU: not every step
            bar.set_postfix(loss=f"{loss_sum.item() / seen:.3f}", acc=f"{correct.item() / seen:.3f}", refresh=False)
    bar.close()
    elapsed = time.perf_counter() - start
    if not math.isfinite(loss_sum.item()):
        raise ConfigError("the training loss became NaN or infinite; lower optim.lr (hyperbolic heads are "
                          "sensitive to the learning rate and the curvature)")
    return {"train_loss": loss_sum.item() / max(seen, 1), "train_acc": correct.item() / max(seen, 1),
            "images_per_s": seen * ctx.world / elapsed, "seconds": elapsed}


@torch.inference_mode()
def evaluate(model: HierarchicalClassifier, batches: Batches, ctx: Context, *, split: str = "test") -> dict[str, Any]:
    """Loss, leaf accuracy and super-class accuracy per depth (the leaf prediction's ancestor)
    over every sample of ``batches``, keyed ``{split}_loss``, ``{split}_acc`` ..."""
    model.eval()
    metrics = HierarchicalMetrics(model.hierarchy, topk=(1,), sync_on_compute=False)  # rank 0 alone evaluates
    loss_sum, norm_sum = 0.0, 0.0
    for x, y in batches:
        with ctx.autocast():
            z = model.embed(ctx.prepare(x))
            loss, logits = model.head.loss(z, y)  # the training objective (each head's own), as training sums it
        logits = logits.float()
        loss_sum += loss.item() * len(y)
        norm_sum += torch.linalg.vector_norm(z.float(), dim=1).sum().item()
        metrics.update_labels(logits.argmax(1).cpu(), y.cpu())
    result = metrics.compute()
    n = result["samples"]
    return {f"{split}_loss": loss_sum / n, f"{split}_acc": result["top1"],
            f"{split}_superclass_acc": {str(d): v for d, v in result["superclass_acc"].items()},  # as JSON keys levels
            f"{split}_samples": n, "feature_norm": norm_sum / n}


def train(config: TrainConfig, out: str | Path, *, resume: bool = False, force: bool = False,
          data: LoadedDataset | None = None, log: Callable[[str], None] = print,
          folder: OutputFolder | None = None, features: Features | None = None) -> Path:
    """Train ``config`` into the run folder ``out`` and return it.

    Everything that can be checked is checked before ``out`` is touched (the folder, the device,
    the data, the head's options, the subset and batch sizes); then ``out`` is claimed as a run
    folder and locked for the whole training, so a second process writing there is refused. A
    run trained anew over an earlier one (``force``) is written beside it and takes its place
    when complete. ``engine.threads`` sets torch's CPU threads for the training only.

    Parameters
    ----------
    config : the recipe with its overrides (:func:`hseval.train.config.load_config`).
    out : the run folder to write.
    resume : continue from ``train_state.pt`` (bit-identical to an uninterrupted run), a run whose
        every input is this training's (:func:`~hseval.train.run_folder.reuse`); a finished run asked
        for more epochs is extended where its schedule allows.
    force : replace a finished or unfinished run in ``out``; with ``resume``, an unfinished run is
        continued and a finished one trained again (:func:`~hseval.train.run_folder.resumes`).
    data : the dataset of ``config``, already loaded (``train-all`` loads it once per data setting).
    log : where the per-epoch lines go.
    folder : ``out`` already checked by :func:`check_run_folder` (``train-all`` checks every run first).
    features : a probe's cached backbone features (:mod:`hseval.train.probe`), which the training
        takes instead of computing them (``model.freeze_backbone`` and no ``data.augment``).

    Returns
    -------
    ``out`` as a Path, holding ``run.json``, ``model.safetensors``, ``train_state.pt`` and
    ``history.csv``.

    Raises
    ------
    ConfigError, DataError, RunFormatError
        one line naming the setting, file or folder, before anything is written.
    """
    out = Path(out)
    config, _ = head_options_for(config)  # what the head takes is what it is built with and what run.json records
    dist = distributed.setup()
    writes = dist.rank == 0  # the other ranks only train
    resume = resumes(out, resume=resume, force=force)
    if writes and folder is None:
        folder = check_run_folder(out, resume=resume, force=force)
    ctx = Context.create(config.engine, dist)
    data = loader.run_data(data or load_data(config), config)
    indices = check_before_training(config, data, world=dist.world)
    found = _resumed(out, config, data) if resume else None
    with folder if writes else contextlib.nullcontext(), torch_threads(config.engine.threads):
        distributed.barrier(dist)
        s = open_session(config, folder.target if writes else out, data, indices, ctx, dist, log=log,
                         state=found.state if found else None, segments=found.segments if found else None,
                         features=features)
        initial = guard_before_training(config, s.trained, lambda: _first_training_batch(s), ctx) \
            if writes and s.start_epoch == 0 else {}
        started = time.perf_counter()
        for epoch in range(s.start_epoch, config.optim.epochs):
            _epoch(s, epoch, extra=initial if epoch == 0 else {})
        _finish(s, seconds=time.perf_counter() - started)
    return out


def _resumed(out: Path, config: TrainConfig, data: LoadedDataset) -> Reuse:
    """What ``--resume`` continues in ``out`` (:func:`reuse`), or one line saying why it cannot."""
    found = reuse(out, config, lambda: data)
    if found.action == "keep":
        raise ConfigError(f"{out}: the run is already finished with these settings; nothing to resume (use --force "
                          f"to retrain, or --set optim.epochs=N with N > {config.optim.epochs} to extend it)")
    if found.action == "stale":
        raise ConfigError(found.refusal(out, again="train it anew with --force (without --resume)"))
    return found


def _epoch(s: Session, epoch: int, *, extra: dict[str, Any]) -> None:
    """Train one epoch, test when due, and record it (rank 0: the log, the checkpoint)."""
    config, ctx, dist = s.config, s.ctx, s.dist
    epochs, batch_size = config.optim.epochs, config.data.batch_size
    if s.features is None:
        batches = loader.train_batches(s.data.train, s.indices, batch_size=batch_size, seed=config.engine.seed,
                                       epoch=epoch, device=ctx.device, device_images=s.train_images,
                                       workers=config.data.workers, rank=dist.rank, world=dist.world)
    else:
        batches = s.features.train_batches(s.indices, batch_size=batch_size, seed=config.engine.seed, epoch=epoch,
                                           device=ctx.device, rank=dist.rank, world=dist.world)
    total = loader.num_train_batches(len(s.indices), batch_size, dist.world) * batch_size * dist.world
    record: dict[str, Any] = {"epoch": epoch + 1, "lr": s.optimizers.lr, **extra}
    record.update(train_one_epoch(s.step, s.optimizers, batches, ctx, total=total, progress=config.engine.progress,
                                  desc=f"{config.model.head} epoch {epoch + 1}/{epochs}"))
    s.optimizers.epoch_end()
    if ctx.rank == 0 and ((epoch + 1) % config.engine.eval_every == 0 or epoch + 1 == epochs):
        with ctx.fork_rng():  # eval_every must not change the run
            record.update(evaluate(s.trained, _test_batches(s, config.data.eval_batch_size,
                                                            workers=config.data.workers), ctx, split=s.held))
    s.history.append(record)
    if s.writer is not None:
        s.writer.epoch(s.history, s.model, s.optimizers)
        if epoch == s.start_epoch or epoch + 1 == epochs:  # the first epoch this process trains, and the last
            guard_after_epoch(s.model, config.model.head, record, last=epoch + 1 == epochs)
    distributed.barrier(dist)


def _test_batches(s: Session, batch_size: int, *, workers: int) -> Batches:
    """Every sample of the split tested after each epoch (validation, else test), in order: images,
    or a probe's cached features."""
    if s.features is not None:
        return s.features.eval_batches(s.held, batch_size=batch_size, device=s.ctx.device)
    return loader.eval_batches(s.data.split(s.held), batch_size=batch_size, device=s.ctx.device,
                               device_images=s.held_images, workers=workers)


def _first_training_batch(s: Session) -> torch.Tensor:
    """The first ``data.batch_size`` inputs of the training split in its order, whatever the subsets
    (a probe's: their features), for the radius guard's reading before the first step."""
    size, device = s.config.data.batch_size, s.ctx.device
    if s.features is not None:
        return next(s.features.eval_batches("train", batch_size=size, device=device))[0]
    return next(iter(loader.eval_batches(s.data.train, batch_size=size, device=device, workers=0)))[0]


def _finish(s: Session, *, seconds: float) -> None:
    """Check the DDP ranks agree, then write run.json and the weights (rank 0)."""
    distributed.broadcast_buffers(s.dist, s.model)
    if not distributed.same_on_all_ranks(s.dist, s.model):
        raise RuntimeError("DDP ranks ended with different weights; this is a bug in the training engine")
    if s.writer is not None:
        final = next((h for h in reversed(s.history) if f"{s.held}_acc" in h), {})
        s.writer.finish(s.model, {
            "dataset": s.data.describe(), "training": s.config.model_dump(), "seed": s.config.engine.seed,
            "history": s.history, "metrics": {k: v for k, v in final.items() if k.startswith(f"{s.held}_")},
            "device": s.ctx.describe(), "train_seconds": seconds, "train_subset": len(s.indices),
            "world_size": s.dist.world})
    distributed.barrier(s.dist)
