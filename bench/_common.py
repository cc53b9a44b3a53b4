"""What the benchmarks share (numpy only: bench/metrics.py must run where torch is not installed):
the random trees (linear time), the name of the CPU, the writer of README's measured figures and
the check that the machine is quiet enough to measure them."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hseval.tree.hierarchy import Hierarchy  # noqa: E402
from scripts.readme_blocks import cpu_model, stamp, write_block  # noqa: E402,F401  (the benchmarks' one import)

__all__ = ["random_tree", "cpu_model", "stamp", "write_block", "quiet_machine"]

QUIET_LOAD = 0.3
"""A README figure is measured only while the load average (1 minute) is below this per core."""
_BUSY = ("hseval", "pytest")


def random_tree(num_leaves: int, seed: int = 0, *, max_depth: int = 4, branching: float = 0.5) -> Hierarchy:
    """A random tree (as tests/conftest.py's generator, linear time): ``branching·|L|`` super-classes,
    70% of them under an earlier super-class that is not too deep, leaves under any node; childless
    super-classes are pruned."""
    rng = np.random.default_rng(seed)
    n_super = max(1, int(num_leaves * branching))
    parent = np.full(n_super, -1, dtype=np.int64)
    depth = np.ones(n_super, dtype=np.int64)
    open_nodes: list[int] = []  # super-classes that may still get a super-class child
    for k in range(n_super):
        if open_nodes and rng.random() < 0.7:
            p = open_nodes[rng.integers(len(open_nodes))]
            parent[k], depth[k] = p, depth[p] + 1
        if depth[k] < max_depth - 1:
            open_nodes.append(k)
    leaf_parent = rng.integers(-1, n_super, size=num_leaves)
    alive = np.zeros(n_super, dtype=bool)  # a super-class is kept when a leaf lies below it
    for p in leaf_parent[leaf_parent >= 0]:
        while p >= 0 and not alive[p]:
            alive[p] = True
            p = parent[p]
    remap = np.full(n_super, -1, dtype=np.int64)
    remap[alive] = num_leaves + np.arange(alive.sum())
    parents = np.concatenate([np.where(leaf_parent >= 0, remap[np.maximum(leaf_parent, 0)], -1),
                              np.where(parent[alive] >= 0, remap[np.maximum(parent[alive], 0)], -1)])
    names = [f"c{i}" for i in range(num_leaves)] + [f"s{i}" for i in range(int(alive.sum()))]
    return Hierarchy(names, parents, num_leaves)


def quiet_machine() -> str | None:
    """Why this machine is too busy for a README figure, or None when it is quiet: the load
    average over the last minute is below :data:`QUIET_LOAD` per core and no other process runs
    hseval or pytest (this process and its parents aside)."""
    cores = os.cpu_count() or 1
    load = os.getloadavg()[0]
    if load >= QUIET_LOAD * cores:
        return f"load average {load:.2f} on {cores} cores (a README figure needs below {QUIET_LOAD * cores:.2f})"
    mine, pid = set(), os.getpid()
    while pid > 1:  # this process and its parents (the shell or the script that started it)
        mine.add(pid)
        pid = _parent(pid)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in mine:
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # ended meanwhile, or not ours to read
            continue
        if any(word in command for word in _BUSY):
            return f"another process runs {next(w for w in _BUSY if w in command)} (pid {entry.name}: {command[:80]})"
    return None


def _parent(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[1])  # the command name in (...) may hold spaces
