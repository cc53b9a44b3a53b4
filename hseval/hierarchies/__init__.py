"""Hierarchy builders for the paper's datasets, and tree transforms (chain merging, the random
ablation tree)."""

from hseval.hierarchies.transforms import merge_single_child_chains, random_hierarchy

__all__ = ["merge_single_child_chains", "random_hierarchy"]
