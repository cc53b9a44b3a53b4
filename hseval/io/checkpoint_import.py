"""``hseval import``: a checkpoint trained elsewhere becomes an hseval run folder.

The checkpoint is a ``.safetensors`` file, or a ``.pt``/``.pth``/``.bin``/``.ckpt`` file read with
``torch.load(weights_only=True)`` only (a pickle that would build Python objects is refused and
never run). It holds a flat mapping of names to tensors, or one nested under the first of
``state_dict``, ``model_state_dict`` or ``model`` (the rest of the file, e.g. an optimiser's
state, is ignored; run.json records which one was used). A prefix shared by every key
(``module.`` of DDP, ``_orig_mod.`` of ``torch.compile``) is stripped; ``prefix`` strips another
one from the keys that carry it.

Every tensor of the hseval model gets exactly one tensor of the checkpoint:

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

A missing, unused or misshapen tensor, a non-float tensor, NaN or infinity is a one-line error
naming the key and the shape hseval needs. The run's classes are the leaves of the tree; when the
dataset is at hand, its classes must be those, in that order, and its images must have the
backbone's channels; when it is not, the run records the dataset and ``hseval evaluate`` checks it.
"""

from __future__ import annotations

import hashlib
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from hseval.core.errors import ConfigError, DataError, HsevalError, HsevalWarning, first_line
from hseval.io.output import OutputFolder
from hseval.io.run_format import RUN_ENTRIES, run_folder_state, save_run
from hseval.tree import read_hierarchy
from hseval.tree.hierarchy import Hierarchy

__all__ = ["CheckpointError", "Checkpoint", "read_checkpoint", "import_checkpoint", "plan_mapping", "TORCH_SUFFIXES",
           "CONTAINERS", "AUTO_PREFIXES"]

SAFETENSORS_SUFFIXES = (".safetensors",)
TORCH_SUFFIXES = (".pt", ".pth", ".bin", ".ckpt")
CONTAINERS = ("state_dict", "model_state_dict", "model")
"""Keys under which a checkpoint may nest its state dict, tried in this order."""
AUTO_PREFIXES = ("module.", "_orig_mod.")
"""Prefixes stripped when every key carries them (DDP, torch.compile)."""
HEAD_DEFAULTS = {"resnet": "fc", "densenet": "classifier", "small-cnn": "fc"}
"""The last layer of a torchvision-style model of each backbone family: its weight becomes the leaf
weights of ``plain``/``multitask``."""
LEAF_WEIGHT = "head.classifier.weight"
_SHOWN = 6


class CheckpointError(HsevalError):
    """A checkpoint cannot become a run (an unreadable file, a missing or misshapen tensor)."""


@dataclass
class Checkpoint:
    """The tensors of a checkpoint file, keyed by their names after prefix stripping."""

    path: Path
    format: str                                   # "safetensors" or "torch"
    container: str | None                         # the key the state dict was nested under
    tensors: dict[str, torch.Tensor] = field(repr=False)
    original: dict[str, str] = field(repr=False)  # stripped key -> key in the file
    stripped: str | None = None                   # the prefix removed from the keys

    def shown(self, key: str) -> str:
        return repr(self.original.get(key, key))


