"""Every metric of :class:`~hseval.metrics.HierarchicalMetrics`, declared once, and computed from one
set of sufficient statistics.

A metric's module declares it (:class:`Metric`, added to :data:`METRICS`), as a torchmetrics
metric declares its state: the sums it adds up (``state``: their zeros; ``update``: a batch's
share), how its values come from the sums (``compute``), what it needs (predicted classes, scores,
or the model's own level scores), and each key it writes into ``metrics.json`` with its name, help
and kind (:class:`Key`). Everything else reads the declaration: :func:`batch_update` and
:func:`state_compute` here (so the metric functions, the streaming class and CRM run the same
code), the schema of ``metrics.json`` (:mod:`hseval.io.evaluation_format`), the summary tables,
the report and the dashboard (:mod:`hseval.reporting`).

A batch's sums do not grow with the number of samples; with them go the confusion counts
(:class:`~hseval.metrics.confusion.SparseConfusion`, "pairs"), from which the metrics of the
predicted class are computed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from hseval.core.registry import Registry
from hseval.metrics.confusion import Pairs, pairs_update
from hseval.tree.hierarchy import Hierarchy

__all__ = ["Key", "Metric", "Batch", "Sums", "METRICS", "declared", "key_of", "state_zeros", "batch_update",
           "state_compute", "why_undefined", "by_level", "json_levels", "NO_SAMPLES", "NO_SAMPLE_AT_LEVEL"]

NO_SAMPLES = "no samples were given, so every share and mean is undefined"
NO_SAMPLE_AT_LEVEL = "no sample's class lies at level {level} or deeper, so level {level} has nothing to count"


@dataclass(frozen=True)
class Key:
    """One key a metric writes into metrics.json; a key with ``{k}`` in it is one per k of top-k
    (``top{k}``: ``top1``, ``top5`` ...).

    ``name``: its column's display name; ``help``: what it measures, shown in every table, the
    report and README (for a ``{k}`` key, ``{the top k}`` ... are worded for k = 1 and k > 1 by
    :func:`hseval.reporting.columns.metric_help`); ``kind``: a share in [0, 1], a non-negative
    number, one share per super-class level {1: ...} ("1" in JSON), or the reliability bins; ``shown``: in the
    report's headline tables and the dashboard's overview, in the overview only, in summary.csv
    only, or in no table; ``undefined``: why a NaN is, when there are samples; ``always``: for a
    ``{k}`` key, the k whose column every table has, even for a run without it (the cell says why)."""

    name: str
    help: str
    kind: Literal["share", "nonnegative", "levels", "bins"] = "share"
    shown: Literal["headline", "overview", "summary", "none"] = "overview"
    undefined: str | None = None
    always: tuple[int, ...] = ()


@dataclass(frozen=True)
class Batch:
    """What a batch gives :meth:`Metric.update`: ``top`` (B, w) its best classes, best first;
    ``targets`` (B,); ``ks`` the k of the state (capped at |L|, those above w add nothing);
    ``levels`` {level: (B,) predicted nodes} or None; ``scores`` (B, |L|) logits (``logits``) or
    probabilities, or None; ``n_bins`` the calibration bins."""

    top: np.ndarray
    targets: np.ndarray
    hierarchy: Hierarchy
    ks: Sequence[int]
    levels: Mapping[int, np.ndarray] | None = None
    scores: np.ndarray | None = None
    logits: bool = True
    n_bins: int = 15


@dataclass(frozen=True)
class Sums:
    """What :meth:`Metric.compute` reads: the summed ``state``, the confusion ``pairs``, ``n``
    samples, the ``ks`` of the state and the positions ``shown`` of those to report, and the
    ``levels`` the model scored (None: none)."""

    state: Mapping[str, np.ndarray]
    pairs: Pairs
    hierarchy: Hierarchy
    n: int
    ks: Sequence[int]
    shown: Sequence[int]
    levels: tuple[int, ...] | None


def _nothing(hierarchy: Hierarchy, num_ks: int, n_bins: int) -> dict[str, np.ndarray]:
    return {}


@dataclass(frozen=True)
class Metric:
    """A metric: its keys (:class:`Key`), its ``compute`` (:class:`Sums` -> {key: value}, values
    as plain JSON types, NaN where undefined), and, where the confusion pairs do not suffice, its
    own sums: ``state`` (tree, number of ks, bins) -> {name: zeros}, and ``update`` (:class:`Batch`)
    -> {name: the batch's share}. ``needs``: what the inputs must give for it to be computed;
    ``crm``: CRM re-ranking has it too (it scores the ranked classes, not probabilities)."""

    keys: Mapping[str, Key]
    compute: Callable[[Sums], dict[str, Any]]
    state: Callable[[Hierarchy, int, int], dict[str, np.ndarray]] = _nothing
    update: Callable[[Batch], dict[str, Any]] | None = None
    needs: Literal["labels", "scores", "levels"] = "labels"
    crm: bool = True
    patterns: dict[str, re.Pattern] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "patterns", {key: re.compile(re.escape(key).replace(r"\{k\}", "([1-9][0-9]{0,3})"))
                                              for key in self.keys})


METRICS: Registry[Metric] = Registry("metric")
"""Every metric, in the order its keys are written and shown; a module adds its own with
``METRICS.add(name, Metric(...))``."""


def _metrics() -> list[Metric]:
    return [METRICS.get(name) for name in METRICS]


def declared() -> dict[str, tuple[Metric, Key]]:
    """{key as declared ("top{k}"): (its metric, its Key)} of every registered metric, in order."""
    return {name: (metric, key) for metric in _metrics() for name, key in metric.keys.items()}


def key_of(name: str) -> tuple[Metric, str] | None:
    """(the metric, the key as declared) of a metrics.json key ("top5" -> top-k's "top{k}"); None
    for a key no metric declares."""
    for metric in _metrics():
        for declared_name, pattern in metric.patterns.items():
            if pattern.fullmatch(name):
                return metric, declared_name
    return None


def state_zeros(hierarchy: Hierarchy, num_ks: int, n_bins: int) -> dict[str, np.ndarray]:
    """The sums of the state before any sample: the samples, and each metric's own."""
    out = {"samples": np.zeros(1, np.int64)}
    for metric in _metrics():
        out.update(metric.state(hierarchy, num_ks, n_bins))
    return out


def _given(needs: str, *, levels: Any, scored: bool) -> bool:
    return needs == "labels" or (needs == "levels" and bool(levels)) or (needs == "scores" and scored)


def batch_update(top: np.ndarray, targets: np.ndarray, hierarchy: Hierarchy, ks: Sequence[int], *,
                 levels: Mapping[int, np.ndarray] | None = None, scores: np.ndarray | None = None,
                 logits: bool = True, n_bins: int = 15) -> dict[str, Any]:
    """A batch's statistics (see :class:`Batch`): the sums of :func:`state_zeros` it gives, and
    "pairs", its confusion counts."""
    batch = Batch(top, targets, hierarchy, ks, levels, scores, logits, n_bins)
    out: dict[str, Any] = {"samples": len(targets), "pairs": pairs_update(top[:, 0], targets)}
    for metric in _metrics():
        if metric.update is not None and _given(metric.needs, levels=levels, scored=scores is not None):
            out.update(metric.update(batch))
    return out


def state_compute(state: Mapping[str, np.ndarray], pairs: Pairs, hierarchy: Hierarchy, ks: Sequence[int], *,
                  shown: Sequence[int], levels: tuple[int, ...] | None, scored: bool) -> dict[str, Any]:
    """The metrics from summed statistics and confusion counts, as plain JSON types (see
    :meth:`HierarchicalMetrics.compute`): every metric the inputs allow (the model's own levels'
    where ``levels`` were given, those of scores when ``scored``), with
    "unavailable" saying why each value that is NaN is undefined (:func:`why_undefined`)."""
    sums = Sums(state, pairs, hierarchy, int(state["samples"][0]), ks, shown, levels)
    out: dict[str, Any] = {"samples": sums.n}
    for metric in _metrics():
        if _given(metric.needs, levels=levels is not None, scored=scored):
            out.update(metric.compute(sums))
    return {**out, "unavailable": why_undefined(out)}


def why_undefined(computed: dict[str, Any]) -> dict[str, str]:
    """Why each NaN of ``computed`` (metrics of :func:`state_compute`) is undefined: {key: reason},
    a level's value keyed "key.level" ("superclass_acc.2"). The reasons are decided here, where the
    sums that are 0 are known: no samples at all, none at a level, or the key's own (no mistakes)."""
    if not computed["samples"]:
        return {key: NO_SAMPLES for key, value in computed.items() if _undefined(value)}
    out = {}
    for key, value in computed.items():
        found = key_of(key)
        declaration = found and found[0].keys[found[1]]
        if not declaration or declaration.kind == "bins":
            continue
        if declaration.kind == "levels":
            out.update({f"{key}.{level}": NO_SAMPLE_AT_LEVEL.format(level=level)
                        for level, v in value.items() if _undefined(v)})
        elif declaration.undefined and _undefined(value):
            out[key] = declaration.undefined
    return out


def _undefined(value: Any) -> bool:
    """A NaN, or a record of levels holding one."""
    if isinstance(value, dict):
        return any(_undefined(v) for v in value.values())
    return isinstance(value, float) and math.isnan(value)


def by_level(values: dict[int, float]) -> dict[int, float]:
    """Levels keyed 1, 2, ... as ``head.level_logits`` and ``update``'s ``level_scores`` key them."""
    return {int(k): v for k, v in values.items()}


def json_levels(computed: dict[str, Any]) -> dict[str, Any]:
    """``computed`` (:func:`state_compute`'s) with each record of levels keyed "1", "2", ... as
    JSON keys them (metrics.json, run.json's history)."""
    levels = {name for name, (_, key) in declared().items() if key.kind == "levels"}
    return {k: {str(level): v for level, v in value.items()} if k in levels and isinstance(value, dict) else value
            for k, value in computed.items()}
