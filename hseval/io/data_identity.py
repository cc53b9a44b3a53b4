"""What data is, in one place: its record in run.json (:class:`DatasetInfo`, what
``LoadedDataset.describe`` gives) and the one rule of "the same data" (:func:`data_changes`):
every fact but where the data lay, its images and labels by content. Resuming or keeping a run,
evaluating the validation split a run held out, reusing a probe's features and pooling runs as
seeds all decide by it. No torch here: the report and the dashboard read it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ConfigDict

from hseval.core.sampling import SPLITS
from hseval.io.records import Count, Finite, Json, Record, Sha256

__all__ = ["DatasetInfo", "PLACE_FACTS", "DERIVED_FACTS", "data_identity", "data_changes", "split_label",
           "evaluated_split"]


class DatasetInfo(Record):
    """The data a run was trained on (``LoadedDataset.describe``); a dataset may add facts of its own."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, Json]
    name: str
    root: str | None = None
    class_names: list[str] | None = None
    image_size: Count | None = None
    channels: Count | None = None
    mean: list[Finite] | None = None
    std: list[Finite] | None = None
    train_size: Count | None = None
    val_size: Count | None = None
    test_size: Count | None = None
    validation: dict[str, Json] | None = None  # its images' identity (LoadedDataset.with_validation)
    augmentation: str | None = None
    content_sha256: Sha256 | None = None
    """What the dataset's splits held as loaded (``DataContent``): the images a run is resumed or kept
    with must be these."""


PLACE_FACTS = ("root", "hierarchy_file")
"""The facts of a :class:`DatasetInfo` that say where the data (and the tree file of a user's image
folders) lay, not what it is: a copy elsewhere is the same data, and the tree counts by content."""
DERIVED_FACTS = ("train_size", "val_size", "test_size", "validation", "augmentation")
"""The facts that a run's data settings (``data.val_fraction``, ``data.test_subset``,
``data.augment``) make of the data as loaded."""


def data_identity(described: Mapping[str, Any] | None, *, derived: bool = True) -> dict[str, Any]:
    """What data is, read from its description (``LoadedDataset.describe``, run.json's ``dataset``):
    every fact but :data:`PLACE_FACTS`, its images and labels by ``content_sha256``; without
    :data:`DERIVED_FACTS` when not ``derived`` (the data as loaded, whatever a run made of it)."""
    left_out = PLACE_FACTS + (() if derived else DERIVED_FACTS)
    return {key: value for key, value in (described or {}).items() if key not in left_out}


def data_changes(then: Mapping[str, Any] | None, now: Mapping[str, Any] | None, *,
                 derived: bool = True) -> list[tuple[str, Any, Any]]:
    """The one rule of "the same data": (fact, value then, value now) of each fact of
    :func:`data_identity` that differs between a recorded description ``then`` and ``now``; none
    means the same data, wherever it lies. A fact ``then`` does not record (a run of an older hseval)
    is not compared: nothing says what it was. Resuming or keeping a run, evaluating the validation
    split a run held out, reusing a probe's features and pooling runs as seeds all decide by it."""
    old, new = data_identity(then, derived=derived), data_identity(now, derived=derived)
    return [(key, old[key], new.get(key)) for key in sorted(old) if old[key] != new.get(key)]


def split_label(split: str | None, validation: Mapping[str, Any] | None = None) -> str:
    """A split as people name it: "test", "training", or "validation (10 % of the training images,
    seed 0)" for one held out of the training split (``validation``: the record of
    ``LoadedDataset.with_validation``), "validation (the dataset's own)" where the dataset has one.
    Two evaluations are of the same split when their labels are equal."""
    if split != "val":
        return SPLITS.get(split or "test", str(split))
    if validation and validation.get("fraction") is not None:
        return f"validation ({validation['fraction'] * 100:g} % of the training images, seed {validation.get('seed')})"
    return "validation (the dataset's own)" if validation else "validation"


def evaluated_split(metrics: Mapping[str, Any]) -> str:
    """The :func:`split_label` of an evaluation, from its metrics.json."""
    return split_label(metrics.get("split"), (metrics.get("trained_on") or {}).get("validation"))
