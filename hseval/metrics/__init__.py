"""Metrics: pure functions first (numpy in, numbers out), thin accumulators on top."""

from hseval.metrics.accuracy import level_accuracy, level_predictions_from_leaf, topk_accuracy

__all__ = ["level_accuracy", "level_predictions_from_leaf", "topk_accuracy"]
