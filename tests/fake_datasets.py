"""Tiny copies of the paper's datasets in their real on-disk formats, made by the tests: the
official class lists (``fixtures/datasets``), a few images per class (one small JPEG written with
PIL, its bytes reused), CIFAR pickles byte-compatible with the official Python 2 files, devkit
``.mat`` files written with scipy in the devkit's structure."""

from __future__ import annotations

import io
import struct
from functools import lru_cache
from pathlib import Path

import numpy as np
import scipy.io

from tests.helpers import FIXTURES

DATASETS = FIXTURES / "datasets"


def fixture_rows(name: str, *, sep: str | None = "\t") -> list[list[str]]:
    """Rows of ``fixtures/datasets/<name>`` without its SOURCE line and ``#`` headers."""
    lines = (DATASETS / name).read_text(encoding="utf-8").splitlines()
    return [line.split(sep, 3) for line in lines if line.strip() and not line.startswith(("SOURCE:", "#"))]


def cifar100_lists() -> tuple[list[str], list[str], list[int]]:
    fine = [name for _, name in fixture_rows("cifar100_fine.txt")]
    coarse = [name for _, name in fixture_rows("cifar100_coarse.txt")]
    return fine, coarse, [int(row[2]) for row in fixture_rows("cifar100_fine_to_coarse.tsv")]


@lru_cache(maxsize=1)
def jpeg_bytes() -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(np.arange(8 * 8 * 3, dtype=np.uint8).reshape(8, 8, 3)).save(buffer, "JPEG")
    return buffer.getvalue()


