"""Calibration of the top-1 confidence: expected calibration error and reliability diagrams
(Guo et al., ICML 2017).

Binning: ``n_bins`` equal-width bins over (0, 1], closed on the right as in Guo et al.: bin ``b``
(0-based) holds the confidences in ``(b / n_bins, (b + 1) / n_bins]``, so a confidence of exactly
0.5 with 2 bins falls in the first bin, and 1.0 in the last. A confidence of 0 (only possible for
all-zero rows) goes to the first bin, so no sample is dropped.
"""

from __future__ import annotations

import numpy as np

from hseval.metrics import _checks

__all__ = ["expected_calibration_error", "reliability_bins"]


def expected_calibration_error(probs: np.ndarray, target: np.ndarray, *, n_bins: int = 15) -> float:
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
    return _ece(*_confidence_and_correct(probs, target), n_bins=n_bins)


def reliability_bins(probs: np.ndarray, target: np.ndarray, *, n_bins: int = 15) -> dict[str, np.ndarray]:
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
    return _bins(*_confidence_and_correct(probs, target), n_bins=n_bins)


def _confidence_and_correct(probs: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    probs = _checks.scores(probs, "probs")
    if probs.shape[1] == 0:
        raise ValueError("probs has no column; give one column per class")
    target = _checks.indices(target, "target", num=probs.shape[1], what="class")
    _checks.same_length(probs, target, "probs and target")
    if probs.size and (probs.min() < 0 or probs.max() > 1 + 1e-6):
        raise ValueError(f"probs must lie in [0, 1], got values in [{probs.min():.3g}, {probs.max():.3g}]; "
                         "pass softmax(logits), not the logits")
    return probs.max(axis=1), probs.argmax(axis=1) == target


def bin_index(confidence: np.ndarray, *, n_bins: int) -> np.ndarray:
    """The bin of each confidence: the b with ``b / n_bins < conf <= (b + 1) / n_bins`` (0 in the first)."""
    if n_bins < 1:
        raise ValueError(f"n_bins must be at least 1, got {n_bins}")
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    # searchsorted(side="left") - 1 is the b with edges[b] < conf <= edges[b + 1]: right-closed bins
    return np.clip(np.searchsorted(edges, confidence, side="left") - 1, 0, n_bins - 1)


def _bins(confidence: np.ndarray, correct: np.ndarray, *, n_bins: int) -> dict[str, np.ndarray]:
    """Bin statistics from (N,) confidences and (N,) 0/1 correctness."""
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    which = bin_index(confidence, n_bins=n_bins)
    count = np.bincount(which, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = np.bincount(which, weights=correct.astype(np.float64), minlength=n_bins) / count
        mean_confidence = np.bincount(which, weights=confidence, minlength=n_bins) / count
    return {"lower": edges[:-1], "upper": edges[1:], "count": count.astype(np.int64), "accuracy": accuracy,
            "confidence": mean_confidence}


def _ece(confidence: np.ndarray, correct: np.ndarray, *, n_bins: int) -> float:
    bins = _bins(confidence, correct, n_bins=n_bins)
    if len(confidence) == 0:
        return float("nan")
    full = bins["count"] > 0
    gap = np.abs(bins["accuracy"][full] - bins["confidence"][full])
    return float((bins["count"][full] * gap).sum() / len(confidence))
