"""Datasets: a registry of loaders, each returning a :class:`LoadedDataset` (train/test splits, a
validation split where the dataset has one, class names in the official order, the paper's
hierarchy, image geometry and normalisation). A validation split can also be held out of the
training split (:meth:`LoadedDataset.with_validation`, ``data.val_fraction``).

Two kinds of split: :class:`TensorImages` keeps every image in one uint8 tensor (small datasets:
the training engine can move it to the GPU whole and augment there), :class:`ImageFiles` decodes
files on demand. Both return ``(float image (C, H, W), label)`` and expose ``labels``.
"""

from __future__ import annotations

import copy
import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image, UnidentifiedImageError
from torch.utils.data import Dataset

from hseval.core.errors import ConfigError, DataError, HsevalError
from hseval.core.registry import Registry
from hseval.core.sampling import VALIDATION_SEED, check_split, held_out, indices_sha256
from hseval.tree import read_hierarchy
from hseval.tree.hierarchy import Hierarchy

__all__ = ["TensorPreprocess", "TensorImages", "ImageFiles", "LoadedDataset",
           "DatasetCard", "register_dataset", "dataset_card",
           "load_dataset", "load_with_tree", "check_classes", "data_roots", "worker_errors"]

DATASETS: Registry[Callable[..., LoadedDataset]] = Registry("dataset")
"""Loaders ``(root, *, options) -> LoadedDataset``."""


@dataclass(frozen=True)
class DatasetCard:
    """What a dataset is before any of its files is read, declared where it registers: the images
    of its official training and test splits and its classes (None: the user's own folders say),
    and where its tree comes from, in a few words."""

    train: int | None
    test: int | None
    classes: int | None
    tree: str


_CARDS: dict[str, DatasetCard] = {}


