"""Long extractions that survive an interruption: the rows of a split computed a chunk at a time,
each chunk written to a ``.partial`` folder as it is done (a safetensors file whose metadata holds
the extraction's key), so that the same extraction started again reads the chunks it finds and
computes only the rest. A chunk of another key (another model, other data) or a damaged one is
computed again. Used by the features of a linear probe (:mod:`hseval.train.probe`) and by
``hseval predict`` (:mod:`hseval.evaluation.zoo`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save

from hseval.core import fileio

__all__ = ["RECORD", "chunks", "record_of"]

RECORD = "hseval"
"""The metadata entry of a file whose record is JSON (a features file's key and facts)."""


def chunks(partial: Path, key: str, *, name: str, total: int, rows: int, names: set[str],
           compute: Callable[[int, int], dict[str, torch.Tensor]], done: Callable[[int], Any] = lambda n: None
           ) -> Iterator[dict[str, torch.Tensor]]:
    """The chunks of rows ``[start, start + rows)`` of ``0..total``, in order: each read from
    ``partial / f"{name}-{start}.safetensors"`` when a chunk of ``key`` holding the tensors ``names``
    is there (``done(rows)`` is then called, for a progress bar), else ``compute(start, stop)`` and
    written there before it is given."""
    for start in range(0, total, rows):
        path = partial / f"{name}-{start:010d}.safetensors"
        part = _read(path, key, names)
        if part is None:
            part = compute(start, min(start + rows, total))
            path.parent.mkdir(parents=True, exist_ok=True)
            fileio.write_bytes(path, save({k: t.contiguous() for k, t in part.items()}, metadata={"key": key}))
        else:
            done(len(next(iter(part.values()))))
        yield part


def _read(path: Path, key: str, names: set[str]) -> dict[str, torch.Tensor] | None:
    """A chunk of an interrupted extraction, or None when it is missing, damaged or not ``key``'s."""
    try:
        part = load_file(path)
    except (OSError, SafetensorError, ValueError):
        return None
    return part if record_of(path).get("key") == key and set(part) == names else None


def record_of(path: Path) -> dict[str, Any]:
    """The record of a safetensors file, read from its header alone (its :data:`RECORD` entry as
    JSON, else its metadata: a chunk's key); {} where it has none."""
    try:
        with safe_open(path, "pt") as f:
            metadata = f.metadata() or {}
        record = json.loads(metadata[RECORD]) if RECORD in metadata else metadata
    except (OSError, SafetensorError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}