def write_image(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(jpeg_bytes())
    return path


# ------------------------------------------------------------------ Python 2 pickles (CIFAR)
def _string(raw: bytes) -> bytes:  # Python 2 str: SHORT_BINSTRING / BINSTRING
    return b"U" + bytes([len(raw)]) + raw if len(raw) < 256 else b"T" + struct.pack("<i", len(raw)) + raw


def _tuple(items: tuple) -> bytes:
    body = b"".join(_dump(item) for item in items)
    return {0: b")", 1: body + b"\x85", 2: body + b"\x86", 3: body + b"\x87"}.get(len(items), b"(" + body + b"t")


def _dump(obj) -> bytes:
    if obj is None:
        return b"N"
    if isinstance(obj, bool):
        return b"\x88" if obj else b"\x89"
    if isinstance(obj, int):
        return b"K" + bytes([obj]) if 0 <= obj < 256 else b"J" + struct.pack("<i", obj)
    if isinstance(obj, (str, bytes)):
        return _string(obj.encode("latin1") if isinstance(obj, str) else obj)
    if isinstance(obj, tuple):
        return _tuple(obj)
    if isinstance(obj, list):
        return b"](" + b"".join(_dump(item) for item in obj) + b"e"
    if isinstance(obj, dict):
        return b"}(" + b"".join(_dump(k) + _dump(v) for k, v in obj.items()) + b"u"
    if isinstance(obj, np.ndarray) and obj.dtype == np.uint8:
        # what numpy 1.x under Python 2 wrote: _reconstruct(ndarray, (0,), 'b') + BUILD(state)
        dtype = b"cnumpy\ndtype\n" + _tuple(("u1", 0, 1)) + b"R" + _tuple((3, "|", None, None, None, -1, -1, 0)) + b"b"
        state = b"(" + _dump(1) + _tuple(obj.shape) + dtype + b"\x89" + _string(obj.tobytes()) + b"t"
        return b"cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\n" + _tuple((0,)) + _string(b"b") + \
            b"\x87R" + state + b"b"
    raise TypeError(f"cannot write {type(obj).__name__} in the CIFAR format")


def py2_pickle(obj) -> bytes:
    """``cPickle.dumps(obj, 2)`` as Python 2 wrote the official CIFAR files."""
    return b"\x80\x02" + _dump(obj) + b"."


def write_cifar100(root: Path, *, per_class: tuple[int, int] = (2, 1), seed: int = 0) -> Path:
    """``root/cifar-100-python/{train,test,meta}`` with ``per_class`` train/test images per class."""
    fine, coarse, fine_to_coarse = cifar100_lists()
    folder = root / "cifar-100-python"
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for split, n in zip(("train", "test"), per_class):
        labels = [j for j in range(100) for _ in range(n)]
        record = {"filenames": [f"img_{k}.png" for k in range(len(labels))], "batch_label": f"{split} batch 1 of 1",
                  "fine_labels": labels, "coarse_labels": [fine_to_coarse[j] for j in labels],
                  "data": rng.integers(0, 256, (len(labels), 3072), dtype=np.uint8)}
        (folder / split).write_bytes(py2_pickle(record))
    (folder / "meta").write_bytes(py2_pickle({"fine_label_names": fine, "coarse_label_names": coarse}))
    return folder


# ------------------------------------------------------------------ image-file datasets
def write_cub200(root: Path, *, per_class: tuple[int, int] = (1, 1)) -> Path:
    """``root/CUB_200_2011`` with the official classes and ``per_class`` train/test images each."""
    folder = root / "CUB_200_2011"
    classes = [name for _, name in fixture_rows("cub200_classes.txt", sep=" ")]
    lines = {"images.txt": [], "image_class_labels.txt": [], "train_test_split.txt": []}
    image_id = 0
    for class_id, name in enumerate(classes, start=1):
        for k in range(sum(per_class)):
            image_id += 1
            relative = f"{name}/{name.split('.')[1]}_{k:04d}_{image_id}.jpg"
            write_image(folder / "images" / relative)
            lines["images.txt"].append(f"{image_id} {relative}")
            lines["image_class_labels.txt"].append(f"{image_id} {class_id}")
            lines["train_test_split.txt"].append(f"{image_id} {int(k < per_class[0])}")
    (folder / "classes.txt").write_text("".join(f"{i} {n}\n" for i, n in enumerate(classes, start=1)))
    for name, rows in lines.items():
        (folder / name).write_text("\n".join(rows) + "\n")
    return folder


def _struct_array(records: list[dict]) -> np.ndarray:
    """A 1×N MATLAB struct array (scipy writes a numpy record array of objects as one)."""
    dtype = [(key, object) for key in records[0]]
    array = np.empty((1, len(records)), dtype=dtype)
    for k, record in enumerate(records):
        for key, value in record.items():
            array[0, k][key] = value
    return array


def write_stanford_cars(root: Path, *, per_class: tuple[int, int] = (1, 1)) -> Path:
    """``root/stanford_cars`` in the devkit layout with the official 196 class names."""
    folder = root / "stanford_cars"
    classes = [name for _, name in fixture_rows("stanford_cars_classes.txt")]
    (folder / "devkit").mkdir(parents=True, exist_ok=True)
    names = np.empty((1, len(classes)), dtype=object)
    names[0, :] = classes
    scipy.io.savemat(folder / "devkit" / "cars_meta.mat", {"class_names": names})
    for split, n, mat in (("train", per_class[0], folder / "devkit" / "cars_train_annos.mat"),
                          ("test", per_class[1], folder / "cars_test_annos_withlabels.mat")):
        records = []
        for class_id in range(1, len(classes) + 1):
            for _ in range(n):
                fname = f"{len(records) + 1:05d}.jpg"
                write_image(folder / f"cars_{split}" / fname)
                records.append({"bbox_x1": np.uint8(1), "bbox_y1": np.uint8(2), "bbox_x2": np.uint8(7),
                                "bbox_y2": np.uint8(6), "class": np.uint8(class_id), "fname": fname})
        scipy.io.savemat(mat, {"annotations": _struct_array(records)})
    return folder


def write_stanford_dogs(root: Path, *, per_class: tuple[int, int] = (1, 1)) -> Path:
    """``root/stanford_dogs``: ``Images/<wnid>-<breed>/`` and the official ``*_list.mat`` files."""
    folder = root / "stanford_dogs"
    classes = [name for _, name in fixture_rows("stanford_dogs_classes.txt")]
    for split, n in zip(("train", "test"), per_class):
        files, labels = [], []
        for label, name in enumerate(classes, start=1):
            for k in range(n):
                relative = f"{name}/{name.split('-')[0]}_{split}{k}.jpg"
                write_image(folder / "Images" / relative)
                files.append(relative)
                labels.append(label)
        file_list = np.empty((len(files), 1), dtype=object)
        file_list[:, 0] = files
        scipy.io.savemat(folder / f"{split}_list.mat", {
            "file_list": file_list, "annotation_list": file_list,
            "labels": np.array(labels, dtype=np.float64)[:, None]})
    return folder


def tiny_imagenet_wnids() -> list[str]:
    return [row[0] for row in fixture_rows("tiny_imagenet_wnids.tsv")]


def write_tiny_imagenet(root: Path, *, wnids: list[str] | None = None, per_class: tuple[int, int] = (1, 1)) -> Path:
    """``root/tiny-imagenet-200`` with ``per_class`` train/val images per class."""
    folder = root / "tiny-imagenet-200"
    rows = fixture_rows("tiny_imagenet_wnids.tsv")
    words = {row[0]: row[1] for row in rows}
    wnids = [row[0] for row in rows] if wnids is None else wnids
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "wnids.txt").write_text("".join(f"{w}\n" for w in wnids))
    (folder / "words.txt").write_text("".join(f"{w}\t{words.get(w, w)}\n" for w in wnids))
    annotations = []
    for wnid in wnids:
        for k in range(per_class[0]):
            write_image(folder / "train" / wnid / "images" / f"{wnid}_{k}.JPEG")
        for _ in range(per_class[1]):
            name = f"val_{len(annotations)}.JPEG"
            write_image(folder / "val" / "images" / name)
            annotations.append(f"{name}\t{wnid}\t0\t0\t7\t7")
    (folder / "val" / "val_annotations.txt").write_text("\n".join(annotations) + "\n")
    return folder


