"""The labels of ImageNet's validation images when they lie in one folder: Kaggle's
``LOC_val_solution.csv`` or the ILSVRC-2012 devkit's ground truth and ``meta.mat``, each read into
{image file name: wnid} with a one-line error naming the file and line that is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from hseval.core import fileio
from hseval.core.errors import DataError
from hseval.data.folders import read_lines
from hseval.data.matfiles import load_mat, mat_ints, mat_strings, mat_variable, struct_field

__all__ = ["read_kaggle_labels", "read_devkit_labels"]

HEADER = "ImageId,PredictionString"


def read_kaggle_labels(path: Path, wnids: Sequence[str]) -> dict[str, str]:
    """{``<ImageId>.JPEG``: wnid} of Kaggle's ``LOC_val_solution.csv`` (``ImageId,PredictionString``;
    the prediction string is one or more boxes ``wnid x_min y_min x_max y_max`` of the image's
    class); every wnid must be one of ``wnids``."""
    text = fileio.read_text(path, what="file", error=DataError, missing="is missing",
                            damaged="is not text; it is damaged, download it again")
    lines = text.splitlines()
    if not lines or lines[0].strip() != HEADER:
        raise DataError(f"{path}, line 1: expected the header {HEADER!r}; is this Kaggle's {path.name}?")
    known, labels = set(wnids), {}
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        image, _, boxes = line.partition(",")
        classes = set(re.findall(r"n\d{8}", boxes))
        first = boxes.split()[0] if boxes.split() else ""
        if not image.strip() or first not in classes:
            raise DataError(f"{path}, line {number}: expected '<ImageId>,<wnid> <box> ...', got {line.strip()!r}")
        if len(classes) > 1:
            raise DataError(f"{path}, line {number}: boxes of {len(classes)} classes ({', '.join(sorted(classes))}) "
                            f"for one image; each validation image has one class")
        if first not in known:
            raise DataError(f"{path}, line {number}: class {first!r} is not one of the 1,000 ILSVRC-2012 classes; "
                            "these labels are not ILSVRC-2012's")
        name = f"{image.strip()}.JPEG"
        if name in labels:
            raise DataError(f"{path}, line {number}: {image.strip()} is labelled twice")
        labels[name] = first
    if not labels:
        raise DataError(f"{path}: labels no image")
    return labels


def _id_to_wnid(meta: Path, wnids: Sequence[str]) -> dict[int, str]:
    """{ILSVRC2012_ID: wnid} of the classes of the devkit's ``meta.mat`` (its ``synsets`` struct
    array also lists the tree's inner nodes, IDs past 1,000, which are not classes)."""
    synsets = mat_variable(load_mat(meta), "synsets", meta)
    ids = mat_ints(struct_field(synsets, "ILSVRC2012_ID", meta, "synsets"), meta, "'synsets.ILSVRC2012_ID'")
    names = mat_strings(struct_field(synsets, "WNID", meta, "synsets"), meta, "'synsets.WNID'")
    known = set(wnids)
    classes = {int(i): name for i, name in zip(ids.tolist(), names) if 1 <= i <= len(wnids)}
    strange = sorted((i, name) for i, name in classes.items() if name not in known)
    if strange:
        raise DataError(f"{meta}: ILSVRC2012_ID {strange[0][0]} is {strange[0][1]!r}, not one of the 1,000 "
                        "ILSVRC-2012 classes; is this the ILSVRC-2012 devkit's meta.mat?")
    unnamed = sorted(set(range(1, len(wnids) + 1)) - set(classes))
    if unnamed or len(set(classes.values())) != len(classes):
        what = f"no class has ILSVRC2012_ID {unnamed[0]} ({len(unnamed)} such IDs)" if unnamed else \
            "a class has two ILSVRC2012_IDs"
        raise DataError(f"{meta}: {what}; IDs 1..{len(wnids):,} name the {len(wnids):,} classes once each, is this "
                        "the ILSVRC-2012 devkit's meta.mat?")
    return classes


def read_devkit_labels(ground_truth: Path, meta: Path, wnids: Sequence[str]) -> dict[str, str]:
    """{``ILSVRC2012_val_<n>.JPEG``: wnid} of the devkit's ground truth (one 1-based ILSVRC2012_ID
    per line, line n for image n) through ``meta.mat`` (IDs are not in sorted-wnid order)."""
    rows = read_lines(ground_truth)
    if not rows:
        raise DataError(f"{ground_truth}: labels no image")
    classes = _id_to_wnid(meta, wnids)
    labels = {}
    for k, (number, fields) in enumerate(rows, start=1):
        if len(fields) != 1 or not fields[0].isdigit():
            raise DataError(f"{ground_truth}, line {number}: expected one ILSVRC2012_ID, got {' '.join(fields)!r}")
        if number != k:
            raise DataError(f"{ground_truth}, line {number}: blank line {k}; line n labels image n, none may be blank")
        if int(fields[0]) not in classes:
            raise DataError(f"{ground_truth}, line {number}: ILSVRC2012_ID {fields[0]} is not a class of {meta} "
                            f"(it has {len(classes):,}: IDs 1..{len(wnids):,}); these files do not belong together")
        labels[f"ILSVRC2012_val_{number:08d}.JPEG"] = classes[int(fields[0])]
    return labels
