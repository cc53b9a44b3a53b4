"""The run format, the contract between ``train`` and the rest of hseval. A run is a folder with
``model.safetensors`` (every tensor of backbone and head), ``run.json`` (a :class:`RunRecord`, in
:mod:`hseval.io.run_records`: the model spec, tree, dataset, config, seed, history, metrics,
versions and two SHA-256: ``model_sha256`` of the tensors and ``meta_sha256`` of run.json itself,
so an edited tree or class list is refused, not silently relabelled), ``history.csv`` (the history
flat, :data:`hseval.io.tables.HISTORY`) and ``train_state.pt`` (a :class:`TrainState`, read with
``weights_only=True`` only; once the run is finished, without the weights, which are
model.safetensors'). A frozen backbone started from a file is not stored again: run.json refers to
the file by path and SHA-256 (``by_reference``, :mod:`hseval.io.tensor_reference`). Writes are
atomic; :func:`load_run` rebuilds the model from run.json alone and checks every checksum, tensor
name, shape and value, with one-line errors. No pickle anywhere.
"""

from __future__ import annotations

import datetime as _dt
import io
import json
import platform
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load, load_file, save

from hseval.core import fileio
from hseval.core.arguments import checked
from hseval.core.errors import HsevalError, RunFormatError, first_line
from hseval.io.records import parse_record
from hseval.io.run_records import SCHEMA_VERSION, RunRecord, TrainState
from hseval.io.state_dict import value_problem
from hseval.io.tensor_reference import read_referenced, reference
from hseval.nn.model import HierarchicalClassifier, build_model
from hseval.tree.hierarchy import Hierarchy

__all__ = ["SCHEMA_VERSION", "MODEL_FILE", "META_FILE", "STATE_FILE", "HISTORY_FILE", "RUN_FILES", "RUN_ENTRIES", "Run",
           "RunInfo", "RunRecord", "TrainState", "save_run", "load_run", "verify_run", "read_run_meta", "is_run_dir",
           "run_folder_state", "save_train_state", "load_train_state", "finish_train_state", "meta_checksum"]

MODEL_FILE = "model.safetensors"
META_FILE = "run.json"
STATE_FILE = "train_state.pt"
HISTORY_FILE = "history.csv"
RUN_FILES = (META_FILE, MODEL_FILE, STATE_FILE, HISTORY_FILE)
"""The files of a run folder."""
RUN_ENTRIES = (*RUN_FILES, "tensorboard")
"""Everything a training may write in a run folder (``tensorboard/``: its event files), recorded in
the folder's marker as it writes them; ``--force`` replaces only what is recorded."""


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
class Run(RunInfo):
    """A loaded run: a checked run and its rebuilt model (in eval mode)."""

    model: HierarchicalClassifier


def library_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for package in ("hseval", "torch", "torchvision", "geoopt", "numpy", "safetensors"):
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            out[package] = "not installed"
    return out


def meta_checksum(record: dict[str, Any]) -> str:
    """SHA-256 of ``record`` without its ``meta_sha256`` key, as canonical JSON (sorted keys, no
    spaces): what ``run.json`` parses to, so any edit of a value changes it."""
    body = {k: v for k, v in record.items() if k != "meta_sha256"}
    # allow_nan: hseval never writes NaN or Infinity, but an edited file may hold them
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=True)
    return fileio.sha256(text.encode("utf-8"))


