"""The state of a streaming metric (:class:`~hseval.metrics.HierarchicalMetrics`): the sums of the
sufficient statistics (:func:`hseval.metrics.statistics.state_zeros`, a decoding rule's too), the
sparse confusion counts, and what fed it, scores or predicted classes and the levels given the
model's own level scores, which every batch must repeat. None of it grows with the number of
samples.

A state adds a batch's statistics or another state, and sums itself over the processes of
``torch.distributed`` (:mod:`hseval.metrics._distributed`); which metrics it cannot give, and why,
follows from what fed it (:meth:`StreamState.unavailable`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hseval.metrics import _distributed, statistics
from hseval.metrics.confusion import SparseConfusion
from hseval.tree.hierarchy import Hierarchy

__all__ = ["StreamState", "NO_SCORES", "NO_LEVEL_SCORES"]

NO_SCORES = "the predictions give one class per sample, no scores"
"""Why a score-based metric (top-k beyond 1, calibration, cross-entropy) is not available."""
NO_LEVEL_SCORES = "no super-class scores of the model's own were given"


class StreamState:
    """The sums ``sums`` ({name: array}, as :func:`~hseval.metrics.statistics.state_zeros` makes
    them), the confusion counts of ``num_classes`` classes, and what fed them: ``mode`` ("scores"
    or "labels", None before the first batch) and ``levels`` (the levels given level scores, or
    None)."""

    def __init__(self, sums: dict[str, np.ndarray], num_classes: int) -> None:
        self.sums = sums
        self.confusion = SparseConfusion(num_classes)
        self.mode: str | None = None                 # fixed by the first batch
        self.levels: tuple[int, ...] | None = None

    def __len__(self) -> int:
        return int(self.sums["samples"][0])

    def feed(self, mode: str, levels: tuple[int, ...] | None) -> None:
        """Record what a batch gives (``mode``, ``levels``); a ValueError where it is not what the
        earlier batches gave."""
        if self.mode is not None and self.mode != mode:
            kinds = {"scores": "scores", "labels": "predicted classes"}
            raise ValueError(f"this batch gives {kinds[mode]} but earlier batches gave {kinds[self.mode]}; use "
                             "update() or update_labels() for every batch")
        if self.mode is not None and self.levels != levels:
            raise ValueError(f"this batch has level scores for levels {list(levels or []) or None} but earlier "
                             f"batches had {list(self.levels or []) or None}; give the same levels in every batch")
        self.mode, self.levels = mode, levels

    def add(self, batch: dict[str, Any]) -> None:
        """Add a batch's statistics (or another state's sums): its sums, and its confusion counts ("pairs")."""
        for name, value in batch.items():
            if name == "pairs":
                self.confusion.add(value)
            else:
                self.sums[name] += value

    def merge(self, other: StreamState) -> None:
        """Add ``other``'s samples (a state of the same sums), which keeps its own."""
        if other.mode is not None:
            self.feed(other.mode, other.levels)
        other.confusion.consolidate()
        self.confusion.add_keys(other.confusion.keys, other.confusion.counts)
        self.add(other.sums)

    def synced(self) -> StreamState:
        """This state, or under an initialised ``torch.distributed`` group of several processes a
        new one holding every process's samples (each process must call it)."""
        self.confusion.consolidate()
        reduced = _distributed.all_processes(self.sums, self.confusion.keys, self.confusion.counts,
                                             mode=self.mode, levels=self.levels)
        if reduced is None:
            return self
        sums, pairs, mode, levels = reduced
        out = StreamState(sums, self.confusion.num_classes)
        out.mode, out.levels = mode, levels
        for keys, counts in pairs:
            out.confusion.add_keys(keys, counts)
        return out

    def unavailable(self, ks: Sequence[int], hierarchy: Hierarchy) -> dict[str, str]:
        """Metric key -> why what fed the state does not give it (no scores, no level scores of a
        tree with super-classes); ``ks`` the k of top-k, of which the first is 1."""
        out: dict[str, str] = {}
        for key, (metric, _) in statistics.declared().items():
            if self.mode == "labels" and "{k}" in key:  # one class per sample: no top-k beyond the first
                out.update({key.format(k=k): NO_SCORES for k in ks[1:]})
            elif self.mode == "labels" and metric.needs == "scores":
                out[key] = NO_SCORES
            elif metric.needs == "levels" and self.levels is None and hierarchy.max_depth > 1:
                out[key] = NO_LEVEL_SCORES
        return out
