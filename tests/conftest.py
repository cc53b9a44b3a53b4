"""Shared fixtures: small trees (the paper's Appendix A, Fashion-MNIST, an unbalanced one) and a
hypothesis strategy for random trees."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import strategies as st

from hseval.hierarchy import Hierarchy

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    np.random.seed(0)


def appendix_a() -> Hierarchy:
    """The paper's Appendix A: fruit -> {apple, orange}, animal -> {cat, dog}."""
    edges = [("root", "fruit"), ("root", "animal"), ("fruit", "apple"), ("fruit", "orange"),
             ("animal", "cat"), ("animal", "dog")]
    return Hierarchy.from_edges(edges, classes=["apple", "orange", "cat", "dog"])


def fashion_tree() -> Hierarchy:
    from hseval.hierarchies.fashion_mnist import fashion_mnist_hierarchy

    return fashion_mnist_hierarchy()


def unbalanced() -> Hierarchy:
    """Leaves at depths 1, 2 and 4, and a super-class with a single child."""
    return Hierarchy.from_paths([("a", "x"), ("a", "b", "c", "y"), ("z",), ("a", "b", "w"), ("a", "b", "c", "v")])


@pytest.fixture(params=["appendix_a", "fashion", "unbalanced"])
def small_tree(request) -> Hierarchy:
    return {"appendix_a": appendix_a, "fashion": fashion_tree, "unbalanced": unbalanced}[request.param]()


def random_tree(num_leaves: int, seed: int, *, max_depth: int = 4, branching: float = 0.5) -> Hierarchy:
    """A random tree with leaves at varying depths (every super-class has >= 1 child)."""
    rng = np.random.default_rng(seed)
    parents = []
    supers: list[tuple[int, int]] = []  # (index among super-classes, depth)
    for k in range(max(1, int(num_leaves * branching))):
        candidates = [s for s in supers if s[1] < max_depth - 1]
        if candidates and rng.random() < 0.7:
            parent, depth = candidates[rng.integers(len(candidates))]
            supers.append((k, depth + 1))
            parents.append(parent)
        else:
            supers.append((k, 1))
            parents.append(-1)
    n_super = len(supers)
    leaf_parent = rng.integers(-1, n_super, size=num_leaves)
    parent_of = {j: (int(p) + num_leaves if p >= 0 else -1) for j, p in enumerate(leaf_parent)}
    parent_of.update({num_leaves + k: (p + num_leaves if p >= 0 else -1) for k, p in enumerate(parents)})
    while True:  # prune super-classes without children until none is left
        with_child = {p for p in parent_of.values() if p >= 0}
        childless = [n for n in parent_of if n >= num_leaves and n not in with_child]
        if not childless:
            break
        for n in childless:
            del parent_of[n]
    keep = sorted(parent_of)
    remap = {old: new for new, old in enumerate(keep)}
    names = [f"c{n}" if n < num_leaves else f"s{n}" for n in keep]
    return Hierarchy(names, [remap[parent_of[n]] if parent_of[n] >= 0 else -1 for n in keep], num_leaves)


@st.composite
def trees(draw, max_leaves: int = 30) -> Hierarchy:
    num_leaves = draw(st.integers(1, max_leaves))
    seed = draw(st.integers(0, 2**31 - 1))
    return random_tree(num_leaves, seed, max_depth=draw(st.integers(1, 5)), branching=draw(st.floats(0.1, 1.0)))
