"""ImageNet-1k (ILSVRC-2012): 1,281,167 training and 50,000 validation photographs of 1,000
classes, read from the user's copy (hseval downloads nothing: get it from image-net.org or from
Kaggle's ImageNet Object Localization Challenge). The official validation images are hseval's
test split, since the test labels were never published (as for Tiny-ImageNet); hseval's ``val``
split is held out of the training images (``data.val_fraction``).

The classes are the 1,000 wnids sorted, the order of every pretrained model's logits; the tree is
WordNet 3.0's by the paper's rules (option ``tree="paper"``, NBDT's) or by Making Better
Mistakes' (``tree="mbm"``), see :mod:`hseval.tree.builders.imagenet`.

``--data-root`` is the folder holding ``val/`` (or the one holding ``imagenet/``, ``ILSVRC2012/``
or Kaggle's ``ILSVRC/Data/CLS-LOC/``):

- ``train/<wnid>/*.JPEG``, optional: without it the training split is empty (a copy of the
  validation images only, enough to evaluate a model trained elsewhere) and training refuses it;
  with it, every class has its folder (a partial copy would train a model that never saw the
  missing classes).
- ``val/<wnid>/*.JPEG``, a folder for every class; or ``val/*.JPEG`` labelled by Kaggle's
  ``LOC_val_solution.csv`` (in the folder, in ``val/`` or at the top of Kaggle's copy), else by
  the devkit's ``ILSVRC2012_devkit_t12/data/ILSVRC2012_validation_ground_truth.txt`` (one
  ILSVRC2012_ID per image, ``ILSVRC2012_val_00000001.JPEG`` first) and its ``meta.mat``.

The test split is in file-name order whatever the layout, so every layout gives the same split.
Loading lists one directory per class folder; no image is opened.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from hseval.core.errors import DataError
from hseval.data.base import LoadedDataset, register_dataset
from hseval.data.folders import (
    check_every_class,
    file_dataset,
    find_dataset_folder,
    list_images,
    require,
)
from hseval.data.imagenet_labels import read_devkit_labels, read_kaggle_labels
from hseval.tree.builders.imagenet import check_tree_rule, imagenet_hierarchy, imagenet_wnids, imagenet_words
from hseval.tree.hierarchy import Hierarchy

__all__ = ["load_imagenet", "imagenet_classes", "find_imagenet_folder", "read_imagenet"]

TITLE = "ImageNet (ILSVRC-2012)"
KAGGLE = Path("ILSVRC") / "Data" / "CLS-LOC"
SOLUTION = "LOC_val_solution.csv"
DEVKIT = Path("ILSVRC2012_devkit_t12") / "data"
WHERE = ("hseval downloads nothing: get ILSVRC-2012 from https://image-net.org/download-images.php or Kaggle's "
         "https://www.kaggle.com/c/imagenet-object-localization-challenge")
Split = tuple[list[Path], np.ndarray]


def find_imagenet_folder(root: str | Path | None) -> Path:
    """The folder holding ``val/`` (and ``train/``): ``root``, or its ``imagenet/``,
    ``ILSVRC2012/`` or Kaggle's ``ILSVRC/Data/CLS-LOC/``; a one-line :class:`DataError` saying what
    to get and where otherwise."""
    return find_dataset_folder(
        root, subfolders=("imagenet", "ImageNet", "ILSVRC2012", "ilsvrc2012", str(KAGGLE), str("imagenet" / KAGGLE)),
        markers=("val", "train"), title=TITLE,
        expected=f"the folder holding val/ (val/<wnid>/*.JPEG, or val/*.JPEG with Kaggle's {SOLUTION} or the "
                 f"devkit's {DEVKIT.parent}/) and, to train, train/<wnid>/*.JPEG; {WHERE}")


def _class_folders(folder: Path, known: set[str]) -> set[str]:
    """The class folders of ``folder``, each one of the 1,000 wnids."""
    names = {e.name for e in os.scandir(folder) if e.is_dir() and not e.name.startswith(".")}
    extra = sorted(names - known)
    if extra:
        raise DataError(f"{folder / extra[0]}: folder {extra[0]!r} is not one of the 1,000 ILSVRC-2012 classes "
                        f"({len(extra)} such folders); remove it: this folder holds ImageNet's class folders only")
    return names


def _train(folder: Path, wnids: list[str]) -> Split | None:
    """Class by class, each folder's images sorted by name; None without ``train/``."""
    train = folder / "train"
    if not train.is_dir():
        return None
    present = _class_folders(train, set(imagenet_wnids()))
    paths: list[Path] = []
    labels: list[int] = []
    for label, wnid in enumerate(wnids):
        if wnid not in present:
            raise DataError(f"{train / wnid}: folder is missing ({len(set(wnids) - present)} of the {len(wnids)} "
                            "classes are); train/ must hold every class's folder (or be absent: a copy of the "
                            "validation images only)")
        files = list_images(train / wnid)
        paths += files
        labels += [label] * len(files)
    labels_array = np.array(labels, dtype=np.int64)
    check_every_class(labels_array, wnids, source=train)
    return paths, labels_array


