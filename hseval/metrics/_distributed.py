"""The state of a streaming metric summed over the processes of ``torch.distributed``: sums by
``all_reduce`` (two collectives: every int64 sum in one vector, every float64 sum in another),
the sparse confusion counts by ``all_gather`` (padded to the longest)."""

from __future__ import annotations

import sys

import numpy as np


def all_processes(sums: dict[str, np.ndarray], keys: np.ndarray, counts: np.ndarray, *, mode: str | None,
                  levels: tuple[int, ...] | None) -> tuple[dict[str, np.ndarray], list, str | None,
                                                           tuple[int, ...] | None] | None:
    """None when no process group of several processes is initialised; else ``sums`` added over
    every process, each process's (keys, counts), and the mode ("scores" or "labels") and the
    levels given level scores of the processes that had samples. Every process must call it."""
    dist = sys.modules.get("torch.distributed")
    if dist is None:  # a process group needs torch.distributed imported: without it there is none (and
        return None   # importing torch to find out would cost seconds to every numpy-only caller)
    import torch  # loaded already (torch.distributed is): importing the metrics does not load torch

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return None
    device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")
    flags = np.zeros(len(sums["level_counts"]) + 2, np.int64)  # the levels given level scores, then the modes
    flags[np.asarray(levels or (), np.int64) - 1] = 1
    flags[-2:] = mode == "scores", mode == "labels"
    sums = {**sums, "flags": flags}
    total = {}
    for dtype in (np.int64, np.float64):
        names = [name for name, value in sums.items() if value.dtype == dtype]
        flat = torch.as_tensor(np.concatenate([sums[name].ravel() for name in names]), device=device)
        dist.all_reduce(flat)
        parts = np.split(flat.cpu().numpy(), np.cumsum([sums[name].size for name in names])[:-1])
        total.update({name: part.reshape(sums[name].shape) for name, part in zip(names, parts)})
    flags = total.pop("flags")
    if flags[-2] and flags[-1]:
        raise ValueError("some processes gave scores and others predicted classes; give the same in every one")
    mode = "scores" if flags[-2] else "labels" if flags[-1] else None
    levels = tuple(int(k) + 1 for k in np.flatnonzero(flags[:-2])) or None
    world = dist.get_world_size()
    length = torch.tensor([len(keys)], device=device)
    lengths = [torch.zeros_like(length) for _ in range(world)]
    dist.all_gather(lengths, length)
    pairs = torch.zeros((2, max(int(n.item()) for n in lengths)), dtype=torch.int64, device=device)
    pairs[0, : len(keys)] = torch.as_tensor(keys, device=device)
    pairs[1, : len(keys)] = torch.as_tensor(counts, device=device)
    gathered = [torch.zeros_like(pairs) for _ in range(world)]
    dist.all_gather(gathered, pairs)
    pairs = [(part[0, : int(n.item())].cpu().numpy(), part[1, : int(n.item())].cpu().numpy())
             for part, n in zip(gathered, lengths)]
    return total, pairs, mode, levels
