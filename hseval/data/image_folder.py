"""A user's own images: ``root/train/<class>/*.jpg`` and ``root/test/<class>/*.jpg`` (and, when there,
``root/val/<class>/*.jpg``: its validation split) plus a hierarchy file whose leaves are the class
folder names (any format :func:`~hseval.tree.read_hierarchy` reads).

Classes are the sorted names of the ``train/`` folders, as torchvision's ``ImageFolder`` orders
them; a test folder may lack a class, but not hold one that training lacks. Images get the
paper's 224-pixel ImageNet-style recipe.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hseval.core.errors import ConfigError, DataError
from hseval.data.base import LoadedDataset, register_dataset
from hseval.data.folders import IMAGE_EXTENSIONS, class_folders, file_dataset, list_images
from hseval.tree import read_hierarchy
from hseval.tree.hierarchy import Hierarchy

__all__ = ["load_image_folder"]


def _split(split_dir: Path, classes: list[str]) -> tuple[list[Path], np.ndarray]:
    paths, labels = [], []
    for label, name in enumerate(classes):
        if not (split_dir / name).is_dir():
            continue
        files = list_images(split_dir / name)
        if not files:
            raise DataError(f"{split_dir / name}: class folder holds no images ({', '.join(IMAGE_EXTENSIONS)}); "
                            "add images or remove the folder")
        paths += files
        labels += [label] * len(files)
    return paths, np.array(labels, dtype=np.int64)


@register_dataset("image-folder", train=None, test=None, classes=None, tree="your file (--hierarchy)")
def load_image_folder(root: str | Path | None = None, *, hierarchy: str | Path | Hierarchy | None = None
                      ) -> LoadedDataset:
    """Images in ``root/{train,test}/<class>/`` with the tree of the file ``hierarchy`` (or the tree
    itself: a run carries the one it was trained with)."""
    if root is None:
        raise ConfigError("image-folder needs --data-root DIR, the folder holding train/<class>/ and test/<class>/")
    if hierarchy is None:
        raise ConfigError("image-folder needs a hierarchy file whose leaves are the class folder names: pass "
                          "--hierarchy FILE")
    root = Path(root).expanduser()
    if not root.is_dir():
        raise DataError(f"{root}: no such folder; expected root/train/<class>/*.jpg and root/test/<class>/*.jpg")
    for split in ("train", "test"):
        if not (root / split).is_dir():
            raise DataError(f"{root / split}: folder is missing; expected {root}/{split}/<class>/*.jpg")
    classes = class_folders(root / "train")
    if not classes:
        raise DataError(f"{root / 'train'}: no class folders; expected {root}/train/<class>/*.jpg")
    held = [split for split in ("val", "test") if (root / split).is_dir()]
    for split in held:
        extra = [name for name in class_folders(root / split) if name not in set(classes)]
        if extra:
            raise DataError(f"{root / split / extra[0]}: class folder {extra[0]!r} has no counterpart in "
                            f"{root / 'train'}; every {split} class must be a training class")
    tree = hierarchy if isinstance(hierarchy, Hierarchy) else read_hierarchy(hierarchy)
    given = isinstance(hierarchy, Hierarchy)
    where, named = ("the run's hierarchy",) * 2 if given else (str(hierarchy), f"the hierarchy {hierarchy}")
    leaves = set(tree.leaf_names)
    missing = [name for name in classes if name not in leaves]
    if missing:
        raise DataError(f"{root / 'train' / missing[0]}: class folder {missing[0]!r} is not a leaf of "
                        f"{named} ({len(missing)} such folders); add it to the hierarchy or remove the folder")
    unused = sorted(leaves - set(classes))
    if unused:
        raise DataError(f"{where}: leaf {unused[0]!r} has no class folder in {root / 'train'} ({len(unused)} such "
                        "leaves); add the folder or remove the leaf")
    tree = tree.reorder_leaves(classes, source=where)
    return file_dataset("image-folder", root, classes, tree, _split(root / "train", classes),
                        _split(root / "test", classes),
                        info={"hierarchy_file": None if given else
                              str(Path(hierarchy).expanduser().resolve())},
                        val=_split(root / "val", classes) if "val" in held else None)
