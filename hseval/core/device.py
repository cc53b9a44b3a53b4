"""The device a command runs on, checked before any work: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

import torch

from hseval.core.errors import ConfigError

__all__ = ["resolve_device", "torch_threads"]


def resolve_device(name: str, local_rank: int = 0, *, option: str = "--device") -> torch.device:
    """The torch device called ``name`` (``auto``: the GPU of this rank when there is one, else the
    CPU); a device this machine does not have is a one-line :class:`ConfigError` naming ``option``."""
    if name == "auto":
        name = f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu"
    match = re.fullmatch(r"(cpu|cuda)(?::(\d{1,4}))?", str(name))
    if match is None or (match[1] == "cpu" and match[2] is not None):
        raise ConfigError(f"{option}={name!r} is not a device; use auto, cpu, cuda or cuda:N")
    if match[1] == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError(f"{option}={name} but this machine has no CUDA device; use {option}=cpu or auto")
        count = torch.cuda.device_count()
        if match[2] is not None and int(match[2]) >= count:
            raise ConfigError(f"{option}={name} but this machine has {count} CUDA device(s) (cuda:0..cuda:{count - 1})")
    return torch.device(name)


@contextlib.contextmanager
def torch_threads(count: int | None) -> Iterator[None]:
    """torch's CPU thread count set to ``count`` (None: left as it is) inside the block, and put
    back on leaving: a library call changes nothing process-wide."""
    previous = torch.get_num_threads()
    if count:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
