"""What a run is made from, in one place: the training settings that do not change what a run
learns (:data:`RESULT_NEUTRAL`), and every input of a run as flat ``key: value`` pairs
(:func:`run_inputs`: settings, tree, init file, data). Resuming a run, keeping a finished one and
grouping runs as seeds of one configuration all read them; :func:`changed_inputs` says what differs."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from hseval.io.data_identity import data_changes, data_identity

__all__ = ["RESULT_NEUTRAL", "result_settings", "run_inputs", "changed_inputs", "INIT_FILE", "TREE", "DATASET"]

RESULT_NEUTRAL = {"engine": ("progress", "tensorboard", "eval_every", "device", "threads", "compile", "cuda_graphs",
                             "keep_train_state", "self_contained"),
                  "data": ("root", "workers")}
"""Display, logging, where and how fast a run ran, where its data lies, how its files are stored."""


def result_settings(training: dict[str, Any], *, drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """``training`` (a config as a dict) without :data:`RESULT_NEUTRAL` and the dotted keys of
    ``drop`` (e.g. ``engine.seed`` to group seeds, ``optim.epochs`` to resume for longer)."""
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in training.items()}
    neutral = [f"{section}.{key}" for section, keys in RESULT_NEUTRAL.items() for key in keys]
    for dotted in (*neutral, *drop):
        section, key = dotted.split(".")
        if isinstance(out.get(section), dict):
            out[section].pop(key, None)
    return out


INIT_FILE, TREE, DATASET = "init file", "tree", "dataset."
"""The keys of :func:`run_inputs` that are not settings: the backbone's ``--init`` file and the tree
(both by content), and the prefix of the data's facts."""


def _short_sha256(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:12]


def run_inputs(record: Mapping[str, Any], *, drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """Everything a run was made from, as flat ``key: value`` pairs, read from a record of it that
    holds ``training`` (the config), ``hierarchy`` (the tree), ``initialised_from`` (the init file's
    record) and, where known, ``dataset`` (``LoadedDataset.describe``): run.json, a training state,
    metrics.json or the same facts of a training about to start. The training settings but
    :data:`RESULT_NEUTRAL` and ``drop`` (dotted keys), the tree and the init file by content
    (12 hex digits of SHA-256), and the data's identity (``dataset.KEY``: each fact of
    :func:`~hseval.io.data_identity.data_identity`, the images by ``dataset.content_sha256``)."""
    out: dict[str, Any] = {TREE: _short_sha256(record.get("hierarchy")),
                           INIT_FILE: ((record.get("initialised_from") or {}).get("sha256") or "")[:12] or None}
    dataset = record.get("dataset")
    if isinstance(dataset, Mapping):
        out.update({f"{DATASET}{key}": value for key, value in data_identity(dataset).items()})

    def flatten(prefix: str, value: Any) -> None:
        if isinstance(value, dict) and value:
            for key, inner in value.items():
                flatten(f"{prefix}.{key}" if prefix else str(key), inner)
        else:
            out[prefix] = value

    flatten("", result_settings(dict(record.get("training") or {}), drop=drop))
    return out


def changed_inputs(then: Mapping[str, Any], now: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """(key, value then, value now) of every input of :func:`run_inputs` that differs, the settings
    first; the data's facts as :func:`~hseval.io.data_identity.data_changes` compares them (one that
    ``then`` does not record, a run of an older hseval's, is not compared)."""
    settings = [(k, then.get(k), now.get(k)) for k in then.keys() | now.keys()
                if not k.startswith(DATASET) and then.get(k) != now.get(k)]
    data = [(f"{DATASET}{key}", old, new) for key, old, new in data_changes(_facts(then), _facts(now))]
    return sorted(settings + data, key=lambda change: (change[0].startswith(DATASET) or change[0] in (TREE, INIT_FILE),
                                                       change[0]))


def _facts(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The data's facts of :func:`run_inputs`, as its description holds them."""
    return {k.removeprefix(DATASET): v for k, v in inputs.items() if k.startswith(DATASET)}
