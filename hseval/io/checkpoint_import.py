"""``hseval import``: a checkpoint trained elsewhere becomes an hseval run folder.

The checkpoint is read by :mod:`hseval.io.state_dict` (``.safetensors``, or a state dict that
``torch.load(weights_only=True)`` reads; flat or nested, ``module.`` and ``--prefix`` stripped);
run.json records where each tensor came from. Every tensor of the hseval model gets exactly one
tensor of the checkpoint:

- ``backbone.body.X`` takes ``X``: the key names of a torchvision ResNet/DenseNet (``conv1.weight``,
  ``layer1.0.bn1.running_mean``, ``features.denseblock1...``), or the positions of the small CNN's
  ``nn.Sequential`` (``0.weight``, ``1.running_var``...); ``num_batches_tracked`` may be absent;
- the leaf weights of ``plain`` and ``multitask`` take ``fc.weight`` (``classifier.weight`` for a
  DenseNet), shape (|L|, d): one row per class of the tree, in the tree's class order. A bias
  there is dropped when it is zero and refused otherwise (hseval's heads have none; ``ignore``
  drops it anyway);
- every other trained tensor of a head (Δ, learnable radii, the multitask level heads, the
  hyperbolic head's points) needs an explicit ``mapping`` {hseval key: checkpoint key}; a key
  spelled as hseval spells it (``head.delta``) is taken as it is. Tensors that hseval derives from
  the tree or the head's options (the tree index, fixed radii, the curvature) are hseval's own
  unless mapped.

A missing, unused or misshapen tensor, a non-float tensor, NaN, infinity or a negative BatchNorm
running variance (checked as a trained run's tensors are) is a one-line error naming the key and
the shape hseval needs, before anything is written. The run's classes are the leaves of the tree; when the
dataset is at hand, its classes must be those, in that order, and its images must have the
backbone's channels; when it is not, the run records the dataset and ``hseval evaluate`` checks it.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import torch

from hseval.core.errors import ConfigError, DataError, HierarchyError, HsevalWarning, first_line
from hseval.core.fileio import sha256
from hseval.core.overrides import parse_override
from hseval.data import load_with_tree
from hseval.data.base import DATASETS
from hseval.io.output import OutputFolder
from hseval.io.run_format import run_folder_state, save_run
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
from hseval.nn.backbones import BACKBONES, create_backbone
from hseval.nn.heads import HEADS
from hseval.nn.model import build_model
from hseval.tree import read_hierarchy
from hseval.tree.formats import companions
from hseval.tree.hierarchy import Hierarchy

__all__ = ["import_checkpoint", "RunTarget"]

HEAD_DEFAULTS = {"resnet": "fc", "densenet": "classifier", "small-cnn": "fc"}
"""The last layer of a torchvision-style model of each backbone family: its weight becomes the leaf
weights of ``plain``/``multitask``."""
LEAF_WEIGHT = "head.classifier.weight"


class RunTarget(Target):
    """An hseval model (backbone and head) as the target of a checkpoint trained elsewhere: the
    torchvision names of the backbone, the last layer as the leaf weights, and messages that say
    which backbone or head needs what (see the module docstring)."""

    def __init__(self, model: torch.nn.Module) -> None:
        backbone, head = model.backbone.name, model.head.name
        super().__init__(model, f"backbone {backbone!r} with head {head!r}")
        family = next((f for f in HEAD_DEFAULTS if backbone.startswith(f)), backbone)
        self.leaf_default = f"{HEAD_DEFAULTS.get(family, 'fc')}.weight"
        trained = {f"head.{n}" for n, p in model.head.named_parameters() if p.requires_grad}
        # every backbone tensor; of a head, its trained parameters (the rest follows from the tree and its options)
        self._required = {k: not k.endswith("num_batches_tracked") if k.startswith("backbone.") else k in trained
                          for k in self.expected}

    def required(self, key: str) -> bool:
        return self._required[key]

    def aliases(self, key: str) -> tuple[str, ...]:
        return (key, *[key.removeprefix(p) for p in ("backbone.body.", "backbone.") if key.startswith(p)],
                *([self.leaf_default] if key == LEAF_WEIGHT else []))

    def missing(self, key: str, state: StateDict) -> str:
        model, want = self.model, self.expected[key]
        backbone, head, tree = model.backbone.name, model.head.name, model.hierarchy
        after = f" (after stripping {state.stripped!r})" if state.stripped else ""
        if key.startswith("backbone.body."):
            return (f"has no {key.removeprefix('backbone.body.')!r}{after} of shape {shape_text(want)} for {key} of "
                    f"backbone {backbone!r}; is it a {backbone} state dict? (strip a prefix with --prefix, or --map "
                    f"{key}=KEY)")
        if key.startswith("backbone."):
            return super().missing(key, state)
        if key == LEAF_WEIGHT:
            return (f"has no {self.leaf_default!r}{after} for the leaf weights {key} of head {head!r}, shape "
                    f"{shape_text(want)} (one row per class of the tree, in its class order); pass --map {key}=KEY")
        rows = ""
        if want.dim() >= 1 and want.shape[0] == tree.num_nodes:
            rows = " (one row per node of the tree, in its node order)"
        elif want.dim() >= 1 and want.shape[0] == tree.num_leaves:
            rows = " (one row per class of the tree, in its class order)"
        needed = [k for k, v in self._required.items() if v and k.startswith("head.")]
        return (f"head {head!r} needs {key} of shape {shape_text(want)}{rows}; pass --map {key}=KEY for each of "
                f"{', '.join(needed)}")

    def needs(self, key: str, tensor: torch.Tensor) -> str:
        model, want, tree = self.model, self.expected[key], self.model.hierarchy
        if key.startswith("backbone."):
            config = model.backbone.config()
            owner = (f"backbone {model.backbone.name!r} (in_channels={config['in_channels']}, "
                     f"small_stem={config['small_stem']})")
        else:
            owner = (f"head {model.head.name!r} on this tree ({tree.num_leaves} classes, {tree.num_nodes} nodes) "
                     f"with {model.head.in_features}-d features")
        hint = ""
        if key.startswith("head.") and tensor.dim() == want.dim() >= 1 and tensor.shape[1:] == want.shape[1:]:
            if want.shape[0] == tree.num_leaves:
                hint = f": the checkpoint has {tensor.shape[0]} classes, the tree {tree.num_leaves}"
            elif want.shape[0] == tree.num_nodes:
                hint = f": one row per node of the tree ({tree.num_nodes}), the checkpoint has {tensor.shape[0]}"
        return f"{owner} needs {shape_text(want)} for {key}{hint}"

    def spare(self, state: StateDict, plan: dict[str, str | None], unused: list[str]) -> list[str]:
        """The bias of the last layer whose weight became the leaf weights, when it is zero."""
        bias = self.leaf_default.replace(".weight", ".bias")
        if plan.get(LEAF_WEIGHT) != self.leaf_default or bias not in unused:
            return []
        values = state.tensors[bias]
        if values.is_floating_point() and values.numel() and bool((values == 0).all()):
            return [bias]
        biggest = float(values.float().abs().max()) if values.numel() else 0.0
        raise StateDictError(f"{state.path}: {state.shown(bias)} is a bias (largest |value| {biggest:.3g}) but head "
                             f"{self.model.head.name!r} has none, so the imported logits would differ; pass --ignore "
                             f"{state.original[bias]} to drop it anyway")


# ---------------------------------------------------------------------------------- the command
def _head_options(items: list[str] | tuple[str, ...]) -> dict[str, Any]:
    pairs = (parse_override(item, form="head.OPTION=VALUE") for item in items)
    return {key.removeprefix("model.head_options.").removeprefix("head."): value for key, value in pairs}


def _stem(model_name: str) -> str:
    """The first convolution of a backbone (its input channels and kernel: the stem)."""
    with torch.device("meta"):
        probe = create_backbone(model_name)
    return (probe.stem or next(iter(probe.state_dict()))).removeprefix("body.")


def _infer_backbone(name: str, ckpt: StateDict, mapping: dict[str, str], in_channels: int | None,
                    small_stem: bool | None) -> tuple[int | None, bool | None]:
    """``in_channels`` and (torchvision models) ``small_stem`` read off the checkpoint's first
    convolution where not given: a 3×3 kernel is the small-image stem, a 7×7 one ImageNet's."""
    stem = _stem(name)
    key = mapping.get(f"backbone.body.{stem}")
    tensor = None
    for candidate in ([key] if key else []) + [f"backbone.body.{stem}", stem]:
        found = next((k for k, v in ckpt.original.items() if v == candidate), candidate)
        if found in ckpt.tensors:
            tensor = ckpt.tensors[found]
            break
    if tensor is None or tensor.dim() != 4:
        return in_channels, small_stem
    if in_channels is None:
        in_channels = int(tensor.shape[1])
    if small_stem is None and name != "small-cnn" and tensor.shape[-1] in (3, 7):
        small_stem = tensor.shape[-1] == 3
    return in_channels, small_stem


