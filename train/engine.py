"""The training loop: ``train_one_epoch``, ``evaluate``, ``load_data`` and ``train`` (the only
place in hseval with a training loop).

Device-agnostic: CPU, one GPU (bf16 autocast, channels_last, the dataset on the GPU when it fits)
or several through ``torchrun`` (DDP; rank 0 writes). A checkpoint of the whole training state is
written atomically after every epoch; ``resume=True`` continues from it and, on CPU with the same
seed, ends with weights bit-identical to an uninterrupted run (data order and augmentation depend
only on the seed and the epoch).
"""

from __future__ import annotations

import contextlib
import math
import random
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from hseval.core.device import resolve_device
from hseval.core.errors import ConfigError, HsevalWarning, RunFormatError, first_line
from hseval.data import LoadedDataset, load_dataset
from hseval.io import run_format as checkpoint
from hseval.io.output import OutputFolder
from hseval.metrics import HierarchicalMetrics
from hseval.nn import radius_guard as logit_scale
from hseval.nn.heads import create_head, head_class, head_options
from hseval.nn.model import HierarchicalClassifier, build_model
from hseval.train import distributed, loader
from hseval.train.config import TrainConfig
from hseval.train.optim import Optimizers, build_optimizers
from hseval.train.run_folder import check_run_folder, resume_state
from hseval.tree import read_hierarchy
from hseval.tree.hierarchy import Hierarchy

__all__ = ["train", "train_one_epoch", "evaluate", "load_data", "head_options_for", "check_before_training"]


class TrainStep(nn.Module):
    """images, labels -> (loss, logits): the unit DDP wraps, so that every head's own loss
    (multitask adds level terms) is part of the synchronised forward."""

    def __init__(self, model: HierarchicalClassifier) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.model.head.loss(self.model.embed(x), y)


@dataclass
class Context:
    """What the loop needs besides the model: device, precision and the process group."""

    device: torch.device
    amp: bool
    channels_last: bool
    rank: int = 0
    world: int = 1

    def autocast(self) -> contextlib.AbstractContextManager:
        if self.amp and self.device.type == "cuda":
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def prepare(self, x: torch.Tensor) -> torch.Tensor:
        return x.contiguous(memory_format=torch.channels_last) if self.channels_last else x


def compiled(step: nn.Module, engine, device: torch.device) -> nn.Module:
    """``step`` under ``torch.compile`` when ``engine.compile`` (with ``engine.cuda_graphs``: mode
    "reduce-overhead", the step replayed as CUDA graphs, on a GPU only); else as it is. The first
    steps pay the compilation (tens of seconds); evaluation stays eager."""
    if not engine.compile:
        return step
    if engine.cuda_graphs and device.type != "cuda":
        raise ConfigError("engine.cuda_graphs=true needs a CUDA device; keep engine.compile=true alone on the CPU")
    return torch.compile(step, mode="reduce-overhead" if engine.cuda_graphs else None)


def head_options_for(head: str, options: dict[str, Any]) -> dict[str, Any]:
    """The subset of ``options`` that head ``head`` accepts (a recipe sets options for all heads)."""
    accepted = head_options(head)
    return {k: v for k, v in options.items() if k in accepted}


def check_head_options(heads: list[str], options: dict[str, Any]) -> None:
    from hseval.nn.heads import list_heads

    known = set().union(*(head_options(h) for h in list_heads()))
    unknown = sorted(set(options) - known)
    if unknown:
        raise ConfigError(f"model.head_options.{unknown[0]} is not an option of any head")
    for head in heads:
        head_class(head)


_PROBE_TREE = Hierarchy(["a", "b", "s"], [2, 2, -1], 2)  # a tiny tree to build a head on before training


