"""A model's tensors from a file saved elsewhere: read without running a pickle, then matched key by
key to the model hseval built, with a one-line error for each tensor that does not fit.

Reading (:func:`read_state_dict`): a ``.safetensors`` file, or a ``.pt``/``.pth``/``.bin``/``.ckpt``
file read with ``torch.load(weights_only=True)`` only (a pickle that would build Python objects is
refused and never run). It holds a flat mapping of names to tensors, or one nested under the first
of ``state_dict``, ``model_state_dict`` or ``model`` (the rest of the file, e.g. an optimiser's
state, is ignored). A prefix shared by every key (``module.`` of DDP, ``_orig_mod.`` of
``torch.compile``) is stripped; ``prefix`` (``--prefix``) strips another one from the keys that
carry it.

Matching (:func:`match_state_dict`): every tensor of the model takes exactly one tensor of the
file: the one ``--map MODEL_KEY=FILE_KEY`` names, else the first of its :meth:`Target.aliases` the
file holds. A missing, unused or misshapen tensor, integers where weights are expected, NaN,
infinity or a negative BatchNorm running variance (:func:`value_problem`, the check a trained run's
tensors get too) is one line naming the key and the shape the model needs. :class:`Target` says which
tensors the file must give, where to look for them and how to explain what is missing; a command
subclasses it for its own models.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from hseval.core.errors import ConfigError, HsevalError, first_line

__all__ = ["StateDictError", "StateDict", "read_state_dict", "parse_maps", "Target", "match_state_dict",
           "load_matched", "value_problem", "shape_text", "some", "CONTAINERS", "AUTO_PREFIXES", "TORCH_SUFFIXES"]

TORCH_SUFFIXES = (".pt", ".pth", ".bin", ".ckpt")
CONTAINERS = ("state_dict", "model_state_dict", "model")
"""Keys under which a checkpoint may nest its state dict, tried in this order."""
AUTO_PREFIXES = ("module.", "_orig_mod.")
"""Prefixes stripped when every key carries them (DDP, torch.compile)."""
_SHOWN = 6


class StateDictError(HsevalError):
    """A file's tensors cannot become the model's (an unreadable file, a missing or misshapen tensor)."""


@dataclass
class StateDict:
    """The tensors of a file, keyed by their names after prefix stripping."""

    path: Path
    format: str                                   # "safetensors" or "torch"
    container: str | None                         # the key the state dict was nested under
    tensors: dict[str, torch.Tensor] = field(repr=False)
    original: dict[str, str] = field(repr=False)  # stripped key -> key in the file
    stripped: str | None = None                   # the prefix removed from the keys

    def shown(self, key: str) -> str:
        """``key`` as the file spells it, quoted."""
        return repr(self.original.get(key, key))

    def key(self, text: str, option: str) -> str:
        """The key of the tensor that ``option`` names as ``text`` (stripped, or as the file spells it)."""
        if text in self.tensors:
            return text
        found = next((k for k, v in self.original.items() if v == text), None)
        if found is None:
            raise StateDictError(f"{self.path}: has no tensor {text!r} ({option}); its keys include "
                                 f"{some(list(self.original.values()))}")
        return found


def read_state_dict(path: str | Path, *, prefix: str | None = None) -> StateDict:
    """Read the tensors of ``path`` (see the module docstring); one-line errors name the file."""
    path = Path(path)
    if not path.exists():
        raise StateDictError(f"{path}: no such checkpoint file")
    if not path.is_file():
        raise StateDictError(f"{path}: is not a file; expected a .safetensors or .pt/.pth checkpoint")
    suffix = path.suffix.lower()
    if suffix == ".safetensors":
        fmt, data = "safetensors", _read_safetensors(path)
    elif suffix in TORCH_SUFFIXES:
        fmt, data = "torch", _read_torch(path)
    else:
        raise StateDictError(f"{path}: unknown checkpoint type {path.suffix or '(no extension)'!r}; expected a "
                             f".safetensors file or a state dict saved by torch.save ({', '.join(TORCH_SUFFIXES)})")
    container = None
    if isinstance(data, dict):
        container = next((k for k in CONTAINERS if isinstance(data.get(k), dict)), None)
        data = data if container is None else data[container]
    if not isinstance(data, dict) or not data:
        what = "an empty mapping" if isinstance(data, dict) else f"a {type(data).__name__}"
        raise StateDictError(f"{path}: holds {what}; expected a mapping of names to tensors (a state dict), flat or "
                             f"under {', '.join(repr(k) for k in CONTAINERS)}")
    for key, value in data.items():
        if not isinstance(key, str):
            raise StateDictError(f"{path}: has a key {key!r} that is not a string; expected a state dict")
        if not isinstance(value, torch.Tensor):
            where = f"{container}." if container else ""
            raise StateDictError(f"{path}: '{where}{key}' is a {type(value).__name__}, not a tensor; expected a "
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
            raise StateDictError(f"{path}: no key starts with --prefix {prefix!r} (its keys start like {first})")
        renamed: dict[str, str] = {}
        for key, source in original.items():
            new = key.removeprefix(prefix)
            if new in renamed:
                raise StateDictError(f"{path}: stripping --prefix {prefix!r} gives two tensors the name {new!r} "
                                     f"({renamed[new]!r} and {source!r})")
            renamed[new] = source
        original = renamed
        stripped = (stripped or "") + prefix
    return StateDict(path=path, format=fmt, container=container, tensors={k: data[v] for k, v in original.items()},
                     original=original, stripped=stripped)


def _read_safetensors(path: Path) -> dict[str, torch.Tensor]:
    try:
        return load_file(str(path), device="cpu")
    except Exception as exc:  # SafetensorError, OSError, ValueError... for a damaged file
        raise StateDictError(f"{path}: not a readable safetensors file ({first_line(exc, limit=160)}); expected "
                             "tensors saved with safetensors") from None


def _read_torch(path: Path) -> Any:
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # UnpicklingError, RuntimeError, EOFError... for a bad or unsafe file
        refused = re.search(r"GLOBAL\s+([\w.]+)", str(exc))
        if refused:
            raise StateDictError(f"{path}: holds Python objects that a weights-only load refuses (it would call "
                                 f"{refused.group(1)}; a pickle can run code); hseval reads tensors only: save "
                                 "model.state_dict() with torch.save or as .safetensors") from None
        raise StateDictError(f"{path}: cannot be read as a PyTorch checkpoint ({type(exc).__name__}); expected a "
                             "state dict saved with torch.save, or a .safetensors file") from None


def parse_maps(items: list[str] | tuple[str, ...]) -> dict[str, str]:
    """``--map MODEL_KEY=FILE_KEY`` strings as {model key: file key}; each model key once."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, source = (part.strip() for part in item.partition("="))
        if not sep or not key or not source:
            raise ConfigError(f"--map expects HSEVAL_KEY=CHECKPOINT_KEY (e.g. head.delta=classifier.delta), got "
                              f"{item!r}")
        if key in out:
            raise ConfigError(f"--map {key}=... is given twice")
        out[key] = source
    return out


