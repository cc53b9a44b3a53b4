"""The run format, the contract between ``train`` and the rest of hseval.

A run is a folder with:

- ``model.safetensors`` — every tensor of backbone and head (no pickle anywhere);
- ``run.json`` — schema version, the model spec, the hierarchy, dataset, training config, seed,
  history, final metrics, library versions, timestamp and the SHA-256 of ``model.safetensors``;
- ``train_state.pt`` — optimiser/scheduler/RNG state for resuming, read with
  ``torch.load(weights_only=True)`` only.

Writes are atomic; :func:`load_run` rebuilds the model from ``run.json`` alone and checks the
schema, the checksum, tensor names, shapes and values, with one-line errors.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import platform
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from hseval import fileio
from hseval.errors import HierarchyError, HsevalError, RunFormatError
from hseval.hierarchy import Hierarchy
from hseval.model import HierarchicalClassifier, build_model

__all__ = ["SCHEMA_VERSION", "MODEL_FILE", "META_FILE", "STATE_FILE", "Run", "save_run", "load_run",
           "read_run_meta", "is_run_dir", "save_train_state", "load_train_state"]

SCHEMA_VERSION = 1
MODEL_FILE = "model.safetensors"
META_FILE = "run.json"
STATE_FILE = "train_state.pt"


@dataclass
class Run:
    """A loaded run: its folder, the rebuilt model (in eval mode) and ``run.json``."""

    path: Path
    model: HierarchicalClassifier
    meta: dict[str, Any] = field(repr=False)

    @property
    def hierarchy(self) -> Hierarchy:
        return self.model.hierarchy

    @property
    def head_name(self) -> str:
        return self.meta["model"]["head"]["name"]


def library_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for package in ("hseval", "torch", "torchvision", "geoopt", "numpy", "safetensors"):
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            out[package] = "not installed"
    return out


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def save_run(run_dir: str | Path, model: HierarchicalClassifier, meta: dict[str, Any] | None = None) -> Path:
    """Write ``model`` and ``meta`` (dataset, training, history, metrics, ...) as a run folder.

    The tensors are written first, then ``run.json`` with their checksum, each atomically, so a
    reader sees either the previous complete run or the new one.
    """
    from safetensors.torch import save_file

    run_dir = Path(run_dir)
    tensors = {name: t.detach().to("cpu").contiguous() for name, t in model.state_dict().items()}
    with fileio.atomic_path(run_dir / MODEL_FILE) as tmp:
        save_file(tensors, str(tmp), metadata={"format": "pt", "hseval_schema": str(SCHEMA_VERSION)})
        checksum = _sha256(tmp)
    record = dict(meta or {})
    record.update({
        "schema_version": SCHEMA_VERSION,
        "model": model.spec(),
        "hierarchy": model.hierarchy.to_dict(),
        "model_sha256": checksum,
        "versions": library_versions(),
        "saved_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    })
    fileio.write_json(run_dir / META_FILE, record)
    return run_dir


def is_run_dir(path: str | Path) -> bool:
    return (Path(path) / META_FILE).is_file()


def _expect(meta: dict, dotted: str, kind: type | tuple[type, ...], where: Path) -> Any:
    value: Any = meta
    for key in dotted.split("."):
        if not isinstance(value, dict) or key not in value:
            raise RunFormatError(f"{where}: missing '{dotted}'; the file is incomplete or not a run.json")
        value = value[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise RunFormatError(f"{where}: '{dotted}' must be {names}, got {type(value).__name__}")
    return value


def read_run_meta(run_dir: str | Path) -> dict[str, Any]:
    """Read and check ``run.json`` of ``run_dir`` without loading any tensor."""
    run_dir = Path(run_dir)
    where = run_dir / META_FILE
    if not run_dir.is_dir():
        raise RunFormatError(f"{run_dir}: no such run folder")
    if not where.is_file():
        raise RunFormatError(f"{run_dir}: not a run folder (no {META_FILE}); train one with 'hseval train'")
    meta = fileio.read_json(where, what=META_FILE)
    if not isinstance(meta, dict):
        raise RunFormatError(f"{where}: expected a JSON object, got {type(meta).__name__}")
    version = meta.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise RunFormatError(f"{where}: no integer 'schema_version'; not a run written by hseval")
    if version > SCHEMA_VERSION:
        raise RunFormatError(f"{where}: schema version {version} is newer than this hseval understands "
                             f"({SCHEMA_VERSION}); upgrade hseval")
    if version != SCHEMA_VERSION:
        raise RunFormatError(f"{where}: unknown schema version {version} (this hseval reads {SCHEMA_VERSION})")
    for dotted, kind in (("model.backbone.name", str), ("model.backbone.config", dict), ("model.head.name", str),
                         ("model.head.config", dict), ("hierarchy", dict), ("model_sha256", str)):
        _expect(meta, dotted, kind, where)
    try:
        hierarchy = Hierarchy.from_dict(meta["hierarchy"])
    except HierarchyError as exc:
        raise RunFormatError(f"{where}: 'hierarchy': {exc}") from None
    classes = meta.get("dataset", {}).get("class_names") if isinstance(meta.get("dataset"), dict) else None
    if classes is not None and (not isinstance(classes, list) or len(classes) != hierarchy.num_leaves):
        raise RunFormatError(f"{where}: 'dataset.class_names' must list the {hierarchy.num_leaves} classes "
                             "of the hierarchy")
    return meta


def load_run(run_dir: str | Path, *, device: str | torch.device = "cpu") -> Run:
    """Rebuild the model of ``run_dir`` from ``run.json`` and load its tensors onto ``device``."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    run_dir = Path(run_dir)
    meta = read_run_meta(run_dir)
    where = run_dir / MODEL_FILE
    if not where.is_file():
        raise RunFormatError(f"{where}: missing; the run is incomplete (was training interrupted? "
                             "'hseval train --resume' finishes it)")
    if _sha256(where) != meta["model_sha256"]:
        raise RunFormatError(f"{where}: does not match the checksum in {META_FILE} (truncated, tampered with "
                             "or from another run)")
    try:
        tensors = load_file(str(where), device="cpu")
    except (SafetensorError, OSError, ValueError) as exc:
        raise RunFormatError(f"{where}: not a valid safetensors file ({exc})") from None
    hierarchy = Hierarchy.from_dict(meta["hierarchy"])
    try:
        model = build_model(meta["model"], hierarchy)
    except HsevalError as exc:
        raise RunFormatError(f"{run_dir / META_FILE}: cannot rebuild the model: {exc}") from None
    except (TypeError, ValueError, OverflowError, RuntimeError) as exc:  # an option of the wrong type or size
        reason = (str(exc).splitlines() or [""])[0][:200]
        raise RunFormatError(f"{run_dir / META_FILE}: cannot rebuild the model ({exc.__class__.__name__}: "
                             f"{reason}); the file was edited or is damaged") from None
    _check_tensors(model, tensors, where, meta)
    model.load_state_dict(tensors, strict=True)
    model.to(device).eval()
    return Run(path=run_dir, model=model, meta=meta)


