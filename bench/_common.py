"""What the benchmarks share (numpy only: bench/metrics.py must run where torch is not installed):
the random trees (linear time), the name of the CPU and the writer of README's measured figures."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hseval.tree.hierarchy import Hierarchy  # noqa: E402
from scripts.readme_blocks import cpu_model, require_quiet, stamp, write_block  # noqa: E402,F401  (the benchmarks' one import)

__all__ = ["random_tree", "cpu_model", "require_quiet", "stamp", "write_block"]


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
