"""CIFAR-100, the official python version: 60,000 32×32 colour images (50,000 train, 10,000 test)
of 100 classes in 20 super-classes, kept in memory as uint8 and augmented on the device.

``--data-root`` is the folder holding ``cifar-100-python/`` (or that folder itself); it holds
the pickles ``train``, ``test`` and ``meta``, read with :func:`~hseval.data.pickles.load_pickle`
so that a planted file cannot run code. The tree comes from the files' own ``coarse_labels``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from hseval.core.errors import DataError, HierarchyError
from hseval.data.base import LoadedDataset, TensorImages, TensorPreprocess, register_dataset
from hseval.data.folders import find_dataset_folder, require
from hseval.data.pickles import load_pickle
from hseval.tree.builders.cifar100 import cifar100_hierarchy

__all__ = ["load_cifar100", "read_cifar100_split"]

TITLE = "CIFAR-100"
FILES = ("train", "test", "meta")
MEAN, STD = (0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762)


def _field(record: Any, key: str, path: Path) -> Any:
    if not isinstance(record, dict) or key not in record:
        raise DataError(f"{path}: no {key!r} entry; this is not a CIFAR-100 python file (download "
                        "cifar-100-python.tar.gz again)")
    return record[key]


def _names(meta: dict, key: str, path: Path, count: int) -> list[str]:
    names = _field(meta, key, path)
    if isinstance(names, list):  # files re-saved by Python 3 may hold bytes
        names = [n.decode("latin1") if isinstance(n, bytes) else n for n in names]
    if not isinstance(names, list) or len(names) != count or not all(isinstance(n, str) for n in names):
        raise DataError(f"{path}: {key!r} should list {count} names")
    return names


def read_cifar100_split(path: Path) -> tuple[torch.Tensor, np.ndarray, np.ndarray]:
    """Images uint8 (N, 3, 32, 32), fine labels (N,) and coarse labels (N,) of one split file."""
    record = load_pickle(path)
    data = _field(record, "data", path)
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072:
        shape = getattr(data, "shape", type(data).__name__)
        raise DataError(f"{path}: 'data' should be a uint8 array of N rows of 3072 pixels, found {shape}")
    labels = []
    for key, count in (("fine_labels", 100), ("coarse_labels", 20)):
        values = np.asarray(_field(record, key, path))
        if values.shape != (len(data),) or values.dtype.kind not in "iu":
            raise DataError(f"{path}: {key!r} should hold {len(data)} integer labels, found {values.shape}")
        if len(values) and (values.min() < 0 or values.max() >= count):
            raise DataError(f"{path}: {key!r} has label {values.min() if values.min() < 0 else values.max()}, "
                            f"out of range 0..{count - 1}")
        labels.append(values.astype(np.int64))
    # rows are the red, green and blue planes of a 32×32 image, one after the other
    return torch.from_numpy(np.ascontiguousarray(data).reshape(-1, 3, 32, 32)), labels[0], labels[1]


def _fine_to_coarse(fine: np.ndarray, coarse: np.ndarray, names: list[str], path: Path) -> list[int]:
    mapping = np.full(len(names), -1, dtype=np.int64)
    for f, c in np.unique(np.stack([fine, coarse], axis=1), axis=0).tolist():
        if mapping[f] >= 0:
            raise DataError(f"{path}: class {names[f]!r} has images under two coarse labels ({mapping[f]} and {c}); "
                            "the file is damaged")
        mapping[f] = c
    if (mapping < 0).any():
        raise DataError(f"{path}: class {names[int(np.flatnonzero(mapping < 0)[0])]!r} has no training images; "
                        "the dataset is incomplete")
    return mapping.tolist()


@register_dataset("cifar100", train=50_000, test=10_000, classes=100, tree="the dataset's 20 coarse labels")
def load_cifar100(root: str | Path | None = None) -> LoadedDataset:
    """CIFAR-100 with the paper's augmentation (random 32×32 crop after 4-pixel padding, flip)."""
    folder = find_dataset_folder(root, subfolders=("cifar-100-python",), markers=FILES, title=TITLE,
                                 expected="the folder holding cifar-100-python/ (train, test, meta)")
    paths = {name: require(folder, name, title=TITLE) for name in FILES}
    meta = load_pickle(paths["meta"])
    fine_names = _names(meta, "fine_label_names", paths["meta"], 100)
    coarse_names = _names(meta, "coarse_label_names", paths["meta"], 20)
    train_images, train_fine, train_coarse = read_cifar100_split(paths["train"])
    test_images, test_fine, test_coarse = read_cifar100_split(paths["test"])
    fine_to_coarse = _fine_to_coarse(train_fine, train_coarse, fine_names, paths["train"])
    if not np.array_equal(np.asarray(fine_to_coarse)[test_fine], test_coarse):
        raise DataError(f"{paths['test']}: its coarse labels disagree with the training file's; the file is damaged")
    try:
        hierarchy = cifar100_hierarchy(fine_names, coarse_names, fine_to_coarse)
    except HierarchyError as exc:
        raise DataError(f"{paths['meta']}: {exc}") from None
    train_pre = TensorPreprocess(MEAN, STD, crop_padding=4, flip=True)
    test_pre = TensorPreprocess(MEAN, STD)
    return LoadedDataset(
        name="cifar100", root=folder, class_names=fine_names, hierarchy=hierarchy,
        train=TensorImages(train_images, train_fine, train_pre, train=True),
        test=TensorImages(test_images, test_fine, test_pre, train=False),
        image_size=32, channels=3, mean=MEAN, std=STD,
        info={"augmentation": "random crop 32 (padding 4) + horizontal flip"})
