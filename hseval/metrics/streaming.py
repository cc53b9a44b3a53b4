"""Streaming hierarchical metrics for anyone's training or evaluation loop.

:class:`HierarchicalMetrics` is a thin shell, as a torchmetrics ``Metric`` is: it checks each
batch, adds the batch's sufficient statistics (:func:`hseval.metrics.statistics.batch_update`,
built from the same ``_update`` functions as the metric functions of :mod:`hseval.metrics`) to
its state, and computes the metrics from the sums with the same ``_compute`` functions
(:func:`hseval.metrics.statistics.state_compute`), so each metric is written once. The state
(:class:`~hseval.metrics.stream_state.StreamState`) does not grow with the number of samples N:
named sums (a decoding rule's too), and the sparse confusion counts (the (true, predicted) class
pairs seen, never a dense |L|×|L| matrix). ``merge`` adds another instance's state; under
``torch.distributed`` ``compute`` all-reduces every process's state first (sums by
``all_reduce``, pairs by ``all_gather``).

Not a ``torchmetrics.Metric``: built on one it is slower than this shell on the same statistics
(``bench/metrics.py --stream`` times both), its wrapped ``update`` drops the top-k this ``update``
returns, a nested JSON result does not fit ``self.log`` anyway, and importing the metrics would
load torch and torchmetrics.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from hseval.core.arguments import Array, Positive, checked
from hseval.metrics import _checks, statistics
from hseval.metrics.accuracy import _per_node_compute, _topk
from hseval.metrics.decision_metrics import DecisionMetrics
from hseval.metrics.levels import _check_superclass_levels, _level_scores_update
from hseval.metrics.nodes import NodeBlock, softmax
from hseval.metrics.stream_state import NO_LEVEL_SCORES, NO_SCORES, StreamState
from hseval.tree.hierarchy import Hierarchy

__all__ = ["HierarchicalMetrics", "NO_SCORES", "NO_LEVEL_SCORES"]

_PROBS_FIX = "pass softmax outputs, or make the metrics with scores='logits' for logits"


class HierarchicalMetrics:
    """Accuracy at every level, mistake severity, hierarchical P/R/F1 and calibration, fed batch by batch.

    Parameters
    ----------
    hierarchy : Hierarchy
        The classes are its leaves, in its canonical order (column ``i`` of the scores is leaf ``i``).
    topk : iterable of int, default (1, 5)
        The k of top-k accuracy and hierarchical distance@k; 1 is always included, and every k
        asked for is computed. A k at or above the number of classes means "all classes" (its key
        keeps the requested k: top-k is then 1), as in :func:`~hseval.metrics.topk_accuracy`.
    n_bins : int, default 15
        Equal-width bins of the expected calibration error.
    scores : {"logits", "probs"}, default "logits"
        What :meth:`update` receives: logits (softmax is taken for calibration and cross-entropy)
        or probabilities (rows in [0, 1] that sum to 1; the cross-entropy clips p at 1e-12).
    sync_on_compute : bool, default True
        Under ``torch.distributed``, :meth:`compute` adds every process's state first (each
        process must then call it); False computes this process's samples alone, e.g. on the one
        rank that evaluates during training.
    rules : sequence of str, default ()
        Decoding rules (:mod:`hseval.metrics.decisions`: "leaf", "threshold:0.5", "optimal:hf1" ...)
        of the probabilities, each scored by :mod:`hseval.metrics.node_metrics` ("decisions").

    Raises
    ------
    TypeError, ValueError
        If ``hierarchy`` is not a :class:`~hseval.tree.hierarchy.Hierarchy`, ``topk`` is not a
        collection of integers of at least 1, ``n_bins`` not an integer of at least 1, ``scores``
        neither "logits" nor "probs", or ``sync_on_compute`` not a bool; the message names the argument.
    ConfigError
        If a rule is unknown, or takes no such threshold or metric.

    Examples
    --------
    Two batches give the metrics of all four samples, as the batch functions compute them at once:

    >>> import numpy as np
    >>> from hseval.tree.hierarchy import Hierarchy
    >>> from hseval.metrics import HierarchicalMetrics, superclass_accuracy_from_leaf
    >>> tree = Hierarchy.from_paths([["animal", "cat"], ["animal", "dog"], ["vehicle", "car"], ["vehicle", "bus"]])
    >>> metrics = HierarchicalMetrics(tree, topk=(1, 2))
    >>> logits = np.array([[1.0, 3.0, 0.0, 0.0], [3.0, 1.0, 0.0, 0.0], [2.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 2.0]])
    >>> target = np.array([0, 0, 2, 3])
    >>> _ = metrics.update(logits[:2], target[:2])
    >>> _ = metrics.update(logits[2:], target[2:])
    >>> result = metrics.compute()
    >>> len(metrics), result["top1"], result["top2"], result["superclass_acc"], result["mistake_severity"]
    (4, 0.5, 1.0, {1: 0.75}, 1.5)
    >>> superclass_accuracy_from_leaf(logits.argmax(1), target, tree)
    {1: 0.75}
    """

    @checked
    def __init__(self, hierarchy: Hierarchy, *, topk: Sequence[Positive] = (1, 5), n_bins: Positive = 15,
                 scores: Literal["logits", "probs"] = "logits", sync_on_compute: bool = True,
                 rules: Sequence[str] = ()) -> None:
        ks = sorted({1, *topk})
        self.hierarchy = hierarchy
        self.ks = tuple(ks)
        self.n_bins = n_bins
        self.scores = scores
        self.sync_on_compute = sync_on_compute
        self.decisions = DecisionMetrics(hierarchy, rules) if rules else None
        self._kept = min(max(ks), hierarchy.num_leaves)
        self._capped = tuple(min(k, hierarchy.num_leaves) for k in ks)
        self.reset()

    def reset(self) -> None:
        """Forget every sample."""
        sums = statistics.state_zeros(self.hierarchy, len(self.ks), self.n_bins)  # added over batches
        if self.decisions is not None:
            sums.update(self.decisions.zeros())
        self._stream = StreamState(sums, self.hierarchy.num_leaves)

    def __len__(self) -> int:
        return len(self._stream)

    @checked
    def update(self, logits: Array, targets: Array, level_scores: _checks.Levels | None = None) -> np.ndarray:
        """Add a batch of scores.

        Parameters
        ----------
        logits : (B, |L|) torch tensor (any device, any float dtype) or numpy array
            Logits, or probabilities when the instance was made with ``scores="probs"``.
        targets : (B,) array_like of int
            True class indices.
        level_scores : {level: (B, #nodes of that depth)} or None
            The model's own super-class scores (columns in the order of
            ``hierarchy.nodes_at_depth(level)``, as ``Head.level_logits`` gives them); the same
            levels in every batch.

        Returns
        -------
        (B, min(max(topk), |L|)) ndarray of int64
            The batch's best classes, best first (ties to the lower index), for callers that keep
            per-sample predictions.

        Raises
        ------
        ValueError
            If ``logits`` is not (B, |L|) or holds NaN or infinite values (or, with
            ``scores="probs"``, rows that are not probabilities); ``targets`` is not valid class
            indices of the same length; ``level_scores`` names a level outside
            ``1..max_depth-1``, has the wrong number of columns or rows, or other levels than
            earlier batches; or earlier batches came through :meth:`update_labels`.

        Examples
        --------
        >>> import numpy as np
        >>> from hseval.tree.hierarchy import Hierarchy
        >>> from hseval.metrics import HierarchicalMetrics
        >>> tree = Hierarchy.from_paths([["animal", "cat"], ["animal", "dog"], ["vehicle", "car"], ["vehicle", "bus"]])
        >>> metrics = HierarchicalMetrics(tree, topk=(1, 2))
        >>> level_scores = {1: np.array([[2.0, 0.0], [0.0, 1.0]])}  # columns: tree.nodes_at_depth(1)
        >>> metrics.update(np.array([[1.0, 3.0, 0.0, 0.0], [0.0, 0.0, 0.5, 2.0]]), np.array([0, 3]),
        ...                level_scores).tolist()
        [[1, 0], [3, 2]]
        >>> result = metrics.compute()
        >>> result["top1"], result["superclass_acc_from_levels"], result["level_agreement"]
        (0.5, {1: 1.0}, {1: 1.0})
        """
        tree = self.hierarchy
        scores = _checks.scores(logits, "logits" if self.scores == "logits" else "probs", tree.num_leaves)
        targets = _checks.leaves(targets, "targets", tree)
        _checks.same_length(scores, targets, "logits and targets")
        if self.scores == "probs":
            _checks.probabilities(scores, fix=_PROBS_FIX, rows_sum_to_one=True)
        levels = _level_scores_update(level_scores, tree, len(targets))
        self._stream.feed("scores", None if levels is None else tuple(sorted(levels)))
        top = _topk(scores, self._kept)
        self._stream.add(statistics.batch_update(top, targets, tree, self._capped, levels=levels, scores=scores,
                                                 logits=self.scores == "logits", n_bins=self.n_bins))
        if self.decisions is not None:
            probs = softmax(scores) if self.scores == "logits" else scores
            self._stream.add(self.decisions.update(NodeBlock(self.decisions.layout, probs), targets)[0])
        return top

    @checked
    def update_labels(self, predictions: Array, targets: Array,
                      level_predictions: _checks.Levels | None = None) -> None:
        """Add a batch of predicted classes without scores, (B,) and (B,) class indices;
        ``level_predictions`` {level: (B,) canonical node indices of that depth} or None. Only the
        top-1 metrics are then available (:meth:`compute` says which are not, and why).

        Parameters
        ----------
        predictions, targets : (B,) array_like of int
            Predicted and true class indices.
        level_predictions : {level: (B,) array_like of int} or None
            The model's own super-class predictions, canonical node indices of that depth; the
            same levels in every batch.

        Raises
        ------
        ValueError
            If the class indices are invalid or differ in length; ``level_predictions`` names a
            level outside ``1..max_depth-1``, holds nodes of another depth, or other levels than
            earlier batches; or earlier batches came through :meth:`update`.
        """
        tree = self.hierarchy
        pred = _checks.leaves(predictions, "predictions", tree)
        targets = _checks.leaves(targets, "targets", tree)
        _checks.same_length(pred, targets, "predictions and targets")
        levels = None
        if level_predictions is not None:
            levels = {k: _checks.level_nodes(v, k, tree, len(targets)) for k, v in level_predictions.items()}
            _check_superclass_levels(levels, tree)
        self._stream.feed("labels", None if levels is None else tuple(sorted(levels)))
        self._stream.add(statistics.batch_update(pred[:, None], targets, tree, self._capped, levels=levels))
        if self.decisions is not None:
            self._stream.add(self.decisions.update_labels(pred, targets)[0])

    def merge(self, other: HierarchicalMetrics) -> HierarchicalMetrics:
        """Add ``other``'s samples to this instance (same tree and settings); returns self.

        Parameters
        ----------
        other : HierarchicalMetrics
            Made with the same tree, topk, n_bins and scores; it keeps its own samples.

        Returns
        -------
        HierarchicalMetrics
            This instance, now holding the samples of both.

        Raises
        ------
        TypeError
            If ``other`` is not a HierarchicalMetrics.
        ValueError
            If the trees or the settings (topk, n_bins, scores) differ, or one was fed scores and
            the other predicted classes or other levels.
        """
        if not isinstance(other, HierarchicalMetrics):
            raise TypeError(f"merge(): other must be a HierarchicalMetrics, got {_checks.shown(other)}")
        if not _same_tree(self.hierarchy, other.hierarchy) or (self.ks, self.n_bins, self.scores) != \
                (other.ks, other.n_bins, other.scores):
            raise ValueError("can only merge metrics of the same tree with the same topk, n_bins and scores")
        if (self.decisions.names if self.decisions else []) != (other.decisions.names if other.decisions else []):
            raise ValueError("can only merge metrics of the same decoding rules")
        self._stream.merge(other._stream)
        return self

    def pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The leaf confusion counts, one entry per distinct pair.

        Returns
        -------
        targets, predictions, counts : (M,) ndarray of int64
            The M distinct (true class, predicted class) pairs seen, sorted, and how often each was.
        """
        pairs = self._stream.confusion.pairs()
        return pairs.target, pairs.pred, pairs.count.copy()

    def per_node(self) -> tuple[np.ndarray, np.ndarray]:
        """(support, correct), (|P|,) int64 each, as :func:`hseval.metrics.per_node_accuracy` gives them.

        Returns
        -------
        support : (|P|,) ndarray of int64
            Number of samples so far whose true class is node ``p`` or lies under it.
        correct : (|P|,) ndarray of int64
            How many of those have the predicted class's ancestor at depth(p) equal to ``p``.

        Examples
        --------
        >>> import numpy as np
        >>> from hseval.tree.hierarchy import Hierarchy
        >>> from hseval.metrics import HierarchicalMetrics
        >>> tree = Hierarchy.from_paths([["animal", "cat"], ["animal", "dog"], ["vehicle", "car"], ["vehicle", "bus"]])
        >>> metrics = HierarchicalMetrics(tree)
        >>> metrics.update_labels(np.array([1, 0, 0, 3]), np.array([0, 0, 2, 3]))
        >>> support, correct = metrics.per_node()  # nodes cat, dog, car, bus, animal, vehicle
        >>> support.tolist(), correct.tolist()
        ([2, 0, 1, 1, 2, 2], [1, 0, 0, 1, 2, 1])
        """
        return _per_node_compute(self._stream.confusion.pairs(), self.hierarchy)

    def unavailable(self) -> dict[str, str]:
        """Metric key -> why it cannot be computed from what was given (the kind of inputs; why a
        value computed from them is undefined, such as no mistakes, :meth:`compute` adds).

        Returns
        -------
        dict of str to str
            {metric key: reason}; empty when every metric is available.
        """
        return self._stream.unavailable(self.ks, self.hierarchy)

    def compute(self) -> dict[str, Any]:
        """Every available metric over all samples so far (of every process under
        ``torch.distributed``), as plain types: levels keyed 1, 2, ... (as ``head.level_logits``
        and ``level_scores`` key them); NaN where a
        metric is undefined (no sample, no mistake, no sample at a level); ``unavailable`` names
        each metric the inputs do not allow and each undefined value (a level's as "key.level"),
        with the reason.

        Returns
        -------
        dict of str to Any
            "samples"; "top{k}" for each reported k; "superclass_acc" {level: accuracy};
            "superclass_acc_from_levels" and "level_agreement" when level scores were given;
            "mistake_severity", "avg_hdist@{k}" and "best_hdist@{k}"; "hierarchical_precision",
            "hierarchical_recall" and "hierarchical_f1"; with scores, "cross_entropy", "ece" and
            "reliability" (the bins as lists); with level scores, "full_path_accuracy" and
            "consistency"; with ``rules``, "decisions" {rule: {node metric: mean}}; and
            "unavailable" {metric key: reason}.

        Raises
        ------
        ValueError
            Under ``torch.distributed``, if some processes gave scores and others predicted classes.

        Examples
        --------
        Predicted classes without scores give the top-1 metrics only, and say why the rest are missing:

        >>> import numpy as np
        >>> from hseval.tree.hierarchy import Hierarchy
        >>> from hseval.metrics import HierarchicalMetrics
        >>> tree = Hierarchy.from_paths([["animal", "cat"], ["animal", "dog"], ["vehicle", "car"], ["vehicle", "bus"]])
        >>> metrics = HierarchicalMetrics(tree, topk=(1, 2))
        >>> metrics.update_labels(np.array([1, 0, 0, 3]), np.array([0, 0, 2, 3]))
        >>> result = metrics.compute()
        >>> result["top1"], result["mistake_severity"], round(result["hierarchical_f1"], 3)
        (0.5, 1.5, 0.625)
        >>> result["unavailable"]["top2"]
        'the predictions give one class per sample, no scores'

        A head without mistakes has no mistake severity, and says so:

        >>> right = HierarchicalMetrics(tree)
        >>> right.update_labels(np.array([0, 3]), np.array([0, 3]))
        >>> right.compute()["unavailable"]["mistake_severity"]
        'no mistakes: every sample is right, so the mean severity of a mistake is undefined'
        """
        state = self._stream.synced() if self.sync_on_compute else self._stream
        unavailable = state.unavailable(self.ks, self.hierarchy)
        shown = [i for i, k in enumerate(self.ks) if f"top{k}" not in unavailable]
        out = statistics.state_compute(state.sums, state.confusion.pairs(), self.hierarchy, self.ks, shown=shown,
                                       levels=state.levels, scored=state.mode != "labels")
        if self.decisions is not None:
            out["decisions"], why = self.decisions.compute(state.sums, out["samples"],
                                                           labels_only=state.mode == "labels")
            unavailable.update({f"decisions.{key}": reason for key, reason in why.items()})
        return {**out, "unavailable": {**out["unavailable"], **unavailable}}



def _same_tree(a: Hierarchy, b: Hierarchy) -> bool:
    return a is b or (a.num_leaves == b.num_leaves and a.node_names == b.node_names
                      and np.array_equal(a.parents, b.parents))
