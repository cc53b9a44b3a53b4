"""Fashion-MNIST, the embedded default: 70,000 real 28×28 grey images of 10 clothing classes.

Looked up in ``--data-root`` when it is given (only there); otherwise, in order, in
``$HSEVAL_DATA``, Debian's ``dataset-fashion-mnist`` package (``/usr/share/datasets/fashion-mnist``)
and ``~/.cache/hseval``. Each may hold the four IDX files directly, or in ``fashion-mnist/`` or
torchvision's ``FashionMNIST/raw/``. The IDX
files are read directly (Debian recompressed them, so torchvision's checksums reject them). Where
none is found, torchvision downloads them into ``~/.cache/hseval`` when a network is there.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from hseval.core.errors import DataError
from hseval.data.base import LoadedDataset, TensorImages, TensorPreprocess, data_roots, register_dataset
from hseval.data.idx import read_idx
from hseval.tree.builders.fashion_mnist import FASHION_MNIST_CLASSES, fashion_mnist_hierarchy

DEBIAN = Path("/usr/share/datasets/fashion-mnist")
CACHE = Path("~/.cache/hseval")
FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
         "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}
MEAN, STD = (0.2860,), (0.3530,)


def _find(folder: Path, stem: str) -> Path | None:
    return next((folder / name for name in (stem + ".gz", stem) if (folder / name).is_file()), None)


def find_fashion_mnist(root: str | Path | None = None) -> Path | None:
    """The first folder, in lookup order, that holds all four IDX files."""
    for base in data_roots(root, DEBIAN, CACHE):
        for folder in (base, base / "fashion-mnist", base / "FashionMNIST" / "raw"):
            if all(_find(folder, stem) for pair in FILES.values() for stem in pair):
                return folder
    return None


def _download() -> Path:
    from torchvision.datasets import FashionMNIST  # only to download, where no copy is found

    cache = CACHE.expanduser()
    try:
        FashionMNIST(str(cache), train=True, download=True)
        FashionMNIST(str(cache), train=False, download=True)
    except Exception as exc:  # any network or checksum failure becomes the lookup error below
        raise OSError(str(exc)) from None
    return cache / "FashionMNIST" / "raw"


def _read_split(folder: Path, split: str) -> tuple[torch.Tensor, np.ndarray]:
    images_stem, labels_stem = FILES[split]
    images = read_idx(_find(folder, images_stem) or folder / images_stem)
    labels = read_idx(_find(folder, labels_stem) or folder / labels_stem)
    if images.ndim != 3 or images.shape[1:] != (28, 28):
        raise DataError(f"{folder}: {images_stem} holds images of shape {images.shape[1:]}, expected 28×28")
    if len(images) != len(labels):
        raise DataError(f"{folder}: {len(images)} {split} images but {len(labels)} labels")
    if labels.size and labels.max() >= len(FASHION_MNIST_CLASSES):
        raise DataError(f"{folder}: {labels_stem} has label {labels.max()}, outside 0..9")
    return torch.from_numpy(images.copy()).unsqueeze(1), labels.astype(np.int64)


@register_dataset("fashion-mnist", train=60_000, test=10_000, classes=10,
                  tree="hseval's: clothing (tops), footwear, Bag")
def load_fashion_mnist(root: str | Path | None = None, *, download: bool = True) -> LoadedDataset:
    folder = find_fashion_mnist(root)
    looked = ", ".join(str(p) for p in data_roots(root, DEBIAN, CACHE))
    if folder is None and download and root is None:
        try:
            folder = _download()
        except OSError as exc:
            raise DataError(f"Fashion-MNIST not found (looked in {looked}) and the download failed ({exc}); "
                            "install Debian's dataset-fashion-mnist package (apt install dataset-fashion-mnist) "
                            "or pass --data-root DIR with the four IDX files") from None
    if folder is None:
        raise DataError(f"Fashion-MNIST not found (looked in {looked}); install dataset-fashion-mnist or pass "
                        "--data-root DIR with the four IDX files")
    train_images, train_labels = _read_split(folder, "train")
    test_images, test_labels = _read_split(folder, "test")
    train_pre = TensorPreprocess(MEAN, STD, crop_padding=2, flip=True)
    test_pre = TensorPreprocess(MEAN, STD)
    return LoadedDataset(
        name="fashion-mnist", root=folder, class_names=list(FASHION_MNIST_CLASSES),
        hierarchy=fashion_mnist_hierarchy(),
        train=TensorImages(train_images, train_labels, train_pre, train=True),
        test=TensorImages(test_images, test_labels, test_pre, train=False),
        image_size=28, channels=1, mean=MEAN, std=STD,
        info={"augmentation": "random crop 28 (padding 2) + horizontal flip"})
