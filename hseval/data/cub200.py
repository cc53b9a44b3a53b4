"""CUB-200-2011: 11,788 photographs of 200 bird species (5,994 train, 5,794 test), with the
paper's tree of species grouped by the last word of their name (|P| = 270).

``--data-root`` is the ``CUB_200_2011/`` folder (or the one holding it): ``classes.txt``,
``images.txt``, ``image_class_labels.txt``, ``train_test_split.txt`` and ``images/``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hseval.core.errors import DataError
from hseval.data.base import LoadedDataset, register_dataset
from hseval.data.folders import (
    check_every_class,
    check_images_exist,
    check_labels,
    file_dataset,
    find_dataset_folder,
    read_lines,
    require,
)
from hseval.tree.builders.cub200 import cub200_hierarchy

__all__ = ["load_cub200", "read_cub200_classes"]

TITLE = "CUB-200-2011"
FILES = ("classes.txt", "images.txt", "image_class_labels.txt", "train_test_split.txt")


def _id_table(path: Path, *, what: str) -> dict[int, str]:
    """``id value`` lines -> {id: value}, with a one-line error for any malformed line."""
    table: dict[int, str] = {}
    for number, fields in read_lines(path):
        if len(fields) != 2 or not fields[0].isdigit():
            raise DataError(f"{path}, line {number}: expected '<id> <{what}>', got {' '.join(fields)!r}")
        if int(fields[0]) in table:
            raise DataError(f"{path}, line {number}: id {fields[0]} is listed twice")
        table[int(fields[0])] = fields[1]
    return table


def read_cub200_classes(folder: Path) -> list[str]:
    """Class names of ``classes.txt``, in id order (ids must run 1..N)."""
    path = require(folder, "classes.txt", title=TITLE)
    table = _id_table(path, what="class name")
    if sorted(table) != list(range(1, len(table) + 1)):
        raise DataError(f"{path}: class ids must run 1..{len(table)} without gaps")
    return [table[i] for i in range(1, len(table) + 1)]


@register_dataset("cub200", train=5_994, test=5_794, classes=200, tree="the last word of the species (paper, App. C.3)")
def load_cub200(root: str | Path | None = None) -> LoadedDataset:
    """CUB-200-2011 with the official train/test split and the paper's 224-pixel recipe."""
    folder = find_dataset_folder(root, subfolders=("CUB_200_2011",), markers=(*FILES, "images"), title=TITLE,
                                 expected="the CUB_200_2011/ folder (classes.txt, images.txt, ..., images/)")
    class_names = read_cub200_classes(folder)
    images_dir = require(folder, "images", title=TITLE, kind="folder")
    tables = {name: _id_table(require(folder, name, title=TITLE), what=what) for name, what in
              (("images.txt", "image path"), ("image_class_labels.txt", "class id"),
               ("train_test_split.txt", "1 (train) or 0 (test)"))}
    images, labels, is_train = tables["images.txt"], tables["image_class_labels.txt"], tables["train_test_split.txt"]
    for name in ("image_class_labels.txt", "train_test_split.txt"):
        missing = sorted(set(images) - set(tables[name]))
        if missing:
            raise DataError(f"{folder / name}: no entry for image {missing[0]} ({len(missing)} images missing); "
                            "the file does not match images.txt")
    ids = sorted(images)
    bad = next((i for i in ids if is_train[i] not in ("0", "1") or not labels[i].isdigit()), None)
    if bad is not None:
        raise DataError(f"{folder}: image {bad} has class {labels[bad]!r} and split flag {is_train[bad]!r}; "
                        "expected a class id and 0 or 1")
    paths = [images_dir / images[i] for i in ids]
    check_images_exist(paths)
    train = np.array([is_train[i] == "1" for i in ids])
    all_labels = np.array([int(labels[i]) for i in ids], dtype=np.int64)
    source = folder / "image_class_labels.txt"
    all_labels = check_labels(all_labels, class_names, source=source, first=1)
    check_every_class(all_labels[train], class_names, source=source)
    split = {name: ([p for p, m in zip(paths, mask) if m], all_labels[mask])
             for name, mask in (("train", train), ("test", ~train))}
    return file_dataset("cub200", folder, class_names, cub200_hierarchy(class_names), split["train"],
                        split["test"])
