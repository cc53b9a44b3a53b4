"""``hxe``: hierarchical cross-entropy (Bertinetto et al., Making Better Mistakes, CVPR 2020).

The class probabilities are the flat softmax of a linear layer; the probability of a node is the
sum over its classes. For a target y with path root = c_0, c_1, ..., c_h = y the loss is

    −Σ_{l=1..h} λ(c_l) · log( p(c_l) / p(c_{l−1}) ),     λ(c) = exp(−α·depth(c)),

so that α = 0 is the cross-entropy. The authors' ``get_exponential_weighting`` also divides every
λ by Z, the sum of exp(−α·depth) over every node of the tree and the root: a constant, harmless
with the Adam they trained with, but 1/Z of the learning rate with SGD (Z = 11.6 on the demo's
16-node tree, about |P| on a large one), which is what hseval trains every head with. hseval
leaves Z out, so that one recipe's learning rate means the same for every head; its loss and
gradient are Z times theirs (``tests/test_peer_heads.py`` checks both against their code).

Rearranged, the loss is ``λ(c_1)·log Σ_j e^{x_j}`` minus a weighted sum of the log-sum-exps over
the target's ancestors, which :mod:`hseval.nn.heads.lca` computes per batch in O(B·|L|·depth).
Unlike the authors' code it is defined for a tree whose classes are at different depths (a
shallow class's path has fewer edges) and never builds [|L|, |L|, depth] tensors.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
import torch
from pydantic import Field

from hseval.nn.heads.base import full_precision, register_head
from hseval.nn.heads.lca import BucketHead, bucket_logsumexp
from hseval.tree.hierarchy import Hierarchy

MBM = "Bertinetto et al., Making Better Mistakes: Leveraging Class Hierarchies with Deep Networks, CVPR 2020"
ALPHA_MAX = 80.0
"""Past this the weight exp(−α) of the top edges is below float32's smallest normal number: the loss is 0."""


def path_coefficients(hierarchy: Hierarchy, alpha: float) -> np.ndarray:
    """(|L|, max_depth + 1) float64: the HXE loss of class y is ``Σ_t C[y, t] · R[t]`` with ``R[t]``
    the log-sum-exp of the logits of the classes under y's ancestor t levels up
    (:func:`~hseval.nn.heads.lca.bucket_logsumexp`; ``R[max_depth]`` is every class's)."""
    depth, top = hierarchy.depth, hierarchy.max_depth
    weight = np.exp(-alpha * np.arange(top + 2, dtype=np.float64))
    out = np.zeros((hierarchy.num_leaves, top + 1))
    h = depth[: hierarchy.num_leaves]
    for t in range(top):  # the ancestor at depth k = h − t, for the classes deep enough to have one
        k = h - t
        has = k >= 1
        # −λ(c_k)·log p(c_k) from its own edge, +λ(c_{k+1})·log p(c_k) from the edge below (none at y)
        out[has, t] = -(weight[k[has]] - np.where(t > 0, weight[k[has] + 1], 0.0))
    out[:, top] += weight[1]  # log p(c_0) = 0: every term's normaliser, λ(c_1) in all
    return out


@register_head("hxe", group="peers", citation=MBM)
class HXEHead(BucketHead):
    """Hierarchical cross-entropy: log-probabilities of the target's ancestors, weighted exp(−α·depth)."""

    def __init__(self, hierarchy: Hierarchy, in_features: int, *,
                 alpha: Annotated[float, Field(ge=0, le=ALPHA_MAX)] = 0.1) -> None:
        super().__init__(hierarchy, in_features, path_coefficients(hierarchy, alpha))
        self.alpha = float(alpha)

    def loss(self, z: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self(z)
        with torch.autocast(z.device.type, enabled=False):
            sums = bucket_logsumexp(full_precision(logits), self.buckets(target), self.table.shape[1])
            return (self.table[target] * sums).sum(1).mean(), logits

    def config(self) -> dict:
        return {"alpha": self.alpha}
