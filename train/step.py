"""One training step and what it runs on: the model a configuration describes
(:func:`model_spec`), the :class:`Context` (device, precision, process group), the unit DDP wraps
(:class:`TrainStep`) and its ``torch.compile`` (:func:`compiled`)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from hseval.core.device import resolve_device
from hseval.data import LoadedDataset
from hseval.nn.heads import HEADS
from hseval.nn.model import HierarchicalClassifier
from hseval.train.config import EngineConfig, TrainConfig
from hseval.train.distributed import Dist

__all__ = ["Context", "TrainStep", "compiled", "model_spec"]


def model_spec(config: TrainConfig, data: LoadedDataset) -> dict[str, Any]:
    """The backbone and head of ``config`` for the images of ``data`` (what ``build_model`` takes);
    the head gets the options it accepts (a recipe sets options for all heads)."""
    accepted = HEADS.options(config.model.head)
    backbone = {"in_channels": data.channels, "image_size": data.image_size, "small_stem": config.model.small_stem,
                "embedding_dim": config.model.embedding_dim}
    return {"backbone": {"name": config.model.backbone, "config": backbone},
            "head": {"name": config.model.head,
                     "config": {k: v for k, v in config.model.head_options.items() if k in accepted}}}


@dataclass
class Context:
    """What the loop needs besides the model: device, precision and the process group."""

    device: torch.device
    amp: bool
    channels_last: bool
    rank: int = 0
    world: int = 1

    @classmethod
    def create(cls, engine: EngineConfig, dist: Dist) -> Context:
        """The context ``engine`` asks for in this process (under torchrun: its local rank's GPU)."""
        device = resolve_device(engine.device, dist.local_rank, option="engine.device")
        return cls(device, engine.amp, engine.channels_last, dist.rank, dist.world)

    def autocast(self) -> contextlib.AbstractContextManager:
        if self.amp and self.device.type == "cuda":
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def place(self, model: nn.Module) -> nn.Module:
        """``model`` on the device, its convolutions' weights channels_last when asked."""
        model = model.to(self.device)
        return model.to(memory_format=torch.channels_last) if self.channels_last else model

    def prepare(self, x: torch.Tensor) -> torch.Tensor:
        return x.contiguous(memory_format=torch.channels_last) if self.channels_last and x.ndim == 4 else x

    def fork_rng(self) -> contextlib.AbstractContextManager:
        """The random streams of this device (CPU, and CUDA on a GPU) restored on leaving."""
        return torch.random.fork_rng(devices=[self.device.index or 0] if self.device.type == "cuda" else [])

    def describe(self) -> dict[str, Any]:
        """run.json's ``device``: where and how the run trained."""
        cuda = self.device.type == "cuda"
        return {"device": str(self.device), "world_size": self.world, "amp_bf16": self.amp and cuda,
                "channels_last": self.channels_last, "threads": torch.get_num_threads(),
                **({"gpu": torch.cuda.get_device_name(self.device)} if cuda else {})}


class TrainStep(nn.Module):
    """images, labels -> (loss, logits): the unit DDP wraps, so that every head's own loss
    (multitask adds level terms) is part of the synchronised forward."""

    def __init__(self, model: HierarchicalClassifier) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.model.head.loss(self.model.embed(x), y)


def compiled(step: nn.Module, engine: EngineConfig) -> nn.Module:
    """``step`` under ``torch.compile`` when ``engine.compile`` (with ``engine.cuda_graphs``: mode
    "reduce-overhead", the step replayed as CUDA graphs, which needs a GPU); else as it is. The
    first steps pay the compilation (tens of seconds); evaluation stays eager."""
    return torch.compile(step, mode="reduce-overhead" if engine.cuda_graphs else None) if engine.compile else step
