"""Stanford Dogs: 20,580 photographs of 120 breeds (12,000 train, 8,580 test), with the paper's
tree of breeds under the family named at the end of the breed (|P| = 198, see
:mod:`hseval.tree.builders.stanford_dogs` for the exact rule).

``--data-root`` is the dataset folder (or the one holding ``stanford_dogs/``): ``Images/`` with
one ``<wnid>-<breed>/`` folder per class (the classes, sorted, are the label order) and the
official lists ``train_list.mat`` and ``test_list.mat`` (``file_list``, 1-based ``labels``).
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
    class_folders,
    file_dataset,
    find_dataset_folder,
    require,
)
from hseval.data.matfiles import load_mat, mat_ints, mat_strings, mat_variable
from hseval.tree.builders.stanford_dogs import stanford_dogs_hierarchy

__all__ = ["load_stanford_dogs", "read_stanford_dogs_classes"]

TITLE = "Stanford Dogs"


def read_stanford_dogs_classes(folder: Path) -> list[str]:
    """The class folders of ``Images/``, sorted (which is the official label order)."""
    images = require(folder, "Images", title=TITLE, kind="folder")
    classes = class_folders(images)
    if not classes:
        raise DataError(f"{images}: no class folders; expected Images/<wnid>-<breed>/*.jpg")
    return classes


def _split(path: Path, images: Path, class_names: list[str], split: str) -> tuple[list[Path], np.ndarray]:
    mat = load_mat(path)
    files = mat_strings(mat_variable(mat, "file_list", path), path, "'file_list'")
    labels = mat_ints(mat_variable(mat, "labels", path), path, "'labels'")
    if len(files) != len(labels):
        raise DataError(f"{path}: {len(files)} files but {len(labels)} labels")
    labels = check_labels(labels, class_names, source=path, first=1)
    for name, label in zip(files, labels.tolist()):
        # each file lies in its class's folder: a missing or extra folder would shift every label
        if Path(name).parent.name != class_names[label]:
            raise DataError(f"{path}: {name} has label {label + 1} ({class_names[label]}) but lies in another "
                            f"folder; {images} must hold exactly the official class folders")
    if split == "train":
        check_every_class(labels, class_names, source=path)
    paths = [images / name for name in files]
    check_images_exist(paths)
    return paths, labels


@register_dataset("stanford-dogs", train=12_000, test=8_580, classes=120,
                  tree="the last word of the breed (paper, App. C.3)")
def load_stanford_dogs(root: str | Path | None = None) -> LoadedDataset:
    """Stanford Dogs with the official split and the paper's 224-pixel recipe."""
    folder = find_dataset_folder(root, subfolders=("stanford_dogs", "stanford-dogs", "StanfordDogs"),
                                 markers=("Images", "train_list.mat", "test_list.mat"), title=TITLE,
                                 expected="the folder holding Images/, train_list.mat and test_list.mat")
    class_names = read_stanford_dogs_classes(folder)
    images = folder / "Images"
    train = _split(folder / "train_list.mat", images, class_names, "train")
    test = _split(folder / "test_list.mat", images, class_names, "test")
    return file_dataset("stanford-dogs", folder, class_names, stanford_dogs_hierarchy(class_names), train, test)
