"""DDP through ``torchrun``: the process group comes from the environment torchrun sets."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

import torch
import torch.distributed as torch_dist

__all__ = ["Dist", "setup", "barrier", "broadcast_buffers", "same_on_all_ranks"]


@dataclass(frozen=True)
class Dist:
    rank: int = 0
    world: int = 1
    local_rank: int = 0


def setup() -> Dist:
    """Join the process group when started by torchrun (``WORLD_SIZE`` > 1), else a single process.

    NCCL on CUDA, gloo on CPU. Calling it again in the same process reuses the group.
    """
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return Dist()
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    if not torch_dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        if backend == "nccl":
            torch.cuda.set_device(local_rank)
        torch_dist.init_process_group(backend=backend)
    return Dist(rank=rank, world=world, local_rank=local_rank)


def same_on_all_ranks(dist: Dist, model: torch.nn.Module) -> bool:
    """Whether every rank holds bit-identical weights (a SHA-256 of the state dict, gathered)."""
    if dist.world == 1:
        return True
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    gathered: list[str | None] = [None] * dist.world
    torch_dist.all_gather_object(gathered, digest.hexdigest())
    return len(set(gathered)) == 1


def broadcast_buffers(dist: Dist, model: torch.nn.Module) -> None:
    """Give every rank rank 0's buffers (BatchNorm statistics: DDP broadcasts them before each
    forward, so after the last step each rank holds the statistics of its own last batch)."""
    if dist.world > 1:
        for buffer in model.buffers():
            torch_dist.broadcast(buffer, src=0)


def barrier(dist: Dist) -> None:
    if dist.world > 1:
        torch_dist.barrier()
