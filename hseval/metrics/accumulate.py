"""A thin stateful shell over the metric functions, fed batch by batch during evaluation.

It keeps O(N·k) numbers, not the (N, L) logits: per sample the top-k classes, the top-1 softmax
probability, the cross-entropy and, when the head has level logits, each level's argmax node.
Every metric is then computed once over all samples by the pure functions, so batching never
changes a result and no sample is dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from hseval.hierarchy import Hierarchy
from hseval.metrics import _checks
from hseval.metrics.accuracy import (
    level_agreement,
    level_predictions_from_logits,
    superclass_accuracy_from_leaf,
    superclass_accuracy_from_levels,
    topk_predictions,
)
from hseval.metrics.calibration import _bins, _ece
from hseval.metrics.hierarchical import hierarchical_prf
from hseval.metrics.mistakes import mistake_metrics_from_topk

__all__ = ["EvaluationAccumulator"]


class EvaluationAccumulator:
    """Collects an evaluation's predictions and computes every metric of :mod:`hseval.metrics`.

    Parameters
    ----------
    hierarchy : Hierarchy
    topk : int, default 20
        Largest k of the top-k metrics (capped at |L|); the metrics use k in {1, 5, topk} up to topk.
    n_bins : int, default 15
        Bins of the expected calibration error.
    """

    def __init__(self, hierarchy: Hierarchy, *, topk: int = 20, n_bins: int = 15) -> None:
        if topk < 1:
            raise ValueError(f"topk must be at least 1, got {topk}")
        if n_bins < 1:
            raise ValueError(f"n_bins must be at least 1, got {n_bins}")
        self.hierarchy = hierarchy
        self.ks = tuple(sorted({k for k in (1, 5, topk) if k <= topk}))
        self.n_bins = n_bins
        self._kept = min(topk, hierarchy.num_leaves)
        self.reset()

    def reset(self) -> None:
        self._topk: list[np.ndarray] = []
        self._target: list[np.ndarray] = []
        self._confidence: list[np.ndarray] = []
        self._nll: list[np.ndarray] = []
        self._levels: dict[int, list[np.ndarray]] | None = None
        self._batches = 0

    def update(self, logits: Any, target: Any, level_logits: Mapping[int, Any] | None = None) -> None:
        """Add a batch: ``logits`` (B, |L|) and ``target`` (B,) as torch tensors (any device) or numpy
        arrays; ``level_logits`` {level: (B, #nodes of that depth)} as ``Head.level_logits`` gives
        them, or None; the same levels in every batch."""
        logits = _checks.scores(logits, "logits", self.hierarchy.num_leaves)
        target = _checks.leaves(target, "target", self.hierarchy)
        _checks.same_length(logits, target, "logits and target")
        levels = None
        if level_logits is not None:
            levels = level_predictions_from_logits(
                {int(k): _checks.to_numpy(v, floating=True) for k, v in level_logits.items()}, self.hierarchy)
            for k, nodes in levels.items():
                _checks.same_length(nodes, target, f"level_logits[{k}] and target")
        before = None if self._levels is None else sorted(self._levels)
        now = None if levels is None else sorted(levels)
        if self._batches and before != now:
            raise ValueError(f"this batch has level logits for levels {now} but earlier batches had {before}; "
                             "give the same levels in every batch (or None in all)")
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_norm = np.log(np.exp(shifted).sum(axis=1))
        self._topk.append(topk_predictions(logits, self._kept))
        self._target.append(target)
        self._confidence.append(np.exp(-log_norm))  # the largest softmax probability
        self._nll.append(log_norm - shifted[np.arange(len(target)), target])
        if levels is not None:
            if self._levels is None:
                self._levels = {k: [] for k in levels}
            for k, nodes in levels.items():
                self._levels[k].append(nodes)
        self._batches += 1

    # ----------------------------------------------------------------- the gathered state
    @property
    def target(self) -> np.ndarray:
        """(N,) int64 true classes."""
        return np.concatenate(self._target) if self._target else np.zeros(0, dtype=np.int64)

    @property
    def topk_pred(self) -> np.ndarray:
        """(N, min(topk, |L|)) int64 best classes, best first."""
        return np.concatenate(self._topk) if self._topk else np.zeros((0, self._kept), dtype=np.int64)

    @property
    def confidence(self) -> np.ndarray:
        """(N,) float64 top-1 softmax probability."""
        return np.concatenate(self._confidence) if self._confidence else np.zeros(0)

    @property
    def level_pred(self) -> dict[int, np.ndarray] | None:
        """{level: (N,) node indices} from the level logits (way (a)), None when none were given."""
        return None if self._levels is None else {k: np.concatenate(v) for k, v in self._levels.items()}

    def __len__(self) -> int:
        return sum(len(t) for t in self._target)

    # ----------------------------------------------------------------- metrics
    def compute(self) -> dict[str, Any]:
        """Every metric over all samples so far, as plain JSON types (levels keyed "1", "2", ...;
        NaN where a metric is undefined, e.g. with no sample)."""
        tree, target, top = self.hierarchy, self.target, self.topk_pred
        pred = top[:, 0]
        hits = top == target[:, None]
        n = len(target)
        out: dict[str, Any] = {"samples": n, "cross_entropy": _mean(np.concatenate(self._nll) if n else [])}
        for k in self.ks:
            out[f"top{k}"] = _mean(hits[:, :k].any(axis=1))
        out["superclass_acc"] = _by_level(superclass_accuracy_from_leaf(pred, target, tree))
        levels = self.level_pred
        if levels is not None:
            out["superclass_acc_from_levels"] = _by_level(superclass_accuracy_from_levels(levels, target, tree))
            out["level_agreement"] = _by_level(level_agreement(levels, pred, target, tree))
        out.update(mistake_metrics_from_topk(top, target, tree, ks=self.ks))
        prf = hierarchical_prf(pred, target, tree)
        out.update({f"hierarchical_{name}": value for name, value in prf.items()})
        correct = hits[:, 0]
        out["ece"] = _ece(self.confidence, correct, n_bins=self.n_bins)
        bins = _bins(self.confidence, correct, n_bins=self.n_bins)
        out["reliability"] = {name: values.tolist() for name, values in bins.items()}
        return out


def _mean(values: Any) -> float:
    values = np.asarray(values, dtype=np.float64)
    return float(values.mean()) if values.size else float("nan")


def _by_level(values: dict[int, float]) -> dict[str, float]:
    return {str(k): float(v) for k, v in values.items()}