# ---------------------------------------------------------------------------------- reading
def read_checkpoint(path: str | Path, *, prefix: str | None = None) -> Checkpoint:
    """Read the tensors of ``path`` (see the module docstring); one-line errors name the file."""
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"{path}: no such checkpoint file")
    if not path.is_file():
        raise CheckpointError(f"{path}: is not a file; expected a .safetensors or .pt/.pth checkpoint")
    suffix = path.suffix.lower()
    if suffix in SAFETENSORS_SUFFIXES:
        fmt, data = "safetensors", _read_safetensors(path)
    elif suffix in TORCH_SUFFIXES:
        fmt, data = "torch", _read_torch(path)
    else:
        raise CheckpointError(f"{path}: unknown checkpoint type {path.suffix or '(no extension)'!r}; expected a "
                              f".safetensors file or a state dict saved by torch.save ({', '.join(TORCH_SUFFIXES)})")
    container = None
    if isinstance(data, dict):
        container = next((k for k in CONTAINERS if isinstance(data.get(k), dict)), None)
        if container is not None:
            data = data[container]
    if not isinstance(data, dict) or not data:
        what = "an empty mapping" if isinstance(data, dict) else f"a {type(data).__name__}"
        raise CheckpointError(f"{path}: holds {what}; expected a mapping of names to tensors (a state dict), flat or "
                              f"under {', '.join(repr(k) for k in CONTAINERS)}")
    for key, value in data.items():
        if not isinstance(key, str):
            raise CheckpointError(f"{path}: has a key {key!r} that is not a string; expected a state dict")
        if not isinstance(value, torch.Tensor):
            where = f"{container}." if container else ""
            raise CheckpointError(f"{path}: '{where}{key}' is a {type(value).__name__}, not a tensor; expected a "
                                  "mapping of names to tensors (a state dict)")
    original = {k: k for k in data}
    stripped = None
    for auto in AUTO_PREFIXES:
        if all(k.startswith(auto) for k in original):
            original = {k[len(auto):]: v for k, v in original.items()}
            stripped = (stripped or "") + auto
    if prefix:
        if not any(k.startswith(prefix) for k in original):
            first = ", ".join(repr(v) for v in list(original.values())[:3])
            raise CheckpointError(f"{path}: no key starts with --prefix {prefix!r} (its keys start like {first})")
        renamed: dict[str, str] = {}
        for key, source in original.items():
            new = key[len(prefix):] if key.startswith(prefix) else key
            if new in renamed:
                raise CheckpointError(f"{path}: stripping --prefix {prefix!r} gives two tensors the name {new!r} "
                                      f"({renamed[new]!r} and {source!r})")
            renamed[new] = source
        original = renamed
        stripped = (stripped or "") + prefix
    tensors = {key: data[source] for key, source in original.items()}
    return Checkpoint(path=path, format=fmt, container=container, tensors=tensors, original=original,
                      stripped=stripped)