def shape_text(t: torch.Tensor | torch.Size) -> str:
    """A shape as Python writes a tuple: ``(10,)``, ``(64, 3, 3, 3)``."""
    return str(tuple(t.shape if isinstance(t, torch.Tensor) else t))


def some(keys: list[str]) -> str:
    """The first few of ``keys``, quoted, and how many there are in all."""
    shown = ", ".join(repr(k) for k in keys[:_SHOWN])
    return shown + (f" ... ({len(keys)} in all)" if len(keys) > _SHOWN else "") if keys else "(none)"


def value_problem(key: str, tensor: torch.Tensor) -> str | None:
    """Why ``tensor``'s values cannot be those of the model's tensor ``key`` (None when they can):
    NaN or infinity anywhere, or a BatchNorm running variance below 0 (which turns every logit
    into NaN). Imported checkpoints and trained runs are checked alike."""
    if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
        return "holds NaN or infinite values"
    if key.endswith("running_var") and tensor.numel() and float(tensor.min()) < 0:
        return f"holds a negative running variance ({float(tensor.min()):.3g}; a variance is never below 0)"
    return None


def _dtype(t: torch.Tensor) -> str:
    return str(t.dtype).removeprefix("torch.")


class Target:
    """The model a file's tensors become, and how each of its tensors is found and explained.

    The defaults: every tensor is looked for under its own key and must be there, but for
    BatchNorm's ``num_batches_tracked`` (which then keeps the model's value).

    Parameters
    ----------
    model : the model, built (its state dict gives the keys, shapes and dtypes).
    described : how messages name the model.
    """

    def __init__(self, model: torch.nn.Module, described: str = "the model") -> None:
        self.model, self.described = model, described
        self.expected = model.state_dict()

    def required(self, key: str) -> bool:
        """Whether the file must give ``key`` (else the model keeps its own tensor)."""
        return not key.endswith("num_batches_tracked")

    def aliases(self, key: str) -> tuple[str, ...]:
        """The keys of the file that may hold ``key``, tried in order."""
        return (key,)

    def missing(self, key: str, state: StateDict) -> str:
        """Why ``key`` was not found, and what to do (after ``state``'s file name)."""
        return f"has no tensor for {key} of shape {shape_text(self.expected[key])}; pass --map {key}=KEY"

    def needs(self, key: str, tensor: torch.Tensor) -> str:
        """What the model needs for ``key``, which ``tensor`` of the file does not have the shape of."""
        return f"{self.described} needs {shape_text(self.expected[key])} for {key}"

    def unused(self, key: str) -> str:
        """What to do about the file's tensor ``key``, which the model does not use."""
        return f"map it with --map HSEVAL_KEY={key} or drop it with --ignore {key}"

    def spare(self, state: StateDict, plan: dict[str, str | None], unused: list[str]) -> list[str]:
        """Which of the ``unused`` keys of the file may be dropped without ``--ignore`` (none)."""
        return []


