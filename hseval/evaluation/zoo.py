"""``hseval predict``: a classifier of torchvision or timm, named as ``torchvision:NAME`` or
``timm:NAME`` and given its weights as a local file, run on a dataset's split with *its own*
preprocessing, into a prediction file (:mod:`hseval.io.prediction_format`) that ``hseval evaluate``
scores against the dataset's tree.

- **The model**: ``torchvision.models.get_model(NAME, weights=None)`` or
  ``timm.create_model(NAME, pretrained=False)`` with as many outputs as the weights' classifier
  has rows; the weights are a state dict read without running a pickle
  (:func:`hseval.io.state_dict.read_state_dict`), every tensor matched to the model's (a missing,
  unused or misshapen one is one line). hseval downloads nothing.
- **The preprocessing**: torchvision's ``get_model_weights(NAME)[RECIPE].transforms()`` (``recipe``:
  ``IMAGENET1K_V2``…, default the enum's ``DEFAULT``); timm's ``create_transform`` of
  ``resolve_data_config({}, model=model)``, the model's own pretrained configuration.
- **What is written**: ``targets``; ``logits``; ``embeddings``, the input of the model's last
  linear layer (its classifier: timm's ``get_classifier()``, torchvision's last ``nn.Linear``)
  where the model's output is exactly that layer's output (checked on the first batch); and
  ``class_weights``, that layer's rows (its bias is not a class vector: geometry reads the rows).
- **Columns**: a model with as many outputs as the dataset has classes keeps its columns in order
  (or in the order of ``classes``, the model's class names); a model with other outputs keeps the
  columns of the dataset's classes, found by name in ``classes`` (or, for a 1,000-way model on a
  dataset of ImageNet wnids, in ImageNet-1k's standard order) and says so. Logits restricted to the
  dataset's classes give, through the softmax, the model's probabilities *given* that the image is
  one of them.
- **Speed and interruptions**: batches from a ``DataLoader`` with worker processes (pinned memory
  on a GPU), under ``torch.inference_mode``; on a GPU, bf16 autocast and channels-last as training
  does. The rows are written a chunk at a time to ``OUT.partial/`` (:mod:`hseval.io.chunks`), so an
  interrupted prediction continues where it stopped; the file is assembled from the chunks, one
  block of rows in memory at a time.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial as bind
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, Subset

from hseval.core import fileio
from hseval.core.errors import ConfigError, DataError
from hseval.core.extras import require
from hseval.core.perf import available_cores
from hseval.core.progress import bar as progress_bar
from hseval.data import ImageFiles, LoadedDataset, TensorImages
from hseval.data.base import worker_errors
from hseval.io.chunks import chunks
from hseval.io.output import OutputFile
from hseval.io.prediction_arrays import write_npz
from hseval.io.state_dict import Target, load_matched, match_state_dict, read_state_dict, shape_text

__all__ = ["LIBRARIES", "ZooModel", "parse_model", "load_model", "model_columns", "model_inputs", "predict",
           "cached_prediction", "check_weights"]

LIBRARIES = ("torchvision", "timm")
CHUNK = 10_240
"""Images per chunk of a prediction (an interruption loses at most one)."""


def parse_model(spec: str) -> tuple[str, str]:
    """``(library, name)`` of ``torchvision:NAME`` or ``timm:NAME``; a one-line error otherwise."""
    library, _, name = str(spec).partition(":")
    if library not in LIBRARIES or not name.strip():
        raise ConfigError(f"--model {spec!r}: name a model as torchvision:NAME (e.g. torchvision:resnet50) or "
                          "timm:NAME (e.g. timm:convnext_tiny.fb_in1k)")
    return library, name.strip()


@dataclass
class ZooModel:
    """A pretrained classifier, built and loaded: the module, its preprocessing (PIL image ->
    tensor), its classifier layer (None: the output is not one linear layer's) and what it is."""

    spec: str
    module: nn.Module = field(repr=False)
    transform: Callable[[Any], torch.Tensor] = field(repr=False)
    classifier: nn.Linear | None = field(repr=False)
    outputs: int
    about: dict[str, Any]


class _ZooTarget(Target):
    """The tensors of a torchvision or timm model: each under its own key."""

    def missing(self, key: str, state) -> str:
        return (f"has no tensor for {key} of shape {shape_text(self.expected[key])}; it is not a state dict of "
                f"{self.described} (torchvision and timm name their tensors differently)")

    def unused(self, key: str) -> str:
        return f"it is not a state dict of {self.described}, or of another variant of it"


def _torchvision(name: str, outputs: int | None) -> nn.Module:
    import torchvision

    known = torchvision.models.list_models(module=torchvision.models)
    if name not in known:
        close = difflib.get_close_matches(name, known, n=6, cutoff=0.6)
        raise ConfigError(f"--model torchvision:{name}: torchvision has no classification model {name!r}"
                          + (f"; did you mean {', '.join(close[:6])}?" if close else ""))
    options: dict[str, Any] = {} if outputs is None else {"num_classes": outputs}
    if name in ("inception_v3", "googlenet"):  # as their builders set them for trained weights
        options.update(transform_input=True, aux_logits=True, init_weights=False)
    return torchvision.models.get_model(name, weights=None, **options)


def _timm(name: str, outputs: int | None) -> nn.Module:
    timm = require("timm", f"--model timm:{name}")
    try:
        return timm.create_model(name, pretrained=False, **({} if outputs is None else {"num_classes": outputs}))
    except RuntimeError as exc:  # timm: "Unknown model (...)"
        raise ConfigError(f"--model timm:{name}: {exc}; see timm.list_models()") from None


def _classifier(module: nn.Module, library: str) -> tuple[str, nn.Linear] | None:
    """(name, module) of the model's last linear layer, or None."""
    if library == "timm":
        head = module.get_classifier()
        named = [(n, m) for n, m in module.named_modules() if m is head]
        return named[0] if named and isinstance(head, nn.Linear) else None
    linears = [(n, m) for n, m in module.named_modules() if isinstance(m, nn.Linear)]
    return linears[-1] if linears else None


def _transform(library: str, name: str, module: nn.Module, recipe: str | None) -> tuple[Callable, str]:
    """The model's preprocessing and the recipe it comes from."""
    if library == "timm":
        if recipe not in (None, "default", "DEFAULT"):
            raise ConfigError(f"--recipe {recipe}: a timm model's preprocessing is its own pretrained configuration; "
                              "choose the weights by the model's tag instead (timm:resnet50.a1_in1k)")
        data = require("timm", "timm's preprocessing").data
        config = data.resolve_data_config({}, model=module)
        return data.create_transform(**config), module.pretrained_cfg.get("tag") or "default"
    import torchvision

    enum = torchvision.models.get_model_weights(name)
    if recipe in (None, "default", "DEFAULT"):
        chosen = enum.DEFAULT
    elif recipe in enum.__members__:
        chosen = enum[recipe]
    else:
        raise ConfigError(f"--recipe {recipe}: {enum.__name__} has {', '.join(enum.__members__)}")
    return chosen.transforms(), chosen.name


def load_model(spec: str, weights: str | Path, *, recipe: str | None = None) -> ZooModel:
    """Model ``spec`` (``torchvision:NAME`` or ``timm:NAME``) with the tensors of ``weights``, in
    eval mode, and its preprocessing (``recipe``: torchvision's weights enum member)."""
    library, name = parse_model(spec)
    state = read_state_dict(weights)
    build = _torchvision if library == "torchvision" else _timm
    module = build(name, None)
    found = _classifier(module, library)
    rows = state.tensors.get(f"{found[0]}.weight") if found else None
    if rows is not None and rows.dim() == 2 and rows.shape[0] != found[1].out_features:
        module = build(name, int(rows.shape[0]))  # a classifier of another number of classes
        found = _classifier(module, library)
    plan, _ = match_state_dict(state, _ZooTarget(module, spec))
    load_matched(module, state, plan)
    module.eval()
    transform, recipe_name = _transform(library, name, module, recipe)
    outputs = found[1].out_features if found else None
    about = {"model": spec, "library": library, "recipe": recipe_name,
             "weights": {"path": str(Path(weights).resolve()), "sha256": fileio.sha256(Path(weights))},
             "preprocessing": " ".join(repr(transform).split())}
    return ZooModel(spec, module, transform, found[1] if found else None, outputs or 0, about)


def model_columns(model: ZooModel, data: LoadedDataset, classes: Sequence[str] | None, *, outputs: int,
                  log: Callable[[str], None] = print) -> np.ndarray | None:
    """The model's output column of each of ``data``'s classes (None: all, in order), from the
    model's class names ``classes`` (one per output) or, for a 1,000-way model on a dataset of
    WordNet ids, ImageNet-1k's standard order."""
    wanted = list(data.class_names)
    if classes is None:
        if outputs == len(wanted):
            return None
        if outputs == 1000 and all(n[:1] == "n" and n[1:].isdigit() for n in wanted):
            from hseval.tree.builders.packaged import read_table
            classes = [row[0] for row in read_table("imagenet_wnids.tsv")]
        else:
            raise ConfigError(f"{model.spec} has {outputs:,} outputs but {data.name} has {len(wanted):,} classes; "
                              "pass --classes FILE, the model's class names (one per output, in its order)")
    elif len(classes) != outputs:
        raise ConfigError(f"--classes names {len(classes):,} classes but {model.spec} has {outputs:,} outputs; give "
                          "one name per output, in the model's order")
    where = {name: k for k, name in enumerate(classes)}
    missing = [name for name in wanted if name not in where]
    if missing:
        raise DataError(f"{model.spec}'s outputs have no class {missing[0]!r} of {data.name} ({len(missing):,} of its "
                        f"{len(wanted):,} classes are missing); the model was not trained on these classes")
    columns = np.array([where[name] for name in wanted], dtype=np.int64)
    if len(columns) != outputs or not np.array_equal(columns, np.arange(outputs)):
        log(f"note: kept {len(columns):,} of {model.spec}'s {outputs:,} outputs: the columns of {data.name}'s classes, "
            "matched by name (the softmax is then over these classes)")
    return columns


class _PilImages(Dataset):
    """A split held in memory, as PIL images through ``transform`` (the model's preprocessing)."""

    def __init__(self, split: TensorImages, transform: Callable) -> None:
        self.split, self.transform = split, transform

    def __len__(self) -> int:
        return len(self.split.labels)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        from torchvision.transforms.v2.functional import to_pil_image

        image = to_pil_image(self.split.images[index]).convert("RGB")
        return self.transform(image), int(self.split.labels[index])


def model_inputs(split: Dataset, transform: Callable) -> Dataset:
    """``split`` (a dataset's) read through ``transform`` instead of hseval's preprocessing."""
    if isinstance(split, ImageFiles):
        return ImageFiles(split.paths, split.labels, transform, channels=3)
    if isinstance(split, TensorImages):
        return _PilImages(split, transform)
    raise ConfigError(f"predict reads image files or images held in memory, not a {type(split).__name__}")


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
    from safetensors import safe_open

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


def check_weights(weights: Sequence[str], models: Sequence[str]) -> None:
    """One ``--weights`` per ``--model``, in the same order."""
    if len(weights) != len(models):
        raise ConfigError(f"{len(models)} --model but {len(weights)} --weights: give one --weights FILE after each "
                          "--model (hseval downloads nothing; README says how to save a model's weights)")



PREDICTIONS_DIR = Path("~/.cache/hseval/predictions")
"""Where ``hseval evaluate --model`` keeps its prediction files by default (``--predictions-dir``)."""


def model_names(specs: Sequence[str], names: Sequence[str]) -> list[str]:
    """Each model's evaluation name: ``names`` where given (one per model), else the model's name
    (``resnet50``), with its library where two models share it (``timm-resnet50``)."""
    if names and len(names) != len(specs):
        raise ConfigError(f"{len(specs)} --model but {len(names)} --name: give one --name per --model, or none")
    if names:
        return list(names)
    parsed = [parse_model(spec) for spec in specs]
    bare = [name.replace("/", "-") for _, name in parsed]
    out = [b if bare.count(b) == 1 else f"{library}-{b}" for (library, _), b in zip(parsed, bare)]
    if len(set(out)) != len(out):
        twice = next(n for n in out if out.count(n) > 1)
        raise ConfigError(f"--model names {twice} twice; give each model its --name")
    return out


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
    from hseval.core.device import resolve_device
    from hseval.data import load_dataset
    from hseval.evaluation.predictions import evaluate_predictions

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
