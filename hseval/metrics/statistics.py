"""Every metric of :class:`~hseval.metrics.HierarchicalMetrics` from one set of sufficient statistics.

A batch's statistics (:func:`batch_update`) come from the ``_update`` function of each metric's
module, and the metrics from their sums (:func:`state_compute`) from each module's ``_compute``:
the functions of :mod:`hseval.metrics` and the streaming class run the same code. The sums
(:func:`state_zeros`) do not grow with the number of samples; with them go the confusion counts
(:class:`~hseval.metrics.confusion.SparseConfusion`). Pure functions of numpy arrays: the class
adds the sums up, merges and all-reduces them, and any other shell could do the same.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hseval.metrics import _checks
from hseval.metrics.accuracy import _superclass_compute, _topk_update
from hseval.metrics.calibration import _bins_update, _ece_compute, _reliability_compute, _scores_update
from hseval.metrics.confusion import Pairs, pairs_update
from hseval.metrics.hierarchical import _prf_compute
from hseval.metrics.levels import _levels_compute, _levels_update
from hseval.metrics.mistakes import _severity_compute, _topk_distance_compute, _topk_distance_update
from hseval.tree.hierarchy import Hierarchy

__all__ = ["state_zeros", "batch_update", "state_compute", "why_undefined", "NO_SAMPLES", "NO_MISTAKES",
           "NO_SAMPLE_AT_LEVEL"]

NO_SAMPLES = "no samples were given, so every share and mean is undefined"
NO_MISTAKES = "no mistakes: every sample is right, so the mean severity of a mistake is undefined"
NO_SAMPLE_AT_LEVEL = "no sample's class lies at level {level} or deeper, so level {level} has nothing to count"


def state_zeros(hierarchy: Hierarchy, num_ks: int, n_bins: int) -> dict[str, np.ndarray]:
    """The sums of the state, before any sample: samples; per k the top-k hits and the sums of the
    hierarchical distances@k and of their minimum; per calibration bin the samples, correct ones
    and confidences; per super-class level (reached, correct, agreeing) counts of the model's own
    predictions; the cross-entropy."""
    return {"samples": np.zeros(1, np.int64), "topk_hits": np.zeros(num_ks, np.int64),
            "hdist_total": np.zeros(num_ks, np.int64), "hdist_best": np.zeros(num_ks, np.int64),
            "bin_count": np.zeros(n_bins, np.int64), "bin_correct": np.zeros(n_bins, np.int64),
            "level_counts": np.zeros((max(hierarchy.max_depth - 1, 0), 3), np.int64),
            "bin_confidence": np.zeros(n_bins, np.float64), "nll": np.zeros(1, np.float64)}


def batch_update(top: np.ndarray, targets: np.ndarray, hierarchy: Hierarchy, ks: Sequence[int], *,
                 levels: Mapping[int, np.ndarray] | None = None, scores: np.ndarray | None = None,
                 logits: bool = True, n_bins: int = 15) -> dict[str, Any]:
    """A batch's statistics: the sums of :func:`state_zeros` it gives, and "pairs", its confusion counts.

    ``top`` (B, w) are the best classes, best first, and ``targets`` (B,) the true ones (checked
    class indices); ``ks`` the k of the state, each at most |L|: those above w (predicted classes
    alone give w = 1) add nothing. ``levels`` {level: (B,) predicted nodes}; ``scores`` (B, |L|)
    checked logits (``logits``) or probabilities, for calibration and the cross-entropy.
    """
    kept = [k for k in ks if k <= top.shape[1]]
    pad = (0, len(ks) - len(kept))
    total, best = _topk_distance_update(top, targets, hierarchy, kept)
    out: dict[str, Any] = {"samples": len(targets), "topk_hits": np.pad(_topk_update(top, targets, kept), pad),
                           "hdist_total": np.pad(total, pad), "hdist_best": np.pad(best, pad),
                           "pairs": pairs_update(top[:, 0], targets)}
    if levels:
        out["level_counts"] = _levels_update(levels, top[:, 0], targets, hierarchy)
    if scores is not None:
        confidence, nll = _scores_update(scores, targets, logits=logits)
        bins = _bins_update(confidence, top[:, 0] == targets, n_bins=n_bins)
        out.update({"bin_count": bins[0], "bin_correct": bins[1], "bin_confidence": bins[2], "nll": nll.sum()})
    return out


def state_compute(state: Mapping[str, np.ndarray], pairs: Pairs, hierarchy: Hierarchy, ks: Sequence[int], *,
                  shown: Sequence[int], levels: tuple[int, ...] | None, scored: bool) -> dict[str, Any]:
    """The metrics from summed statistics and confusion counts, as plain JSON types (see
    :meth:`HierarchicalMetrics.compute`): the top-k and distances@k of the ``shown`` positions of
    ``ks``, the model's own level predictions' where ``levels`` were given, calibration and
    cross-entropy when ``scored``; "unavailable" says why each value that is NaN is undefined
    (:func:`why_undefined`)."""
    n = int(state["samples"][0])
    out: dict[str, Any] = {"samples": n}
    out.update({f"top{ks[i]}": _checks.ratio(state["topk_hits"][i], n) for i in shown})
    out["superclass_acc"] = _by_level(_superclass_compute(pairs, hierarchy))
    if levels is not None:
        accuracy, agreement = _levels_compute(state["level_counts"], levels)
        out["superclass_acc_from_levels"], out["level_agreement"] = _by_level(accuracy), _by_level(agreement)
    out["mistake_severity"] = _severity_compute(pairs, hierarchy)
    average, best = _topk_distance_compute((state["hdist_total"][shown], state["hdist_best"][shown]), n,
                                           [min(ks[i], hierarchy.num_leaves) for i in shown])
    for i, avg, low in zip(shown, average, best):
        out[f"avg_hdist@{ks[i]}"], out[f"best_hdist@{ks[i]}"] = avg, low
    out.update({f"hierarchical_{key}": value for key, value in _prf_compute(pairs, hierarchy).items()})
    if scored:
        bins = (state["bin_count"], state["bin_correct"], state["bin_confidence"])
        out["cross_entropy"] = _checks.ratio(state["nll"][0], n)
        out["ece"] = _ece_compute(bins)
        out["reliability"] = {key: value.tolist() for key, value in _reliability_compute(bins).items()}
    return {**out, "unavailable": why_undefined(out)}


def why_undefined(computed: dict[str, Any]) -> dict[str, str]:
    """Why each NaN of ``computed`` (metrics of :func:`state_compute`) is undefined: {key: reason},
    a level's value keyed "key.level" ("superclass_acc.2"). The reasons are decided here, where the
    sums that are 0 are known: no samples at all, no mistakes, or no sample at a level."""
    if not computed["samples"]:
        return {key: NO_SAMPLES for key, value in computed.items() if _undefined(value)}
    out = {}
    for key, value in computed.items():
        if isinstance(value, dict) and key != "reliability":
            out.update({f"{key}.{level}": NO_SAMPLE_AT_LEVEL.format(level=level)
                        for level, v in value.items() if _undefined(v)})
        elif key == "mistake_severity" and _undefined(value):
            out[key] = NO_MISTAKES
    return out


def _undefined(value: Any) -> bool:
    """A NaN, or a record of levels holding one."""
    if isinstance(value, dict):
        return any(_undefined(v) for v in value.values())
    return isinstance(value, float) and math.isnan(value)


def _by_level(values: dict[int, float]) -> dict[str, float]:
    """Levels keyed "1", "2", ... as in JSON."""
    return {str(k): v for k, v in values.items()}