class TensorPreprocess:
    """uint8 batches (B, C, H, W) -> normalised float batches, with the training augmentation
    (random crop after zero padding, horizontal flip) done on whatever device the batch is on.

    Random numbers come from a CPU ``generator`` so that a run is reproducible on any device.
    """

    def __init__(self, mean: tuple[float, ...], std: tuple[float, ...], *, crop_padding: int = 0,
                 flip: bool = False) -> None:
        self.mean, self.std = tuple(mean), tuple(std)
        self.crop_padding, self.flip = int(crop_padding), bool(flip)

    def __call__(self, images: torch.Tensor, *, train: bool, generator: torch.Generator | None = None
                 ) -> torch.Tensor:
        x = images.float().div_(255)
        if train and self.crop_padding:
            x = self._random_crop(x, generator)
        if train and self.flip:
            flip = torch.rand(x.shape[0], generator=generator) < 0.5
            x = torch.where(flip.to(x.device)[:, None, None, None], x.flip(-1), x)
        mean = torch.tensor(self.mean, device=x.device).view(1, -1, 1, 1)
        std = torch.tensor(self.std, device=x.device).view(1, -1, 1, 1)
        return x.sub_(mean).div_(std)

    def _random_crop(self, x: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
        b, _, h, w = x.shape
        p = self.crop_padding
        padded = F.pad(x, (p, p, p, p))
        dy = torch.randint(0, 2 * p + 1, (b,), generator=generator).to(x.device)
        dx = torch.randint(0, 2 * p + 1, (b,), generator=generator).to(x.device)
        rows = (dy[:, None] + torch.arange(h, device=x.device))[:, None, :, None].expand(b, x.shape[1], h, w + 2 * p)
        out = padded.gather(2, rows)
        cols = (dx[:, None] + torch.arange(w, device=x.device))[:, None, None, :].expand(b, x.shape[1], h, w)
        return out.gather(3, cols)


class TensorImages(Dataset):
    """A split held in memory: ``images`` uint8 (N, C, H, W), ``labels`` int64 (N,)."""

    def __init__(self, images: torch.Tensor, labels: np.ndarray, preprocess: TensorPreprocess, *,
                 train: bool) -> None:
        if images.dtype != torch.uint8 or images.ndim != 4:
            raise DataError(f"expected uint8 images of shape (N, C, H, W), got {images.dtype} {tuple(images.shape)}")
        if len(images) != len(labels):
            raise DataError(f"{len(images)} images but {len(labels)} labels")
        self.images = images
        self.labels = np.asarray(labels, dtype=np.int64)
        self.preprocess = preprocess
        self.train = train

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        image = self.preprocess(self.images[index: index + 1], train=self.train)[0]
        return image, int(self.labels[index])

    def subset(self, indices: np.ndarray) -> TensorImages:
        """The samples at ``indices``, in that order (a copy of their images)."""
        return TensorImages(self.images[torch.as_tensor(indices)], self.labels[indices], self.preprocess,
                            train=self.train)

    def content_sha256(self) -> str:
        """The SHA-256 of the images' pixels (and shape) and labels, in order."""
        digest = hashlib.sha256(repr(tuple(self.images.shape)).encode())
        digest.update(self.images.contiguous().numpy().data)
        digest.update(self.labels.tobytes())
        return digest.hexdigest()


class ImageFiles(Dataset):
    """A split of image files decoded on demand with ``transform`` (PIL image -> tensor)."""

    def __init__(self, paths: list[Path], labels: np.ndarray, transform: Callable[[Any], torch.Tensor], *,
                 channels: int = 3) -> None:
        if len(paths) != len(labels):
            raise DataError(f"{len(paths)} image files but {len(labels)} labels")
        self.paths = [p if isinstance(p, Path) else Path(p) for p in paths]  # 2.7 M iNaturalist paths: not made twice
        self.labels = np.asarray(labels, dtype=np.int64)
        self.transform = transform
        self.channels = channels
        self.mode = "L" if channels == 1 else "RGB"

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        path = self.paths[index]
        try:
            with Image.open(path) as image:
                image = image.convert(self.mode)
        except FileNotFoundError:
            raise DataError(f"{path}: image file is missing; the dataset folder is incomplete") from None
        except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
            raise DataError(f"{path}: corrupt or unreadable image ({exc.__class__.__name__}); replace or remove "
                            "it") from None
        return self.transform(image), int(self.labels[index])

    def subset(self, indices: np.ndarray) -> ImageFiles:
        """The samples at ``indices``, in that order."""
        return ImageFiles([self.paths[i] for i in indices], self.labels[indices], self.transform,
                          channels=self.channels)

    def content_sha256(self) -> str:
        """The SHA-256 of every file's bytes and label, in order (not the files' names or times: a
        copy of the folder is the same data). The files are read on a few threads."""
        def read(path: Path) -> bytes:
            try:
                return hashlib.sha256(path.read_bytes()).digest()
            except OSError as exc:
                raise DataError(f"{path}: cannot read the image file ({exc.strerror or exc}); the dataset folder "
                                "is incomplete") from None

        digest = hashlib.sha256(self.labels.tobytes())
        with ThreadPoolExecutor(min(8, os.cpu_count() or 1)) as pool:
            for file_digest in pool.map(read, self.paths, chunksize=64):
                digest.update(file_digest)
        return digest.hexdigest()


def worker_errors(batches: Iterable[Any]) -> Iterator[Any]:
    """``batches`` of a ``DataLoader``, with an hseval error raised in a worker process given back its
    own one-line message (torch re-raises it with the worker's whole traceback as the message)."""
    try:
        yield from batches
    except HsevalError as exc:
        lines = str(exc).strip().splitlines()
        if len(lines) < 2:
            raise
        prefix = f"{type(exc).__module__}.{type(exc).__qualname__}: "
        raise type(exc)(lines[-1].removeprefix(prefix)) from None


class DataContent:
    """What a dataset's splits hold, as one SHA-256 of each split's images and labels (the
    splits' ``content_sha256``), computed when first asked and then kept. The datasets derived from
    a loaded one (a subset, a held-out validation split, no augmentation: what a run's settings
    make of it) share its content: the settings name the derivation."""

    def __init__(self, splits: dict[str, Dataset]) -> None:
        self._splits, self._sha256, self._parts = splits, None, {}

    def sha256(self) -> str | None:
        """The fingerprint; None for a split of a kind that cannot tell its content."""
        if self._sha256 is None:
            parts = [(name, self.of(name, None, split)) for name, split in self._splits.items()]
            if any(part is None for _, part in parts):
                return None
            self._sha256 = hashlib.sha256("".join(f"{name}:{part};" for name, part in parts).encode()).hexdigest()
        return self._sha256

    def of(self, name: str, derivation: str | None, split: Dataset) -> str | None:
        """The ``content_sha256`` of ``split``, the split ``name`` of a dataset derived from this
        one as ``derivation`` names (None: as loaded), computed once; None for a split of a kind
        that cannot tell its content."""
        if (name, derivation) not in self._parts:
            self._parts[name, derivation] = split.content_sha256() if hasattr(split, "content_sha256") else None
        return self._parts[name, derivation]


@dataclass
class LoadedDataset:
    """A dataset ready for training and evaluation."""

    name: str
    root: Path
    class_names: list[str]
    hierarchy: Hierarchy
    train: Dataset
    test: Dataset
    image_size: int
    channels: int
    mean: tuple[float, ...]
    std: tuple[float, ...]
    info: dict[str, Any] = field(default_factory=dict)
    val: Dataset | None = None  # the validation split: the dataset's own, or held out of the training split
    content: DataContent | None = field(default=None, repr=False, compare=False)  # None: of the splits given

    def __post_init__(self) -> None:
        if self.content is None:
            splits = {"train": self.train, "val": self.val, "test": self.test}
            self.content = DataContent({k: v for k, v in splits.items() if v is not None})

    def split(self, name: str) -> Dataset:
        check_split(name)
        if name == "val" and self.val is None:
            raise ConfigError(f"{self.name} has no validation split here: train with --set data.val_fraction=F to "
                              "hold out a share of the training images, and evaluate that run with --split val")
        return {"train": self.train, "val": self.val, "test": self.test}[name]

    def split_sha256(self, name: str) -> str | None:
        """The SHA-256 of the images and labels of the split ``name`` (what an evaluation of it
        depends on), computed once per loaded dataset and split; None for a split of a kind that
        cannot tell its content."""
        held = None if name == "test" else (self.info.get("validation") or {}).get("indices_sha256")
        return self.content.of(name, held, self.split(name))

    def without_augmentation(self, *, setting: str = "data.augment=false") -> LoadedDataset:
        """This dataset whose training split goes through the test split's transform (what a probe
        on cached features sees, and a validation split held out of the training split); the images
        are shared, not copied. ``setting`` names what asked for it in the error."""
        train = copy.copy(self.train)
        if isinstance(train, TensorImages):
            train.preprocess = TensorPreprocess(train.preprocess.mean, train.preprocess.std)
        elif isinstance(train, ImageFiles) and isinstance(self.test, ImageFiles):
            train.transform = self.test.transform
        else:
            raise ConfigError(f"{setting}: the training split of {self.name!r} ({type(train).__name__}) has no "
                              "augmentation hseval can turn off")
        return replace(self, train=train, info={**self.info, "augmentation": "none (data.augment=false)"})

    def with_validation(self, fraction: float | None) -> LoadedDataset:
        """This dataset with a class-stratified ``fraction`` of its training split held out as its
        validation split (without augmentation; the same images for every run: drawn with
        :data:`~hseval.core.sampling.VALIDATION_SEED`), recorded in ``info["validation"]``; as it is
        for None."""
        if fraction is None:
            return self
        if self.val is not None:
            raise ConfigError(f"data.val_fraction={fraction:g}: {self.name} has a validation split of its own "
                              f"({len(self.val):,} images); leave data.val_fraction unset to use it")
        kept, held = held_out(self.train.labels, fraction, class_names=self.class_names)
        val = self.without_augmentation(setting="data.val_fraction").train.subset(held)
        identity = {"source": "held out of the training split", "fraction": fraction, "seed": VALIDATION_SEED,
                    "samples": len(held), "indices_sha256": indices_sha256(held)}
        return replace(self, train=self.train.subset(kept), val=val, info={**self.info, "validation": identity})

    def describe(self, *, content: bool = True) -> dict[str, Any]:
        """Plain-JSON summary stored in run.json: the dataset's identity (with ``root``, where it
        lay, and ``content_sha256``, what its splits held as loaded: :class:`DataContent`, which
        reads every image once; ``content=False`` leaves it out, for a look at a copy). Whether two
        descriptions are of the same data is one rule, ``hseval.io.data_identity.data_changes`` (every
        fact but where the data lay), which every decision that compares data reads."""
        # an absolute root: a run is evaluated from wherever the user stands later
        val = {} if self.val is None else {"val_size": len(self.val)}
        content = self.content.sha256() if content and self.content is not None else None
        return {"name": self.name, "root": str(Path(self.root).expanduser().resolve()),
                "class_names": list(self.class_names),
                "image_size": self.image_size, "channels": self.channels, "mean": list(self.mean),
                "std": list(self.std), "train_size": len(self.train), **val, "test_size": len(self.test), **self.info,
                **({"content_sha256": content} if content else {})}


def register_dataset(name: str, *, train: int | None, test: int | None, classes: int | None,
                     tree: str) -> Callable:
    """Decorator: a loader ``(root, *, options) -> LoadedDataset`` under ``name``, with its
    :class:`DatasetCard` (``hseval data list`` and ``data info`` print it)."""
    _CARDS[name] = DatasetCard(train, test, classes, tree)
    return DATASETS.register(name)


def dataset_card(name: str) -> DatasetCard:
    """The :class:`DatasetCard` of dataset ``name`` (an unknown name: the registry's one line)."""
    DATASETS.get(name)
    return _CARDS[name]


def load_dataset(name: str, root: str | Path | None = None, **options: Any) -> LoadedDataset:
    """Load dataset ``name`` from ``root`` (or its usual places); options are dataset-specific."""
    return DATASETS.get(name)(root, **options)


def load_with_tree(name: str, root: str | Path | None, tree: Hierarchy | str | Path | None, *,
                   download: bool = False) -> LoadedDataset:
    """Dataset ``name`` from ``root`` for the tree ``tree`` (a run's, or a file): a loader that takes
    a tree (a user's image folders, which have none of their own) takes it; for another, a file
    replaces the dataset's own tree, its leaves in the data's class order. A loader that can download
    does so only with ``download`` (a training's data; what reads a run reads the data it names, or
    says it is not at hand)."""
    known = DATASETS.options(name)
    data = load_dataset(name, root, **({"hierarchy": tree} if "hierarchy" in known else {}),
                        **({"download": download} if "download" in known else {}))
    if tree and isinstance(tree, (str, Path)) and "hierarchy" not in known:
        data.hierarchy = read_hierarchy(tree, classes=data.class_names)
    return data


def check_classes(data: LoadedDataset, tree: Hierarchy) -> None:
    """A :class:`DataError` when the classes of ``data`` are not ``tree``'s leaves in order (a run's
    tree, checked where its dataset is loaded), naming the first class that differs."""
    ours, theirs = list(tree.leaf_names), list(data.class_names)
    if ours == theirs:
        return
    k = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
    run, here = (repr(names[k]) if k < len(names) else "none" for names in (ours, theirs))
    raise DataError(f"the classes of {data.name!r} found at {data.root} are not the run's ({len(ours)} against "
                    f"{len(theirs)} classes; class {k + 1}: {run} in the run, {here} there); evaluate on the data the "
                    "run was trained on (--data-root)")


def data_roots(root: str | Path | None, *defaults: str | Path) -> list[Path]:
    """Where to look: ``root`` alone when given (an explicit --data-root is never second-guessed
    with other data), else ``$HSEVAL_DATA`` then ``defaults``."""
    if root is not None:
        return [Path(root).expanduser()]
    return [Path(place).expanduser() for place in (os.environ.get("HSEVAL_DATA"), *defaults) if place]
