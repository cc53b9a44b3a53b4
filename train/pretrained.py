"""A backbone started from a state dict on disk (``model.init``, ``hseval train --init FILE``).

The file is read by :mod:`hseval.io.state_dict`, the reader ``hseval import`` uses (``.safetensors``,
or a ``.pt``/``.pth`` file read with ``torch.load(weights_only=True)`` only; ``model.init_prefix``
and ``model.init_map`` as ``--prefix`` and ``--map`` there). Its keys are those of the full model
the backbone comes from: torchvision's (``conv1.weight``, ``layer1.0.bn1.running_mean``) or, for a
``timm:`` backbone, timm's. Every tensor of the backbone's body must be in the file; its last
layer (``fc``, ``classifier``, timm's ``head``) is dropped, the bottleneck and the head start fresh.
A missing, unused or misshapen tensor is one line naming the key, before anything is trained.

``model.init`` may also be an hseval run folder: its ``model.safetensors`` gives the backbone
(body and bottleneck, its keys under ``backbone.``), and its own head is dropped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from hseval.core.errors import ConfigError
from hseval.core.fileio import sha256
from hseval.io.run_format import META_FILE, MODEL_FILE
from hseval.io.state_dict import (
    StateDict,
    StateDictError,
    Target,
    load_matched,
    match_state_dict,
    parse_maps,
    read_state_dict,
    shape_text,
)
from hseval.nn.backbones import Backbone
from hseval.train.config import ModelConfig

__all__ = ["BackboneTarget", "init_file", "read_init", "load_init"]


class BackboneTarget(Target):
    """A backbone's body as the target of a full model's state dict: keys without ``body.``, the
    bottleneck left as it is, the model's own last layer dropped."""

    def __init__(self, backbone: Backbone) -> None:
        config = backbone.config()
        super().__init__(backbone, f"backbone {backbone.name!r} (in_channels={config['in_channels']}, "
                                   f"small_stem={config['small_stem']})")

    def required(self, key: str) -> bool:
        return key.startswith("body.") and not key.endswith("num_batches_tracked")

    def aliases(self, key: str) -> tuple[str, ...]:
        return (key.removeprefix("body."), key)

    def missing(self, key: str, state: StateDict) -> str:
        after = f" (after stripping {state.stripped!r})" if state.stripped else ""
        return (f"has no {key.removeprefix('body.')!r}{after} of shape {shape_text(self.expected[key])} for "
                f"{self.described}; is it a {self.model.name.removeprefix('timm:')} state dict? (strip a prefix with "
                f"--prefix, or --map {key}=KEY)")

    def needs(self, key: str, tensor: torch.Tensor) -> str:
        """What the backbone needs for ``key``; of its first convolution (the only tensor whose input
        channels are the images'), why: the data's channels or the stem's kernel."""
        want, hint = self.expected[key], ""
        stem = key == self.model.stem and tensor.dim() == 4
        if stem and tensor.shape[1] != want.shape[1]:
            hint = f": the file's first convolution takes {tensor.shape[1]} channel(s), the data has {want.shape[1]}"
        elif stem and tensor.shape[-1] != want.shape[-1]:
            small = tensor.shape[-1] == 3
            hint = (f": the file's stem is {tensor.shape[-1]}×{tensor.shape[-1]}; pass --set "
                    f"model.small_stem={'true' if small else 'false'}")
        return f"{self.described} needs {shape_text(want)} for {key}{hint}"

    def spare(self, state: StateDict, plan: dict[str, str | None], unused: list[str]) -> list[str]:
        """The full model's last layer (its classes are not the tree's): the head starts fresh."""
        last = self.model.classifier
        return [k for k in unused if last and (k == last or k.startswith(f"{last}."))]


def init_file(init: str | Path) -> tuple[Path, bool]:
    """The state dict file of ``model.init``, and whether it is an hseval run's (the folder's
    ``model.safetensors``, where the backbone's keys start with ``backbone.``)."""
    path = Path(init).expanduser()
    if path.is_dir() and (path / META_FILE).is_file():
        return path / MODEL_FILE, True
    return path, False


def read_init(config: ModelConfig, backbone: Backbone) -> tuple[StateDict, dict[str, str | None], list[str]]:
    """The file of ``config.init`` read and matched to ``backbone`` (what :func:`load_init` loads);
    one-line errors name the file and the key."""
    path, of_run = init_file(config.init)
    if of_run and config.init_prefix:
        raise ConfigError(f"--prefix {config.init_prefix}: --init {config.init} is an hseval run, whose backbone's "
                          "keys hseval knows; leave --prefix out")
    state = read_state_dict(path, prefix="backbone." if of_run else config.init_prefix)
    ignore = [*config.init_ignore, *(k for k in state.tensors if of_run and k.startswith("head."))]  # its own head
    maps = {}
    for key, source in parse_maps(config.init_map).items():  # backbone.body.X, body.X or the file's own X
        key = key.removeprefix("backbone.")
        maps[key if key.startswith(("body.", "bottleneck.")) else f"body.{key}"] = source
    plan, dropped = match_state_dict(state, BackboneTarget(backbone), mapping=maps, ignore=ignore)
    return state, plan, dropped


def load_init(config: ModelConfig, backbone: Backbone) -> dict[str, Any]:
    """Load ``config.init`` into ``backbone``; returns what run.json records: the file, its SHA-256,
    and which tensor of the file each backbone tensor took (None: the backbone's own)."""
    state, plan, dropped = read_init(config, backbone)
    load_matched(backbone, state, plan)
    return {"path": str(Path(state.path).expanduser().resolve()), "sha256": sha256(state.path, error=StateDictError),
            "format": state.format, "container": state.container, "prefix": state.stripped,
            "mapping": {f"backbone.{k}": (state.original[v] if v is not None else None) for k, v in plan.items()},
            "dropped": [state.original[k] for k in dropped]}
