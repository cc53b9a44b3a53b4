"""Datasets (registry): ``load_dataset(name, root)`` -> :class:`LoadedDataset`."""

from hseval.data import (  # noqa: F401  (registration)
    cifar100,
    cub200,
    fashion_mnist,
    image_folder,
    imagenet,
    inaturalist,
    stanford_cars,
    stanford_dogs,
    tiered_imagenet,
    tiny_imagenet,
)
from hseval.data.base import (
    DATASETS,
    ImageFiles,
    LoadedDataset,
    TensorImages,
    TensorPreprocess,
    data_roots,
    dataset_card,
    load_dataset,
    load_with_tree,
    register_dataset,
)

__all__ = ["DATASETS", "ImageFiles", "LoadedDataset", "TensorImages", "TensorPreprocess", "data_roots", "dataset_card",
           "load_dataset", "load_with_tree", "register_dataset"]
