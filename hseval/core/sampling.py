"""A class-stratified subset (training's ``data.train_subset``, the sample of embeddings an
evaluation keeps): numpy only, so that evaluating a prediction file imports neither torch nor the
datasets."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from hseval.core.arguments import Share, bounds
from hseval.core.errors import ConfigError, first_line

__all__ = ["stratified_subset", "held_out", "indices_sha256", "VALIDATION_SEED", "SPLITS", "check_split"]

VALIDATION_SEED = 0
"""The seed of every held-out validation split: the same images for every run, head and seed, so
that runs compare on the same validation samples as they do on the same test samples."""


def stratified_subset(labels: np.ndarray, size: int | None, *, seed: int = 0, setting: str | None = None) -> np.ndarray:
    """Sorted indices of a random subset of ``size`` samples, every class in proportion (all of
    them when ``size`` is None or not below their number).

    A stratified subset needs two samples of each class, and at least one sample per class in the
    subset and out of it. Where it cannot be drawn: with ``setting`` (the option that asked for the
    subset, named in the message) a one-line :class:`ConfigError`; without (a sample to look at),
    a uniform random subset.
    """
    labels = np.asarray(labels)
    n = len(labels)
    if size is None or size >= n:
        return np.arange(n)
    if size < 1:
        raise ConfigError(f"{setting or 'the subset size'} must be a positive integer, got {size}")
    classes = len(np.unique(labels))
    if setting is not None and size < classes:
        raise ConfigError(f"{setting}={size} is smaller than the {classes} classes; a stratified subset needs at "
                          f"least one image per class: use {setting} >= {classes}")
    if setting is not None and n - size < classes:
        raise ConfigError(f"{setting}={size} leaves out fewer images than there are classes ({classes}), which a "
                          f"stratified split cannot do: use at most {n - classes}, or leave {setting} unset to "
                          f"train on all {n}")
    from sklearn.model_selection import train_test_split  # only when a subset is drawn: seconds to import

    try:
        chosen, _ = train_test_split(np.arange(n), train_size=size, stratify=labels, random_state=seed)
    except ValueError as exc:  # a class with a single sample (or, without ``setting``, any of the above)
        if setting is not None:
            raise ConfigError(f"{setting}={size}: a stratified subset of these {n} images cannot be drawn "
                              f"({first_line(exc)}); leave {setting} unset") from None
        chosen = np.random.default_rng(seed).choice(n, size, replace=False)
    return np.sort(chosen)


def held_out(labels: np.ndarray, fraction: float, *, setting: str = "data.val_fraction",
             class_names: Sequence[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(kept, held): sorted indices of the samples kept for training and of those held out for
    validation: of each class, ``fraction`` of its samples rounded, at least one and never all of
    them (so every class is on both sides), drawn with :data:`VALIDATION_SEED`. ``class_names``
    (by label) name a class in the errors."""
    labels = np.asarray(labels)
    low, high = bounds(Share)  # the setting's type: one home for its range
    if not low < fraction < high:
        raise ConfigError(f"{setting} must be between 0 and 1 (a share of the training images), got {fraction}")
    order = np.argsort(labels, kind="stable")
    classes, starts, counts = np.unique(labels[order], return_index=True, return_counts=True)
    if len(counts) and counts.min() < 2:
        single = classes[np.argmin(counts)]
        named = repr(class_names[single]) if class_names is not None else single
        raise ConfigError(f"{setting}={fraction:g}: class {named} has a single training image, which cannot be both "
                          "trained on and held out; leave data.val_fraction unset")
    rng = np.random.default_rng(VALIDATION_SEED)
    held = [rng.permutation(order[a: a + n])[: min(max(int(round(fraction * n)), 1), n - 1)]
            for a, n in zip(starts.tolist(), counts.tolist())]
    held = np.sort(np.concatenate(held)) if held else np.zeros(0, dtype=np.int64)
    return np.setdiff1d(np.arange(len(labels)), held, assume_unique=True), held


def indices_sha256(indices: np.ndarray) -> str:
    """The identity of a set of sample indices: SHA-256 of them as little-endian int64."""
    return hashlib.sha256(np.asarray(indices, dtype="<i8").tobytes()).hexdigest()


SPLITS = {"train": "training", "val": "validation", "test": "test"}
"""A dataset's splits, by the name options give them, and as people call them."""


def check_split(name: str) -> None:
    """Refuse a split name other than train, val or test."""
    if name not in SPLITS:
        raise ConfigError(f"unknown split {name!r}; choose train, val or test")