# ------------------------------------------------------------------ iNaturalist (COCO-style JSON)
INATURALIST_SPECIES = (  # id, kingdom, phylum, class, order, family, genus, species; "Morus" twice, chains
    (7, "Plantae", "Tracheophyta", "Magnoliopsida", "Rosales", "Moraceae", "Morus", "Morus alba"),
    (3, "Plantae", "Tracheophyta", "Magnoliopsida", "Rosales", "Moraceae", "Morus", "Morus rubra"),
    (0, "Plantae", "Tracheophyta", "Magnoliopsida", "Sapindales", "Sapindaceae", "Acer", "Acer rubrum"),
    (9, "Plantae", "Tracheophyta", "Magnoliopsida", "Sapindales", "Sapindaceae", "Acer", "Acer saccharum"),
    (4, "Plantae", "Tracheophyta", "Magnoliopsida", "Sapindales", "Anacardiaceae", "Rhus", "Rhus typhina"),
    (1, "Animalia", "Chordata", "Aves", "Suliformes", "Sulidae", "Morus", "Morus bassanus"),
    (8, "Animalia", "Chordata", "Aves", "Suliformes", "Sulidae", "Morus", "Morus serrator"),
    (2, "Animalia", "Chordata", "Aves", "Suliformes", "Sulidae", "Sula", "Sula sula"),
    (6, "Animalia", "Chordata", "Aves", "Passeriformes", "Paridae", "Poecile", "Poecile atricapillus"),
    (5, "Animalia", "Chordata", "Aves", "Passeriformes", "Paridae", "Poecile", "Poecile gambeli"),
)
"""Ten species over two kingdoms, listed out of id order as a JSON may list them."""

INATURALIST_FILES = {"2018": ("train2018.json", "val2018.json"), "2019": ("train2019.json", "val2019.json"),
                     "2021": ("train.json", "val.json"), "2021-mini": ("train_mini.json", "val.json")}


def inaturalist_classes() -> tuple[list[str], list[tuple[str, ...]]]:
    """The species of :data:`INATURALIST_SPECIES` in id order, and their lineages (kingdom..genus)."""
    rows = sorted(INATURALIST_SPECIES)
    return [row[7] for row in rows], [row[1:7] for row in rows]


def _inaturalist_category(row: tuple, year: str) -> dict:
    cid, kingdom, phylum, klass, order, family, genus, name = row
    category = {"id": cid, "name": name, "kingdom": kingdom, "phylum": phylum, "class": klass, "order": order,
                "family": family, "genus": genus}
    if year == "2018":
        category["supercategory"] = "Plantae" if kingdom == "Plantae" else "Aves"
    if year.startswith("2021"):
        folder = f"{cid:05d}_{kingdom}_{phylum}_{klass}_{order}_{family}_{name.replace(' ', '_')}"
        category.update(common_name=f"common {name}", supercategory="Plants" if kingdom == "Plantae" else "Birds",
                        specific_epithet=name.split()[1], image_dir_name=folder)
    return category


def _inaturalist_image_folder(row: tuple, year: str, split: str) -> str:
    cid, kingdom = row[0], row[1]
    if year in ("2018", "2019"):  # train_val2019/<super category>/<category id>/
        return f"train_val{year}/{'Plants' if kingdom == 'Plantae' else 'Birds'}/{cid}"
    prefix = "val" if split == "val" else "train_mini" if year == "2021-mini" else "train"
    return f"{prefix}/{_inaturalist_category(row, '2021')['image_dir_name']}"


def write_inaturalist(root: Path, *, year: str = "2021", per_class: tuple[int, int] = (2, 1)) -> Path:
    """``root`` with the JSON files and images of iNaturalist ``year`` in the competition's layout
    (``per_class`` train/val images per species): images listed in a shuffled order, their
    annotations in another, ids that are not positions."""
    import json

    rng = np.random.default_rng(0)
    for split, n in zip(("train", "val"), per_class):
        images, annotations = [], []
        for row in INATURALIST_SPECIES:
            for k in range(n):
                image_id = 1000 * (split == "val") + 10 * row[0] + k + 5
                name = f"{_inaturalist_image_folder(row, year, split)}/{split}{image_id:04d}.jpg"
                write_image(root / name)
                images.append({"id": image_id, "width": 8, "height": 8, "file_name": name, "license": 0})
                annotations.append({"id": len(annotations), "image_id": image_id, "category_id": row[0]})
        data = {"info": {"year": int(year[:4])}, "licenses": [],
                "images": [images[k] for k in rng.permutation(len(images))],
                "annotations": [annotations[k] for k in rng.permutation(len(annotations))],
                "categories": [_inaturalist_category(row, year) for row in INATURALIST_SPECIES]}
        (root / INATURALIST_FILES[year][split == "val"]).write_text(json.dumps(data))
    return root


