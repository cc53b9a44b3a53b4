"""Metrics: pure functions first (numpy in, numbers out), each an update of sufficient statistics and a
compute from them; :class:`HierarchicalMetrics` streams the same statistics and computes the same way."""

# isort: off
from hseval.metrics import accuracy, levels, mistakes, topk_mistakes, hierarchical, calibration  # noqa: F401 (declare, in this order, the metrics)
# isort: on
from hseval.metrics.accuracy import (
    level_accuracy,
    per_node_accuracy,
    superclass_accuracy_from_leaf,
    topk_accuracy,
    topk_predictions,
)
from hseval.metrics.calibration import expected_calibration_error, reliability_bins
from hseval.metrics.confusion import confusion_matrix, tree_order
from hseval.metrics.decisions import decode
from hseval.metrics.hierarchical import hierarchical_prf
from hseval.metrics.levels import (
    level_agreement,
    level_prediction_matrix,
    level_predictions_from_leaf,
    level_predictions_from_logits,
    superclass_accuracy_from_levels,
)
from hseval.metrics.mistakes import hierarchical_distance, mistake_severity
from hseval.metrics.nodes import node_probabilities
from hseval.metrics.streaming import HierarchicalMetrics
from hseval.metrics.topk_mistakes import (
    avg_hierarchical_distance_at_k,
    best_hierarchical_distance_at_k,
    mistake_metrics,
    mistake_metrics_from_topk,
)

__all__ = [
    "HierarchicalMetrics",
    "avg_hierarchical_distance_at_k", "best_hierarchical_distance_at_k", "confusion_matrix", "decode",
    "node_probabilities",
    "expected_calibration_error", "hierarchical_distance", "hierarchical_prf", "level_accuracy", "level_agreement",
    "level_prediction_matrix", "level_predictions_from_leaf", "level_predictions_from_logits", "mistake_metrics",
    "mistake_metrics_from_topk",
    "mistake_severity", "per_node_accuracy", "reliability_bins", "superclass_accuracy_from_leaf",
    "superclass_accuracy_from_levels", "topk_accuracy", "topk_predictions", "tree_order",
]
