"""iNaturalist: photographs of species from the iNaturalist competitions (2018, 2019, 2021 and
2021's mini training set), with the tree of their taxonomy (:mod:`hseval.tree.builders.inaturalist`).

hseval reads the user's copy of the competition's COCO-style JSON files and images (it downloads
nothing: github.com/visipedia/inat_comp gives them). ``--data-root`` is the folder holding them:

========== ============================================ ========= ======= =======
year       files                                        train     test    classes
========== ============================================ ========= ======= =======
2018       train2018.json, val2018.json, train_val2018/   437,513  24,426   8,142
2019       train2019.json, val2019.json, train_val2019/   265,213   3,030   1,010
2021       train.json, val.json, train/, val/           2,686,843 100,000  10,000
2021-mini  train_mini.json, val.json, train_mini/, val/   500,000 100,000  10,000
========== ============================================ ========= ======= =======

The option ``year`` chooses among them; by default, the year whose files are in the folder (a
folder with the files of several, such as 2021's full and mini training sets, asks for it).
hseval's ``test`` split is the official validation set: the test labels were never published.
``val`` stays hseval's own held-out share of the training split (``data.val_fraction``).

The classes are the categories in ``id`` order (the order of the logits of models trained on
iNaturalist), named by their ``name`` (the species; 2018's and 2019's first releases obfuscated
the names, whose un-obfuscated ``categories`` list the organisers published later: either works).
Every category carries ``kingdom``, ``phylum``, ``class``, ``order``, ``family``, ``genus`` and
``name`` in all four years (2018 and 2021 add ``supercategory``, 2021 ``common_name``,
``specific_epithet`` and ``image_dir_name``, which hseval does not need).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from hseval.core.errors import DataError, HierarchyError
from hseval.data.base import LoadedDataset, register_dataset
from hseval.data.coco import category_order, coco_split, read_coco
from hseval.data.folders import check_every_class, check_images_exist, file_dataset, find_dataset_folder, require
from hseval.tree.builders.inaturalist import RANKS, YEARS, check_options, inaturalist_hierarchy

__all__ = ["FILES", "inaturalist_year", "read_inaturalist_categories", "load_inaturalist"]

TITLE = "iNaturalist"
FILES = {"2018": ("train2018.json", "val2018.json", "train_val2018/"),
         "2019": ("train2019.json", "val2019.json", "train_val2019/"),
         "2021": ("train.json", "val.json", "train/", "val/"),
         "2021-mini": ("train_mini.json", "val.json", "train_mini/", "val/")}
"""Each year of :data:`~hseval.tree.builders.inaturalist.YEARS`: its training and validation JSON,
and the image folders their ``file_name``s start with."""
SOURCE = "github.com/visipedia/inat_comp"


def _expected(years: tuple[str, ...]) -> str:
    files = "; ".join(f"{year}: {', '.join(FILES[year])}" for year in years)
    return f"the folder holding a competition's JSON files and images ({files}), from {SOURCE}"


def inaturalist_year(folder: Path) -> str:
    """The year whose training JSON is in ``folder``; one line asking for the option when the
    folder holds several years' files."""
    present = [year for year in YEARS if (folder / FILES[year][0]).exists()]
    if len(present) > 1:
        listed = ", ".join(f"{year} ({FILES[year][0]})" for year in present)
        raise DataError(f"{folder}: holds the files of several iNaturalist years: {listed}; choose one with --year "
                        "YEAR (hseval data, hierarchy build) or year=YEAR (load_dataset), or give each its own folder")
    if not present:
        raise DataError(f"{folder}: holds no iNaturalist training JSON; pass --data-root DIR, {_expected(YEARS)}")
    return present[0]