def _load_data(name: str, root: str | Path | None, tree: Hierarchy):
    """The dataset, or (None, why not) when it is not at hand (an unknown name is an error)."""
    try:
        return load_with_tree(name, root, tree), None
    except DataError as exc:
        return None, first_line(exc) if str(exc) else "not found"


def import_checkpoint(checkpoint: str | Path, out: str | Path, *, backbone: str, head: str,
                      hierarchy: str | Path | Hierarchy, dataset: str, data_root: str | Path | None = None,
                      in_channels: int | None = None, image_size: int | None = None, small_stem: bool | None = None,
                      embedding_dim: int | None = None, head_options: dict[str, Any] | list[str] | None = None,
                      mapping: dict[str, str] | list[str] | None = None, ignore: list[str] | tuple[str, ...] = (),
                      prefix: str | None = None, force: bool = False) -> Path:
    """Write the run folder ``out`` for ``checkpoint`` (see the module docstring); returns ``out``.

    Everything is checked before ``out`` is touched; ``out`` must be new, empty or (with ``force``)
    a run folder hseval wrote, holding nothing else. The run is written beside it and takes its
    place when complete. ``head_options`` and ``mapping`` also take the command line's
    ``OPTION=VALUE`` / ``HSEVAL_KEY=CHECKPOINT_KEY`` strings."""
    out = Path(out)
    options = _head_options(head_options) if isinstance(head_options, (list, tuple)) else dict(head_options or {})
    maps = parse_maps(mapping) if isinstance(mapping, (list, tuple)) else dict(mapping or {})
    BACKBONES.get(backbone)  # an unknown name: the registry's one-line error
    HEADS.get(head)
    DATASETS.get(dataset)
    folder = _out_folder(out, force=force, inputs=[checkpoint] + ([] if isinstance(hierarchy, Hierarchy) else
                                                                 [hierarchy, *companions(hierarchy)]))

    tree = hierarchy if isinstance(hierarchy, Hierarchy) else read_hierarchy(hierarchy)
    ckpt = read_state_dict(checkpoint, prefix=prefix)
    in_channels, small_stem = _infer_backbone(backbone, ckpt, maps, in_channels, small_stem)
    data, unavailable = _load_data(dataset, data_root, tree)
    if data is not None:  # the one class-order rule: the data's, whatever order the tree file lists
        tree = _in_data_order(data, tree, dataset)
    if image_size is None:
        image_size = data.image_size if data is not None else (32 if small_stem else 224)
    spec = {"backbone": {"name": backbone, "config": {"in_channels": in_channels or 3, "image_size": image_size,
                                                      "small_stem": small_stem, "embedding_dim": embedding_dim}},
            "head": {"name": head, "config": options}}
    model = build_model(spec, tree)
    plan, dropped = match_state_dict(ckpt, RunTarget(model), mapping=maps, ignore=ignore)
    if data is not None:
        _check_data(data, model, dataset)
    load_matched(model, ckpt, plan)
    model.eval()
    _warn_off_sphere(model, ckpt)
    if data is None:
        warnings.warn(f"dataset {dataset!r} is not at hand ({unavailable}); its classes were not checked against the "
                      "tree ('hseval evaluate' checks them)", HsevalWarning, stacklevel=2)

    source = {"path": str(ckpt.path.expanduser().resolve()), "sha256": sha256(ckpt.path, error=StateDictError),
              "format": ckpt.format, "container": ckpt.container, "prefix": ckpt.stripped,
              "mapping": {k: (ckpt.original[v] if v is not None else None) for k, v in plan.items()},
              "dropped": [ckpt.original[k] for k in dropped]}
    described = data.describe() if data is not None else {
        "name": dataset, "root": str(Path(data_root).expanduser().resolve()) if data_root else None,
        "class_names": list(tree.leaf_names)}
    meta = {"dataset": described, "imported_from": source, "seed": None}

    folder.details["imported_from"] = source["path"]
    with folder:
        save_run(folder.target, model, meta)
    return out


