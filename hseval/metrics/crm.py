"""Conditional risk minimisation (CRM; Karthik et al., ICLR 2021, "No cost likelihood manipulation
at test time for making better mistakes"): predict the class of least expected tree distance
under the model's probabilities, ``argmin_k Σ_j p(j|x) d(k, j)``, instead of the argmax.

``d`` is the hierarchical distance of :func:`hseval.metrics.mistakes.hierarchical_distance`
(height − depth of the LCA, 0 on the diagonal), so CRM's mistakes are scored by the same ruler
as the argmax's. The cost is one (N, |L|) × (|L|, |L|) product: the distance matrix is built once
(|L|² float32, 1.6 GB at 20,000 classes) and the product is done in blocks of classes. Above
:data:`MAX_CLASSES` CRM is not computed, and the evaluation says why. :class:`CrmMetrics` streams
CRM's ranking through :class:`~hseval.metrics.HierarchicalMetrics`, as an evaluation does.
"""

from __future__ import annotations

import numpy as np

from hseval.metrics import _checks
from hseval.metrics.streaming import HierarchicalMetrics
from hseval.tree.hierarchy import Hierarchy

__all__ = ["MAX_CLASSES", "class_distances", "crm_scores", "too_many_classes", "crm_summary", "CrmMetrics"]

MAX_CLASSES = 20_000
"""Above this, the distance matrix alone takes more than 1.6 GB and each sample |L|² operations."""
_BLOCK = 2048


def too_many_classes(hierarchy: Hierarchy) -> str | None:
    """Why CRM is not computed for this tree (None when it is)."""
    if hierarchy.num_leaves > MAX_CLASSES:
        return (f"CRM re-ranking needs a {hierarchy.num_leaves:,}² distance matrix and as many operations per "
                f"sample; not computed above {MAX_CLASSES:,} classes")
    return None


def class_distances(hierarchy: Hierarchy) -> np.ndarray:
    """(|L|, |L|) float32: the hierarchical distance between every pair of classes."""
    leaves = np.arange(hierarchy.num_leaves)
    out = np.empty((len(leaves), len(leaves)), dtype=np.float32)
    for lo in range(0, len(leaves), _BLOCK):
        block = leaves[lo: lo + _BLOCK]
        depth = hierarchy.lca_depth(block[:, None], leaves[None, :])
        out[lo: lo + _BLOCK] = np.where(block[:, None] == leaves[None, :], 0, hierarchy.max_depth - depth)
    return out


def crm_scores(probs: np.ndarray, distances: np.ndarray) -> np.ndarray:
    """(N, |L|) float32 scores whose argmax (and ranking) is CRM's: minus the expected distance
    ``-(p @ D)``; ``probs`` (N, |L|) rows of probabilities, ``distances`` from :func:`class_distances`."""
    p = _checks.scores(probs, "probs", distances.shape[0])
    out = np.empty((len(p), distances.shape[1]), dtype=np.float32)
    for lo in range(0, distances.shape[1], _BLOCK):
        out[:, lo: lo + _BLOCK] = -(p.astype(np.float32) @ distances[:, lo: lo + _BLOCK])
    return out


def crm_summary(computed: dict) -> dict:
    """The metrics of :meth:`HierarchicalMetrics.compute` that mean something for CRM's ranking:
    top-k, super-class accuracy from the predicted class, mistake severity, hierarchical
    distance@k and hierarchical precision/recall/F1 (not calibration: CRM's scores are no
    probabilities)."""
    keep = ("top", "superclass_acc", "mistake_severity", "avg_hdist@", "best_hdist@", "hierarchical_")
    return {k: v for k, v in computed.items()
            if k.startswith(keep) and k not in ("superclass_acc_from_levels", "level_agreement")}


class CrmMetrics:
    """The metrics of CRM's ranking, fed batch by batch: :meth:`update` takes a batch's
    probabilities, :meth:`compute` gives :func:`crm_summary`. ``skipped`` says why CRM is not
    computed for the tree (None when it is); then ``update`` does nothing."""

    def __init__(self, hierarchy: Hierarchy, *, topk: tuple[int, ...]) -> None:
        self.skipped = too_many_classes(hierarchy)
        self._distances = None if self.skipped else class_distances(hierarchy)
        self._metrics = HierarchicalMetrics(hierarchy, topk=topk)

    def update(self, probs: np.ndarray, targets: np.ndarray) -> None:
        if self._distances is not None:
            self._metrics.update(crm_scores(probs, self._distances), targets)

    def compute(self) -> dict:
        return crm_summary(self._metrics.compute())
