"""What the metrics share: input validation, one named, actionable message per mistake, and
:func:`ratio`, the one division of a count or sum by another.

Metrics are called with arrays from a model and a dataset; the usual slips are passing scores
where labels are expected, labels of another dataset, or positions within a level where canonical
node indices are expected. Each check says what was expected, what came, and how to fix it. The
other arguments (the tree, k, bins, levels) are checked on the call by their annotations
(:func:`hseval.core.arguments.checked`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from hseval.core.arguments import Array, Positive, shown
from hseval.tree.hierarchy import Hierarchy

Levels = Mapping[Positive, Array]
"""``{level: array}``, as an argument: a mapping with integer keys."""


def to_numpy(values: Any, name: str, *, floating: bool = False) -> np.ndarray:
    """``values`` as a numpy array; torch tensors (any device or dtype) are detached and copied
    to the CPU without importing torch here. ``name`` names the argument in the error for
    something that is no array of numbers."""
    if hasattr(values, "detach"):
        values = values.detach().cpu()
        values = (values.double() if floating else values).numpy()
    try:
        return np.asarray(values, dtype=np.float64 if floating else None)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of numbers, got {shown(values)}") from None


def indices(values: Any, name: str, *, num: int, what: str, ndim: int | None = 1, lowest: int = 0) -> np.ndarray:
    """Integer indices in ``lowest..num-1`` as int64 (``lowest=-1``: -1 marks "none"); ``what``
    names them ("class", "node")."""
    array = to_numpy(values, name)
    if ndim is not None and array.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D array of {what} indices, got shape {array.shape}")
    if array.size == 0:
        return array.astype(np.int64)
    if not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"{name} must hold integer {what} indices, got dtype {array.dtype}; "
                         "pass predicted labels (e.g. scores.argmax(1)), not scores")
    outside = (array < lowest) | (array >= num)
    if outside.any():
        raise ValueError(f"{name} holds {array[outside].flat[0]}, outside the {what} indices {lowest}..{num - 1} of "
                         "the hierarchy; check that the labels and the hierarchy come from the same dataset")
    return array.astype(np.int64, copy=False)


def leaves(values: Any, name: str, hierarchy: Hierarchy, **kwargs: Any) -> np.ndarray:
    return indices(values, name, num=hierarchy.num_leaves, what="class", **kwargs)


def same_length(first: np.ndarray, second: np.ndarray, names: str) -> None:
    if len(first) != len(second):
        raise ValueError(f"{names} hold {len(first)} and {len(second)} samples; give one entry per sample to each")


def scores(values: Any, name: str, num_classes: int | None = None) -> np.ndarray:
    """A finite (N, C) float64 array; C must equal ``num_classes`` when given."""
    array = to_numpy(values, name, floating=True)
    if array.ndim != 2:
        raise ValueError(f"{name} must be 2-D (samples, classes), got shape {array.shape}")
    if num_classes is not None and array.shape[1] != num_classes:
        raise ValueError(f"{name} has {array.shape[1]} columns but the hierarchy has {num_classes} classes; "
                         "give one column per class in class order")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} holds NaN or infinite values; check the model's output (a diverged run?)")
    return array


def level_nodes(values: Any, depth: int, hierarchy: Hierarchy, num_samples: int) -> np.ndarray:
    """Canonical node indices of depth ``depth``, one per sample."""
    if not 1 <= depth <= hierarchy.max_depth:
        raise ValueError(f"level {depth} is outside the tree's levels 1..{hierarchy.max_depth}")
    nodes = indices(values, f"level_pred[{depth}]", num=hierarchy.num_nodes, what="node")
    if len(nodes) != num_samples:
        raise ValueError(f"level_pred[{depth}] holds {len(nodes)} predictions for {num_samples} samples; "
                         "give one per sample")
    wrong = hierarchy.depth[nodes] != depth
    if wrong.any():
        node = int(nodes[wrong][0])
        raise ValueError(f"level_pred[{depth}] holds node {hierarchy.node_names[node]!r} (index {node}) of depth "
                         f"{hierarchy.depth[node]}, not a node of depth {depth}; convert positions within the level "
                         "to node indices with level_predictions_from_logits or hierarchy.nodes_at_depth")
    return nodes


def ratio(numerator: Any, denominator: Any) -> float:
    """``numerator / denominator`` as a float, NaN when the denominator is 0 (no sample, no mistake)."""
    return float(numerator) / float(denominator) if denominator else float("nan")


PROBABILITY_TOLERANCE = 0.01
"""How far a row of probabilities may sum from 1, here and in prediction files: softmax outputs
rounded to 4 decimals over 1,000 classes, or computed in float16, stay within it."""


def probability_problem(probs: np.ndarray) -> tuple[int, str] | None:
    """The first row of ``probs`` (N, classes) that is not probabilities (a value outside [0, 1], or
    a sum off 1 by more than :data:`PROBABILITY_TOLERANCE`) and why; None when every row is."""
    outside = (probs < 0).any(axis=1) | (probs > 1).any(axis=1)
    sums = probs.sum(axis=1)
    bad = np.flatnonzero(outside | (np.abs(sums - 1) > PROBABILITY_TOLERANCE))
    if not len(bad):
        return None
    row = int(bad[0])
    return row, ("holds values outside [0, 1]" if outside[row] else
                 f"sums to {sums[row]:.4g}, not 1 (within {PROBABILITY_TOLERANCE:g})")


def probabilities(probs: np.ndarray, *, fix: str, rows_sum_to_one: bool = False) -> None:
    """Refuse values outside [0, 1] (logits, say) and, with ``rows_sum_to_one``, rows that are no
    distribution (:func:`probability_problem`); ``fix`` says what to pass instead."""
    if not probs.size:
        return
    if probs.min() < 0 or probs.max() > 1:
        raise ValueError(f"probs must lie in [0, 1], got values in [{probs.min():.3g}, {probs.max():.3g}]; {fix}")
    problem = probability_problem(probs) if rows_sum_to_one else None
    if problem is not None:
        raise ValueError(f"probs row {problem[0]} {problem[1]}; {fix}")
