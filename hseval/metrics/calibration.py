"""Calibration of the top-1 confidence: expected calibration error and reliability diagrams
(Guo et al., ICML 2017).

Binning: ``n_bins`` equal-width bins over (0, 1], closed on the right as in Guo et al.: bin ``b``
(0-based) holds the confidences in ``(b / n_bins, (b + 1) / n_bins]``, so a confidence of exactly
0.5 with 2 bins falls in the first bin, and 1.0 in the last. A confidence of 0 (only possible for
all-zero rows) goes to the first bin, so no sample is dropped.

The statistic is three sums per bin (samples, correct ones, confidences; :func:`_bins_update`)
and, for the cross-entropy, the sum of -log p(target) (:func:`sample_scores` gives both from
logits or probabilities); :class:`~hseval.metrics.HierarchicalMetrics` adds them batch by batch
and both it and the functions here compute from them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hseval.core.arguments import Array, Positive, checked
from hseval.metrics import _checks
from hseval.metrics.statistics import METRICS, Batch, Key, Metric, Sums

__all__ = ["expected_calibration_error", "reliability_bins", "sample_scores", "bin_index"]


@checked
def expected_calibration_error(probs: Array, target: Array, *, n_bins: Positive = 15) -> float:
    """``ECE = Σ_b |B_b| / N · |acc(B_b) - conf(B_b)|`` with the confidence ``max_c probs[i, c]``.

    Parameters
    ----------
    probs : (N, C) array_like
        Probabilities (softmax of the logits), values in [0, 1].
    target : (N,) array_like of int
        True class indices.
    n_bins : int, default 15
        Number of equal-width bins over (0, 1], closed on the right.

    Returns
    -------
    float
        The ECE in [0, 1]; NaN when N = 0.

    Raises
    ------
    ValueError
        If ``probs`` is not 2-D, has no column, holds NaN or infinite values or values outside
        [0, 1] (logits, say); if ``target`` is not 1-D class indices of ``probs``'s columns or
        its length differs; or if ``n_bins < 1``.

    Examples
    --------
    Two samples said 90 % and were right, two said 60 % and one of them was right: each bin is
    off by 0.1.

    >>> import numpy as np
    >>> from hseval.metrics import expected_calibration_error
    >>> probs = np.array([[0.9, 0.1], [0.9, 0.1], [0.6, 0.4], [0.4, 0.6]])
    >>> target = np.array([0, 0, 1, 1])
    >>> round(expected_calibration_error(probs, target, n_bins=4), 6)
    0.1
    """
    return _ece_compute(_bins_update(*_confidence_and_correct(probs, target), n_bins=n_bins))


@checked
def reliability_bins(probs: Array, target: Array, *, n_bins: Positive = 15) -> dict[str, np.ndarray]:
    """Per-bin statistics for a reliability diagram; arguments as :func:`expected_calibration_error`.

    Parameters
    ----------
    probs : (N, C) array_like
        Probabilities (softmax of the logits), values in [0, 1].
    target : (N,) array_like of int
        True class indices.
    n_bins : int, default 15
        Number of equal-width bins over (0, 1], closed on the right.

    Returns
    -------
    dict of str to (n_bins,) ndarray
        One entry per bin, every array of shape (n_bins,), so the dict is a table: "lower" and
        "upper" (the bin is (lower, upper]), "count" (int64), "accuracy" and "confidence" (the mean
        confidence); accuracy and confidence are NaN in empty bins.

    Raises
    ------
    ValueError
        If ``probs`` is not 2-D, has no column, holds NaN or infinite values or values outside
        [0, 1] (logits, say); if ``target`` is not 1-D class indices of ``probs``'s columns or
        its length differs; or if ``n_bins < 1``.

    Examples
    --------
    >>> import numpy as np
    >>> from hseval.metrics import reliability_bins
    >>> probs = np.array([[0.9, 0.1], [0.9, 0.1], [0.6, 0.4], [0.4, 0.6]])
    >>> bins = reliability_bins(probs, np.array([0, 0, 1, 1]), n_bins=4)
    >>> bins["upper"].tolist(), bins["count"].tolist()
    ([0.25, 0.5, 0.75, 1.0], [0, 0, 2, 2])
    >>> np.round(bins["accuracy"], 3).tolist(), np.round(bins["confidence"], 3).tolist()
    ([nan, nan, 0.5, 1.0], [nan, nan, 0.6, 0.9])
    """
    return _reliability_compute(_bins_update(*_confidence_and_correct(probs, target), n_bins=n_bins))


def _confidence_and_correct(probs: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    probs = _checks.scores(probs, "probs")
    if probs.shape[1] == 0:
        raise ValueError("probs has no column; give one column per class")
    target = _checks.indices(target, "target", num=probs.shape[1], what="class")
    _checks.same_length(probs, target, "probs and target")
    _checks.probabilities(probs, fix="pass softmax(logits), not the logits")
    return probs.max(axis=1), probs.argmax(axis=1) == target


def sample_scores(scores: np.ndarray, target: np.ndarray, *, logits: bool) -> tuple[np.ndarray, np.ndarray]:
    """(confidence, -log p(target)) of each sample, (N,) each, from checked (N, C) ``scores``:
    logits (through a stable log-softmax) or probabilities (p clipped at 1e-12); what the ECE and
    the cross-entropy sum, so an evaluation keeps them per sample to bootstrap those metrics."""
    rows = np.arange(len(target))
    if logits:
        shifted = scores - scores.max(axis=1, keepdims=True)
        picked = shifted[rows, target]
        log_norm = np.log(np.exp(shifted, out=shifted).sum(axis=1))
        return np.exp(-log_norm), log_norm - picked  # the largest softmax probability
    return scores.max(axis=1), -np.log(np.maximum(scores[rows, target], 1e-12))


def bin_index(confidence: np.ndarray, *, n_bins: int) -> np.ndarray:
    """The bin of each confidence: the b with ``b / n_bins < conf <= (b + 1) / n_bins`` (0 in the first)."""
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    # searchsorted(side="left") - 1 is the b with edges[b] < conf <= edges[b + 1]: right-closed bins
    return np.clip(np.searchsorted(edges, confidence, side="left") - 1, 0, n_bins - 1)


def _bins_update(confidence: np.ndarray, correct: np.ndarray, *, n_bins: int) -> tuple[np.ndarray, ...]:
    """Per bin (n_bins,): the samples (int64), the correct ones (int64) and the sum of their
    confidences (float64), from (N,) confidences and (N,) booleans."""
    which = bin_index(confidence, n_bins=n_bins)
    return (np.bincount(which, minlength=n_bins).astype(np.int64),
            np.bincount(which[correct], minlength=n_bins).astype(np.int64),
            np.bincount(which, weights=confidence, minlength=n_bins))


def _reliability_compute(bins: tuple[np.ndarray, ...]) -> dict[str, np.ndarray]:
    """:func:`reliability_bins`' table from :func:`_bins_update`'s sums."""
    count, correct, confidence = bins
    edges = np.linspace(0.0, 1.0, len(count) + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return {"lower": edges[:-1], "upper": edges[1:], "count": count, "accuracy": correct / count,
                "confidence": confidence / count}


def _ece_compute(bins: tuple[np.ndarray, ...]) -> float:
    """The ECE from :func:`_bins_update`'s sums; NaN without samples."""
    table = _reliability_compute(bins)
    count, n = table["count"], int(table["count"].sum())
    if n == 0:
        return float("nan")
    full = count > 0
    gap = np.abs(table["accuracy"][full] - table["confidence"][full])
    return float((count[full] * gap).sum() / n)


