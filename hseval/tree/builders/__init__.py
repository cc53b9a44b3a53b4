"""Hierarchy builders for the paper's datasets, and tree transforms (chain merging, the random
ablation tree).

Each builder is a pure function from class names (default: the official lists shipped in
``data/``) to a :class:`~hseval.tree.hierarchy.Hierarchy`, so the trees can be built without the
images; :data:`BUILDERS` holds them by dataset name.
"""

from __future__ import annotations

from collections.abc import Callable

from hseval.core.registry import Registry
from hseval.tree.builders.cifar100 import cifar100_hierarchy
from hseval.tree.builders.cub200 import cub200_hierarchy
from hseval.tree.builders.fashion_mnist import fashion_mnist_hierarchy
from hseval.tree.builders.imagenet import imagenet_hierarchy
from hseval.tree.builders.inaturalist import inaturalist_hierarchy
from hseval.tree.builders.stanford_cars import stanford_cars_hierarchy
from hseval.tree.builders.stanford_dogs import stanford_dogs_hierarchy
from hseval.tree.builders.tiered_imagenet import tiered_imagenet_hierarchy
from hseval.tree.builders.tiny_imagenet import tiny_imagenet_hierarchy
from hseval.tree.hierarchy import Hierarchy
from hseval.tree.transforms import merge_single_child_chains, random_hierarchy

__all__ = ["BUILDERS", "merge_single_child_chains", "random_hierarchy", "cifar100_hierarchy", "cub200_hierarchy",
           "fashion_mnist_hierarchy", "inaturalist_hierarchy", "stanford_cars_hierarchy", "stanford_dogs_hierarchy",
           "tiny_imagenet_hierarchy", "imagenet_hierarchy", "tiered_imagenet_hierarchy"]

# keyed by the dataset names of hseval.data's registry
BUILDERS: Registry[Callable[..., Hierarchy]] = Registry("built-in hierarchy",
                                                     unknown="no built-in hierarchy for {name!r}")
for _name, _builder in (("fashion-mnist", fashion_mnist_hierarchy), ("cifar100", cifar100_hierarchy),
                        ("cub200", cub200_hierarchy), ("stanford-cars", stanford_cars_hierarchy),
                        ("stanford-dogs", stanford_dogs_hierarchy), ("tiny-imagenet", tiny_imagenet_hierarchy),
                        ("inaturalist", inaturalist_hierarchy), ("imagenet", imagenet_hierarchy),
                        ("tiered-imagenet-h", tiered_imagenet_hierarchy)):
    BUILDERS.add(_name, _builder)
