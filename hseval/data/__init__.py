"""Datasets (registry): ``load_dataset(name, root)`` -> :class:`LoadedDataset`."""

from hseval.data import fashion_mnist  # noqa: F401  (registration)
from hseval.data.base import (
    ImageFiles,
    LoadedDataset,
    TensorImages,
    TensorPreprocess,
    data_roots,
    list_datasets,
    load_dataset,
    register_dataset,
)

__all__ = ["ImageFiles", "LoadedDataset", "TensorImages", "TensorPreprocess", "data_roots", "list_datasets",
           "load_dataset", "register_dataset"]