def _calibration_batch(batch: Batch) -> dict[str, Any]:
    confidence, nll = sample_scores(batch.scores, batch.targets, logits=batch.logits)
    count, correct, confidences = _bins_update(confidence, batch.top[:, 0] == batch.targets, n_bins=batch.n_bins)
    return {"bin_count": count, "bin_correct": correct, "bin_confidence": confidences, "nll": nll.sum()}


def _calibration_sums(sums: Sums) -> dict[str, Any]:
    bins = (sums.state["bin_count"], sums.state["bin_correct"], sums.state["bin_confidence"])
    return {"cross_entropy": _checks.ratio(sums.state["nll"][0], sums.n), "ece": _ece_compute(bins),
            "reliability": {key: value.tolist() for key, value in _reliability_compute(bins).items()}}


METRICS.add("calibration", Metric(
    keys={"cross_entropy": Key("cross-entropy", "Mean negative log-probability of the true class (nats); lower is "
                               "better.", kind="nonnegative"),
          "ece": Key("ECE", "Expected calibration error: the gap between confidence (top-1 probability) and accuracy "
                     "over 15 equal-width bins, weighted by their samples; 0: the confidence is honest.",
                     shown="headline"),
          "reliability": Key("reliability", "The reliability diagram's bins (the calibration chart).", kind="bins",
                             shown="none")},
    state=lambda hierarchy, num_ks, n_bins: {
        "bin_count": np.zeros(n_bins, np.int64), "bin_correct": np.zeros(n_bins, np.int64),
        "bin_confidence": np.zeros(n_bins, np.float64), "nll": np.zeros(1, np.float64)},
    update=_calibration_batch, compute=_calibration_sums, needs="scores", crm=False))
