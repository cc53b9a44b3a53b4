"""Tensors of a run read from another file instead of stored in its ``model.safetensors``: a frozen
backbone started from ``--init`` is the file's tensors, so a probe run (or any frozen-backbone run)
refers to that file, by path and SHA-256, instead of storing the backbone again
(:class:`TensorReference`, ``run.json``'s ``by_reference``).

:func:`reference` decides, when a run is saved, which tensors the file gives exactly (the file
read again and its SHA-256 checked: a file changed since training is not referred to, the run then
stores every tensor); :func:`read_referenced` reads them back when the run is loaded, from the
recorded path, else from the same place relative to the run folder (a project copied with its
runs and weights together), after checking the file's SHA-256. A file that is missing or changed is
one line naming it, the run and the fix.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from pydantic import Field

from hseval.core import fileio
from hseval.core.errors import HsevalError, RunFormatError
from hseval.io.records import Record, Sha256
from hseval.io.state_dict import read_state_dict, value_problem

__all__ = ["TensorReference", "reference", "read_referenced", "SELF_CONTAINED"]

SELF_CONTAINED = "engine.self_contained=true"
"""The setting that stores every tensor in the run (what a fix says to train with)."""


class TensorReference(Record):
    """``run.json``'s ``by_reference``: the run's tensors that are a file's, and where that file is."""

    path: str
    """The file, absolute, as the run was trained from it."""
    relative: str | None = None
    """The same file from the run folder (tried when ``path`` is gone)."""
    sha256: Sha256
    tensors: dict[str, str] = Field(min_length=1)
    """{the run's tensor: the file's key}."""


def reference(tensors: Mapping[str, torch.Tensor], source: Mapping[str, Any], run_dir: Path
              ) -> dict[str, Any] | None:
    """What ``run.json`` records of the tensors of ``tensors`` that the file of ``source`` (a
    ``TensorSource`` record: path, sha256 and mapping, as ``initialised_from``) gives exactly, in
    their dtype; None when there are none, or the file is not the one recorded (gone or changed)."""
    path = Path(str(source.get("path") or ""))
    mapping = source.get("mapping") or {}
    try:
        if not path.is_file() or fileio.sha256(path) != source.get("sha256"):
            return None
        state = read_state_dict(path)
    except (HsevalError, OSError):
        return None
    by_key = {key: state.tensors[stripped] for stripped, key in state.original.items()}
    kept = {name: key for name, key in mapping.items()
            if key is not None and name in tensors and key in by_key
            and _same(by_key[key], tensors[name])}
    if not kept:
        return None
    try:
        relative = Path(os.path.relpath(path.resolve(), Path(run_dir).resolve())).as_posix()
    except ValueError:  # another drive
        relative = None
    return {"path": str(path.resolve()), "relative": relative, "sha256": source["sha256"], "tensors": kept}


def _same(stored: torch.Tensor, tensor: torch.Tensor) -> bool:
    """Whether the file's tensor, in the run's dtype (as the backbone loaded it), is the run's."""
    return stored.shape == tensor.shape and torch.equal(stored.to(tensor.dtype), tensor.detach().cpu())


def read_referenced(run_dir: Path, record: Mapping[str, Any], expected: Mapping[str, torch.Tensor]
                    ) -> dict[str, torch.Tensor]:
    """The tensors ``record`` (a :class:`TensorReference`) refers to, in the dtypes of ``expected``
    (the model's state dict), from the file found at its path or its place relative to
    ``run_dir``, whose SHA-256 must be the recorded one, each of the shape the model needs and of
    values a model has (:func:`value_problem`); one-line :class:`RunFormatError` else."""
    ref = TensorReference.model_validate(record)
    fix = f"or train the run again with 'hseval train --set {SELF_CONTAINED}' to store the backbone in it"
    candidates = [Path(ref.path)]
    if ref.relative and Path(os.path.normpath(run_dir.absolute() / ref.relative)) != candidates[0]:
        candidates.append(Path(os.path.normpath(run_dir.absolute() / ref.relative)))
    found = [c for c in candidates if c.is_file()]
    if not found:
        also = f" (nor at {candidates[1]}, where it was from the run)" if len(candidates) > 1 else ""
        raise RunFormatError(f"{ref.path}: missing{also}; the run {run_dir} reads its frozen backbone from this file "
                             f"(SHA-256 {ref.sha256[:12]}…): copy the file there, {fix}")
    digests = [fileio.sha256(c, error=RunFormatError) for c in found]
    path = next((c for c, d in zip(found, digests) if d == ref.sha256), None)
    if path is None:
        raise RunFormatError(f"{found[0]}: changed since the run {run_dir} was trained from it (SHA-256 "
                             f"{ref.sha256[:12]}… then, {digests[0][:12]}… now), and the run reads its frozen backbone "
                             f"from it: put the file it was trained from back, {fix}")
    try:
        state = read_state_dict(path)
    except HsevalError as exc:  # the recorded SHA-256 holds: only a file hseval could not read before
        raise RunFormatError(str(exc)) from None
    by_key = {key: state.tensors[stripped] for stripped, key in state.original.items()}
    out = {}
    for name, key in ref.tensors.items():
        if name not in expected:
            raise RunFormatError(f"{run_dir / 'run.json'}: 'by_reference' names the tensor {name!r}, which the "
                                 "model has not; the file was edited or is damaged")
        if key not in by_key:
            raise RunFormatError(f"{path}: has no {key!r}, which the run {run_dir} reads from it (run.json's "
                                 "'by_reference'); the file or run.json was edited")
        tensor, want = by_key[key], expected[name]
        if tensor.shape != want.shape:
            raise RunFormatError(f"{path}: {key!r} has shape {tuple(tensor.shape)} but the run's model needs "
                                 f"{tuple(want.shape)} for {name}")
        problem = value_problem(name, tensor)
        if problem:
            raise RunFormatError(f"{path}: {key!r} {problem}; the file is damaged")
        out[name] = tensor.to(want.dtype)
    return out