def check_before_training(config: TrainConfig, data: LoadedDataset, *, world: int = 1) -> np.ndarray:
    """Everything about ``config`` that can fail, checked before anything is written or trained:
    the device, the head and its options (types and values), the training subset and that an
    epoch has at least one full batch. Returns the indices of the training images."""
    from hseval.nn.backbones import create_backbone

    device = resolve_device(config.engine.device, option="engine.device")
    if config.engine.cuda_graphs and device.type != "cuda":
        raise ConfigError("engine.cuda_graphs=true needs a CUDA device; keep engine.compile=true alone on the CPU")
    check_head_options([config.model.head], config.model.head_options)
    spec = model_spec(config, data)
    with torch.device("meta"):  # the backbone's name and options, without allocating its weights
        create_backbone(spec["backbone"]["name"], **spec["backbone"]["config"])
    create_head(config.model.head, _PROBE_TREE, 2, **spec["head"]["config"])
    indices = loader.stratified_subset(data.train.labels, config.data.train_subset, config.engine.seed)
    if loader.num_train_batches(len(indices), config.data.batch_size, world) == 0:
        per_rank = -(-len(indices) // world)
        who = "each process has" if world > 1 else "there are"
        raise ConfigError(f"data.batch_size={config.data.batch_size} but {who} only {per_rank} training "
                          "images: an epoch would train no step (the last incomplete batch is dropped)"
                          f"; lower data.batch_size to at most {per_rank}")
    if len(data.test) == 0:
        raise ConfigError(f"{data.root}: the test split of {data.name!r} is empty; there is nothing to evaluate on")
    return indices


def load_data(config: TrainConfig, hierarchy_file: str | None = None) -> LoadedDataset:
    """The dataset of ``config`` with, optionally, its tree replaced by a hierarchy file."""
    from hseval.data.base import dataset_options

    path = hierarchy_file or config.data.hierarchy
    if "hierarchy" in dataset_options(config.data.dataset):  # a user's image folders take their tree here
        return load_dataset(config.data.dataset, config.data.root, hierarchy=path)
    data = load_dataset(config.data.dataset, config.data.root)
    if path:
        data.hierarchy = read_hierarchy(path, classes=data.class_names)
    return data


def model_spec(config: TrainConfig, data: LoadedDataset) -> dict[str, Any]:
    backbone = {"in_channels": data.channels, "image_size": data.image_size, "small_stem": config.model.small_stem,
                "embedding_dim": config.model.embedding_dim}
    return {"backbone": {"name": config.model.backbone, "config": backbone},
            "head": {"name": config.model.head, "config": head_options_for(config.model.head,
                                                                            config.model.head_options)}}


def train_one_epoch(step: nn.Module, optimizers: Optimizers, batches, ctx: Context, *, total: int,
                    desc: str, progress: bool) -> dict[str, float]:
    """One pass over ``batches``; returns mean loss, accuracy and images/s (this rank)."""
    from hseval.core.progress import bar as progress_bar

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
def evaluate(model: HierarchicalClassifier, batches, ctx: Context) -> dict[str, Any]:
    """Loss, leaf accuracy and super-class accuracy per depth (the leaf prediction's ancestor)
    over every sample of ``batches``."""
    model.eval()
    metrics = HierarchicalMetrics(model.hierarchy, topk=(1,), sync_on_compute=False)  # rank 0 alone evaluates
    loss_sum, norm_sum = 0.0, 0.0
    for x, y in batches:
        with ctx.autocast():
            z = model.embed(ctx.prepare(x))
            logits = model.head(z).float()
        loss_sum += F.cross_entropy(logits, y, reduction="sum").item()  # the training objective, as training sums it
        norm_sum += torch.linalg.vector_norm(z.float(), dim=1).sum().item()
        metrics.update_labels(logits.argmax(1).cpu(), y.cpu())
    result = metrics.compute()
    n = result["samples"]
    return {"test_loss": loss_sum / n, "test_acc": result["top1"], "test_superclass_acc": result["superclass_acc"],
            "test_samples": n, "feature_norm": norm_sum / n}


def _rng_devices(ctx: Context) -> list[int]:
    """The CUDA devices whose random streams a ``fork_rng`` must save (none on the CPU)."""
    return [ctx.device.index or 0] if ctx.device.type == "cuda" else []


def _class_norm(model: HierarchicalClassifier) -> float | None:
    weights = model.head.class_weights()  # (d, |L|)
    return None if weights is None else float(torch.linalg.vector_norm(weights.detach().float(), dim=0).mean())


def initial_logit_scale(model: HierarchicalClassifier, x: torch.Tensor, ctx: Context) -> dict[str, float]:
    """Mean feature and class-vector norms before the first step, the features as training sees
    them (train mode) on one batch; nothing of the model or the random streams is changed."""
    class_norm = _class_norm(model)
    if class_norm is None:
        return {}
    saved = {name: buffer.clone() for name, buffer in model.named_buffers()}  # batch-norm statistics
    with torch.no_grad(), torch.random.fork_rng(devices=_rng_devices(ctx)), ctx.autocast():
        model.train()
        z = model.embed(ctx.prepare(x)).float()
    with torch.no_grad():
        for name, buffer in model.named_buffers():
            buffer.copy_(saved[name])
    return {"initial_feature_norm": float(torch.linalg.vector_norm(z, dim=1).mean()),
            "initial_class_norm": class_norm}


def check_recipe_backbone(config: TrainConfig) -> None:
    """Warn when a sphere head trains a backbone other than the one its recipe (and so its radius)
    was written for, with the radius left as the recipe set it."""
    from hseval.train.config import load_config

    if not config.recipe or not logit_scale.takes_radius(config.model.head):
        return
    written = load_config(config.recipe).model
    radius = written.head_options.get("radius")
    if written.backbone != config.model.backbone and config.model.head_options.get("radius") == radius:
        warnings.warn(f"recipe {config.recipe} is written for {written.backbone} (radius R0 = {radius}); with "
                      f"backbone {config.model.backbone} check the radius: README, Recipes, gives each backbone's "
                      f"R0 (--set model.head_options.radius=R0)", HsevalWarning, stacklevel=2)


def check_logit_scale(model: HierarchicalClassifier, name: str, *, feature_norm: float | None,
                      class_norm: float | None, when: str, at_start: bool) -> None:
    """The radius guard: warn (one line, the numbers and the fix) when a sphere head's logit
    scale is far outside what its features allow."""
    if feature_norm is None or class_norm is None:
        return
    check = logit_scale.check_scale(head=name, feature_norm=feature_norm, class_norm=class_norm,
                                    classes=model.hierarchy.num_leaves, radius=model.head.config().get("radius"),
                                    at_start=at_start)
    if check is not None and check.verdict:
        warnings.warn(check.message(f"{name}, {when}"), HsevalWarning, stacklevel=2)


def _rng_state() -> dict[str, Any]:
    return {"torch": torch.get_rng_state(), "numpy": np.random.get_state()[1].tolist(),
            "python": list(random.getstate()[1])}


def train(config: TrainConfig, out: str | Path, *, resume: bool = False, force: bool = False,
          data: LoadedDataset | None = None, hierarchy_file: str | None = None,
          log: Callable[[str], None] = print, folder: OutputFolder | None = None) -> Path:
    """Train ``config`` into the run folder ``out`` and return it.

    Everything that can be checked is checked before ``out`` is touched (the folder, the device,
    the data, the head's options, the subset and batch sizes); then ``out`` is claimed as a run
    folder and locked for the whole training, so a second process writing there is refused. A
    run trained anew over an earlier one (``force``) is written beside it and takes its place
    when complete.

    Parameters
    ----------
    config : the recipe with its overrides (:func:`train.config.load_config`).
    out : the run folder to write.
    resume : continue from ``train_state.pt`` (bit-identical to an uninterrupted run).
    force : replace a finished or unfinished run in ``out``.
    data : the dataset, already loaded (``train-all`` loads it once for every run).
    hierarchy_file : a tree that replaces the dataset's own.
    log : where the per-epoch lines go.
    folder : ``out`` already checked by :func:`check_run_folder` (``train-all`` checks every run first).

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
    dist = distributed.setup()
    if dist.rank == 0 and folder is None:
        folder = check_run_folder(out, resume=resume, force=force)
    ctx = Context(device=resolve_device(config.engine.device, dist.local_rank, option="engine.device"),
                  amp=config.engine.amp, channels_last=False, rank=dist.rank, world=dist.world)
    ctx.channels_last = config.engine.channels_last and ctx.device.type == "cuda"
    data = data or load_data(config, hierarchy_file)
    indices = check_before_training(config, data, world=dist.world)
    state = resume_state(out, config) if resume else None
    with folder if dist.rank == 0 else contextlib.nullcontext():  # rank 0 writes; the others only train
        distributed.barrier(dist)
        _train(config, folder.target if dist.rank == 0 else out, data, indices, ctx, dist, state=state, log=log)
    return out


@dataclass
class _Session:
    """What the stages of one training share: the settings, the model and its optimisers, the
    (compiled, DDP-wrapped) step, the data where the device holds it, and the outputs."""

    config: TrainConfig
    out: Path
    data: LoadedDataset
    indices: np.ndarray
    ctx: Context
    dist: Any
    log: Callable[[str], None]
    model: HierarchicalClassifier
    optimizers: Optimizers
    step: nn.Module
    train_images: torch.Tensor | None
    test_images: torch.Tensor | None
    writer: Any


def _train(config: TrainConfig, out: Path, data: LoadedDataset, indices: np.ndarray, ctx: Context, dist, *,
           state: dict[str, Any] | None, log: Callable[[str], None]) -> Path:
    """Setup, resume, one epoch at a time, finish."""
    session, start_epoch, history = _setup(config, out, data, indices, ctx, dist, state=state, log=log)
    initial = _before_training(session) if start_epoch == 0 else {}
    started = time.perf_counter()
    for epoch in range(start_epoch, config.optim.epochs):
        history.append(_epoch(session, epoch, history, extra=initial if epoch == 0 else {},
                              first=epoch == start_epoch))
    _finish(session, history, seconds=time.perf_counter() - started)
    return out


def _setup(config: TrainConfig, out: Path, data: LoadedDataset, indices: np.ndarray, ctx: Context, dist, *,
           state: dict[str, Any] | None, log: Callable[[str], None]) -> tuple[_Session, int, list[dict[str, Any]]]:
    """Seeds, the model and its optimisers (loaded from ``state`` when resuming), the training step
    and the data on the device; returns the session, the first epoch to train and the history so far."""
    if config.engine.threads:
        torch.set_num_threads(config.engine.threads)
    if config.engine.tune_malloc and ctx.device.type == "cpu":
        from hseval.core.perf import tune_malloc

        tune_malloc()
    seed = config.engine.seed
    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)
    model = build_model(model_spec(config, data), data.hierarchy).to(ctx.device)
    if ctx.channels_last:
        model = model.to(memory_format=torch.channels_last)
    optimizers = build_optimizers(model, config.optim)
    start_epoch, history = _resume(model, optimizers, state, out, config, log)
    step: nn.Module = TrainStep(model)
    if dist.world > 1:
        step = nn.parallel.DistributedDataParallel(step, device_ids=[ctx.device.index] if ctx.device.type == "cuda"
                                                   else None)
    step = compiled(step, config.engine, ctx.device)
    train_images = loader.to_device_dataset(data.train, ctx.device, allowed=config.engine.gpu_dataset)
    test_images = loader.to_device_dataset(data.test, ctx.device, allowed=config.engine.gpu_dataset)
    writer = _tensorboard(out, config) if dist.rank == 0 else None
    return _Session(config, out, data, indices, ctx, dist, log, model, optimizers, step, train_images, test_images,
                    writer), start_epoch, history


def _resume(model: HierarchicalClassifier, optimizers: Optimizers, state: dict[str, Any] | None, out: Path,
            config: TrainConfig, log: Callable[[str], None]) -> tuple[int, list[dict[str, Any]]]:
    """The model and optimiser state of ``state`` loaded; (first epoch to train, history so far)."""
    if state is None:
        return 0, []
    try:
        model.load_state_dict(state["model"])
        optimizers.load_state_dict(state["optimizers"])
    except (KeyError, RuntimeError, ValueError, TypeError) as exc:
        raise RunFormatError(f"{out / checkpoint.STATE_FILE}: does not match the model "
                             f"({first_line(exc, limit=200)})") from None
    start_epoch = int(state["epoch"])
    log(f"resuming {out} at epoch {start_epoch + 1}/{config.optim.epochs}")
    return start_epoch, list(state["history"])


def _before_training(s: _Session) -> dict[str, float]:
    """The radius guard's first reading (rank 0, sphere heads): the norms it found, for the first
    epoch's record."""
    if s.dist.rank != 0 or not logit_scale.takes_radius(s.config.model.head):
        return {}
    check_recipe_backbone(s.config)
    with torch.random.fork_rng(devices=_rng_devices(s.ctx)):  # a DataLoader draws its seed from the global stream
        first = next(iter(loader.eval_batches(s.data.test, batch_size=s.config.data.batch_size, device=s.ctx.device,
                                              device_images=s.test_images)))[0]
    initial = initial_logit_scale(s.model, first, s.ctx)
    check_logit_scale(s.model, s.config.model.head, feature_norm=initial.get("initial_feature_norm"),
                      class_norm=initial.get("initial_class_norm"), when="before training", at_start=True)
    return initial


def _epoch(s: _Session, epoch: int, history: list[dict[str, Any]], *, extra: dict[str, Any],
           first: bool) -> dict[str, Any]:
    """Train one epoch, test when due, log, and checkpoint (rank 0); returns the epoch's record."""
    config, ctx, dist = s.config, s.ctx, s.dist
    epochs = config.optim.epochs
    batches = loader.train_batches(s.data.train, s.indices, batch_size=config.data.batch_size, seed=config.engine.seed,
                                   epoch=epoch, device=ctx.device, device_images=s.train_images,
                                   workers=config.data.workers, rank=dist.rank, world=dist.world)
    total = loader.num_train_batches(len(s.indices), config.data.batch_size, dist.world) * \
        config.data.batch_size * dist.world
    record: dict[str, Any] = {"epoch": epoch + 1, "lr": s.optimizers.lr, **extra}
    record.update(train_one_epoch(s.step, s.optimizers, batches, ctx, total=total, progress=config.engine.progress,
                                  desc=f"{config.model.head} epoch {epoch + 1}/{epochs}"))
    s.optimizers.epoch_end()
    if dist.rank == 0 and ((epoch + 1) % config.engine.eval_every == 0 or epoch + 1 == epochs):
        with torch.random.fork_rng(devices=_rng_devices(ctx)):  # eval_every must not change the run
            record.update(evaluate(s.model, loader.eval_batches(s.data.test, batch_size=config.data.eval_batch_size,
                                                                device=ctx.device, device_images=s.test_images,
                                                                workers=config.data.workers), ctx))
    if dist.rank == 0:
        _log_epoch(s.log, config.model.head, record, epochs)
        if first:  # the first epoch this process trains
            check_logit_scale(s.model, config.model.head, feature_norm=record.get("feature_norm"),
                              class_norm=_class_norm(s.model), when=f"after epoch {epoch + 1}", at_start=False)
        if s.writer is not None:
            _tensorboard_epoch(s.writer, record)
        checkpoint.save_train_state(s.out, {"epoch": epoch + 1, "history": [*history, record],
                                            "config": config.to_dict(), "model": s.model.state_dict(),
                                            "optimizers": s.optimizers.state_dict(), "rng": _rng_state()})
        checkpoint.write_history(s.out, [*history, record])
    distributed.barrier(dist)
    return record


def _finish(s: _Session, history: list[dict[str, Any]], *, seconds: float) -> None:
    """Check the DDP ranks agree, then write run.json and the weights (rank 0)."""
    distributed.broadcast_buffers(s.dist, s.model)
    if not distributed.same_on_all_ranks(s.dist, s.model):
        raise RuntimeError("DDP ranks ended with different weights; this is a bug in the training engine")
    if s.dist.rank == 0:
        final = next((h for h in reversed(history) if "test_acc" in h), {})
        meta = {"dataset": s.data.describe(), "training": s.config.to_dict(), "seed": s.config.engine.seed,
                "history": history, "metrics": {k: v for k, v in final.items() if k.startswith("test_")},
                "device": _device_info(s.ctx), "train_seconds": seconds, "train_subset": len(s.indices),
                "world_size": s.dist.world}
        checkpoint.save_run(s.out, s.model, meta)
        if s.writer is not None:
            s.writer.close()
    distributed.barrier(s.dist)


def _log_epoch(log: Callable[[str], None], head: str, record: dict[str, Any], epochs: int) -> None:
    text = (f"{head} epoch {record['epoch']}/{epochs}: loss {record['train_loss']:.4f}, train acc "
            f"{record['train_acc']:.4f}, {record['images_per_s']:.0f} img/s")
    if "test_acc" in record:
        levels = ", ".join(f"L{d} {v:.4f}" for d, v in record["test_superclass_acc"].items())
        text += f"; test acc {record['test_acc']:.4f}" + (f" (super-class {levels})" if levels else "")
    log(text)


def _device_info(ctx: Context) -> dict[str, Any]:
    info = {"device": str(ctx.device), "world_size": ctx.world, "amp_bf16": ctx.amp and ctx.device.type == "cuda",
            "channels_last": ctx.channels_last, "threads": torch.get_num_threads()}
    if ctx.device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(ctx.device)
    return info


def _tensorboard(out: Path, config: TrainConfig):
    if not config.engine.tensorboard:
        return None
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        print("hseval: tensorboard is not installed (pip install 'hseval[tensorboard]'); logging to run.json only")
        return None
    return SummaryWriter(str(out / "tensorboard"))


def _tensorboard_epoch(writer, record: dict[str, Any]) -> None:
    for key, value in record.items():
        if isinstance(value, (int, float)) and key != "epoch":
            writer.add_scalar(key, value, record["epoch"])
        elif isinstance(value, dict):
            for sub, v in value.items():
                writer.add_scalar(f"{key}/depth{sub}", v, record["epoch"])
