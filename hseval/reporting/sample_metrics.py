"""The metrics that are a function of sums over the samples, read from an evaluation's per-sample arrays.

Most are a ratio of two sums over the samples, ``Σ numerator / Σ denominator``
(:class:`SampleMetric`): an accuracy is a mean of 0/1 (the denominator 1, or 0 for a sample
whose class has no node at that level); mistake severity sums the LCA heights over the mistakes
(the denominator marks them); micro hierarchical F1 is ``Σ 2·depth(LCA) / Σ (depth(pred) +
depth(true))``; the cross-entropy is the mean of -log p(target); a decision metric
(``hf1@optimal:hf1``) is the mean of the node metric of what that rule chose. The ECE is
``Σ_b |Σ_{i in b} (confidence_i - correct_i)| / N`` over its bins: one sum per bin and the count.
Every value is computed from the evaluation's per-sample arrays (``predictions.npz``), so it
equals metrics.json's and decisions.csv's; :mod:`hseval.reporting.ranking` resamples the sums.

An entry is a run, or a seed group (its runs' per-sample values summed: the value pooled over its
seeds, an accuracy the mean over them).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from hseval.core.errors import ConfigError
from hseval.io.results import RunResult
from hseval.metrics.calibration import bin_index
from hseval.metrics.mistakes import hierarchical_distance
from hseval.metrics.node_metrics import compare, node_metric
from hseval.metrics.nodes import NodeLayout
from hseval.reporting.columns import display_name

__all__ = ["Parts", "SampleMetric", "sample_metric", "available_metrics", "chosen_metrics", "DEFAULT_METRICS",
           "entry_parts", "entry_value"]

Parts = np.ndarray
"""(N, C) per-sample columns, whose sums over the samples give a metric's value."""