def _out_folder(out: Path, *, force: bool, inputs: list[Path]) -> OutputFolder:
    """The run folder ``out`` as an output folder, checked: new, empty, or with ``force`` a run;
    never one that holds ``inputs`` (the checkpoint, the tree)."""
    folder = OutputFolder(out, "run", replace=True, staged=True, reads=inputs)
    state = run_folder_state(out)
    if state != "new" and not force:
        what = "a run" if state == "finished" else "an unfinished run"
        raise ConfigError(f"{out}: already holds {what}; choose another --out or pass --force to replace it")
    return folder


def _in_data_order(data, tree: Hierarchy, name: str) -> Hierarchy:
    """``tree`` with its classes in the dataset's order (the order of its labels, which the rows of
    the checkpoint's class weights follow), matched by name; a tree of other classes is refused."""
    try:
        return tree.reorder_leaves(data.class_names, source=f"the classes of {name!r} at {data.root}")
    except HierarchyError as exc:
        raise DataError(f"{exc}; the tree must hold the dataset's classes") from None


def _check_data(data, model: torch.nn.Module, name: str) -> None:
    channels = model.backbone.config()["in_channels"]
    if channels != data.channels:
        raise ConfigError(f"the checkpoint's backbone takes {channels}-channel images but {name!r} has "
                          f"{data.channels} channel(s); import a model trained on this dataset")


def _warn_off_sphere(model: torch.nn.Module, ckpt: StateDict) -> None:
    """The riemann heads keep every δ_p on the unit sphere; an imported Δ that is not there still
    works, but its geometry is not the paper's."""
    if not model.head.name.startswith("riemann"):
        return
    norms = torch.linalg.vector_norm(model.head.delta.detach().double(), dim=1)
    if not bool(torch.allclose(norms, torch.ones_like(norms), atol=1e-3)):
        warnings.warn(f"{ckpt.path}: the rows of head.delta are not unit vectors (norms {float(norms.min()):.3g} to "
                      f"{float(norms.max()):.3g}) as head {model.head.name!r} keeps them; the logits are the "
                      "checkpoint's, but the geometry is not the paper's (head 'manifold' normalises them)",
                      HsevalWarning, stacklevel=3)
