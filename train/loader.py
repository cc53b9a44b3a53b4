"""Batches for training and evaluation, deterministic from (seed, epoch) on any device.

In-memory splits (:class:`~hseval.data.TensorImages`) skip ``DataLoader`` altogether: a batch is
an index into one uint8 tensor (kept on the GPU when it fits), augmented where it lies. File
splits go through a ``DataLoader`` with workers. Under DDP each rank takes every world-th index of
the same permutation. Training drops the last incomplete batch (BatchNorm cannot learn from a
batch of one); evaluation never drops a sample (:func:`hseval.data.sampling.eval_batches`, which
``hseval evaluate`` uses too, as it uses the stratified subset).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Subset

from hseval.core import sampling
from hseval.core.errors import ConfigError
from hseval.core.perf import available_cores
from hseval.data import LoadedDataset, TensorImages
from hseval.data.base import worker_errors
from hseval.data.sampling import eval_batches
from hseval.train.config import TrainConfig

__all__ = ["epoch_generator", "epoch_order", "index_batches", "train_batches", "eval_batches",
           "num_train_batches", "to_device_dataset", "held_split", "run_data", "fit_workers"]


def epoch_generator(seed: int, epoch: int, stream: int = 0) -> torch.Generator:
    """A CPU generator that depends only on (seed, epoch, stream): resuming replays it exactly."""
    return torch.Generator().manual_seed((seed * 1_000_003 + epoch * 7_919 + stream) % (2**63))


def run_data(data: LoadedDataset, config: TrainConfig) -> LoadedDataset:
    """The data a run trains and tests on: with ``data.val_fraction`` of its training split held out
    as its validation split (:meth:`LoadedDataset.with_validation`), without augmentation when
    ``data.augment=false``, its test split cut to a class-stratified random subset of
    ``data.test_subset`` samples (quicker tests during training) when that is set. Training tests
    after each epoch on the validation split where there is one (:func:`held_split`), else on the
    test split."""
    data = data.with_validation(config.data.val_fraction)
    data = data if config.data.augment else data.without_augmentation()
    if config.data.test_subset is None:
        return data
    if data.val is not None:
        raise ConfigError(f"data.test_subset cuts the test split for the tests after each epoch, but {data.name} "
                          "has a validation split, which they run on; leave data.test_subset unset")
    chosen = sampling.stratified_subset(data.test.labels, config.data.test_subset, seed=config.engine.seed,
                                        setting="data.test_subset")
    return dataclasses.replace(data, test=data.test.subset(chosen))


def to_device_dataset(dataset: Dataset, device: torch.device, *, allowed: bool) -> torch.Tensor | None:
    """The split's images moved to ``device`` once, when it is an in-memory split that fits
    comfortably (a quarter of the free GPU memory); else None (batches move one by one)."""
    if not allowed or device.type != "cuda" or not isinstance(dataset, TensorImages):
        return None
    free, _ = torch.cuda.mem_get_info(device)
    if dataset.images.numel() > free // 4:
        return None
    return dataset.images.to(device, non_blocking=True)


def num_train_batches(n: int, batch_size: int, world: int = 1) -> int:
    """Full batches per rank and epoch (the last incomplete one is dropped): 0 when a rank has
    fewer than ``batch_size`` samples, which the engine refuses before training."""
    return -(-n // world) // batch_size


def epoch_order(indices: np.ndarray, *, seed: int, epoch: int, rank: int = 0, world: int = 1) -> torch.Tensor:
    """The training samples of an epoch, in the order this rank sees them."""
    order = torch.as_tensor(indices)[torch.randperm(len(indices), generator=epoch_generator(seed, epoch))]
    total = -(-len(order) // world) * world  # pad by wrapping, like DistributedSampler
    return torch.cat([order, order[: total - len(order)]])[rank::world]


def index_batches(indices: np.ndarray, *, batch_size: int, seed: int, epoch: int, rank: int = 0,
                  world: int = 1) -> Iterator[torch.Tensor]:
    """The indices of each full training batch of an epoch (what every in-memory source batches)."""
    order = epoch_order(indices, seed=seed, epoch=epoch, rank=rank, world=world)
    for step in range(num_train_batches(len(indices), batch_size, world)):
        yield order[step * batch_size: (step + 1) * batch_size]


def train_batches(dataset: Dataset, indices: np.ndarray, *, batch_size: int, seed: int, epoch: int,
                  device: torch.device, device_images: torch.Tensor | None = None, workers: int = 0,
                  rank: int = 0, world: int = 1) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """One epoch of shuffled, augmented training batches on ``device``."""
    if isinstance(dataset, TensorImages):
        augment = epoch_generator(seed, epoch, stream=1)
        labels = torch.as_tensor(dataset.labels)
        for idx in index_batches(indices, batch_size=batch_size, seed=seed, epoch=epoch, rank=rank, world=world):
            source = device_images if device_images is not None else dataset.images
            images = source[idx.to(source.device)].to(device, non_blocking=True)
            x = dataset.preprocess(images, train=True, generator=augment)
            yield x, labels[idx].to(device, non_blocking=True)
        return
    order = epoch_order(indices, seed=seed, epoch=epoch, rank=rank, world=world)
    loader = DataLoader(Subset(dataset, order.tolist()), batch_size=batch_size, shuffle=False, drop_last=True,
                        num_workers=workers, pin_memory=device.type == "cuda",
                        generator=epoch_generator(seed, epoch, stream=2), persistent_workers=False)
    for x, y in worker_errors(loader):
        yield x.to(device, non_blocking=True), y.to(device, non_blocking=True)


def held_split(data: LoadedDataset) -> str:
    """The split a run tests on after each epoch: "val" where it has one, else "test"."""
    return "test" if data.val is None else "val"


def fit_workers(config: TrainConfig, *, processes: int = 1) -> tuple[TrainConfig, str | None]:
    """``config`` with at most its share of the CPUs as loader processes (``data.workers``): the
    cores this process may use (its affinity), divided among the ``processes`` that train at once;
    and a note when that lowered the number asked for (the paper's recipe asks for 8 whatever the
    machine, and on 2 cores torch warned at every loader)."""
    cores = available_cores()
    share = max(1, cores // max(1, processes))
    if config.data.workers <= share:
        return config, None
    shared = f", shared by {processes} runs at once" if processes > 1 else ""
    note = (f"data.workers={config.data.workers} lowered to {share}: {cores} CPU(s) here{shared} (a lower "
            "data.workers is kept as given)")
    return config.model_copy(update={"data": config.data.model_copy(update={"workers": share})}), note