def _check_tensors(model: torch.nn.Module, tensors: dict[str, torch.Tensor], where: Path, meta: dict) -> None:
    expected = model.state_dict()
    head = meta["model"]["head"]["name"]
    missing = sorted(set(expected) - set(tensors))
    if missing:
        raise RunFormatError(f"{where}: has no tensor {missing[0]!r} that head {head!r} with backbone "
                             f"{meta['model']['backbone']['name']!r} needs; run.json does not match the tensors")
    extra = sorted(set(tensors) - set(expected))
    if extra:
        raise RunFormatError(f"{where}: tensor {extra[0]!r} is not part of head {head!r}; run.json does not "
                             "match the tensors")
    for name, tensor in tensors.items():
        want = expected[name]
        if tensor.shape != want.shape:
            raise RunFormatError(f"{where}: tensor {name!r} has shape {tuple(tensor.shape)} but run.json's model "
                                 f"needs {tuple(want.shape)}")
        if tensor.dtype != want.dtype:
            raise RunFormatError(f"{where}: tensor {name!r} is {tensor.dtype}, expected {want.dtype}")
        if tensor.is_floating_point() and not torch.isfinite(tensor).all():
            raise RunFormatError(f"{where}: tensor {name!r} holds NaN or infinite values; the run diverged")


def save_train_state(run_dir: str | Path, state: dict[str, Any]) -> None:
    """Write the resumable training state (tensors and plain Python values only)."""
    with fileio.atomic_path(Path(run_dir) / STATE_FILE) as tmp:
        torch.save(state, tmp)


def load_train_state(run_dir: str | Path, *, device: str | torch.device = "cpu") -> dict[str, Any]:
    """Read ``train_state.pt`` with ``weights_only=True``: a planted pickle cannot run code."""
    where = Path(run_dir) / STATE_FILE
    if not where.is_file():
        raise RunFormatError(f"{where}: missing; there is nothing to resume")
    try:
        return torch.load(where, map_location=device, weights_only=True)
    except Exception as exc:  # torch raises UnpicklingError, RuntimeError, EOFError... for bad files
        raise RunFormatError(f"{where}: cannot be read as a training state ({type(exc).__name__}); "
                             "remove it to restart training from the beginning") from None
