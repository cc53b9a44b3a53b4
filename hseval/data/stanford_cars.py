"""Stanford Cars: 16,185 photographs of 196 car models (8,144 train, 8,041 test), with the tree of
models under 9 body types (|P| = 205).

``--data-root`` is the dataset folder (or the one holding ``stanford_cars/``), laid out as the
devkit and torchvision have it: ``devkit/cars_meta.mat`` (``class_names``),
``devkit/cars_train_annos.mat`` and ``cars_test_annos_withlabels.mat`` (next to the devkit or
inside it; ``annotations`` with ``fname``, 1-based ``class`` and the bounding box), and the
images in ``cars_train/`` and ``cars_test/``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hseval.core.errors import DataError, HierarchyError
from hseval.data.base import LoadedDataset, register_dataset
from hseval.data.folders import (
    check_every_class,
    check_images_exist,
    check_labels,
    file_dataset,
    find_dataset_folder,
    require,
)
from hseval.data.matfiles import load_mat, mat_ints, mat_strings, mat_variable, struct_field
from hseval.tree.builders.stanford_cars import stanford_cars_hierarchy

__all__ = ["load_stanford_cars", "read_stanford_cars_classes"]

TITLE = "Stanford Cars"
TEST_ANNOS = "cars_test_annos_withlabels.mat"


def read_stanford_cars_classes(folder: Path) -> list[str]:
    """The class names of ``devkit/cars_meta.mat`` in label order."""
    path = folder / "devkit" / "cars_meta.mat"
    return mat_strings(mat_variable(load_mat(path), "class_names", path), path, "'class_names'")


def _annotations(path: Path, images: Path, class_names: list[str], split: str) -> tuple[list[Path], np.ndarray]:
    annotations = mat_variable(load_mat(path), "annotations", path)
    names = mat_strings(struct_field(annotations, "fname", path, "annotations"), path, "'fname'")
    labels = mat_ints(struct_field(annotations, "class", path, "annotations"), path, "'class'")
    labels = check_labels(labels, class_names, source=path, first=1)
    if split == "train":
        check_every_class(labels, class_names, source=path)
    paths = [images / Path(name).name for name in names]
    check_images_exist(paths)
    return paths, labels


@register_dataset("stanford-cars", train=8_144, test=8_041, classes=196,
                  tree="body type (Chang et al., CVPR 2021)")
def load_stanford_cars(root: str | Path | None = None) -> LoadedDataset:
    """Stanford Cars with the official split and the paper's 224-pixel recipe."""
    folder = find_dataset_folder(root, subfolders=("stanford_cars", "stanford-cars"),
                                 markers=("devkit", "cars_train", "cars_test", TEST_ANNOS), title=TITLE,
                                 expected="the folder holding devkit/, cars_train/, cars_test/ and "
                                          f"{TEST_ANNOS}")
    require(folder, "devkit", title=TITLE, kind="folder")
    class_names = read_stanford_cars_classes(folder)
    test_annos = folder / TEST_ANNOS
    if not test_annos.is_file() and (folder / "devkit" / TEST_ANNOS).is_file():
        test_annos = folder / "devkit" / TEST_ANNOS
    if not test_annos.is_file():
        raise DataError(f"{test_annos}: file is missing (also looked in {folder / 'devkit'}); it holds the test "
                        "labels and comes separately from the devkit: download it and put it there")
    train = _annotations(folder / "devkit" / "cars_train_annos.mat",
                         require(folder, "cars_train", title=TITLE, kind="folder"), class_names, "train")
    test = _annotations(test_annos, require(folder, "cars_test", title=TITLE, kind="folder"), class_names, "test")
    try:
        hierarchy = stanford_cars_hierarchy(class_names)
    except HierarchyError as exc:
        raise DataError(f"{folder / 'devkit' / 'cars_meta.mat'}: {exc}") from None
    return file_dataset("stanford-cars", folder, class_names, hierarchy, train, test)
