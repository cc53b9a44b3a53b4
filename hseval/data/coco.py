"""COCO-style annotation files of image classification (the iNaturalist competitions' format):
one JSON object with ``images`` (``id``, ``file_name`` relative to the dataset folder),
``annotations`` (``image_id``, ``category_id``: one per image) and ``categories`` (``id`` and
the dataset's own fields).

Such a file is untrusted input: a ``file_name`` may not leave the dataset folder. It can also be
large (iNaturalist 2021's ``train.json``: 2.7 M images, about 300 MB), so it is parsed once and
the per-image checks are numpy operations on its columns; the first wrong entry is found only
when a check fails, to name it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hseval.core import fileio
from hseval.core.errors import DataError

__all__ = ["read_coco", "coco_ints", "coco_split", "category_order"]

SECTIONS = ("images", "annotations", "categories")
_DAMAGED = "the file is damaged, download it again"


def read_coco(path: Path) -> dict[str, Any]:
    """The object of the JSON file ``path``, which must hold the :data:`SECTIONS` lists."""
    text = fileio.read_text(path, what="file", error=DataError, missing="is missing; the dataset folder is incomplete",
                            damaged=f"is not UTF-8 text; {_DAMAGED}")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}, line {exc.lineno}: not valid JSON ({exc.msg}); {_DAMAGED}") from None
    except (ValueError, RecursionError) as exc:  # a number too long to convert, nesting too deep
        raise DataError(f"{path}: not valid JSON ({exc.__class__.__name__}); {_DAMAGED}") from None
    if not isinstance(data, dict):
        raise DataError(f"{path}: holds a JSON {type(data).__name__}, not the COCO-style object of 'images', "
                        "'annotations' and 'categories'; is it the dataset's annotation file?")
    missing = next((name for name in SECTIONS if not isinstance(data.get(name), list)), None)
    if missing is not None:
        raise DataError(f"{path}: has no {missing!r} list; a COCO-style annotation file has 'images', 'annotations' "
                        "and 'categories' (a test file, without labels, cannot be read)")
    return data


def coco_ints(path: Path, items: list[Any], section: str, field: str) -> np.ndarray:
    """The integer ``field`` of every entry of ``items`` (the list ``section`` of ``path``), int64 (N,)."""
    try:
        values = np.array([item[field] for item in items])
    except (KeyError, TypeError, IndexError, OverflowError, ValueError):
        values = None
    if values is not None and values.ndim == 1 and values.dtype.kind in "iu" and values.dtype != np.uint64:
        return values.astype(np.int64)
    if not items:
        return np.zeros(0, dtype=np.int64)
    bad = next((k for k, item in enumerate(items) if not isinstance(item, dict) or type(item.get(field)) is not int
                or not -2**63 <= item[field] < 2**63), 0)
    raise DataError(f"{path}: {section}[{bad}] has no integer {field!r}; {_DAMAGED}")


def _file_names(path: Path, images: list[dict]) -> list[str]:
    names = [image.get("file_name") for image in images]  # coco_ints checked they are objects
    bad = next((k for k, name in enumerate(names) if type(name) is not str or not name), None)
    if bad is not None:
        raise DataError(f"{path}: images[{bad}] has no 'file_name' text; {_DAMAGED}")
    # the few names that might leave the folder are looked at closely ("a..b.jpg" does not)
    for k in (k for k, name in enumerate(names) if ".." in name or name[0] in "/\\" or name[1:2] == ":"):
        name = names[k]
        if ".." in name.replace("\\", "/").split("/") or name[0] in "/\\" or (name[0].isalpha() and name[1:2] == ":"):
            raise DataError(f"{path}: images[{k}] has file_name {names[k]!r}, which leaves the dataset folder; a "
                            "file name must be a relative path below it (the file is not the dataset's own)")
    return names


def _index(path: Path, what: str, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``ids`` sorted, and the order that sorts them; a repeated id is an error."""
    order = np.argsort(ids, kind="stable")
    ordered = ids[order]
    twice = np.flatnonzero(ordered[1:] == ordered[:-1])
    if len(twice):
        raise DataError(f"{path}: {what} id {ordered[twice[0]]} is listed twice ({len(twice)} repeated ids); "
                        f"{_DAMAGED}")
    return ordered, order


def _positions(ordered: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each of ``wanted`` is in ``ordered`` (sorted), and the indices of those that are not there."""
    at = np.minimum(np.searchsorted(ordered, wanted), max(len(ordered) - 1, 0))
    absent = np.flatnonzero(ordered[at] != wanted) if len(ordered) else np.arange(len(wanted))
    return at, absent


def coco_split(path: Path, data: dict[str, Any], folder: Path, category_ids: np.ndarray, *,
               categories_of: Path) -> tuple[list[Path], np.ndarray]:
    """The images of ``data`` (read from ``path``) in file order: their paths below ``folder`` and
    their labels, the positions of their categories in ``category_ids`` (sorted: the classes of
    ``categories_of``). Every image has exactly one annotation, of one of those categories."""
    images, annotations = data["images"], data["annotations"]
    ids = coco_ints(path, images, "images", "id")
    names = _file_names(path, images)
    image_of = coco_ints(path, annotations, "annotations", "image_id")
    category_of = coco_ints(path, annotations, "annotations", "category_id")
    ordered, order = _index(path, "image", ids)
    at, absent = _positions(ordered, image_of)
    if len(absent):
        raise DataError(f"{path}: annotations[{absent[0]}] is of image {image_of[absent[0]]}, which is not in "
                        f"'images' ({len(absent)} such annotations); {_DAMAGED}")
    counts = np.bincount(order[at], minlength=len(ids))
    for wrong in (counts == 0, counts > 1):
        if wrong.any():
            k = int(np.flatnonzero(wrong)[0])
            raise DataError(f"{path}: image {ids[k]} ({names[k]}) has {int(counts[k]) or 'no'} annotations "
                            f"({int(wrong.sum())} such images); hseval needs one label per image")
    label_at, absent = _positions(category_ids, category_of)
    if len(absent):
        raise DataError(f"{path}: annotations[{absent[0]}] is of category {category_of[absent[0]]}, which is not "
                        f"among the categories of {categories_of.name} ({len(absent)} such annotations); the files "
                        "do not belong together")
    labels = np.empty(len(ids), dtype=np.int64)
    labels[order[at]] = label_at
    return [folder / name for name in names], labels


def category_order(path: Path, categories: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """The categories' ids sorted (the class order) and the order that sorts them."""
    return _index(path, "category", coco_ints(path, list(categories), "categories", "id"))