def save_run(run_dir: str | Path, model: HierarchicalClassifier, meta: dict[str, Any] | None = None, *,
             refer_to: Mapping[str, Any] | None = None) -> Path:
    """Write ``model`` and ``meta`` (dataset, training, history, metrics, ...) as a run folder.

    ``refer_to``: the record of a file the model's tensors came from (``initialised_from``); those
    the file still gives exactly (a frozen backbone) are not written but referred to
    (:func:`~hseval.io.tensor_reference.reference`). ``run.json`` is checked against
    :class:`RunRecord` first; then the tensors are written, then ``run.json`` with their checksum,
    each atomically, so a reader sees either the previous complete run or the new one.
    """
    run_dir = Path(run_dir)
    tensors = {name: t.detach().to("cpu").contiguous() for name, t in model.state_dict().items()}
    record = dict(meta or {})
    referred = reference(tensors, refer_to, run_dir) if refer_to else None
    if referred:
        record["by_reference"] = referred
        tensors = {name: t for name, t in tensors.items() if name not in referred["tensors"]}
    # serialised in memory, then written by fileio: a full disk or a read-only folder is one
    # line that names the file, and the previous model.safetensors stays in place
    # one metadata key: safetensors writes a map's keys in a random order, and a run's bytes must
    # depend on its tensors alone (the same run trained in two processes is the same file)
    data = save(tensors, metadata={"format": "pt"})
    record.update({
        "schema_version": SCHEMA_VERSION,
        "model": model.spec(),
        "hierarchy": model.hierarchy.to_dict(),
        "model_sha256": fileio.sha256(data),
        "versions": library_versions(),
        "saved_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    })
    record = fileio.json_ready(record)
    record["meta_sha256"] = meta_checksum(record)
    parse_record(RunRecord, record, where=run_dir / META_FILE)  # what is written reads back, or nothing is
    fileio.write_bytes(run_dir / MODEL_FILE, data)
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


def read_run_meta(run_dir: str | Path) -> dict[str, Any]:
    """Read and check ``run.json`` of ``run_dir`` (:class:`RunRecord` and its checksum) without
    loading any tensor."""
    return _read_meta(Path(run_dir))[0]


def _read_meta(run_dir: Path) -> tuple[dict[str, Any], RunRecord]:
    where = run_dir / META_FILE
    if not run_dir.is_dir():
        raise RunFormatError(f"{run_dir}: no such run folder")
    if not where.is_file():
        raise RunFormatError(f"{run_dir}: not a run folder (no {META_FILE}); train one with 'hseval train'")
    meta = fileio.read_json(where, what=META_FILE)
    record = parse_record(RunRecord, meta, where=where)
    if meta["meta_sha256"] != meta_checksum(meta):
        raise RunFormatError(f"{where}: was edited after training (its checksum 'meta_sha256' no longer matches); a "
                             "run's tree, classes and model must stay as trained: restore the file or train again")
    return meta, record


def verify_run(run_dir: str | Path) -> RunInfo:
    """Check ``run_dir`` without loading its tensors: ``run.json`` (schema, types, checksum of the
    metadata, the tree) and the checksum of ``model.safetensors``."""
    run_dir = Path(run_dir)
    meta, record = _read_meta(run_dir)
    where = run_dir / MODEL_FILE
    if not where.is_file():
        raise RunFormatError(f"{where}: missing; the run is incomplete (was training interrupted? "
                             "'hseval train --resume' finishes it)")
    if fileio.sha256(where, error=RunFormatError) != meta["model_sha256"]:
        raise RunFormatError(f"{where}: does not match the checksum in {META_FILE} (truncated, tampered with "
                             "or from another run)")
    return RunInfo(path=run_dir, meta=meta, hierarchy=record.hierarchy.tree)


@checked
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
    if meta.get("by_reference"):
        referred = read_referenced(run_dir, meta["by_reference"], model.state_dict())
        both = sorted(set(referred) & set(tensors))
        if both:
            raise RunFormatError(f"{where}: holds {both[0]!r}, which run.json's 'by_reference' reads from another "
                                 "file; run.json does not match the tensors")
        tensors.update(referred)
    _check_tensors(model, tensors, where, meta)
    model.load_state_dict(tensors, strict=True)
    model.to(device).eval()
    return Run(path=run_dir, meta=meta, hierarchy=hierarchy, model=model)


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
        problem = value_problem(name, tensor)
        if problem:
            raise RunFormatError(f"{where}: tensor {name!r} {problem}; the run diverged or the file is damaged")


def save_train_state(run_dir: str | Path, state: dict[str, Any]) -> None:
    """Write the resumable training state (tensors and plain Python values only), serialised in
    memory first so that a failed write keeps the previous state."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    fileio.write_bytes(Path(run_dir) / STATE_FILE, buffer.getvalue())


def finish_train_state(run_dir: str | Path, *, keep: bool) -> None:
    """The training state of a run just finished (its run.json and model.safetensors written):
    kept without the weights, which it then names by the SHA-256 of model.safetensors (``--resume``
    extends the run from them), or removed (``keep`` False: the run cannot be extended; nothing else
    reads the state)."""
    where = Path(run_dir) / STATE_FILE
    if not keep:
        where.unlink(missing_ok=True)
    elif where.is_file():
        state = torch.load(where, map_location="cpu", weights_only=True)
        state.update(model=None, model_sha256=read_run_meta(run_dir)["model_sha256"])
        save_train_state(run_dir, state)


def load_train_state(run_dir: str | Path, *, device: str | torch.device = "cpu") -> dict[str, Any]:
    """Read ``train_state.pt`` with ``weights_only=True`` (a planted pickle cannot run code) and
    check it is a :class:`TrainState`; the state of a finished run takes its weights from the
    model.safetensors it names by SHA-256 (without a frozen backbone referred to, as an unfinished
    run's state)."""
    where = Path(run_dir) / STATE_FILE
    restart = "remove it to restart training from the beginning"
    if not where.is_file():
        raise RunFormatError(f"{where}: missing; there is nothing to resume")
    try:
        state = torch.load(where, map_location=device, weights_only=True)
    except Exception as exc:  # torch raises UnpicklingError, RuntimeError, EOFError... for bad files
        raise RunFormatError(f"{where}: cannot be read as a training state ({type(exc).__name__}); {restart}") \
            from None
    if not isinstance(state, dict) or not {"epoch", "history"} <= set(state):
        raise RunFormatError(f"{where}: not a training state written by hseval (no 'epoch' and 'history'); {restart}")
    parse_record(TrainState, state, where=where, hint=restart)
    if state["model"] is None:
        state["model"] = _weights(Path(run_dir), state["model_sha256"], device)
    return state


def _weights(run_dir: Path, sha256: str, device: str | torch.device) -> dict[str, torch.Tensor]:
    """The tensors of ``run_dir``'s model.safetensors, whose SHA-256 a training state records."""
    where = run_dir / MODEL_FILE
    fix = f"restore it, or remove {STATE_FILE} to train anew"
    data = fileio.verified_bytes(where, sha256, what="the weights", error=RunFormatError,
                                 missing=f"missing; {STATE_FILE} takes its weights from it; {fix}",
                                 changed=f"not the weights {STATE_FILE} was left with (another SHA-256); {fix}")
    return {name: t.to(device) for name, t in load(data).items()}