def read_inaturalist_categories(path: Path, data: dict[str, Any]) -> tuple[np.ndarray, list[str], list[tuple]]:
    """The categories of ``data`` (read from ``path``) in id order: their ids, names (the
    species) and lineages (:data:`~hseval.tree.builders.inaturalist.RANKS`)."""
    categories = data["categories"]
    ids, order = category_order(path, categories)
    if not len(ids):
        raise DataError(f"{path}: lists no categories; the file is damaged, download it again")
    names, lineages = [], []
    for k in order.tolist():
        category = categories[k]
        missing = next((field for field in (*RANKS, "name") if not isinstance(category.get(field), str)
                        or not category[field].strip()), None)
        if missing is not None:
            raise DataError(f"{path}: category {category['id']} has no {missing!r}; every category needs its "
                            f"{', '.join(RANKS)} and name (is this an iNaturalist competition's JSON?)")
        names.append(category["name"])
        lineages.append(tuple(category[field] for field in RANKS))
    first = dict(zip(names[::-1], ids[::-1].tolist()))
    twice = next((k for k, name in enumerate(names) if first[name] != ids[k]), None)
    if twice is not None:
        raise DataError(f"{path}: categories {first[names[twice]]} and {ids[twice]} are both named "
                        f"{names[twice]!r}; the class names must be unique")
    return ids, names, lineages


def _check_same_categories(train: Path, classes: tuple, val: Path, val_classes: tuple) -> None:
    """The validation file's categories are the training file's (a subset, with the same names and taxonomy)."""
    known = {int(i): (name, lineage) for i, name, lineage in zip(*classes)}
    for i, name, lineage in zip(*val_classes):
        if int(i) not in known:
            raise DataError(f"{val}: category {i} ({name!r}) is not among the categories of {train.name}; the two "
                            "files must be of one competition")
        if known[int(i)] != (name, lineage):
            raise DataError(f"{val}: category {i} is {name!r} ({' > '.join(lineage)}) but {known[int(i)][0]!r} "
                            f"({' > '.join(known[int(i)][1])}) in {train.name}; the two files must be of one "
                            "competition")


@register_dataset("inaturalist", train=2_686_843, test=100_000, classes=10_000,
                  tree="the taxonomy, kingdom to species (chains merged; tree=mbm: the seven ranks kept)")
def load_inaturalist(root: str | Path | None = None, *, year: str | None = None,
                     tree: str = "taxonomy") -> LoadedDataset:
    """iNaturalist ``year`` (default: the year whose files are in the folder; the card's figures are
    2021's) with the taxonomy tree by the rule ``tree`` (taxonomy or mbm) and the paper's
    224-pixel recipe; test = the official validation set."""
    check_options(year=year, tree=tree)
    years = YEARS if year is None else (year,)
    folder = find_dataset_folder(root, subfolders=("inaturalist", "iNaturalist"),
                                 markers=tuple(FILES[y][0] for y in years),
                                 title=TITLE if year is None else f"{TITLE} {year}", expected=_expected(years))
    year = year or inaturalist_year(folder)
    train_path, val_path = (require(folder, name, title=f"{TITLE} {year}") for name in FILES[year][:2])
    train_data = read_coco(train_path)
    classes = read_inaturalist_categories(train_path, train_data)
    train = coco_split(train_path, train_data, folder, classes[0], categories_of=train_path)
    del train_data  # 2021: gigabytes of Python objects
    val_data = read_coco(val_path)
    _check_same_categories(train_path, classes, val_path, read_inaturalist_categories(val_path, val_data))
    test = coco_split(val_path, val_data, folder, classes[0], categories_of=train_path)
    check_images_exist(train[0] + test[0])
    check_every_class(train[1], classes[1], source=train_path)
    try:
        hierarchy = inaturalist_hierarchy(classes[1], classes[2], tree=tree, year=year)
    except HierarchyError as exc:  # a name the tree cannot hold (a tab, a species named like a node)
        raise DataError(f"{train_path}: {exc}") from None
    return file_dataset("inaturalist", folder, classes[1], hierarchy, train, test,
                        info={"year": year, "tree_rule": tree})