def _val_folders(val: Path, wnids: list[str]) -> Split:
    present = _class_folders(val, set(imagenet_wnids()))
    found: list[tuple[str, Path, int]] = []
    for label, wnid in enumerate(wnids):
        files = list_images(val / wnid) if wnid in present else []
        if not files:
            raise DataError(f"{val / wnid}: no validation images of class {wnid}; val/ must hold a folder of images "
                            "for every class (the copy is incomplete, extract val/ again)")
        found += [(path.name, path, label) for path in files]
    found.sort()
    twice = [a for a, b in zip(found, found[1:]) if a[0] == b[0]]
    if twice:
        raise DataError(f"{twice[0][1]}: {twice[0][0]} lies in two class folders of {val}; each validation image "
                        "has one class, remove the copy")
    return [path for _, path, _ in found], np.array([label for _, _, label in found], dtype=np.int64)


def _solution(folder: Path) -> Path | None:
    places = [folder, folder / "val"]
    if folder.parts[-3:] == KAGGLE.parts:
        places.append(folder.parents[2])
    return next((place / SOLUTION for place in places if (place / SOLUTION).is_file()), None)


def _val_flat(folder: Path, val: Path, loose: list[Path], wnids: list[str]) -> Split:
    solution, ground_truth = _solution(folder), folder / DEVKIT / "ILSVRC2012_validation_ground_truth.txt"
    if solution is not None:
        listed, source = read_kaggle_labels(solution, imagenet_wnids()), solution
    elif ground_truth.is_file():
        listed, source = read_devkit_labels(ground_truth, folder / DEVKIT / "meta.mat", imagenet_wnids()), ground_truth
    else:
        raise DataError(f"{val}: {len(loose):,} images without labels; put Kaggle's {SOLUTION} in {folder}, or the "
                        f"devkit's {DEVKIT.parent}/ (image-net.org), or sort the images into val/<wnid>/ folders")
    on_disk = {path.name for path in loose}
    missing = sorted(set(listed) - on_disk)
    if missing:
        raise DataError(f"{val / missing[0]}: image file is missing ({len(missing):,} of the {len(listed):,} images "
                        f"{source.name} lists are); the copy is incomplete, extract val/ again")
    unlisted = sorted(on_disk - set(listed))
    if unlisted:
        raise DataError(f"{source}: labels {len(listed):,} images but {val} holds {len(on_disk):,} ({unlisted[0]} "
                        "has no label); these labels are not those of these images")
    index = {wnid: k for k, wnid in enumerate(wnids)}
    kept = sorted((name, index[wnid]) for name, wnid in listed.items() if wnid in index)
    return [val / name for name, _ in kept], np.array([label for _, label in kept], dtype=np.int64)


def _val(folder: Path, wnids: list[str]) -> Split:
    """The official validation images of ``wnids``, in file-name order."""
    val = require(folder, "val", title=TITLE, kind="folder")
    loose = list_images(val)
    if not loose:
        return _val_folders(val, wnids)
    if any(e.is_dir() and not e.name.startswith(".") for e in os.scandir(val)):
        raise DataError(f"{val}: holds both class folders and loose images; keep one layout (val/<wnid>/*.JPEG, or "
                        f"val/*.JPEG with {SOLUTION} or the devkit)")
    return _val_flat(folder, val, loose, wnids)


def read_imagenet(folder: Path, wnids: list[str]) -> tuple[Split, Split, dict[str, Any]]:
    """The training and test splits of ``wnids`` (the 1,000 classes or some of them, in label
    order) in the ImageNet copy ``folder``, and what to record of them: without ``train/``, an
    empty training split and ``info["no_training_images"]`` saying why."""
    test = _val(folder, wnids)
    train = _train(folder, wnids)
    if train is not None:
        return train, test, {}
    absent = f"{folder / 'train'} is absent (a copy of the validation images only)"
    return ([], np.zeros(0, dtype=np.int64)), test, {"no_training_images": absent}


@register_dataset("imagenet", train=1_281_167, test=50_000, classes=1000,
                  tree="WordNet 3.0 (paper's rules; tree=mbm: Making Better Mistakes')")
def load_imagenet(root: str | Path | None = None, *, tree: str = "paper", wordnet: str | Path | None = None
                  ) -> LoadedDataset:
    """ImageNet-1k (test = the official validation images) with the paper's 224-pixel recipe."""
    return imagenet_classes("imagenet", root, imagenet_wnids(), imagenet_hierarchy, tree=tree, wordnet=wordnet)


def imagenet_classes(name: str, root: str | Path | None, wnids: list[str], build: Callable[..., Hierarchy], *,
                     tree: str, wordnet: str | Path | None) -> LoadedDataset:
    """Dataset ``name``: the images of ``wnids`` in the user's ImageNet copy, with the tree that
    ``build(wnids, tree=, wordnet=)`` makes by the rule ``tree``."""
    check_tree_rule(tree)
    folder = find_imagenet_folder(root)
    train, test, info = read_imagenet(folder, wnids)
    hierarchy = build(wnids, tree=tree, wordnet=wordnet)
    words = imagenet_words()
    return file_dataset(name, folder, wnids, hierarchy, train, test,
                        info={"class_words": {w: words[w] for w in wnids}, "tree_rule": tree, **info})