def match_state_dict(state: StateDict, target: Target, *, mapping: dict[str, str] | None = None,
                     ignore: tuple[str, ...] | list[str] = ()) -> tuple[dict[str, str | None], list[str]]:
    """Match the tensors of ``state`` to ``target``'s model and check them.

    Parameters
    ----------
    state : the file's tensors (:func:`read_state_dict`).
    target : the model and where to find its tensors.
    mapping : {model key: file key} (``--map``), the file key as stripped or as the file spells it.
    ignore : file keys the model does not use, dropped (``--ignore``).

    Returns
    -------
    ({model key: file key, or None where the model keeps its own tensor}, the file keys dropped).

    Raises
    ------
    StateDictError, ConfigError
        one line naming the first key that is missing, unused, of another shape or dtype, or whose
        values no model has (:func:`value_problem`).
    """
    expected = target.expected
    for key in mapping or {}:
        if key not in expected:
            related = [k for k in expected if k.split(".")[0] == key.split(".")[0]] or list(expected)
            raise ConfigError(f"--map {key}=...: {target.described} has no tensor {key!r}; its tensors include "
                              f"{some(related)}")
    explicit = {key: state.key(src, f"--map {key}={src}") for key, src in (mapping or {}).items()}
    ignored = [state.key(k, f"--ignore {k}") for k in ignore]
    plan = {key: explicit.get(key) or next((a for a in target.aliases(key) if a in state.tensors), None)
            for key in expected}
    for key, src in plan.items():  # missing first: the most useful message
        if src is None and target.required(key):
            raise StateDictError(f"{state.path}: {target.missing(key, state)}")
    used = {src for src in plan.values() if src is not None}
    unused = [k for k in state.tensors if k not in used and k not in ignored]
    dropped = target.spare(state, plan, unused)
    unused = [k for k in unused if k not in dropped]
    if unused:
        key, more = unused[0], f" (and {len(unused) - 1} more)" if len(unused) > 1 else ""
        raise StateDictError(f"{state.path}: {state.shown(key)} of shape {shape_text(state.tensors[key])} is not used "
                             f"by {target.described}{more}; {target.unused(state.original[key])}")
    for key, src in plan.items():
        if src is not None:
            _check_tensor(state, src, key, target)
    return plan, sorted(set(dropped) | set(ignored))


def _check_tensor(state: StateDict, src: str, key: str, target: Target) -> None:
    tensor, want, where = state.tensors[src], target.expected[key], f"{state.path}: {state.shown(src)}"
    if tuple(tensor.shape) != tuple(want.shape):
        raise StateDictError(f"{where} has shape {shape_text(tensor)} but {target.needs(key, tensor)}")
    if want.is_floating_point() and not tensor.is_floating_point():
        raise StateDictError(f"{where} holds {_dtype(tensor)} values but {key} is a float tensor; expected "
                             "floating-point weights")
    if not want.is_floating_point() and (tensor.is_floating_point() or tensor.is_complex()
                                         or tensor.dtype == torch.bool):
        raise StateDictError(f"{where} holds {_dtype(tensor)} values but {key} is an integer counter ({_dtype(want)})")
    problem = value_problem(key, tensor)
    if problem:
        raise StateDictError(f"{where} {problem}; the model diverged or the file is damaged")


def load_matched(model: torch.nn.Module, state: StateDict, plan: dict[str, str | None]) -> None:
    """Copy the file's tensors of ``plan`` (:func:`match_state_dict`) into ``model``, in its dtypes."""
    tensors = model.state_dict()
    for key, src in plan.items():
        if src is not None:
            tensors[key] = state.tensors[src].to(tensors[key].dtype)
    model.load_state_dict(tensors, strict=True)
