"""Shared pieces of the image-file datasets (CUB-200, Stanford Cars and Dogs, Tiny-ImageNet, image
folders): finding the dataset folder, one-line errors for missing or damaged annotation files,
cheap checks at load time (labels in range, no empty class, every listed image present: one
directory listing per folder, nothing decoded) and the paper's ImageNet-style augmentation.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torchvision.transforms import v2

from hseval.core import fileio
from hseval.core.errors import DataError
from hseval.data.base import ImageFiles, LoadedDataset, data_roots
from hseval.tree.hierarchy import Hierarchy

__all__ = ["IMAGENET_MEAN", "IMAGENET_STD", "IMAGE_EXTENSIONS", "image_transform", "find_dataset_folder",
           "require", "read_lines", "check_images_exist", "class_folders", "list_images", "check_labels",
           "check_every_class", "file_dataset"]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")
RESIZE, CROP = 256, 224


def image_transform(*, train: bool, size: int = CROP, resize: int = RESIZE) -> Callable[[Any], Any]:
    """PIL image -> normalised float (3, size, size): resize the short side to ``resize``, then a
    random crop and horizontal flip for training, a centre crop for testing (the paper's recipe)."""
    crop = [v2.RandomCrop(size), v2.RandomHorizontalFlip()] if train else [v2.CenterCrop(size)]
    return v2.Compose([v2.ToImage(), v2.Resize(resize, antialias=True), *crop,
                       v2.ToDtype(torch.float32, scale=True), v2.Normalize(IMAGENET_MEAN, IMAGENET_STD)])


def find_dataset_folder(root: str | Path | None, *, subfolders: Sequence[str], markers: Sequence[str],
                        title: str, expected: str) -> Path:
    """The first folder among ``data_roots(root)`` and their ``subfolders`` that holds any of
    ``markers``; a :class:`DataError` naming every place looked in otherwise.

    A folder with some but not all of the dataset's files is returned, so that the loader can
    say exactly which file is missing."""
    looked: list[str] = []
    for base in data_roots(root):
        # the dataset's own folder name first: $HSEVAL_DATA may hold several datasets side by side
        for folder in (*(base / name for name in subfolders), base):
            looked.append(str(folder))
            if any((folder / marker).exists() for marker in markers):
                return folder
    where = f"looked in {', '.join(looked)}" if looked else "no --data-root given and $HSEVAL_DATA is unset"
    raise DataError(f"{title} not found ({where}); pass --data-root DIR, {expected}")


def require(folder: Path, name: str, *, title: str, kind: str = "file") -> Path:
    """``folder / name``, which must be a file (or a folder when ``kind='folder'``)."""
    path = folder / name
    if not (path.is_dir() if kind == "folder" else path.is_file()):
        raise DataError(f"{path}: {kind} is missing; the {title} folder {folder} is incomplete (download or "
                        "extract the dataset again)")
    return path


def read_lines(path: Path) -> list[tuple[int, list[str]]]:
    """Non-blank lines of a whitespace-separated annotation file, as (line number, fields)."""
    text = fileio.read_text(path, what="file", error=DataError, missing="is missing; the dataset folder is incomplete",
                            damaged="is not text; it is damaged, download it again")
    return [(number, line.split()) for number, line in enumerate(text.splitlines(), start=1) if line.strip()]


def check_images_exist(paths: Sequence[Path]) -> None:
    """Raise a :class:`DataError` naming the first listed image that is not on disk."""
    listings: dict[Path, set[str]] = {}
    for folder in {path.parent for path in paths}:
        try:
            listings[folder] = set(os.listdir(folder))
        except OSError:
            listings[folder] = set()
    missing = [path for path in paths if path.name not in listings[path.parent]]
    if missing:
        raise DataError(f"{missing[0]}: image file is missing ({len(missing)} of the {len(paths)} listed images "
                        "are); the dataset folder is incomplete, extract it again")


def class_folders(folder: Path) -> list[str]:
    """Sorted names of the class folders in ``folder`` (hidden ones skipped)."""
    return sorted(e.name for e in os.scandir(folder) if e.is_dir() and not e.name.startswith("."))


def list_images(folder: Path) -> list[Path]:
    """Image files directly in ``folder`` (by extension, hidden files skipped), sorted by name."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        raise DataError(f"{folder}: cannot list ({exc.strerror or exc})") from None
    # folder / name: half the time of Path(e.path), which parses the whole path again (1.28 M ImageNet files)
    return [folder / e.name for e in entries
            if not e.name.startswith(".") and e.name.lower().endswith(IMAGE_EXTENSIONS) and e.is_file()]


def check_labels(labels: np.ndarray, class_names: Sequence[str], *, source: Path, first: int = 0) -> np.ndarray:
    """``labels`` (N,) shifted by ``first`` (1 for 1-based files) to 0..|L|-1, or a
    :class:`DataError` naming ``source`` for a label out of range."""
    labels = np.asarray(labels, dtype=np.int64) - first
    bad = np.flatnonzero((labels < 0) | (labels >= len(class_names)))
    if len(bad):
        raise DataError(f"{source}: label {labels[bad[0]] + first} is out of range {first}.."
                        f"{len(class_names) - 1 + first} ({len(bad)} such labels); the file does not match the "
                        f"{len(class_names)} classes")
    return labels


def check_every_class(labels: np.ndarray, class_names: Sequence[str], *, source: Path) -> None:
    """A :class:`DataError` naming the first class without a training image (labels 0-based)."""
    counts = np.bincount(labels, minlength=len(class_names))
    if (counts == 0).any():
        empty = int(np.flatnonzero(counts == 0)[0])
        raise DataError(f"{source}: class {class_names[empty]!r} has no training images ({int((counts == 0).sum())} "
                        "empty classes); the dataset is incomplete")


def file_dataset(name: str, root: Path, class_names: list[str], hierarchy: Hierarchy,
                 train: tuple[list[Path], np.ndarray], test: tuple[list[Path], np.ndarray], *,
                 info: dict[str, Any] | None = None, val: tuple[list[Path], np.ndarray] | None = None) -> LoadedDataset:
    """A :class:`LoadedDataset` of image files with the paper's 224-pixel ImageNet-style recipe
    (``val``: a validation split of its own, which the test split's transform reads)."""
    extra: dict[str, Any] = {}
    if val is not None:
        names = "\n".join(str(Path(p).relative_to(root)) for p in val[0]).encode("utf-8")
        extra = {"validation": {"source": "the dataset's own validation split", "samples": len(val[1]),
                                "files_sha256": fileio.sha256(names)}}
    return LoadedDataset(
        name=name, root=root, class_names=list(class_names), hierarchy=hierarchy,
        train=ImageFiles(*train, image_transform(train=True)), test=ImageFiles(*test, image_transform(train=False)),
        image_size=CROP, channels=3, mean=IMAGENET_MEAN, std=IMAGENET_STD,
        info={"augmentation": f"resize {RESIZE}, random crop {CROP} + horizontal flip (test: centre crop)",
              **(info or {}), **extra},
        val=None if val is None else ImageFiles(*val, image_transform(train=False)))
