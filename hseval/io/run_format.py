"""The run format, the contract between ``train`` and the rest of hseval.

A run is a folder with:

- ``model.safetensors`` — every tensor of backbone and head (no pickle anywhere);
- ``run.json`` — schema version, the model spec, the hierarchy, dataset, training config, seed,
  history, final metrics, library versions, timestamp and the SHA-256 of ``model.safetensors``;
- ``train_state.pt`` — optimiser/scheduler/RNG state for resuming, read with
  ``torch.load(weights_only=True)`` only.

Writes are atomic; :func:`load_run` rebuilds the model from ``run.json`` alone and checks the
schema, both checksums, tensor names, shapes and values, with one-line errors.

Two SHA-256 checksums make a run tamper-evident: ``model_sha256`` of ``model.safetensors``, and
``meta_sha256`` of ``run.json`` itself (every key but this one, as canonical JSON), so that an
edited tree, class list or head option is refused instead of silently relabelling the classes.
Runs of schema 1 (before ``meta_sha256``) are read with a warning that their metadata cannot be
verified.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import io
import json
import platform
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from hseval.core import fileio
from hseval.core.errors import HierarchyError, HsevalError, HsevalWarning, RunFormatError, first_line
from hseval.nn.model import HierarchicalClassifier, build_model
from hseval.tree.hierarchy import Hierarchy

__all__ = ["SCHEMA_VERSION", "MODEL_FILE", "META_FILE", "STATE_FILE", "HISTORY_FILE", "RUN_FILES", "RUN_ENTRIES", "Run",
           "RunInfo", "save_run", "load_run", "verify_run", "read_run_meta", "is_run_dir", "run_folder_state",
           "save_train_state", "load_train_state", "meta_checksum"]

SCHEMA_VERSION = 2

READABLE_SCHEMAS = (1, 2)  # 1: before meta_sha256
MODEL_FILE = "model.safetensors"
META_FILE = "run.json"
STATE_FILE = "train_state.pt"
HISTORY_FILE = "history.csv"
RUN_FILES = (META_FILE, MODEL_FILE, STATE_FILE, HISTORY_FILE)
"""The files of a run folder."""
RUN_ENTRIES = (*RUN_FILES, "tensorboard")
"""Everything hseval writes in a run folder (``tensorboard/``: the training's event files): what
``--force`` replaces; a run folder holding anything else is not replaced."""


@dataclass
class RunInfo:
    """A run checked without loading its tensors: its folder, ``run.json`` and the tree."""

    path: Path
    meta: dict[str, Any] = field(repr=False)
    hierarchy: Hierarchy = field(repr=False)

    @property
    def head_name(self) -> str:
        return self.meta["model"]["head"]["name"]


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
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    except OSError as exc:
        raise RunFormatError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return digest.hexdigest()


def meta_checksum(record: dict[str, Any]) -> str:
    """SHA-256 of ``record`` without its ``meta_sha256`` key, as canonical JSON (sorted keys, no
    spaces): what ``run.json`` parses to, so any edit of a value changes it."""
    body = {k: v for k, v in record.items() if k != "meta_sha256"}
    # allow_nan: hseval never writes NaN or Infinity, but an edited file may hold them
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def save_run(run_dir: str | Path, model: HierarchicalClassifier, meta: dict[str, Any] | None = None) -> Path:
    """Write ``model`` and ``meta`` (dataset, training, history, metrics, ...) as a run folder.

    The tensors are written first, then ``run.json`` with their checksum, each atomically, so a
    reader sees either the previous complete run or the new one.
    """
    from safetensors.torch import save

    run_dir = Path(run_dir)
    tensors = {name: t.detach().to("cpu").contiguous() for name, t in model.state_dict().items()}
    # serialised in memory, then written by fileio: a full disk or a read-only folder is one
    # line that names the file, and the previous model.safetensors stays in place
    data = save(tensors, metadata={"format": "pt", "hseval_schema": str(SCHEMA_VERSION)})
    fileio.write_bytes(run_dir / MODEL_FILE, data)
    record = dict(meta or {})
    record.update({
        "schema_version": SCHEMA_VERSION,
        "model": model.spec(),
        "hierarchy": model.hierarchy.to_dict(),
        "model_sha256": hashlib.sha256(data).hexdigest(),
        "versions": library_versions(),
        "saved_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    })
    record = fileio.json_ready(record)
    record["meta_sha256"] = meta_checksum(record)
    fileio.write_json(run_dir / META_FILE, record)
    return run_dir


def is_run_dir(path: str | Path) -> bool:
    """Whether ``path`` holds a finished run (its ``run.json``)."""
    return (Path(path) / META_FILE).is_file()


def run_folder_state(path: str | Path) -> str:
    """What a run folder holds, from its files alone: "finished" (``run.json``), "unfinished" (a
    training state and no ``run.json``) or "new" (neither)."""
    if is_run_dir(path):
        return "finished"
    return "unfinished" if (Path(path) / STATE_FILE).is_file() else "new"


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
    if version not in READABLE_SCHEMAS:
        raise RunFormatError(f"{where}: unknown schema version {version} (this hseval reads "
                             f"{', '.join(map(str, READABLE_SCHEMAS))})")
    if version >= 2:
        recorded = _expect(meta, "meta_sha256", str, where)
        if recorded != meta_checksum(meta):
            raise RunFormatError(f"{where}: was edited after training (its checksum 'meta_sha256' no longer "
                                 "matches); a run's tree, classes and model must stay as trained: restore the file "
                                 "or train again")
    else:
        warnings.warn(f"{where}: written by an older hseval (schema {version}) without a checksum of its metadata; "
                      "its tree and class names cannot be verified", HsevalWarning, stacklevel=2)
    for dotted, kind in (("model.backbone.name", str), ("model.backbone.config", dict), ("model.head.name", str),
                         ("model.head.config", dict), ("hierarchy", dict), ("model_sha256", str)):
        _expect(meta, dotted, kind, where)
    try:
        hierarchy = Hierarchy.from_dict(meta["hierarchy"])
    except HierarchyError as exc:
        raise RunFormatError(f"{where}: 'hierarchy': {exc}") from None
    dataset = meta.get("dataset")
    if dataset is not None and not isinstance(dataset, dict):
        raise RunFormatError(f"{where}: 'dataset' must be an object, got {type(dataset).__name__}")
    classes = (dataset or {}).get("class_names")
    if classes is not None and classes != list(hierarchy.leaf_names):
        raise RunFormatError(f"{where}: 'dataset.class_names' must be the {hierarchy.num_leaves} leaves of "
                             "'hierarchy' in class order; the file is damaged")
    return meta


def verify_run(run_dir: str | Path) -> RunInfo:
    """Check ``run_dir`` without loading its tensors: ``run.json`` (schema, types, checksum of the
    metadata, the tree) and the checksum of ``model.safetensors``."""
    run_dir = Path(run_dir)
    meta = read_run_meta(run_dir)
    where = run_dir / MODEL_FILE
    if not where.is_file():
        raise RunFormatError(f"{where}: missing; the run is incomplete (was training interrupted? "
                             "'hseval train --resume' finishes it)")
    if _sha256(where) != meta["model_sha256"]:
        raise RunFormatError(f"{where}: does not match the checksum in {META_FILE} (truncated, tampered with "
                             "or from another run)")
    return RunInfo(path=run_dir, meta=meta, hierarchy=Hierarchy.from_dict(meta["hierarchy"]))


def load_run(run_dir: str | Path, *, device: str | torch.device = "cpu") -> Run:
    """Rebuild the model of ``run_dir`` from ``run.json`` and load its tensors onto ``device``.

    Parameters
    ----------
    run_dir : a run folder written by ``hseval train`` or ``hseval import``.
    device : where the tensors go.

    Returns
    -------
    :class:`Run`: the model (backbone + head, in eval mode), its tree and ``run.json``'s content.

    Raises
    ------
    RunFormatError
        a missing, edited or damaged file (checksums, schema, tensor shapes), in one line. Nothing
        is unpickled: tensors come from safetensors, metadata from JSON.
    """
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    info = verify_run(run_dir)
    run_dir, meta, hierarchy = info.path, info.meta, info.hierarchy
    where = run_dir / MODEL_FILE
    try:
        tensors = load_file(str(where), device="cpu")
    except (SafetensorError, OSError, ValueError) as exc:
        raise RunFormatError(f"{where}: not a valid safetensors file ({exc})") from None
    try:
        model = build_model(meta["model"], hierarchy)
    except HsevalError as exc:
        raise RunFormatError(f"{run_dir / META_FILE}: cannot rebuild the model: {exc}") from None
    except (TypeError, ValueError, OverflowError, RuntimeError) as exc:  # an option of the wrong type or size
        reason = first_line(exc, limit=200)
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
    """Write the resumable training state (tensors and plain Python values only), serialised in
    memory first so that a failed write keeps the previous state."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    fileio.write_bytes(Path(run_dir) / STATE_FILE, buffer.getvalue())


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
