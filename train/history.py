"""What a training writes as it goes (rank 0 alone): after each epoch its line in the log, its
TensorBoard scalars, ``history.csv`` and the training state to resume from; at the end
``run.json`` and the weights."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hseval.io import run_format, tables
from hseval.nn.model import HierarchicalClassifier
from hseval.train.config import TrainConfig
from hseval.train.optim import Optimizers

__all__ = ["RunWriter", "epoch_line", "trained_state"]


def epoch_line(head: str, record: dict[str, Any], epochs: int) -> str:
    """The log line of an epoch's record: training loss, accuracy and speed, and the scores of the
    split it tested on (validation or test) when it did."""
    text = (f"{head} epoch {record['epoch']}/{epochs}: loss {record['train_loss']:.4f}, train acc "
            f"{record['train_acc']:.4f}, {record['images_per_s']:.0f} img/s")
    for split in ("val", "test"):
        if f"{split}_acc" in record:
            levels = ", ".join(f"L{d} {v:.4f}" for d, v in record[f"{split}_superclass_acc"].items())
            text += f"; {split} acc {record[f'{split}_acc']:.4f}" + (f" (super-class {levels})" if levels else "")
    return text


class RunWriter:
    """The outputs of one training into the run folder ``out``."""

    def __init__(self, out: Path, config: TrainConfig, log: Callable[[str], None], *,
                 sources: dict[str, Any] | None = None, inputs: dict[str, Any] | None = None,
                 segments: list[int] | None = None) -> None:
        self.out, self.config, self.log = out, config, log
        self.sources = dict(sources or {})  # the backbone's file and a probe's features, for run.json
        self.inputs = dict(inputs or {})  # the data and the tree, which a resumed training must find again
        self.segments = list(segments or [])  # the epoch counts of the trainings this one extends
        self.tensorboard = _summary_writer(out / "tensorboard") if config.engine.tensorboard else None

    def epoch(self, history: list[dict[str, Any]], model: HierarchicalClassifier, optimizers: Optimizers) -> None:
        """The last record of ``history`` logged, and everything needed to resume after it written."""
        record = history[-1]
        self.log(epoch_line(self.config.model.head, record, self.config.optim.epochs))
        if self.tensorboard is not None:
            for key, value in record.items():
                if isinstance(value, (int, float)) and key != "epoch":
                    self.tensorboard.add_scalar(key, value, record["epoch"])
                elif isinstance(value, dict):
                    for depth, v in value.items():
                        self.tensorboard.add_scalar(f"{key}/depth{depth}", v, record["epoch"])
        run_format.save_train_state(self.out, {
            "epoch": record["epoch"], "history": history, "config": self.config.model_dump(),
            "model": trained_state(model), "optimizers": optimizers.state_dict(), "sources": self.sources,
            **self.inputs, "segments": self.segments,
            "rng": {"torch": torch.get_rng_state(), "numpy": np.random.get_state()[1].tolist(),
                    "python": list(random.getstate()[1])}})
        tables.write_history(self.out, history)

    def finish(self, model: HierarchicalClassifier, meta: dict[str, Any]) -> None:
        """``run.json`` (``meta``) and the weights, a frozen body referred to in its ``--init`` file
        (unless ``engine.self_contained``); then the training state without the weights, or none
        (``engine.keep_train_state``)."""
        engine = self.config.engine
        frozen_init = self.sources.get("initialised_from") if model.backbone.frozen else None
        run_format.save_run(self.out, model, {**meta, **self.sources,
                                              "segments": [*self.segments, self.config.optim.epochs]},
                            refer_to=None if engine.self_contained else frozen_init)
        run_format.finish_train_state(self.out, keep=engine.keep_train_state)
        if self.tensorboard is not None:
            self.tensorboard.close()


def trained_state(model: HierarchicalClassifier) -> dict[str, torch.Tensor]:
    """The tensors a resumed training needs: all but a frozen body's (rebuilt from the seed and
    ``model.init``, the same every epoch; for a probe, most of the bytes)."""
    frozen = model.backbone.frozen
    return {k: v for k, v in model.state_dict().items() if not (frozen and k.startswith("backbone.body."))}


def _summary_writer(folder: Path):
    try:
        from torch.utils.tensorboard import SummaryWriter  # tensorboard: an extra, asked for by engine.tensorboard
    except ImportError:
        print("hseval: tensorboard is not installed (pip install 'hseval[tensorboard]'); logging to run.json only")
        return None
    return SummaryWriter(str(folder))
