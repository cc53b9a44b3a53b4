"""What the epochs of one training share (:class:`Session`): the model and its optimisers, seeded
(its backbone loaded from ``model.init`` and frozen when asked: :func:`initial_model`) or loaded
from the training state when resuming, the (DDP-wrapped, compiled) step, the data where the device
holds it or the cached features a probe trains on, the history so far and the writer of the
outputs."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from hseval.core import fileio
from hseval.core.errors import RunFormatError, first_line
from hseval.data import LoadedDataset
from hseval.io import run_format
from hseval.nn.model import HierarchicalClassifier, build_model
from hseval.train import loader
from hseval.train.config import TrainConfig
from hseval.train.distributed import Dist
from hseval.train.history import RunWriter
from hseval.train.optim import Optimizers, build_optimizers
from hseval.train.pretrained import load_init
from hseval.train.probe import Features, FeatureView, feature_identity
from hseval.train.step import Context, TrainStep, compiled, model_spec

__all__ = ["Session", "open_session", "initial_model"]


@dataclass
class Session:
    config: TrainConfig
    data: LoadedDataset
    indices: np.ndarray  # the training images
    ctx: Context
    dist: Dist
    model: HierarchicalClassifier
    optimizers: Optimizers
    step: nn.Module
    train_images: torch.Tensor | None  # the split on the device, when it holds it
    held_images: torch.Tensor | None  # the split tested on after each epoch (validation, else test)
    start_epoch: int  # the first epoch this process trains
    history: list[dict[str, Any]]
    writer: RunWriter | None  # rank 0 writes, the other ranks only train
    features: Features | None = None  # a probe's cached body features, which replace the images

    @property
    def held(self) -> str:
        return loader.held_split(self.data)

    @property
    def trained(self) -> nn.Module:
        """What the step and the tests run: the model, or its view from cached features."""
        return self.model if self.features is None else FeatureView(self.model)


def initial_model(config: TrainConfig, data: LoadedDataset, *, init: bool = True
                  ) -> tuple[HierarchicalClassifier, dict[str, Any] | None]:
    """The model a training starts from, on the CPU: seeded and built, its backbone loaded from
    ``model.init`` (unless ``init`` is False: a resumed run loads its own state) and frozen when
    ``model.freeze_backbone``; and what run.json records of the file."""
    seed = config.engine.seed
    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)
    model = build_model(model_spec(config, data), data.hierarchy)
    loaded = load_init(config.model, model.backbone) if config.model.init and init else None
    if config.model.freeze_backbone:
        model.backbone.freeze()
    return model, loaded


def open_session(config: TrainConfig, out: Path, data: LoadedDataset, indices: np.ndarray, ctx: Context, dist: Dist, *,
                 state: dict[str, Any] | None, log: Callable[[str], None], features: Features | None = None,
                 segments: list[int] | None = None) -> Session:
    """Seeds, the model and its optimisers (loaded from ``state`` when resuming: a state whose inputs
    are this training's, :func:`~hseval.train.run_folder.reuse`), the training step and the data on
    the device (a probe: its ``features`` instead). ``segments``: the epoch counts of the finished
    trainings this one extends."""
    frozen = config.model.freeze_backbone  # a frozen body is rebuilt on resuming, not read from the state
    model, loaded = initial_model(config, data, init=state is None or frozen)
    sources = {"initialised_from": loaded} if loaded else {}
    if features is not None:
        if feature_identity(model, data, config, ctx).key != features.key:
            raise RuntimeError(f"{features.path}: not the features of this run's backbone; this is a bug in hseval")
        sources["features"] = features.record()
    model = ctx.place(model)
    optimizers = build_optimizers(model, config.optim)
    start_epoch, history = 0, []
    if state is not None:
        try:
            keys = model.load_state_dict(state["model"], strict=not frozen)
            if frozen and (keys.unexpected_keys or any(not k.startswith("backbone.body.") for k in keys.missing_keys)):
                raise KeyError(f"{(keys.unexpected_keys or keys.missing_keys)[0]!r} is not the saved head's")
            optimizers.load_state_dict(state["optimizers"])
        except (KeyError, RuntimeError, ValueError, TypeError) as exc:
            raise RunFormatError(f"{out / run_format.STATE_FILE}: does not match the model "
                                 f"({first_line(exc, limit=200)})") from None
        start_epoch, history = int(state["epoch"]), list(state["history"])
        sources = state.get("sources") or sources
        extends = bool(segments) and segments[-1] == start_epoch
        log(f"extending {out} from {start_epoch} to {config.optim.epochs} epochs" if extends else
            f"resuming {out} at epoch {start_epoch + 1}/{config.optim.epochs}")
    step: nn.Module = TrainStep(model if features is None else FeatureView(model))
    if dist.world > 1:
        step = nn.parallel.DistributedDataParallel(step, device_ids=[ctx.device.index] if ctx.device.type == "cuda"
                                                   else None)
    step = compiled(step, config.engine)
    on_device = [loader.to_device_dataset(split, ctx.device, allowed=config.engine.gpu_dataset and features is None)
                 for split in (data.train, data.split(loader.held_split(data)))]
    inputs = fileio.json_ready({"dataset": data.describe(), "hierarchy": model.hierarchy.to_dict()})  # as run.json
    writer = RunWriter(out, config, log, sources=sources, inputs=inputs, segments=segments) if dist.rank == 0 else None
    return Session(config, data, indices, ctx, dist, model, optimizers, step, *on_device, start_epoch, history, writer,
                   features)


