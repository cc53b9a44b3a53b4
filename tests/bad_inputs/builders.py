"""Builders of bad inputs for the catalogue: each takes the case's own folder (and the shared good
inputs) and leaves a damaged copy of a real file there."""

from __future__ import annotations

import gzip
import hashlib
import json
import pickle
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MARKER_NAME = "PWNED"


@dataclass(frozen=True)
class Good:
    """Known-good inputs the catalogue damages: a Fashion-MNIST-like folder, a trained run and
    its evaluation folder."""

    fashion: Path
    run: Path
    evaluation: Path


class Planted:
    """A pickle payload: unpickling it calls ``open(marker, "w")``, creating the marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


class PlantedSystem:
    """The classic payload: unpickling it runs ``os.system("touch MARKER")``."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        import os

        return (os.system, (f"touch {self.marker}",))


def planted_pickle(marker: Path) -> bytes:
    return pickle.dumps({"data": PlantedSystem(marker), "model": Planted(marker)}, protocol=2)


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    return path


# ------------------------------------------------------------------ runs
def copy_run(good: Good, tmp: Path) -> Path:
    return Path(shutil.copytree(good.run, tmp / "run"))


def edit_meta(run: Path, edit, *, reseal: bool = True) -> None:
    """Edit run.json; ``reseal`` updates its metadata checksum (``meta_sha256``), as a user who
    knows the format would, to reach the checks behind it."""
    meta = json.loads((run / "run.json").read_text())
    edit(meta)
    if reseal:
        meta = sealed(meta)
    (run / "run.json").write_text(json.dumps(meta))


def sealed(meta):
    from hseval.io.run_format import meta_checksum

    if isinstance(meta, dict) and "meta_sha256" in meta:
        meta["meta_sha256"] = meta_checksum(meta)
    return meta


def reseal(run: Path) -> None:
    """Recompute the metadata checksum of a run.json edited as text."""
    (run / "run.json").write_text(json.dumps(sealed(json.loads((run / "run.json").read_text()))))


def resave_tensors(run: Path, edit) -> None:
    """Change the tensors and keep the checksum in run.json valid, to reach the checks behind it."""
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(run / "model.safetensors"))
    edit(tensors)
    save_file(tensors, str(run / "model.safetensors"))
    match_checksum(run)


def match_checksum(run: Path) -> None:
    digest = hashlib.sha256((run / "model.safetensors").read_bytes()).hexdigest()
    edit_meta(run, lambda m: m.update(model_sha256=digest))


# ------------------------------------------------------------------ data
def copy_fashion(good: Good, tmp: Path) -> Path:
    return Path(shutil.copytree(good.fashion, tmp / "fashion"))


def write_idx(path: Path, array: np.ndarray) -> None:
    magic = b"\x00\x00\x08" + bytes([array.ndim])
    header = magic + b"".join(int(s).to_bytes(4, "big") for s in array.shape)
    path.write_bytes(gzip.compress(header + array.astype(np.uint8).tobytes()))


def image_folder(tmp: Path, classes=("a", "b"), per_class: int = 2) -> tuple[Path, Path]:
    """``tmp/images/{train,test}/<class>/*.jpg`` and a paths hierarchy ``tmp/tree.txt``."""
    from tests.fake_datasets import write_image

    root = tmp / "images"
    for split in ("train", "test"):
        for name in classes:
            for k in range(per_class):
                write_image(root / split / name / f"{k}.jpg")
    tree = write(tmp / "tree.txt", "".join(f"things/{name}\n" for name in classes))
    return root, tree