def _read_safetensors(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    try:
        return load_file(str(path), device="cpu")
    except Exception as exc:  # SafetensorError, OSError, ValueError... for a damaged file
        raise CheckpointError(f"{path}: not a readable safetensors file ({_reason(exc)}); expected tensors saved "
                              "with safetensors") from None


def _read_torch(path: Path) -> Any:
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # UnpicklingError, RuntimeError, EOFError... for a bad or unsafe file
        import re

        refused = re.search(r"GLOBAL\s+([\w.]+)", str(exc))
        if refused:
            raise CheckpointError(f"{path}: holds Python objects that a weights-only load refuses (it would call "
                                  f"{refused.group(1)}; a pickle can run code); hseval reads tensors only: save "
                                  "model.state_dict() with torch.save or as .safetensors") from None
        raise CheckpointError(f"{path}: cannot be read as a PyTorch checkpoint ({type(exc).__name__}); expected a "
                              "state dict saved with torch.save, or a .safetensors file") from None


def _reason(exc: BaseException) -> str:
    return first_line(exc, limit=160)


# ---------------------------------------------------------------------------------- mapping
def _shape(t: torch.Tensor | torch.Size) -> str:
    shape = tuple(t.shape if isinstance(t, torch.Tensor) else t)
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def _family(backbone: str) -> str:
    return next((f for f in HEAD_DEFAULTS if backbone.startswith(f)), backbone)


def _required(model: torch.nn.Module) -> dict[str, bool]:
    """{hseval key: whether the checkpoint must provide it}: every backbone tensor but
    ``num_batches_tracked``; a head's trained parameters (its buffers and fixed parameters follow
    from the tree and its options)."""
    trained = {f"head.{n}" for n, p in model.head.named_parameters() if p.requires_grad}
    out = {}
    for key in model.state_dict():
        if key.startswith("backbone."):
            out[key] = not key.endswith("num_batches_tracked")
        else:
            out[key] = key in trained
    return out


def plan_mapping(model: torch.nn.Module, ckpt: Checkpoint, mapping: dict[str, str] | None = None,
                 ignore: tuple[str, ...] | list[str] = ()) -> tuple[dict[str, str | None], list[str]]:
    """({hseval key: checkpoint key or None for hseval's own tensor}, checkpoint keys dropped),
    after checking that every tensor is there, used, of the right shape, float and finite."""
    mapping = dict(mapping or {})
    expected = model.state_dict()
    required = _required(model)
    backbone, head = model.backbone.name, model.head.name
    where = ckpt.path

    def source_key(text: str, option: str) -> str:
        if text in ckpt.tensors:
            return text
        found = next((k for k, v in ckpt.original.items() if v == text), None)
        if found is None:
            raise CheckpointError(f"{where}: has no tensor {text!r} ({option}); its keys include "
                                  f"{_some(list(ckpt.original.values()))}")
        return found

    for key in mapping:
        if key not in expected:
            heads = _some([k for k in expected if k.startswith("head.")])
            raise ConfigError(f"--map {key}=...: the model (backbone {backbone!r}, head {head!r}) has no tensor "
                              f"{key!r}; its head's tensors are {heads}")
    explicit = {key: source_key(src, f"--map {key}={src}") for key, src in mapping.items()}
    ignored = [source_key(k, f"--ignore {k}") for k in ignore]
    leaf_default = f"{HEAD_DEFAULTS.get(_family(backbone), 'fc')}.weight"

    plan: dict[str, str | None] = {}
    for key in expected:
        if key in explicit:
            plan[key] = explicit[key]
        elif key in ckpt.tensors:  # spelled as hseval spells it
            plan[key] = key
        elif key.startswith("backbone.body.") and key.removeprefix("backbone.body.") in ckpt.tensors:
            plan[key] = key.removeprefix("backbone.body.")
        elif key.startswith("backbone.") and key.removeprefix("backbone.") in ckpt.tensors:
            plan[key] = key.removeprefix("backbone.")
        elif key == LEAF_WEIGHT and leaf_default in ckpt.tensors:
            plan[key] = leaf_default
        else:
            plan[key] = None

    for key, src in plan.items():  # missing first: the most useful message
        if src is None and required[key]:
            raise CheckpointError(f"{where}: {_missing(key, expected[key], model, ckpt, leaf_default)}")
    dropped: list[str] = []
    used = {src for src in plan.values() if src is not None}
    bias = leaf_default.replace(".weight", ".bias")
    if plan.get(LEAF_WEIGHT) == leaf_default and bias in ckpt.tensors and bias not in used and bias not in ignored:
        values = ckpt.tensors[bias]
        if values.is_floating_point() and values.numel() and bool((values == 0).all()):
            dropped.append(bias)
        else:
            biggest = float(values.float().abs().max()) if values.numel() else 0.0
            raise CheckpointError(f"{where}: {ckpt.shown(bias)} is a bias (largest |value| {biggest:.3g}) but head "
                                  f"{head!r} has none, so the imported logits would differ; pass --ignore "
                                  f"{ckpt.original[bias]} to drop it anyway")
    unused = [k for k in ckpt.tensors if k not in used and k not in ignored and k not in dropped]
    if unused:
        key = unused[0]
        more = f" (and {len(unused) - 1} more)" if len(unused) > 1 else ""
        raise CheckpointError(f"{where}: {ckpt.shown(key)} of shape {_shape(ckpt.tensors[key])} is not used by "
                              f"backbone {backbone!r} with head {head!r}{more}; map it with --map HSEVAL_KEY="
                              f"{ckpt.original[key]} or drop it with --ignore {ckpt.original[key]}")
    for key, src in plan.items():
        if src is None:
            continue
        tensor, want = ckpt.tensors[src], expected[key]
        if tuple(tensor.shape) != tuple(want.shape):
            hint = _rows_hint(key, tensor, want, model)
            raise CheckpointError(f"{where}: {ckpt.shown(src)} has shape {_shape(tensor)} but "
                                  f"{_owner(key, model)} needs {_shape(want)} for {key}{hint}")
        if want.is_floating_point() and not tensor.is_floating_point():
            raise CheckpointError(f"{where}: {ckpt.shown(src)} holds {_dtype(tensor)} values but {key} is a float "
                                  "tensor; expected floating-point weights")
        if not want.is_floating_point() and (tensor.is_floating_point() or tensor.is_complex()
                                             or tensor.dtype == torch.bool):
            raise CheckpointError(f"{where}: {ckpt.shown(src)} holds {_dtype(tensor)} values but {key} is an integer "
                                  f"counter ({_dtype(want)})")
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise CheckpointError(f"{where}: {ckpt.shown(src)} holds NaN or infinite values; the model diverged or "
                                  "the file is damaged")
    return plan, sorted(set(dropped) | set(ignored))


def _dtype(t: torch.Tensor) -> str:
    return str(t.dtype).removeprefix("torch.")


def _some(keys: list[str]) -> str:
    shown = ", ".join(repr(k) for k in keys[:_SHOWN])
    return shown + (f" ... ({len(keys)} in all)" if len(keys) > _SHOWN else "") if keys else "(none)"


def _owner(key: str, model: torch.nn.Module) -> str:
    if key.startswith("backbone."):
        config = model.backbone.config()
        return (f"backbone {model.backbone.name!r} (in_channels={config['in_channels']}, "
                f"small_stem={config['small_stem']})")
    tree = model.hierarchy
    return (f"head {model.head.name!r} on this tree ({tree.num_leaves} classes, {tree.num_nodes} nodes) with "
            f"{model.head.in_features}-d features")


def _rows_hint(key: str, tensor: torch.Tensor, want: torch.Tensor, model: torch.nn.Module) -> str:
    if not key.startswith("head.") or tensor.dim() != want.dim() or tensor.dim() < 1 or \
            tensor.shape[1:] != want.shape[1:]:
        return ""
    tree = model.hierarchy
    if want.shape[0] == tree.num_leaves:
        return f": the checkpoint has {tensor.shape[0]} classes, the tree {tree.num_leaves}"
    if want.shape[0] == tree.num_nodes:
        return f": one row per node of the tree ({tree.num_nodes}), the checkpoint has {tensor.shape[0]}"
    return ""


def _missing(key: str, want: torch.Tensor, model: torch.nn.Module, ckpt: Checkpoint, leaf_default: str) -> str:
    """What is missing: the key hseval looked for, after the prefix was stripped."""
    backbone, head = model.backbone.name, model.head.name
    after = f" (after stripping {ckpt.stripped!r})" if ckpt.stripped else ""
    if key.startswith("backbone.body."):
        return (f"has no {key.removeprefix('backbone.body.')!r}{after} of shape {_shape(want)} for {key} of backbone "
                f"{backbone!r}; is it a {backbone} state dict? (strip a prefix with --prefix, or --map {key}=KEY)")
    if key.startswith("backbone."):
        return f"has no tensor for {key} of shape {_shape(want)}; pass --map {key}=KEY"
    if key == LEAF_WEIGHT:
        return (f"has no {leaf_default!r}{after} for the leaf weights {key} of head {head!r}, shape "
                f"{_shape(want)} (one row per class of the tree, in its class order); pass --map {key}=KEY")
    rows = ""
    tree = model.hierarchy
    if want.dim() >= 1 and want.shape[0] == tree.num_nodes:
        rows = " (one row per node of the tree, in its node order)"
    elif want.dim() >= 1 and want.shape[0] == tree.num_leaves:
        rows = " (one row per class of the tree, in its class order)"
    needed = [k for k, v in _required(model).items() if v and k.startswith("head.")]
    return (f"head {head!r} needs {key} of shape {_shape(want)}{rows}; pass --map {key}=KEY for each of "
            f"{', '.join(needed)}")


# ---------------------------------------------------------------------------------- the command
def _parse_sets(items: list[str] | tuple[str, ...]) -> dict[str, Any]:
    import yaml

    options: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--set expects head.OPTION=VALUE, got {item!r}")
        option = key.removeprefix("model.head_options.").removeprefix("head.")
        try:
            options[option] = yaml.safe_load(text) if text.strip() else None
        except yaml.YAMLError:
            options[option] = text
    return options


def _parse_maps(items: list[str] | tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, source = item.partition("=")
        key, source = key.strip(), source.strip()
        if not sep or not key or not source:
            raise ConfigError(f"--map expects HSEVAL_KEY=CHECKPOINT_KEY (e.g. head.delta=classifier.delta), got "
                              f"{item!r}")
        if key in out:
            raise ConfigError(f"--map {key}=... is given twice")
        out[key] = source
    return out


def _stem(model_name: str) -> str:
    """The first convolution of a backbone (its input channels and kernel: the stem)."""
    from hseval.nn.backbones import create_backbone

    with torch.device("meta"):
        probe = create_backbone(model_name)
    return next(iter(probe.state_dict())).removeprefix("body.")


def _infer_backbone(name: str, ckpt: Checkpoint, mapping: dict[str, str], in_channels: int | None,
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
    """The dataset, or (None, why not) when it is not at hand."""
    from hseval.data import load_dataset
    from hseval.data.base import dataset_options

    options: dict[str, Any] = {}
    known = dataset_options(name)  # an unknown name is an error, not a missing dataset
    if "download" in known:
        options["download"] = False
    if "hierarchy" in known:
        options["hierarchy"] = tree
    try:
        return load_dataset(name, root, **options), None
    except DataError as exc:
        return None, first_line(exc) if str(exc) else "not found"


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


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
    from hseval.data.base import dataset_options
    from hseval.nn.backbones import BACKBONES
    from hseval.nn.heads import head_class
    from hseval.nn.model import build_model

    out = Path(out)
    options = _parse_sets(head_options) if isinstance(head_options, (list, tuple)) else dict(head_options or {})
    maps = _parse_maps(mapping) if isinstance(mapping, (list, tuple)) else dict(mapping or {})
    BACKBONES.get(backbone)  # an unknown name: the registry's one-line error
    head_class(head)
    dataset_options(dataset)
    folder = _out_folder(out, force=force)

    tree = hierarchy if isinstance(hierarchy, Hierarchy) else read_hierarchy(hierarchy)
    ckpt = read_checkpoint(checkpoint, prefix=prefix)
    in_channels, small_stem = _infer_backbone(backbone, ckpt, maps, in_channels, small_stem)
    data, unavailable = _load_data(dataset, data_root, tree)
    if image_size is None:
        image_size = data.image_size if data is not None else (32 if small_stem else 224)
    spec = {"backbone": {"name": backbone, "config": {"in_channels": in_channels or 3, "image_size": image_size,
                                                      "small_stem": small_stem, "embedding_dim": embedding_dim}},
            "head": {"name": head, "config": options}}
    model = build_model(spec, tree)
    plan, dropped = plan_mapping(model, ckpt, maps, ignore)
    if data is not None:
        _check_data(data, tree, model, dataset)

    state = model.state_dict()
    for key, src in plan.items():
        if src is not None:
            state[key] = ckpt.tensors[src].to(state[key].dtype)
    model.load_state_dict(state, strict=True)
    model.eval()
    _warn_off_sphere(model, ckpt)
    if data is None:
        warnings.warn(f"dataset {dataset!r} is not at hand ({unavailable}); its classes were not checked against the "
                      "tree ('hseval evaluate' checks them)", HsevalWarning, stacklevel=2)

    source = {"path": str(ckpt.path.expanduser().resolve()), "sha256": _file_sha256(ckpt.path), "format": ckpt.format,
              "container": ckpt.container, "prefix": ckpt.stripped,
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


def _out_folder(out: Path, *, force: bool) -> OutputFolder:
    """The run folder ``out`` as an output folder, checked: new, empty, or with ``force`` a run."""
    folder = OutputFolder(out, "run", replace=True, staged=True, own=RUN_ENTRIES)
    state = run_folder_state(out)
    if state != "new" and not force:
        what = "a run" if state == "finished" else "an unfinished run"
        raise ConfigError(f"{out}: already holds {what}; choose another --out or pass --force to replace it")
    return folder


def _check_data(data, tree: Hierarchy, model: torch.nn.Module, name: str) -> None:
    classes, leaves = list(data.class_names), list(tree.leaf_names)
    if classes != leaves:
        differ = next((i for i, (a, b) in enumerate(zip(classes, leaves)) if a != b), min(len(classes), len(leaves)))
        shown = (f": class {differ} is {classes[differ]!r} in the dataset, {leaves[differ]!r} in the tree"
                 if differ < min(len(classes), len(leaves)) else "")
        raise DataError(f"the tree's {len(leaves)} classes are not the {len(classes)} classes of {name!r} at "
                        f"{data.root} in their order{shown}; the rows of the checkpoint's class weights follow the "
                        "dataset's labels, so write the tree's classes in that order")
    channels = model.backbone.config()["in_channels"]
    if channels != data.channels:
        raise ConfigError(f"the checkpoint's backbone takes {channels}-channel images but {name!r} has "
                          f"{data.channels} channel(s); import a model trained on this dataset")


def _warn_off_sphere(model: torch.nn.Module, ckpt: Checkpoint) -> None:
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
