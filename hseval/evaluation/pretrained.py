"""Pretrained classifiers by name: a torchvision or timm model (``torchvision:NAME``,
``timm:NAME``) built with the weights of a local file, its own preprocessing, its classifier, and
which of its output columns are a dataset's classes. :mod:`hseval.evaluation.zoo` runs them.

- **The model**: ``torchvision.models.get_model(NAME, weights=None)`` or
  ``timm.create_model(NAME, pretrained=False)`` with as many outputs as the weights' classifier
  has rows; the weights are a state dict read without running a pickle
  (:func:`hseval.io.state_dict.read_state_dict`), every tensor matched to the model's (a missing,
  unused or misshapen one is one line). hseval downloads nothing.
- **The preprocessing**: torchvision's ``get_model_weights(NAME)[RECIPE].transforms()`` (``recipe``:
  ``IMAGENET1K_V2``…, default the enum's ``DEFAULT``); timm's ``create_transform`` of
  ``resolve_data_config({}, model=model)``, the model's own pretrained configuration.
- **The classifier**: the model's last linear layer (timm's ``get_classifier()``, torchvision's last
  ``nn.Linear``): its input is the embedding, its rows the class vectors.
- **Columns**: a model with as many outputs as the dataset has classes keeps its columns in order
  (or in the order of ``classes``, the model's class names); a model with other outputs keeps the
  columns of the dataset's classes, found by name in ``classes`` (or, for a 1,000-way model on a
  dataset of ImageNet wnids, in ImageNet-1k's standard order) and says so. Logits restricted to the
  dataset's classes give, through the softmax, the model's probabilities *given* that the image is
  one of them.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torchvision
from torch import nn
from torch.utils.data import Dataset
from torchvision.transforms.v2.functional import to_pil_image

from hseval.core import fileio
from hseval.core.errors import ConfigError, DataError
from hseval.core.extras import require
from hseval.data import ImageFiles, LoadedDataset, TensorImages
from hseval.io.state_dict import Target, load_matched, match_state_dict, read_state_dict, shape_text
from hseval.tree.builders.packaged import read_table

__all__ = ["LIBRARIES", "ZooModel", "parse_model", "load_model", "model_columns", "model_inputs", "check_weights",
           "model_names"]

LIBRARIES = ("torchvision", "timm")


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
        image = to_pil_image(self.split.images[index]).convert("RGB")
        return self.transform(image), int(self.split.labels[index])


def model_inputs(split: Dataset, transform: Callable) -> Dataset:
    """``split`` (a dataset's) read through ``transform`` instead of hseval's preprocessing."""
    if isinstance(split, ImageFiles):
        return ImageFiles(split.paths, split.labels, transform, channels=3)
    if isinstance(split, TensorImages):
        return _PilImages(split, transform)
    raise ConfigError(f"predict reads image files or images held in memory, not a {type(split).__name__}")



def check_weights(weights: Sequence[str], models: Sequence[str]) -> None:
    """One ``--weights`` per ``--model``, in the same order."""
    if len(weights) != len(models):
        raise ConfigError(f"{len(models)} --model but {len(weights)} --weights: give one --weights FILE after each "
                          "--model (hseval downloads nothing; README says how to save a model's weights)")


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
