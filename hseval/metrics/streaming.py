"""Streaming hierarchical metrics for anyone's training or evaluation loop.

:class:`HierarchicalMetrics` keeps sums and counts whose size does not grow with the number of
samples N: the leaf confusion counts (the distinct (true, predicted) class pairs seen, at most
|L|², stored sparsely), the top-k hit counts and hierarchical-distance sums for each k, the
calibration bins (count, correct, confidence sum), the cross-entropy sum and, when the model
gives its own super-class scores, per level the counts of reached, correct and agreeing samples.
Everything the batch functions of :mod:`hseval.metrics` compute from all N samples at once comes
out of that state, equal up to the order of floating-point sums (tests check 1e-12).

``merge`` adds another instance's state (two halves give the whole); under ``torch.distributed``
``compute`` all-reduces the state of every process first (sums by ``all_reduce``, confusion
pairs by ``all_gather``), so each rank gets the metrics of the whole dataset.

Example
-------
>>> import numpy as np
>>> from hseval.tree.hierarchy import Hierarchy
>>> from hseval.metrics import HierarchicalMetrics
>>> tree = Hierarchy.from_paths([["animal", "cat"], ["animal", "dog"], ["car"]])
>>> metrics = HierarchicalMetrics(tree, topk=(1, 2))
>>> best = metrics.update(np.array([[2.0, 1.0, 0.0], [2.0, 1.0, 0.0]]), np.array([0, 1]))
>>> result = metrics.compute()
>>> result["top1"], result["top2"], result["superclass_acc"]
(0.5, 1.0, {'1': 1.0})
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from hseval.metrics import _checks
from hseval.metrics.accuracy import level_predictions_from_logits, topk_predictions
from hseval.metrics.calibration import bin_index
from hseval.metrics.mistakes import hierarchical_distance
from hseval.tree.hierarchy import Hierarchy

__all__ = ["HierarchicalMetrics", "NO_SCORES", "NO_LEVEL_SCORES"]

NO_SCORES = "the predictions give one class per sample, no scores"
"""Why a score-based metric (top-k beyond 1, calibration, cross-entropy) is not available."""
NO_LEVEL_SCORES = "no super-class scores of the model's own were given"
_SCORE_METRICS = ("ece", "reliability", "cross_entropy")
_CONSOLIDATE = 1 << 20  # pending confusion keys merged into the sorted state beyond this many


class HierarchicalMetrics:
    """Accuracy at every level, mistake severity, hierarchical P/R/F1 and calibration, fed batch by batch.

    Parameters
    ----------
    hierarchy : Hierarchy
        The classes are its leaves, in its canonical order (column ``i`` of the scores is leaf ``i``).
    topk : iterable of int, default (1, 5)
        The k of top-k accuracy and hierarchical distance@k; 1 is always included. A k above the
        number of classes means "all classes" (its key keeps the requested k).
    n_bins : int, default 15
        Equal-width bins of the expected calibration error.
    scores : {"logits", "probs"}, default "logits"
        What :meth:`update` receives: logits (softmax is taken for calibration and cross-entropy)
        or probabilities (rows in [0, 1] that sum to 1; the cross-entropy clips p at 1e-12).

    Raises
    ------
    ValueError
        If some k of ``topk`` is below 1, ``n_bins < 1``, or ``scores`` is neither "logits" nor "probs".

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
    (4, 0.5, 1.0, {'1': 0.75}, 1.5)
    >>> superclass_accuracy_from_leaf(logits.argmax(1), target, tree)
    {1: 0.75}
    """

    def __init__(self, hierarchy: Hierarchy, *, topk: Iterable[int] = (1, 5), n_bins: int = 15,
                 scores: str = "logits") -> None:
        ks = sorted({1, *(int(k) for k in topk)})
        if ks[0] < 1:
            raise ValueError(f"every k of topk must be at least 1, got {ks[0]}")
        if n_bins < 1:
            raise ValueError(f"n_bins must be at least 1, got {n_bins}")
        if scores not in ("logits", "probs"):
            raise ValueError(f"scores must be 'logits' or 'probs', got {scores!r}")
        self.hierarchy = hierarchy
        self.ks = tuple(ks)
        self.n_bins = n_bins
        self.scores = scores
        self._kept = min(max(ks), hierarchy.num_leaves)
        self.reset()

    # ----------------------------------------------------------------- state
    def reset(self) -> None:
        """Forget every sample."""
        self._keys = np.zeros(0, np.int64)      # sorted distinct target * |L| + prediction
        self._counts = np.zeros(0, np.int64)
        self._pending: list[np.ndarray] = []
        self._pending_size = 0
        self._n = 0
        self._hits = np.zeros(len(self.ks), np.int64)
        self._distance = np.zeros(len(self.ks), np.int64)  # Σ_samples Σ_{j<k} d(top_j, target)
        self._best = np.zeros(len(self.ks), np.int64)      # Σ_samples min_{j<k} d(top_j, target)
        self._bin_count = np.zeros(self.n_bins, np.int64)
        self._bin_correct = np.zeros(self.n_bins, np.int64)
        self._bin_confidence = np.zeros(self.n_bins, np.float64)
        self._nll = np.zeros(1, np.float64)
        self._levels: tuple[int, ...] | None = None         # the levels given level scores
        self._level_counts = np.zeros((max(self.hierarchy.max_depth - 1, 0), 3), np.int64)  # reached, correct, agree
        self._mode: str | None = None                       # "scores" or "labels", fixed by the first batch

    def __len__(self) -> int:
        return self._n

    def _set_mode(self, mode: str, levels: tuple[int, ...] | None) -> None:
        if self._mode is not None and self._mode != mode:
            raise ValueError(f"this batch gives {'scores' if mode == 'scores' else 'predicted classes'} but earlier "
                             f"batches gave {'scores' if self._mode == 'scores' else 'predicted classes'}; "
                             "use update() or update_labels() for every batch")
        if self._mode is not None and self._levels != levels:
            raise ValueError(f"this batch has level scores for levels {list(levels) if levels else None} but earlier "
                             f"batches had {list(self._levels) if self._levels else None}; give the same levels in "
                             "every batch (or None in all)")
        self._mode, self._levels = mode, levels

    # ----------------------------------------------------------------- feeding
    def update(self, logits: Any, targets: Any, level_scores: Mapping[int, Any] | None = None) -> np.ndarray:
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
        (0.5, {'1': 1.0}, {'1': 1.0})
        """
        tree = self.hierarchy
        scores = _checks.scores(logits, "logits" if self.scores == "logits" else "probs", tree.num_leaves)
        targets = _checks.leaves(targets, "targets", tree)
        _checks.same_length(scores, targets, "logits and targets")
        if self.scores == "probs" and scores.size:
            _check_probabilities(scores)
        levels = self._level_predictions(level_scores, len(targets))
        self._set_mode("scores", None if levels is None else tuple(sorted(levels)))
        top = topk_predictions(scores, self._kept)
        self._add(top, targets, levels)
        if self.scores == "logits":
            shifted = scores - scores.max(axis=1, keepdims=True)
            log_norm = np.log(np.exp(shifted).sum(axis=1))
            confidence = np.exp(-log_norm)  # the largest softmax probability
            nll = log_norm - shifted[np.arange(len(targets)), targets]
        else:
            confidence = scores.max(axis=1)
            nll = -np.log(np.maximum(scores[np.arange(len(targets)), targets], 1e-12))
        which = bin_index(confidence, n_bins=self.n_bins)
        self._bin_count += np.bincount(which, minlength=self.n_bins)
        self._bin_correct += np.bincount(which[top[:, 0] == targets], minlength=self.n_bins)
        self._bin_confidence += np.bincount(which, weights=confidence, minlength=self.n_bins)
        self._nll += nll.sum()
        return top

    def update_labels(self, predictions: Any, targets: Any, level_predictions: Mapping[int, Any] | None = None) -> None:
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
            levels = {int(k): _checks.level_nodes(v, int(k), tree, len(targets)) for k, v in level_predictions.items()}
            self._check_levels(levels)
        self._set_mode("labels", None if levels is None else tuple(sorted(levels)))
        self._add(pred[:, None], targets, levels)

    def _level_predictions(self, level_scores, n: int) -> dict[int, np.ndarray] | None:
        if level_scores is None:
            return None
        converted = {int(k): _checks.to_numpy(v, floating=True) for k, v in level_scores.items()}
        self._check_levels(converted)
        levels = level_predictions_from_logits(converted, self.hierarchy)
        for k, nodes in levels.items():
            if len(nodes) != n:
                raise ValueError(f"level_scores[{k}] and targets hold {len(nodes)} and {n} samples; give one row "
                                 "per sample")
        return levels

    def _check_levels(self, levels: Mapping[int, np.ndarray]) -> None:
        top = self.hierarchy.max_depth - 1
        outside = [k for k in levels if not 1 <= k <= top]
        if outside:
            raise ValueError(f"level {outside[0]} is not a super-class level of the tree (1..{top}); the classes "
                             "themselves are scored by the logits")

    def _add(self, top: np.ndarray, targets: np.ndarray, levels: Mapping[int, np.ndarray] | None) -> None:
        tree = self.hierarchy
        pred = top[:, 0]
        self._push(targets * tree.num_leaves + pred)
        distance = hierarchical_distance(top, targets[:, None], tree)
        hits = top == targets[:, None]
        for i, k in enumerate(self.ks[:1] if self._mode == "labels" else self.ks):
            k = min(k, tree.num_leaves)
            self._hits[i] += int(hits[:, :k].any(axis=1).sum())
            self._distance[i] += int(distance[:, :k].sum())
            self._best[i] += int(distance[:, :k].min(axis=1, initial=tree.max_depth).sum())
        for k, nodes in (levels or {}).items():
            truth = tree.ancestor_at_depth(targets, k)
            reached = truth >= 0
            self._level_counts[k - 1] += [int(reached.sum()), int((reached & (nodes == truth)).sum()),
                                          int((reached & (nodes == tree.ancestor_at_depth(pred, k))).sum())]
        self._n += len(targets)

    def _push(self, keys: np.ndarray) -> None:
        self._pending.append(keys)
        self._pending_size += len(keys)
        if self._pending_size > _CONSOLIDATE:
            self._consolidate()

    def _consolidate(self, keys: np.ndarray | None = None, counts: np.ndarray | None = None) -> None:
        """Fold the pending confusion keys (and ``keys`` with ``counts``) into the sorted state."""
        parts_k = [self._keys, *self._pending] + ([keys] if keys is not None else [])
        parts_c = [self._counts, *(np.ones(len(p), np.int64) for p in self._pending)] + \
            ([counts] if counts is not None else [])
        self._pending, self._pending_size = [], 0
        all_keys = np.concatenate(parts_k)
        if not len(all_keys):
            return
        unique, inverse = np.unique(all_keys, return_inverse=True)
        self._keys = unique
        self._counts = np.bincount(inverse.ravel(), weights=np.concatenate(parts_c), minlength=len(unique)) \
            .round().astype(np.int64)

    # ----------------------------------------------------------------- combining
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
            raise TypeError(f"can only merge another HierarchicalMetrics, got {type(other).__name__}")
        if not _same_tree(self.hierarchy, other.hierarchy) or (self.ks, self.n_bins, self.scores) != \
                (other.ks, other.n_bins, other.scores):
            raise ValueError("can only merge metrics of the same tree with the same topk, n_bins and scores")
        if other._mode is not None:
            self._set_mode(other._mode, other._levels)
        other._consolidate()
        self._consolidate(other._keys, other._counts)
        self._add_sums(other._sums())
        return self

    def _sums(self) -> tuple[np.ndarray, np.ndarray]:
        """Every summed state but the confusion pairs: (int64 vector, float64 vector)."""
        ints = np.concatenate([[self._n], self._hits, self._distance, self._best, self._bin_count, self._bin_correct,
                               self._level_counts.ravel()]).astype(np.int64)
        return ints, np.concatenate([self._nll, self._bin_confidence])

    def _add_sums(self, sums: tuple[np.ndarray, np.ndarray]) -> None:
        ints, floats = sums
        sizes = [1, len(self.ks), len(self.ks), len(self.ks), self.n_bins, self.n_bins, self._level_counts.size]
        parts = np.split(ints, np.cumsum(sizes)[:-1])
        self._n += int(parts[0][0])
        self._hits += parts[1]
        self._distance += parts[2]
        self._best += parts[3]
        self._bin_count += parts[4]
        self._bin_correct += parts[5]
        self._level_counts += parts[6].reshape(self._level_counts.shape)
        self._nll += floats[:1]
        self._bin_confidence += floats[1:]

    def _synced(self) -> HierarchicalMetrics:
        """This instance, or under an initialised ``torch.distributed`` group of several processes
        a new one holding every process's state (each process must call ``compute``)."""
        try:
            import torch
            import torch.distributed as dist
        except ImportError:  # pragma: no cover - torch is a dependency
            return self
        if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
            return self
        device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" \
            else torch.device("cpu")
        self._consolidate()
        ints, floats = self._sums()
        present = np.zeros(self._level_counts.shape[0], np.int64)
        if self._levels:
            present[np.asarray(self._levels) - 1] = 1
        mode = {"scores": 1, "labels": 2}.get(self._mode or "", 0)
        head = np.concatenate([ints, present, [1 if mode == 1 else 0, 1 if mode == 2 else 0]])
        total_i = torch.as_tensor(head, device=device)
        total_f = torch.as_tensor(floats, device=device)
        dist.all_reduce(total_i)
        dist.all_reduce(total_f)
        world = dist.get_world_size()
        length = torch.tensor([len(self._keys)], device=device)
        lengths = [torch.zeros_like(length) for _ in range(world)]
        dist.all_gather(lengths, length)
        longest = max(int(n.item()) for n in lengths)
        pairs = torch.zeros((2, longest), dtype=torch.int64, device=device)
        pairs[0, : len(self._keys)] = torch.as_tensor(self._keys, device=device)
        pairs[1, : len(self._keys)] = torch.as_tensor(self._counts, device=device)
        gathered = [torch.zeros_like(pairs) for _ in range(world)]
        dist.all_gather(gathered, pairs)
        out = HierarchicalMetrics(self.hierarchy, topk=self.ks, n_bins=self.n_bins, scores=self.scores)
        head = total_i.cpu().numpy()
        ints, present, modes = head[: len(ints)], head[len(ints): len(ints) + len(present)], head[-2:]
        if modes[0] and modes[1]:
            raise ValueError("some processes gave scores and others predicted classes; give the same in every one")
        out._mode = "scores" if modes[0] else "labels" if modes[1] else None
        levels = tuple(int(k) + 1 for k in np.flatnonzero(present))
        out._levels = levels or None
        out._add_sums((ints, total_f.cpu().numpy()))
        keys = [g[0, : int(n.item())].cpu().numpy() for g, n in zip(gathered, lengths)]
        counts = [g[1, : int(n.item())].cpu().numpy() for g, n in zip(gathered, lengths)]
        out._consolidate(np.concatenate(keys), np.concatenate(counts))
        return out

    # ----------------------------------------------------------------- results
    def pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The leaf confusion counts: (targets, predictions, counts), one entry per distinct pair.

        Returns
        -------
        targets, predictions, counts : (M,) ndarray of int64
            The M distinct (true class, predicted class) pairs seen, sorted, and how often each was.
        """
        self._consolidate()
        L = self.hierarchy.num_leaves
        return self._keys // L, self._keys % L, self._counts.copy()

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
        tree = self.hierarchy
        target, pred, count = self.pairs()
        truth = tree.ancestor_table[target]
        hit = (truth == tree.ancestor_table[pred]) & (truth >= 0)
        weights = np.broadcast_to(count[:, None], truth.shape)
        support = np.bincount(truth[truth >= 0], weights=weights[truth >= 0], minlength=tree.num_nodes)
        correct = np.bincount(truth[hit], weights=weights[hit], minlength=tree.num_nodes)
        return support.round().astype(np.int64), correct.round().astype(np.int64)

    def reported_ks(self) -> tuple[int, ...]:
        """The k of :attr:`ks` that are reported: 1, and every k below the number of classes (with
        k ≥ |L| every class is in the top k: top-k is 1 and the distances say nothing).

        Returns
        -------
        tuple of int
            The reported k, increasing.
        """
        return tuple(k for k in self.ks if k == 1 or k < self.hierarchy.num_leaves)

    def unavailable(self) -> dict[str, str]:
        """Metric key -> why it cannot be computed from what was given.

        Returns
        -------
        dict of str to str
            {metric key: reason}; empty when every metric is available.
        """
        out: dict[str, str] = {}
        if self._mode == "labels":
            for k in self.reported_ks()[1:]:
                out.update({f"top{k}": NO_SCORES, f"avg_hdist@{k}": NO_SCORES, f"best_hdist@{k}": NO_SCORES})
            out.update({key: NO_SCORES for key in _SCORE_METRICS})
        if self._levels is None and self.hierarchy.max_depth > 1:
            out["superclass_acc_from_levels"] = NO_LEVEL_SCORES
            out["level_agreement"] = NO_LEVEL_SCORES
        return out

    def compute(self) -> dict[str, Any]:
        """Every available metric over all samples so far (of every process under
        ``torch.distributed``), as plain JSON types: levels keyed "1", "2", ...; NaN where a
        metric is undefined (no sample, no mistake); ``unavailable`` names each metric the inputs
        do not allow, with the reason.

        Returns
        -------
        dict of str to Any
            "samples"; "top{k}" for each reported k; "superclass_acc" {level: accuracy};
            "superclass_acc_from_levels" and "level_agreement" when level scores were given;
            "mistake_severity", "avg_hdist@{k}" and "best_hdist@{k}"; "hierarchical_precision",
            "hierarchical_recall" and "hierarchical_f1"; with scores, "cross_entropy", "ece" and
            "reliability" (the bins as lists); and "unavailable" {metric key: reason}.

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
        """
        state = self._synced()
        state._consolidate()
        tree, n = state.hierarchy, state._n
        target, pred, count = state.pairs()
        out: dict[str, Any] = {"samples": n}
        unavailable = state.unavailable()
        shown = state.reported_ks()
        for i, k in enumerate(state.ks):
            if k in shown and f"top{k}" not in unavailable:
                out[f"top{k}"] = _ratio(state._hits[i], n)
        out["superclass_acc"] = {}
        for k in range(1, tree.max_depth):
            truth = tree.ancestor_at_depth(target, k)
            reached = truth >= 0
            hit = reached & (truth == tree.ancestor_at_depth(pred, k))
            out["superclass_acc"][str(k)] = _ratio(count[hit].sum(), count[reached].sum())
        if state._levels is not None:
            reached, correct, agree = state._level_counts.T
            out["superclass_acc_from_levels"] = {str(k): _ratio(correct[k - 1], reached[k - 1]) for k in state._levels}
            out["level_agreement"] = {str(k): _ratio(agree[k - 1], reached[k - 1]) for k in state._levels}
        wrong = target != pred
        severity = hierarchical_distance(pred[wrong], target[wrong], tree) if wrong.any() else np.zeros(0, np.int64)
        out["mistake_severity"] = _ratio((severity * count[wrong]).sum(), count[wrong].sum())
        for i, k in enumerate(state.ks):
            if k not in shown or f"avg_hdist@{k}" in unavailable:
                continue
            width = min(k, tree.num_leaves)
            out[f"avg_hdist@{k}"] = _ratio(state._distance[i], n * width)
            out[f"best_hdist@{k}"] = _ratio(state._best[i], n)
        out.update(_prf(tree, target, pred, count))
        if state._mode != "labels":
            out["cross_entropy"] = _ratio(state._nll[0], n)
            bins = state._bin_count
            with np.errstate(invalid="ignore", divide="ignore"):
                accuracy = state._bin_correct / bins
                confidence = state._bin_confidence / bins
            full = bins > 0
            gap = (bins[full] * np.abs(accuracy[full] - confidence[full])).sum()
            out["ece"] = float(gap / n) if n else float("nan")
            edges = np.linspace(0.0, 1.0, state.n_bins + 1)
            out["reliability"] = {"lower": edges[:-1].tolist(), "upper": edges[1:].tolist(), "count": bins.tolist(),
                                  "accuracy": accuracy.tolist(), "confidence": confidence.tolist()}
        out["unavailable"] = unavailable
        return out


def _prf(tree: Hierarchy, target: np.ndarray, pred: np.ndarray, count: np.ndarray) -> dict[str, float]:
    """Micro hierarchical precision, recall and F1 (as :func:`hseval.metrics.hierarchical_prf`)."""
    if not count.sum():
        return {f"hierarchical_{k}": float("nan") for k in ("precision", "recall", "f1")}
    overlap = int((tree.lca_depth(pred, target) * count).sum())
    precision = overlap / int((tree.depth[pred] * count).sum())
    recall = overlap / int((tree.depth[target] * count).sum())
    f1 = 2 * precision * recall / (precision + recall) if overlap else 0.0
    return {"hierarchical_precision": float(precision), "hierarchical_recall": float(recall),
            "hierarchical_f1": float(f1)}


def _ratio(numerator: Any, denominator: Any) -> float:
    return float(numerator) / float(denominator) if denominator else float("nan")


def _check_probabilities(probs: np.ndarray) -> None:
    if probs.min() < 0 or probs.max() > 1 + 1e-6:
        raise ValueError(f"probs must lie in [0, 1], got values in [{probs.min():.3g}, {probs.max():.3g}]; pass "
                         "softmax outputs, or make the metrics with scores='logits' for logits")
    sums = probs.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1) > 1e-3)
    if len(bad):
        raise ValueError(f"probs row {int(bad[0])} sums to {sums[bad[0]]:.4g}, not 1; pass softmax outputs, or make "
                         "the metrics with scores='logits' for logits")


def _same_tree(a: Hierarchy, b: Hierarchy) -> bool:
    return a is b or (a.num_leaves == b.num_leaves and a.node_names == b.node_names
                      and np.array_equal(a.parents, b.parents))
