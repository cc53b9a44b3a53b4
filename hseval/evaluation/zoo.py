"""``hseval predict``: a classifier of torchvision or timm, named as ``torchvision:NAME`` or
``timm:NAME`` and given its weights as a local file, run on a dataset's split with *its own*
preprocessing, into a prediction file (:mod:`hseval.io.prediction_format`) that ``hseval evaluate``
scores against the dataset's tree.

The model, its preprocessing and its columns: :mod:`hseval.evaluation.pretrained`.

- **What is written**: ``targets``; ``logits``; ``embeddings``, the input of the model's classifier
  where the model's output is exactly that layer's output (checked on the first image); and
  ``class_weights``, that layer's rows (its bias is not a class vector: geometry reads the rows).
- **Speed and interruptions**: batches from a ``DataLoader`` with worker processes (pinned memory
  on a GPU), under ``torch.inference_mode``; on a GPU, bf16 autocast and channels-last as training
  does. The rows are written a chunk at a time to ``OUT.partial/`` (:mod:`hseval.io.chunks`), so an
  interrupted prediction continues where it stopped; the file is assembled from the chunks, one
  block of rows in memory at a time.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Callable, Sequence
from functools import partial as bind
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import safe_open
from torch.utils.data import DataLoader, Dataset, Subset

from hseval.core import fileio
from hseval.core.device import resolve_device
from hseval.core.errors import ConfigError
from hseval.core.perf import available_cores
from hseval.core.progress import bar as progress_bar
from hseval.data import ImageFiles, LoadedDataset, load_dataset
from hseval.data.base import worker_errors
from hseval.evaluation.predictions import evaluate_predictions
from hseval.evaluation.pretrained import ZooModel, check_weights, load_model, model_columns, model_inputs, model_names
from hseval.io.chunks import chunks
from hseval.io.output import OutputFile
from hseval.io.prediction_arrays import write_npz

__all__ = ["CHUNK", "PREDICTIONS_DIR", "predict", "cached_prediction", "evaluate_models"]

CHUNK = 10_240
"""Images per chunk of a prediction (an interruption loses at most one)."""


@torch.inference_mode()
def _chunk(model: ZooModel, inputs: Dataset, start: int, stop: int, *, columns: np.ndarray | None,
           batch_size: int, workers: int, device: torch.device, amp: bool, embeddings: bool,
           bar) -> dict[str, torch.Tensor]:
    """The logits (and embeddings) of the rows ``start:stop`` of ``inputs``."""
    captured: list[torch.Tensor] = []
    hook = model.classifier.register_forward_hook(lambda m, args, out: captured.append(args[0])) \
        if embeddings else None
    cuda = device.type == "cuda"
    loader = DataLoader(Subset(inputs, range(start, stop)), batch_size=batch_size, num_workers=workers,
                        pin_memory=cuda)
    logits, features = [], []
    take = None if columns is None else torch.as_tensor(columns, device=device)
    try:
        for x, _ in worker_errors(loader):
            x = x.to(device, non_blocking=True)
            if cuda:
                x = x.contiguous(memory_format=torch.channels_last)
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=cuda and amp):
                out = model.module(x).float()
            if take is not None:
                out = out.index_select(1, take)
            logits.append(out.cpu())
            if hook is not None:
                features.append(captured.pop().flatten(1).float().cpu())
            bar.update(len(x))
    finally:
        if hook is not None:
            hook.remove()
    part = {"logits": torch.cat(logits)}
    if embeddings:
        part["embeddings"] = torch.cat(features)
    return part


def _feeds_output(model: ZooModel, inputs: Dataset, device: torch.device) -> bool:
    """Whether the model's output is exactly its classifier's (so that its input is the embedding)."""
    if model.classifier is None or len(inputs) == 0:
        return False
    seen: list[torch.Tensor] = []
    hook = model.classifier.register_forward_hook(lambda m, args, out: seen.append(out))
    try:
        with torch.inference_mode():
            out = model.module(inputs[0][0][None].to(device))
    finally:
        hook.remove()
    return len(seen) == 1 and seen[0].shape == out.shape and bool(torch.equal(seen[0], out))


def predict(model: ZooModel, data: LoadedDataset, out: str | Path, *, split: str = "test",
            classes: Sequence[str] | None = None, batch_size: int = 64, workers: int | None = None,
            device: torch.device | str = "cpu", amp: bool = True, progress: bool = True,
            log: Callable[[str], None] = print) -> Path:
    """Run ``model`` on ``data``'s ``split`` and write the prediction file ``out`` (.npz); an
    interrupted prediction into the same ``out`` continues from its chunks. Returns ``out``."""
    out = Path(out)
    if out.suffix != ".npz":
        raise ConfigError(f"--out {out}: a prediction file is written as .npz; name it {out.with_suffix('.npz').name}")
    output = OutputFile(out)  # checked before any work
    device = torch.device(device)
    part = data.split(split)
    inputs = model_inputs(part, model.transform)
    columns = model_columns(model, data, classes, outputs=model.outputs, log=log)
    model.module.to(device)
    if device.type == "cuda":
        model.module.to(memory_format=torch.channels_last)
    embeddings = _feeds_output(model, inputs, device)
    if not embeddings:
        log(f"note: {model.spec}'s output is not one linear layer's: no embeddings or class_weights (the geometry "
            "and projections are then not available)")
    labels = np.asarray(part.labels, dtype=np.int64)
    key = fileio.sha256(json.dumps({**model.about, "weights": model.about["weights"]["sha256"],
                                    "columns": None if columns is None else columns.tolist(),
                                    "data": data.name, "split": split, "labels": fileio.sha256(labels.tobytes()),
                                    "files": _files_sha256(part, data.root), "device": device.type,
                                    "amp": amp and device.type == "cuda", "embeddings": embeddings},
                                   sort_keys=True).encode())
    partial = out.with_name(out.name + ".partial")
    workers = min(8, available_cores()) if workers is None else workers
    names = {"logits", "embeddings"} if embeddings else {"logits"}
    bar = progress_bar(total=len(labels), desc=model.spec, unit="img", unit_scale=True, enabled=progress)
    compute = bind(_chunk, model, inputs, columns=columns, batch_size=batch_size, workers=workers, device=device,
                   amp=amp, embeddings=embeddings, bar=bar)
    log(f"predicting {len(labels):,} images of {data.name} ({split}) with {model.spec} on {device} -> {out}")
    for _ in chunks(partial, key, name=split, total=len(labels), rows=CHUNK, names=names, compute=compute,
                    done=bar.update):
        pass
    bar.close()
    with output as path:
        _assemble(path, partial, split, labels, model, columns, embeddings)
    shutil.rmtree(partial, ignore_errors=True)
    return out


def _files_sha256(part: Dataset, root: Path) -> str | None:
    """The SHA-256 of the split's file names relative to the dataset's folder (None: in memory)."""
    if not isinstance(part, ImageFiles):
        return None
    with contextlib.suppress(ValueError):
        return fileio.sha256("\n".join(str(p.relative_to(root)) for p in part.paths).encode())
    return fileio.sha256("\n".join(map(str, part.paths)).encode())


def _assemble(path: Path, partial: Path, split: str, labels: np.ndarray, model: ZooModel,
              columns: np.ndarray | None, embeddings: bool) -> None:
    """The prediction file from the chunks in ``partial``, one chunk in memory at a time."""
    files = sorted(partial.glob(f"{split}-*.safetensors"))

    def member(name: str) -> tuple[tuple[int, int], type, Callable]:
        with safe_open(files[0], "pt") as f:
            width = f.get_slice(name).get_shape()[1]

        def blocks():
            for file in files:
                with safe_open(file, "pt") as f:
                    yield f.get_tensor(name).numpy()

        return (len(labels), width), np.float32, blocks

    arrays: dict[str, Any] = {"targets": labels, "logits": member("logits")}
    if embeddings:
        weight = model.classifier.weight.detach().float().cpu()
        arrays["class_weights"] = (weight if columns is None else weight[torch.as_tensor(columns)]).numpy()
        arrays["embeddings"] = member("embeddings")
    write_npz(path, arrays)


def cached_prediction(cache: Path, model: ZooModel, data: LoadedDataset, split: str, classes: Sequence[str] | None
                      ) -> Path:
    """Where ``hseval evaluate --model`` keeps the prediction of ``model`` on ``data``'s ``split``:
    a file in ``cache`` named by what the prediction depends on: the model, its weights and recipe,
    and the split's images and labels by content (a second evaluation reads it; changed images
    are predicted again)."""
    key = fileio.sha256(json.dumps({"model": model.about["model"], "recipe": model.about["recipe"],
                                    "weights": model.about["weights"]["sha256"], "data": data.name,
                                    "content": data.split_sha256(split), "split": split,
                                    "classes": list(classes) if classes else None}, sort_keys=True).encode())
    return cache / f"{model.spec.replace(':', '-').replace('/', '-')}-{key[:16]}.npz"


PREDICTIONS_DIR = Path("~/.cache/hseval/predictions")
"""Where ``hseval evaluate --model`` keeps its prediction files by default (``--predictions-dir``)."""


def evaluate_models(specs: Sequence[str], weights: Sequence[str], out_dir: str | Path, *, dataset: str,
                    data_root: str | None = None, data_options: dict[str, Any] | None = None,
                    recipes: Sequence[str] = (), names: Sequence[str] = (), classes: Sequence[str] | None = None,
                    split: str = "test", predictions_dir: str | Path = PREDICTIONS_DIR, device: str = "auto",
                    batch_size: int = 64, loader_workers: int | None = None, amp: bool = True,
                    progress: bool = True, log: Callable[[str], None] = print, **evaluation: Any
                    ) -> list[dict[str, Any]]:
    """``hseval evaluate --model``: each model of ``specs`` (with the weights file of the same
    position, and its recipe where ``recipes`` gives one per model) predicted on ``dataset``'s
    ``split`` into ``predictions_dir`` (a prediction made before is read again) and evaluated into
    ``out_dir`` against the dataset's tree; ``evaluation``: :func:`evaluate_predictions`'
    options. Every model is built and its weights checked before any image is read."""
    check_weights(weights, specs)
    if recipes and len(recipes) != len(specs):
        raise ConfigError(f"{len(specs)} --model but {len(recipes)} --recipe: give one --recipe per --model, or none")
    names = model_names(specs, names)
    device = resolve_device(device)
    for spec, file, recipe in zip(specs, weights, recipes or [None] * len(specs)):
        load_model(spec, file, recipe=recipe)  # a file that does not fit its model: refused before any work
    data = load_dataset(dataset, data_root, **(data_options or {}))
    data.split(split)
    cache = Path(predictions_dir).expanduser()
    entries = []
    for spec, file, recipe, name in zip(specs, weights, recipes or [None] * len(specs), names):
        model = load_model(spec, file, recipe=recipe)
        path = cached_prediction(cache, model, data, split, classes)
        if path.is_file():
            log(f"reading {model.spec}'s prediction of {data.name} ({split}) made before: {path}")
        else:
            predict(model, data, path, split=split, classes=classes, batch_size=batch_size, workers=loader_workers,
                    device=device, amp=amp, progress=progress, log=log)
        about = model.about
        del model  # one model in memory at a time
        entries.append(evaluate_predictions(path, out_dir, hierarchy=data.hierarchy, name=name, dataset=data.name,
                                            head=spec, split=split, model=about, log=log, **evaluation))
    return entries