def builder_inputs(name: str) -> tuple:
    """The arguments a built-in hierarchy builder needs where hseval ships no class list for it
    (iNaturalist's taxonomy is in the competition's JSON only); ``()`` for the others."""
    return inaturalist_classes() if name == "inaturalist" else ()


# ------------------------------------------------------------------ ImageNet (ILSVRC-2012)
def imagenet_val_wnid(k: int, wnids: list[str]) -> str:
    """The class of the fake copy's validation image ``k`` (1-based): every class once in 1,000
    images, not in class order (7 and 1,000 are coprime)."""
    return wnids[(7 * k) % len(wnids)]


def imagenet_devkit_id(label: int) -> int:
    """The fake devkit's ILSVRC2012_ID of the class at ``label``: 1..1,000, not in sorted-wnid order."""
    return (3 * label) % 1000 + 1


def write_imagenet(root: Path, *, layout: str = "folders", train: int = 1, val: int = 1000) -> Path:
    """An ILSVRC-2012 copy under ``root`` with ``train`` images per class in ``train/<wnid>/`` (0:
    no ``train/``) and ``val`` validation images ``ILSVRC2012_val_<k>.JPEG`` labelled as
    :func:`imagenet_val_wnid` says, laid out as ``layout``: ``folders`` (``imagenet/val/<wnid>/``),
    ``kaggle`` (``ILSVRC/Data/CLS-LOC/val/`` and ``LOC_val_solution.csv`` at the top, rows out of
    order, some with two boxes) or ``devkit`` (``imagenet/val/`` with the devkit's ground truth and
    ``meta.mat``, whose ``synsets`` also hold inner nodes). Returns the folder holding ``val/``."""
    from hseval.tree.builders.packaged import read_table

    wnids = [row[0] for row in read_table("imagenet_wnids.tsv")]
    folder = root / "ILSVRC" / "Data" / "CLS-LOC" if layout == "kaggle" else root / "imagenet"
    for wnid in wnids if train else ():
        for k in range(train):
            write_image(folder / "train" / wnid / f"{wnid}_{k}.JPEG")
    names = {k: f"ILSVRC2012_val_{k:08d}" for k in range(1, val + 1)}
    for k, name in names.items():
        write_image(folder / "val" / (imagenet_val_wnid(k, wnids) if layout == "folders" else "") / f"{name}.JPEG")
    if layout == "kaggle":
        rows = [f"{names[k]},{imagenet_val_wnid(k, wnids)} 1 2 7 6" + (f" {imagenet_val_wnid(k, wnids)} 0 0 3 3"
                                                                         if k % 2 else " ")
                for k in sorted(names, key=lambda k: (k * 5) % (val + 1))]
        (root / "LOC_val_solution.csv").write_text("ImageId,PredictionString\n" + "\n".join(rows) + "\n")
    elif layout == "devkit":
        data = folder / "ILSVRC2012_devkit_t12" / "data"
        data.mkdir(parents=True)
        label = {wnid: j for j, wnid in enumerate(wnids)}
        (data / "ILSVRC2012_validation_ground_truth.txt").write_text(
            "".join(f"{imagenet_devkit_id(label[imagenet_val_wnid(k, wnids)])}\n" for k in names))
        write_imagenet_meta(data / "meta.mat", wnids)
    return folder


def write_imagenet_meta(path: Path, wnids: list[str], *, ids: dict[str, int] | None = None) -> None:
    """The devkit's ``meta.mat``: ``synsets``, a struct array of the 1,000 classes (by their
    ILSVRC2012_ID, ``ids`` or :func:`imagenet_devkit_id`) then two inner nodes (IDs 1001, 1002)."""
    ids = ids or {wnid: imagenet_devkit_id(j) for j, wnid in enumerate(wnids)}
    records = [{"ILSVRC2012_ID": np.uint16(ids[wnid]), "WNID": wnid, "words": wnid, "num_children": np.uint8(0)}
               for wnid in sorted(wnids, key=ids.get)]
    records += [{"ILSVRC2012_ID": np.uint16(1001 + i), "WNID": wnid, "words": "inner", "num_children": np.uint8(2)}
                for i, wnid in enumerate(("n00001740", "n00001930"))]
    scipy.io.savemat(path, {"synsets": _struct_array(records).T})