def _ratio_of(sums: np.ndarray) -> np.ndarray:
    """``Σ numerator / Σ denominator`` from (..., 2) sums; NaN where the denominator is 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums[..., 0] / sums[..., 1]


def _pair(numerator: np.ndarray, denominator: np.ndarray) -> Parts:
    return np.stack([numerator, denominator], 1).astype(float)


@dataclass(frozen=True)
class SampleMetric:
    """A metric that is a function of sums over the samples: ``parts(run)`` gives its (N, C)
    per-sample columns, or None where the run does not have the metric; ``combine`` its value from
    their (..., C) sums (by default ``Σ numerator / Σ denominator`` of two columns); ``lower``:
    lower is better; ``binary``: the numerator is 0/1 and the denominator depends on the samples
    only (McNemar applies)."""

    name: str
    parts: Callable[[RunResult], Parts | None]
    lower: bool = False
    binary: bool = False
    combine: Callable[[np.ndarray], np.ndarray] = _ratio_of

    def label(self, tree=None) -> str:
        return display_name(self.name, tree) if "@" not in self.name else self.name.replace("@", " by ", 1)

    def value(self, run: RunResult) -> float:
        return entry_value([run], self)


def _top(k: int) -> Callable[[RunResult], Parts | None]:
    def parts(run: RunResult) -> Parts | None:
        if run.topk.shape[1] < k:
            return None
        return _pair((run.topk[:, :k] == run.targets[:, None]).any(1), np.ones(len(run.targets)))
    return parts


def _level(depth: int, own: bool) -> Callable[[RunResult], Parts | None]:
    def parts(run: RunResult) -> Parts | None:
        tree = run.hierarchy
        if depth >= tree.max_depth or (own and not (run.levels[:, depth - 1] >= 0).any()):
            return None
        truth = tree.ancestor_at_depth(run.targets, depth)
        said = run.levels[:, depth - 1] if own else tree.ancestor_at_depth(run.topk[:, 0], depth)
        reached = truth >= 0
        return _pair((said == truth) & reached, reached)
    return parts


def _severity(run: RunResult) -> Parts:
    distance = hierarchical_distance(run.topk[:, 0], run.targets, run.hierarchy).astype(float)
    return _pair(distance, distance > 0)


def _distance_at(k: int) -> Callable[[RunResult], Parts | None]:
    def parts(run: RunResult) -> Parts | None:
        if run.topk.shape[1] < k:
            return None
        top = run.topk[:, :k]
        distance = hierarchical_distance(top.ravel(), np.repeat(run.targets, k), run.hierarchy).reshape(top.shape)
        return _pair(distance.mean(1), np.ones(len(run.targets)))
    return parts


def _hierarchical(which: str) -> Callable[[RunResult], Parts]:
    def parts(run: RunResult) -> Parts:
        tree, pred, true = run.hierarchy, run.topk[:, 0], run.targets
        overlap = tree.lca_depth(pred, true).astype(float)
        said, truth = tree.depth[pred].astype(float), tree.depth[true].astype(float)
        sums = {"precision": (overlap, said), "recall": (overlap, truth), "f1": (2 * overlap, said + truth)}
        return _pair(*sums[which])
    return parts


def _decision(metric_name: str, rule: str) -> Callable[[RunResult], Parts | None]:
    source = "own scores" if rule.endswith(" (own scores)") else "classes"
    rule_name = rule.removesuffix(" (own scores)")

    def parts(run: RunResult) -> Parts | None:
        rows = run.decisions
        at = np.flatnonzero((rows["rule"] == rule_name).to_numpy() & (rows["probabilities"] == source).to_numpy())
        if not len(at) or metric_name not in rows or pd.isna(rows[metric_name].iloc[at[0]]):
            return None  # not among this run's rules, or not available to it (decisions.csv says why)
        metric = node_metric(metric_name)
        comparison = compare(_layout(run.hierarchy), run.decided[:, at[0]], run.targets)
        value = metric.value(comparison).astype(float)
        if metric.over_mistakes:
            wrong = (~comparison.correct).astype(float)
            return _pair(value * wrong, wrong)
        return _pair(value, np.ones(len(value)))
    return parts


@functools.lru_cache(maxsize=4)
def _layout(tree) -> NodeLayout:
    return NodeLayout(tree)


def _cross_entropy(run: RunResult) -> Parts | None:
    nll = run.calibration[1]
    return _pair(nll, np.ones(len(nll))) if len(nll) else None


def _ece(run: RunResult) -> Parts | None:
    """Per bin, ``confidence - correct`` of the samples in it; last, 1 per sample (the bins are
    metrics.json's reliability bins, binned as :func:`~hseval.metrics.calibration.bin_index`)."""
    confidence = run.calibration[0]
    if not len(confidence):
        return None
    bins = len(run.metrics["reliability"]["upper"])
    out = np.zeros((len(confidence), bins + 1))
    out[np.arange(len(confidence)), bin_index(confidence, n_bins=bins)] = confidence - (run.topk[:, 0] == run.targets)
    out[:, bins] = 1
    return out


def _ece_of(sums: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.abs(sums[..., :-1]).sum(-1) / sums[..., -1]


_FIXED: dict[str, SampleMetric] = {m.name: m for m in (
    SampleMetric("mistake_severity", _severity, lower=True),
    SampleMetric("cross_entropy", _cross_entropy, lower=True),
    SampleMetric("ece", _ece, lower=True, combine=_ece_of),
    *(SampleMetric(f"hierarchical_{w}", _hierarchical(w)) for w in ("precision", "recall", "f1")))}
_TOP = re.compile(r"top([1-9][0-9]{0,3})")
_LEVEL = re.compile(r"level([1-9][0-9]{0,3})_(from_leaf|own_scores)")
_DISTANCE = re.compile(r"avg_hdist@([1-9][0-9]{0,3})")
DEFAULT_METRICS = ("top1", "levels", "mistake_severity", "hierarchical_f1")
"""The leaderboard's columns unless chosen: leaf top-1, every super-class level from the leaf,
mistake severity and hierarchical F1 ("levels" stands for the levels of the tree)."""


def sample_metric(name: str) -> SampleMetric:
    """The metric called ``name``: ``top<k>``, ``level<d>_from_leaf`` or ``level<d>_own_scores``,
    ``mistake_severity``, ``avg_hdist@<k>``, ``hierarchical_precision``/``recall``/``f1``, ``ece``,
    ``cross_entropy``, or
    ``<node metric>@<rule>`` (a decision metric of decisions.csv, e.g. ``hf1@optimal:hf1``,
    ``correct@threshold:0.5``, a rule of the head's own scores with `` (own scores)``)."""
    name = name.strip()
    if name in _FIXED:
        return _FIXED[name]
    if match := _TOP.fullmatch(name):
        return SampleMetric(name, _top(int(match.group(1))), binary=True)
    if match := _LEVEL.fullmatch(name):
        return SampleMetric(name, _level(int(match.group(1)), match.group(2) == "own_scores"), binary=True)
    if match := _DISTANCE.fullmatch(name):
        return SampleMetric(name, _distance_at(int(match.group(1))), lower=True)
    if "@" in name:
        metric, rule = name.split("@", 1)
        try:
            found = node_metric(metric)
        except ConfigError:
            found = None
        if found is not None and rule:
            return SampleMetric(name, _decision(metric, rule), lower=found.lower, binary=metric in ("correct", "exact"))
    raise ConfigError(f"unknown metric {name!r}; choose top1, top5, level1_from_leaf, level1_own_scores, "
                      "mistake_severity, avg_hdist@1, hierarchical_f1 (or _precision, _recall), ece, cross_entropy, or "
                      "METRIC@RULE of "
                      "decisions.csv such as hf1@optimal:hf1")


def available_metrics(runs: Sequence[RunResult]) -> list[str]:
    """Every metric name that at least one of ``runs`` has, in the order the report shows them;
    read from what each run holds (its top-k width, own levels, probabilities and decisions.csv's
    rows), nothing computed."""
    depth = max((r.hierarchy.max_depth for r in runs), default=1)
    width = max((r.topk.shape[1] for r in runs), default=0)
    own = {d for r in runs for d in range(1, r.hierarchy.max_depth) if (r.levels[:, d - 1] >= 0).any()}
    names = [f"top{k}" for k in (1, 5) if k <= width]
    names += [f"level{d}_from_leaf" for d in range(1, depth)] + [f"level{d}_own_scores" for d in sorted(own)]
    names += ["mistake_severity", *(f"avg_hdist@{k}" for k in (1, 5) if k <= width), "hierarchical_precision",
              "hierarchical_recall", "hierarchical_f1"]
    names += ["cross_entropy", "ece"] if any(len(r.calibration[0]) for r in runs) else []
    for r in runs:
        table = r.decisions
        for column in (c for c in table.columns if c not in ("rule", "probabilities", "unavailable")):
            names += [f"{column}@{row.rule}" + (" (own scores)" if row.probabilities == "own scores" else "")
                      for row in table[table[column].notna()].itertuples()]
    return list(dict.fromkeys(names))


def chosen_metrics(names: Sequence[str] | None, runs: Sequence[RunResult]) -> list[SampleMetric]:
    """The metrics named (:data:`DEFAULT_METRICS` when None; "levels": every level from the leaf),
    each one that no run has refused in one line."""
    depth = max((r.hierarchy.max_depth for r in runs), default=1)
    out = []
    for name in names or DEFAULT_METRICS:
        expanded = [f"level{d}_from_leaf" for d in range(1, depth)] if name == "levels" else [name]
        for one in expanded:
            metric = sample_metric(one)
            if all(metric.parts(r) is None for r in runs):
                raise ConfigError(f"metric {one!r}: none of the {len(runs)} run(s) has it (e.g. a head without own "
                                  "super-class scores, or a decoding rule its evaluation did not run)")
            out.append(metric)
    return out


def entry_parts(runs: Sequence[RunResult], metric: SampleMetric) -> Parts | None:
    """An entry's per-sample columns: its runs' summed (None where one of them lacks the metric)."""
    parts = [metric.parts(r) for r in runs]
    return None if any(p is None for p in parts) else sum(parts)


def entry_value(runs: Sequence[RunResult], metric: SampleMetric) -> float:
    """The value of an entry (a run, or a seed group pooled) on ``metric``; NaN where it lacks it."""
    parts = entry_parts(runs, metric)
    return math.nan if parts is None else float(metric.combine(parts.sum(0)))
