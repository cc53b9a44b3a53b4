"""The records of a run folder's files (the run format, :mod:`hseval.io.run_format`, reads and
writes them): ``run.json`` (:class:`RunRecord`) with its parts, and ``train_state.pt``
(:class:`TrainState`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from hseval.io.data_identity import DatasetInfo
from hseval.io.records import (
    Count,
    HistoryEntry,
    Json,
    NonNegative,
    Positive,
    Record,
    Sha256,
    TestScores,
    TreeRecord,
)
from hseval.io.tensor_reference import TensorReference

__all__ = ["SCHEMA_VERSION", "Component", "ModelSpec", "DatasetInfo", "DeviceInfo", "TensorSource", "TrainState",
           "FeaturesSource", "RunRecord"]

SCHEMA_VERSION = 2


class Component(Record):
    """A backbone or a head: its registered name and the options that rebuild it."""

    name: str
    config: dict[str, Json]


class ModelSpec(Record):
    backbone: Component
    head: Component


class DeviceInfo(Record):
    device: str
    world_size: Positive
    amp_bf16: bool
    channels_last: bool
    threads: Positive
    gpu: str | None = None


class TensorSource(Record):
    """A state dict a run's tensors came from: every tensor (``hseval import``) or the backbone's
    (``hseval train --init``). ``mapping``: {the run's tensor: the file's key, or None where the
    run kept its own}; ``dropped``: the file's keys it did not use."""

    path: str
    sha256: Sha256
    format: str
    container: str | None
    prefix: str | None
    mapping: dict[str, str | None]
    dropped: list[str]


class TrainState(Record):
    """``train_state.pt``: what a training resumes from after its last finished epoch."""

    epoch: Positive
    history: list[HistoryEntry] = Field(min_length=1)
    config: dict[str, Json]
    model: dict[str, Any] | None
    """The weights; None once the run is finished (``run_format.finish_train_state``): they are
    then the tensors of its model.safetensors, of SHA-256 ``model_sha256``, which
    ``run_format.load_train_state`` puts here."""
    model_sha256: Sha256 | None = None
    optimizers: dict[str, Any]
    rng: dict[str, Any]
    sources: dict[str, Json] = Field(default_factory=dict)  # the backbone's --init file, a probe's features
    dataset: dict[str, Json] | None = None  # the data (LoadedDataset.describe): a resumed run trains on the same
    hierarchy: dict[str, Json] | None = None  # the tree, as run.json records it
    segments: list[Count] = Field(default_factory=list)
    """The epoch counts the run was finished at before the training this state continues (``[5]``
    while a run finished at 5 epochs is extended)."""

    @model_validator(mode="after")
    def _history_to_the_epoch(self) -> TrainState:
        if self.history[-1].epoch != self.epoch:
            raise ValueError(f"'history' ends at epoch {self.history[-1].epoch}, not at 'epoch' {self.epoch}")
        if self.model is None and self.model_sha256 is None:
            raise ValueError("'model' is null, and no 'model_sha256' says which model.safetensors holds the weights")
        return self


class FeaturesSource(Record):
    """The cached backbone features a probe run trained its head on (``train-all --probe``)."""

    path: str
    sha256: Sha256
    key: Sha256  # the fingerprint of the frozen backbone, the data and the extraction settings


class RunRecord(Record):
    """``run.json``: everything that rebuilds the model and says how it was trained."""

    schema_version: Literal[SCHEMA_VERSION]
    model: ModelSpec
    hierarchy: TreeRecord
    model_sha256: Sha256
    meta_sha256: Sha256
    versions: dict[str, str]
    saved_at: str
    dataset: DatasetInfo | None = None
    training: dict[str, Json] | None = None
    """The resolved training configuration (``hseval.train.config.TrainConfig``)."""
    seed: Count | None = None
    history: list[HistoryEntry] | None = None
    metrics: TestScores | None = None
    """The last tested epoch's scores."""
    device: DeviceInfo | None = None
    train_seconds: NonNegative | None = None
    train_subset: Count | None = None
    world_size: Positive | None = None
    imported_from: TensorSource | None = None
    initialised_from: TensorSource | None = None
    """The file the backbone started from (``model.init``)."""
    features: FeaturesSource | None = None
    by_reference: TensorReference | None = None
    """The tensors not in model.safetensors: a frozen backbone, read from its ``--init`` file."""
    segments: list[Count] | None = None
    """The epoch count each training of the run finished at: ``[5]`` for a run trained once to 5
    epochs, ``[5, 8]`` for one extended to 8 with ``--resume --set optim.epochs=8``."""

    @field_validator("schema_version", mode="before")
    @classmethod
    def _known_version(cls, version: Any) -> Any:
        if type(version) is not int:
            return version  # not a number: the type's own message
        if version > SCHEMA_VERSION:
            raise ValueError(f"{version} is newer than this hseval understands ({SCHEMA_VERSION}); upgrade hseval")
        if version != SCHEMA_VERSION:
            raise ValueError(f"unknown schema version {version} (this hseval reads {SCHEMA_VERSION})")
        return version

    @model_validator(mode="after")
    def _classes_are_the_leaves(self) -> RunRecord:
        tree = self.hierarchy.tree
        if self.dataset is not None and self.dataset.class_names not in (None, list(tree.leaf_names)):
            raise ValueError(f"'dataset.class_names' must be the {tree.num_leaves} leaves of 'hierarchy' in class "
                             "order; the file is damaged")
        return self
