"""Linear probing on cached features (``hseval train-all --probe``): the frozen backbone's features
of both splits extracted once to a features file, then every head trained on them.

A probe run is a frozen-backbone run (``model.freeze_backbone=true``) without augmentation
(``data.augment=false``): the engine trains it as any run, but takes each batch's body features
from the file instead of computing them, so it ends where the same run trained on the images ends,
and its run folder (the whole model, run.json) is a normal run's.

The file, ``features/NAME.safetensors`` in the folder of runs, holds ``train``/``test`` (N, d)
float32 and their labels (and ``val`` where the data has a validation split), every sample of each
split in dataset order. Its key (recorded in the file) is a fingerprint of what the features depend
on: the body's tensors, the data (its identity, ``hseval.io.data_identity.data_identity``, with the
SHA-256 of its images and not where they lie: a copy elsewhere reuses the file), the batch size and
the device type; NAME is the same fingerprint but of the images' content, so another seed of a
randomly initialised backbone, or another dataset, gets its own file, and a file whose images
changed since it was extracted is extracted again in its place, with a note that says so (a cache
is recomputed, not refused). Extraction writes chunks of whole
evaluation batches to ``features/NAME.partial/`` as it goes, so an interrupted extraction continues
where it stopped; the SHA-256 of the file is recorded in run.json.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial as partial_function
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import SafetensorError
from safetensors.torch import load, save
from torch import nn
from torch.utils.data import Dataset, Subset

from hseval.core import fileio
from hseval.core.errors import DataError
from hseval.core.progress import bar as progress_bar
from hseval.data import LoadedDataset, TensorImages
from hseval.io.chunks import RECORD, chunks, record_of
from hseval.io.data_identity import data_changes, data_identity
from hseval.nn.model import HierarchicalClassifier
from hseval.train import loader
from hseval.train.config import TrainConfig
from hseval.train.step import Context

__all__ = ["FEATURES", "Features", "FeatureView", "FeatureIdentity", "feature_identity", "extract_features",
           "read_features"]

FEATURES = "features"
"""The folder of a folder of runs that holds the features files."""
CHUNK = 8192
"""Images per chunk of an extraction (rounded to whole evaluation batches)."""


def _splits(data: LoadedDataset) -> tuple[str, ...]:
    """The splits a features file holds: the training and test splits, and the validation split where
    there is one."""
    return ("train", "test") if data.val is None else ("train", "val", "test")


class FeatureView(nn.Module):
    """``model`` seen from its body's features: what the engine trains and tests on cached features
    (``embed`` is the bottleneck alone, the head is the model's)."""

    def __init__(self, model: HierarchicalClassifier) -> None:
        super().__init__()
        self.model = model

    @property
    def head(self) -> nn.Module:
        return self.model.head

    @property
    def hierarchy(self):
        return self.model.hierarchy

    def embed(self, z: torch.Tensor) -> torch.Tensor:
        return self.model.backbone.project(z)


@dataclass
class Features:
    """A features file, read: each split's body features (N, d) and labels, in dataset order."""

    path: Path
    sha256: str
    key: str
    tensors: dict[str, torch.Tensor] = field(repr=False)

    def train_batches(self, indices: np.ndarray, *, batch_size: int, seed: int, epoch: int, device: torch.device,
                      rank: int = 0, world: int = 1) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """An epoch's batches in the order :func:`loader.train_batches` gives the images."""
        z, y = self.tensors["train"], self.tensors["train_labels"]
        for idx in loader.index_batches(indices, batch_size=batch_size, seed=seed, epoch=epoch, rank=rank,
                                        world=world):
            yield z[idx].to(device, non_blocking=True), y[idx].to(device, non_blocking=True)

    def eval_batches(self, split: str, *, batch_size: int, device: torch.device
                     ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """Every sample of ``split``, in order, as :func:`loader.eval_batches` gives the images."""
        z, y = self.tensors[split], self.tensors[f"{split}_labels"]
        for start in range(0, len(y), batch_size):
            yield z[start: start + batch_size].to(device), y[start: start + batch_size].to(device)

    def record(self) -> dict[str, Any]:
        """What run.json records of the file."""
        return {"path": str(self.path.resolve()), "sha256": self.sha256, "key": self.key}


@dataclass(frozen=True)
class FeatureIdentity:
    """What the features of a body on some data depend on (``facts``), their fingerprint (``key``)
    and the file's (``name``), as the module's docstring says."""

    key: str
    name: str
    facts: dict[str, Any]


def feature_identity(model: HierarchicalClassifier, data: LoadedDataset, config: TrainConfig, ctx: Context
                     ) -> FeatureIdentity:
    """The :class:`FeatureIdentity` of the features ``model``'s body gives on ``data``."""
    body = save({k: t.detach().to("cpu").contiguous() for k, t in model.backbone.body.state_dict().items()})
    backbone = model.spec()["backbone"]
    backbone["config"]["embedding_dim"] = None  # the bottleneck comes after the body: not part of its features
    facts = fileio.json_ready({"backbone": backbone, "data": data_identity(data.describe()),
                               "batch_size": config.data.eval_batch_size,
                               "device": ctx.device.type, "amp": ctx.amp and ctx.device.type == "cuda",
                               "channels_last": ctx.channels_last})
    place = {**facts, "data": {k: v for k, v in facts["data"].items() if k != "content_sha256"}}
    key, name = (fileio.sha256(body + json.dumps(f, sort_keys=True).encode()) for f in (facts, place))
    return FeatureIdentity(key, name, facts)


def _part(dataset: Dataset, start: int, stop: int) -> Dataset:
    if isinstance(dataset, TensorImages):  # a view: eval_batches slices it as it slices the split
        return TensorImages(dataset.images[start:stop], dataset.labels[start:stop], dataset.preprocess, train=False)
    return Subset(dataset, range(start, stop))


@torch.inference_mode()
def _chunk(model: HierarchicalClassifier, dataset: Dataset, ctx: Context, *, batch_size: int, workers: int,
           bar) -> dict[str, torch.Tensor]:
    model.eval()
    zs, ys = [], []
    for x, y in loader.eval_batches(dataset, batch_size=batch_size, device=ctx.device, workers=workers):
        with ctx.autocast():
            zs.append(model.backbone.features(ctx.prepare(x)).float().cpu())
        ys.append(y.cpu())
        bar.update(len(y))
    return {"features": torch.cat(zs), "labels": torch.cat(ys)}


def _chunk_of(model: HierarchicalClassifier, dataset: Dataset, ctx: Context, start: int, stop: int, **options: Any
              ) -> dict[str, torch.Tensor]:
    return _chunk(model, _part(dataset, start, stop), ctx, **options)


def extract_features(model: HierarchicalClassifier, data: LoadedDataset, config: TrainConfig, ctx: Context,
                     folder: Path, *, log: Callable[[str], None] = print) -> Features:
    """The features file of ``model``'s body on ``data`` in ``folder``: read when it is there, else
    extracted (continuing an interrupted extraction) and written. ``data``'s training split must be
    unaugmented (:meth:`LoadedDataset.without_augmentation`)."""
    identity = feature_identity(model, data, config, ctx)
    key = identity.key
    final = folder / f"{identity.name[:16]}.safetensors"
    if final.is_file():
        recorded = record_of(final)
        if recorded.get("key") == key:
            log(f"reusing the features in {final}")
            return read_features(final, key=key, data=data)
        log(f"note: {final}: {_changed(recorded, identity, data)}; extracting the features again")
    partial = folder / f"{identity.name[:16]}.partial"
    batch = config.data.eval_batch_size
    rows = batch * max(1, CHUNK // batch)  # whole batches: the test features are those an evaluation computes
    tensors: dict[str, torch.Tensor] = {}
    total = sum(len(data.split(s)) for s in _splits(data))
    bar = progress_bar(total=total, desc="features", unit="img", unit_scale=True, leave=False,
                       enabled=config.engine.progress)
    log(f"extracting the features of {total} images into {final}")
    for split in _splits(data):
        dataset = data.split(split)
        compute = partial_function(_chunk_of, model, dataset, ctx, batch_size=batch, workers=config.data.workers,
                                   bar=bar)
        parts = list(chunks(partial, key, name=split, total=len(dataset), rows=rows, names={"features", "labels"},
                            compute=compute, done=bar.update))
        tensors[split] = torch.cat([p["features"] for p in parts])
        tensors[f"{split}_labels"] = torch.cat([p["labels"] for p in parts])
    bar.close()
    # one metadata entry: safetensors writes a map's keys in a random order, and the file's bytes must not vary
    record = json.dumps({"key": key, "facts": identity.facts}, sort_keys=True)
    fileio.write_bytes(final, save(tensors, metadata={RECORD: record}))
    shutil.rmtree(partial, ignore_errors=True)
    return read_features(final, key=key, data=data)


def _changed(recorded: dict[str, Any], identity: FeatureIdentity, data: LoadedDataset) -> str:
    """What differs between the features file's recorded facts and those of this extraction: the
    images' content, as the file's name holds the rest."""
    facts = recorded.get("facts")
    then = (facts.get("data") if isinstance(facts, dict) else None) or {}
    changed = {key: (old, new) for key, old, new in data_changes(then, identity.facts["data"])}
    old, new = changed.get("content_sha256", (None, None))
    if isinstance(old, str) and isinstance(new, str):
        return (f"extracted from images with SHA-256 {old[:12]}…, those under {data.root} now have {new[:12]}… "
                "(the data changed)")
    return "not the features of this backbone and data (written by another hseval, or damaged)"


def read_features(path: str | Path, *, key: str | None = None, data: LoadedDataset | None = None) -> Features:
    """Read a features file, checked: readable, of ``key`` (when given), of ``data``'s labels (when
    given), finite. One-line :class:`DataError`s name the file."""
    path = Path(path)
    try:
        raw = path.read_bytes()
        tensors = load(raw)
    except (OSError, SafetensorError, ValueError) as exc:
        raise DataError(f"{path}: cannot be read as a features file ({type(exc).__name__}); remove it to extract the "
                        "features again") from None
    found = record_of(path).get("key")
    splits = tuple(s for s in ("train", "val", "test") if s in tensors) if data is None else _splits(data)
    names = {*splits, *(f"{s}_labels" for s in splits)}
    if set(tensors) != names or not found or not {"train", "test"} <= set(splits):
        raise DataError(f"{path}: not a features file written by hseval (it holds {sorted(tensors)}); remove it")
    if key is not None and found != key:
        raise DataError(f"{path}: holds the features of another backbone or data; remove it to extract them again")
    for split in splits:
        z, y = tensors[split], tensors[f"{split}_labels"]
        expected = None if data is None else np.asarray(data.split(split).labels)
        if z.dim() != 2 or len(z) != len(y) or (expected is not None and not np.array_equal(y.numpy(), expected)):
            raise DataError(f"{path}: its {split} features do not match the {split} split of the data; remove it to "
                            "extract them again")
        if not bool(torch.isfinite(z).all()):
            raise DataError(f"{path}: its {split} features hold NaN or infinite values (the backbone diverged?)")
    return Features(path=path, sha256=fileio.sha256(raw), key=found, tensors=tensors)
