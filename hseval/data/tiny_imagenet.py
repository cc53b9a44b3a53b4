"""Tiny-ImageNet-200: 110,000 64×64 colour images of 200 ImageNet classes (500 train and 50 val per
class; the val split is the test split, since the test labels were never published), with the
WordNet tree of the paper (|P| = 294 below its root, see :mod:`hseval.tree.builders.tiny_imagenet`).

``--data-root`` is ``tiny-imagenet-200/`` (or the folder holding it): ``wnids.txt`` (label
order), ``words.txt`` (optional, names), ``train/<wnid>/images/*.JPEG``,
``val/val_annotations.txt`` and ``val/images/``. Building the tree needs WordNet 3.0 (option
``wordnet=DIR``, or found as :func:`hseval.tree.builders.wordnet.find_wordnet` says).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np

from hseval.core import fileio
from hseval.core.errors import DataError
from hseval.data.base import LoadedDataset, register_dataset
from hseval.data.folders import (
    check_every_class,
    check_images_exist,
    file_dataset,
    find_dataset_folder,
    list_images,
    read_lines,
    require,
)
from hseval.tree.builders.tiny_imagenet import tiny_imagenet_hierarchy

__all__ = ["load_tiny_imagenet", "read_tiny_imagenet_wnids"]

TITLE = "Tiny-ImageNet-200"


def read_tiny_imagenet_wnids(folder: Path) -> list[str]:
    """The class wnids of ``wnids.txt``, in label order."""
    path = require(folder, "wnids.txt", title=TITLE)
    wnids = []
    for number, fields in read_lines(path):
        if len(fields) != 1 or not re.fullmatch(r"n\d{8}", fields[0]):
            raise DataError(f"{path}, line {number}: expected one WordNet id like n02124075, got {' '.join(fields)!r}")
        if fields[0] in wnids:
            raise DataError(f"{path}, line {number}: {fields[0]} is listed twice")
        wnids.append(fields[0])
    if not wnids:
        raise DataError(f"{path}: lists no classes")
    return wnids


def _words(folder: Path, wnids: list[str]) -> dict[str, str]:
    path = folder / "words.txt"
    if not path.is_file():
        return {}
    wanted = set(wnids)
    pairs = (line.split("\t", 1) for line in fileio.decode(path.read_bytes(), errors="replace").splitlines())
    return {p[0]: p[1] for p in pairs if len(p) == 2 and p[0] in wanted}


def _train(folder: Path, wnids: list[str]) -> tuple[list[Path], np.ndarray]:
    train = require(folder, "train", title=TITLE, kind="folder")
    known = set(wnids)
    extra = sorted(e.name for e in os.scandir(train) if e.is_dir() and e.name not in known)
    if extra:
        raise DataError(f"{train / extra[0]}: class folder {extra[0]!r} is not in {folder / 'wnids.txt'} "
                        f"({len(extra)} such folders); remove it or list it in wnids.txt")
    paths, labels = [], []
    for label, wnid in enumerate(wnids):
        images = train / wnid / "images"
        if not images.is_dir():
            raise DataError(f"{images}: folder is missing; class {wnid} of wnids.txt has no training images")
        files = list_images(images)
        paths += files
        labels += [label] * len(files)
    labels = np.array(labels, dtype=np.int64)
    check_every_class(labels, wnids, source=train)
    return paths, labels


def _val(folder: Path, wnids: list[str]) -> tuple[list[Path], np.ndarray]:
    path = require(folder, Path("val") / "val_annotations.txt", title=TITLE)
    images = require(folder, Path("val") / "images", title=TITLE, kind="folder")
    index = {wnid: k for k, wnid in enumerate(wnids)}
    paths, labels = [], []
    for number, fields in read_lines(path):
        if len(fields) < 2:
            raise DataError(f"{path}, line {number}: expected '<file> <wnid> <box>', got {' '.join(fields)!r}")
        if fields[1] not in index:
            raise DataError(f"{path}, line {number}: class {fields[1]!r} is not in wnids.txt; the annotations do not "
                            "match the class list")
        paths.append(images / fields[0])
        labels.append(index[fields[1]])
    check_images_exist(paths)
    return paths, np.array(labels, dtype=np.int64)


@register_dataset("tiny-imagenet", train=100_000, test=10_000, classes=200, tree="WordNet 3.0 (paper, App. C.3)")
def load_tiny_imagenet(root: str | Path | None = None, *, wordnet: str | Path | None = None) -> LoadedDataset:
    """Tiny-ImageNet-200 (test = the official val split) with the paper's 224-pixel recipe."""
    folder = find_dataset_folder(root, subfolders=("tiny-imagenet-200",), markers=("wnids.txt", "train", "val"),
                                 title=TITLE, expected="the tiny-imagenet-200/ folder (wnids.txt, train/, val/)")
    wnids = read_tiny_imagenet_wnids(folder)
    train, test = _train(folder, wnids), _val(folder, wnids)
    hierarchy = tiny_imagenet_hierarchy(wnids, wordnet=wordnet)
    return file_dataset("tiny-imagenet", folder, wnids, hierarchy, train, test,
                        info={"class_words": _words(folder, wnids)})
