"""The batches of an evaluation pass, which never drop a sample (the stratified subset is
:func:`hseval.core.sampling.stratified_subset`)."""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch.utils.data import DataLoader, Dataset

from hseval.data.base import TensorImages, worker_errors

__all__ = ["eval_batches"]


def eval_batches(dataset: Dataset, *, batch_size: int, device: torch.device, device_images: torch.Tensor | None = None,
                 workers: int = 0) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Every sample of the split, in order, without augmentation, on ``device``.

    In-memory splits (:class:`TensorImages`) are sliced from their uint8 tensor (``device_images``:
    the same tensor already on the device); other splits go through a ``DataLoader`` with
    ``workers`` processes."""
    if isinstance(dataset, TensorImages):
        labels = torch.as_tensor(dataset.labels)
        source = device_images if device_images is not None else dataset.images
        for start in range(0, len(dataset), batch_size):
            images = source[start: start + batch_size].to(device, non_blocking=True)
            yield dataset.preprocess(images, train=False), labels[start: start + batch_size].to(device)
        return
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=False, drop_last=False, num_workers=workers,
                        pin_memory=device.type == "cuda")
    for x, y in worker_errors(loader):
        yield x.to(device, non_blocking=True), y.to(device, non_blocking=True)
