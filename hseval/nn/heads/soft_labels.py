"""``soft-labels``: cross-entropy against a soft target built from the tree (Bertinetto et al.,
Making Better Mistakes, CVPR 2020; their ``make_all_soft_labels``).

The target of class y is ``q_y(c) = softmax_c(−β·d(y, c)/D)`` with d the height of the lowest
common ancestor as :func:`hseval.metrics.hierarchical_distance` counts it (the authors' distance
files) and D the largest distance between two classes. The target depends on the class c only
through the level u at which c meets y's path (:mod:`hseval.nn.heads.lca`), so each class's target
is a row of max_depth + 1 numbers and the loss ``logsumexp(x) − Σ_c q_y(c)·x_c`` is a sum over
those buckets: no |L|×|L| matrix, at any tree size.

The authors train it with ``nn.KLDivLoss()``, whose 'mean' reduction divides by |L| as well as by
the batch (harmless with their Adam, not with SGD): hseval takes the batch mean of the
cross-entropy, which has the gradient of the KL divergence ×|L| (checked against their code).
"""

from __future__ import annotations

import numpy as np
import torch
from pydantic import PositiveFloat

from hseval.nn.heads.base import full_precision, register_head
from hseval.nn.heads.hxe import MBM
from hseval.nn.heads.lca import BucketHead, bucket_sizes, needs_two_classes, top_chain
from hseval.tree.hierarchy import Hierarchy


def soft_targets(hierarchy: Hierarchy, beta: float) -> np.ndarray:
    """(|L|, max_depth + 1) float64: ``Q[y, u]`` is the target probability of each class that meets
    class y's path u levels above y (``Q[y, 0]``: y itself); 0 where no class does."""
    top = hierarchy.max_depth
    u = np.arange(top + 1)
    meet = hierarchy.depth[: hierarchy.num_leaves, None] - u  # depth of the LCA, by bucket
    distance = np.where(u == 0, 0, top - meet)
    score = np.exp(-beta * distance / (top - top_chain(hierarchy)))
    sizes = bucket_sizes(hierarchy)
    return np.where(sizes > 0, score, 0.0) / (sizes * score).sum(axis=1, keepdims=True)


@register_head("soft-labels", group="peers", citation=MBM)
class SoftLabelsHead(BucketHead):
    """Cross-entropy against soft targets softmax(−β·d(y, ·)/max d), d the height of the lowest common ancestor."""

    def __init__(self, hierarchy: Hierarchy, in_features: int, *, beta: PositiveFloat = 10.0) -> None:
        super().__init__(hierarchy, in_features, soft_targets(hierarchy, beta))
        self.beta = float(beta)

    @classmethod
    def check_tree(cls, hierarchy: Hierarchy) -> None:
        needs_two_classes("soft-labels", hierarchy)

    def loss(self, z: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self(z)
        with torch.autocast(z.device.type, enabled=False):
            x = full_precision(logits)
            buckets = self.buckets(target)
            weights = self.table[target]  # (B, max_depth + 1): each class's share of the target, by bucket
            sums = torch.zeros_like(weights).scatter_add(1, buckets, x)
            return (torch.logsumexp(x, dim=1) - (weights * sums).sum(1)).mean(), logits

    def config(self) -> dict:
        return {"beta": self.beta}
