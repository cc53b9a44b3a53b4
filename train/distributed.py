"""DDP through ``torchrun``: the process group comes from the environment torchrun sets."""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as torch_dist

__all__ = ["Dist", "setup", "barrier"]


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


def barrier(dist: Dist) -> None:
    if dist.world > 1:
        torch_dist.barrier()
