"""Expected calibration error against a direct loop and a hand example; reliability bins."""

from __future__ import annotations

import numpy as np
import pytest

from hseval.metrics import expected_calibration_error, reliability_bins
from tests.metric_tester import loop_ece, softmax


@pytest.mark.parametrize(("seed", "n_bins"), [(0, 15), (1, 10), (2, 1), (3, 7)])
def test_ece_matches_a_direct_loop(seed, n_bins):
    rng = np.random.default_rng(seed)
    probs = softmax(rng.normal(size=(300, 6)) * rng.uniform(0.5, 4))
    target = np.where(rng.random(300) < 0.6, probs.argmax(1), rng.integers(0, 6, 300))
    assert expected_calibration_error(probs, target, n_bins=n_bins) == pytest.approx(loop_ece(probs, target, n_bins))
    bins = reliability_bins(probs, target, n_bins=n_bins)
    assert bins["count"].sum() == 300
    np.testing.assert_allclose(bins["lower"], np.arange(n_bins) / n_bins)
    np.testing.assert_allclose(bins["upper"], np.arange(1, n_bins + 1) / n_bins)


def test_hand_example_with_a_confidence_on_a_bin_edge():
    probs = np.array([[0.9, 0.05, 0.05],   # conf 0.9, correct
                      [0.2, 0.7, 0.1],     # conf 0.7, wrong
                      [0.4, 0.3, 0.3],     # conf 0.4, correct
                      [0.5, 0.25, 0.25]])  # conf 0.5, wrong: (0, 0.5] holds 0.5, so the first bin
    target = np.array([0, 0, 0, 1])
    # bin (0, 0.5]: acc 1/2, conf 0.45; bin (0.5, 1]: acc 1/2, conf 0.8 -> 2/4·0.05 + 2/4·0.3 = 0.175
    assert expected_calibration_error(probs, target, n_bins=2) == pytest.approx(0.175)
    bins = reliability_bins(probs, target, n_bins=2)
    assert bins["count"].tolist() == [2, 2]
    np.testing.assert_allclose(bins["accuracy"], [0.5, 0.5])
    np.testing.assert_allclose(bins["confidence"], [0.45, 0.8])


def test_edge_cases():
    assert np.isnan(expected_calibration_error(np.zeros((0, 3)), []))
    bins = reliability_bins(np.zeros((0, 3)), [], n_bins=4)
    assert bins["count"].tolist() == [0] * 4 and np.isnan(bins["accuracy"]).all()
    assert expected_calibration_error(np.eye(3), [0, 1, 2]) == 0.0  # confident and right
    assert expected_calibration_error(np.eye(3), [1, 2, 0]) == 1.0  # confident and wrong
    with pytest.raises(ValueError, match=r"probs must lie in \[0, 1\].*pass softmax\(logits\), not the logits"):
        expected_calibration_error(np.array([[3.0, -1.0]]), [0])
    with pytest.raises(ValueError, match="n_bins must be >= 1, got 0"):
        expected_calibration_error(np.eye(2), [0, 1], n_bins=0)
