"""``barz-denzler``: hierarchy-based class embeddings (Barz & Denzler, Hierarchy-based Image
Embeddings for Semantic Image Retrieval, WACV 2019), as Making Better Mistakes trains them.

Every class c has a fixed unit vector φ(c) with ``⟨φ(u), φ(v)⟩ = 1 − d(u, v)/D``: d the height of
the lowest common ancestor (:func:`hseval.metrics.hierarchical_distance`), D its largest value
between two classes. A learned linear map M sends the features z into that space, and the loss is
``1 − cos(Mz, φ(y))`` plus ``xent_weight`` times a cross-entropy on the embedding's class
coordinates (Making Better Mistakes' ``CosinePlusXentLoss``, weight 0.1). A sample's scores are the
cosines ``cos(Mz, φ(c))``: the nearest class embedding is the prediction.

The embedding is not the authors' dense |L|×|L| factorisation (O(|L|³) time, O(|L|²) memory) but
one with the same Gram matrix, read off the tree: a coordinate per node below the top chain
(single-child nodes from the root, which every class shares), ``1/√D`` on each strict ancestor of
c, and ``√((H − depth(c) + 1)/D)`` on c's own, with H the tree's depth. Its norm is 1 and two
classes share exactly the ancestors below their LCA, so the Gram matrix is ``1 − d/D`` (tests check
it against the authors' embedding code and the iNaturalist-19 embeddings Making Better Mistakes
ships, up to a rotation). It has depth(c) non-zeros, so ``⟨Mz, φ(c)⟩`` is a path sum over the
rows of M (:func:`~hseval.nn.heads.tree.all_node_weights`): one matmul of about |P| columns, at any
tree size. The class vectors in feature space are ``Mᵀφ(c)``: ``⟨z, Mᵀφ(c)⟩ = ⟨Mz, φ(c)⟩``, so they
rank the classes as the cosines do and share the space of the features the Embeddings page shows.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from pydantic import NonNegativeFloat
from torch import nn

from hseval.nn.heads.base import Head, columns_cross_entropy, full_precision, register_head
from hseval.nn.heads.lca import needs_two_classes, top_chain
from hseval.nn.heads.tree import TreeIndex, all_node_weights
from hseval.tree.hierarchy import Hierarchy

BARZ_DENZLER = "Barz & Denzler, Hierarchy-based Image Embeddings for Semantic Image Retrieval, WACV 2019"


def embedding_scale(hierarchy: Hierarchy) -> np.ndarray:
    """(|P|,) float64: the coordinate a node gives the classes below it (1/√D to its descendants,
    √((H − depth + 1)/D) to a class itself, 0 for the top chain's nodes)."""
    top, chain, leaves = hierarchy.max_depth, top_chain(hierarchy), hierarchy.num_leaves
    largest = top - chain
    scale = np.full(hierarchy.num_nodes, 1.0 / math.sqrt(largest))
    scale[:leaves] = np.sqrt((top - hierarchy.depth[:leaves] + 1) / largest)
    scale[leaves: leaves + chain] = 0.0  # sorted by depth: the chain's nodes are the first super-classes
    return scale


def class_embeddings(hierarchy: Hierarchy) -> np.ndarray:
    """(|L|, |P|) float64: the fixed unit vectors φ(c), one coordinate per node (dense: for tests
    and small trees; the head never builds it)."""
    scale = embedding_scale(hierarchy)
    out = np.zeros((hierarchy.num_leaves, hierarchy.num_nodes))
    for c, row in enumerate(hierarchy.ancestor_table[: hierarchy.num_leaves]):
        path = row[row >= 0]
        out[c, path] = scale[path]
    return out


@register_head("barz-denzler", group="peers", citation=BARZ_DENZLER)
class BarzDenzlerHead(Head):
    """Fixed class embeddings whose dot products are 1 − d/max d; a linear map into them, trained by cosine loss."""

    scores = "cosine similarities"

    def __init__(self, hierarchy: Hierarchy, in_features: int, *, xent_weight: NonNegativeFloat = 0.1) -> None:
        super().__init__(hierarchy, in_features)
        self.xent_weight = float(xent_weight)
        self.index = TreeIndex(hierarchy)
        self.chain = top_chain(hierarchy)
        # one row per coordinate of the embedding: the classes, then the super-classes below the top chain
        self.map = nn.Linear(in_features, hierarchy.num_nodes - self.chain, bias=False)
        self.register_buffer("scale", torch.tensor(embedding_scale(hierarchy), dtype=torch.get_default_dtype()),
                             persistent=False)

    @classmethod
    def check_tree(cls, hierarchy: Hierarchy) -> None:
        needs_two_classes("barz-denzler", hierarchy)

    def _by_node(self, rows: torch.Tensor) -> torch.Tensor:
        """(|P|, n) from (coordinates, n): zero rows for the top chain's nodes, which have none."""
        leaves = self.hierarchy.num_leaves
        if not self.chain:
            return rows
        return torch.cat([rows[:leaves], rows.new_zeros(self.chain, rows.shape[1]), rows[leaves:]])

    def _cosines(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The embedding Mz and the cosine of every class, both laid out (rows, B)."""
        embedded = self.map.weight @ full_precision(z).t()  # (coordinates, B): the tree's sums run over rows
        paths = all_node_weights(self._by_node(embedded), self.scale, self.index)[: self.hierarchy.num_leaves]
        return embedded, paths / torch.linalg.vector_norm(embedded, dim=0).clamp_min(1e-8)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        with torch.autocast(z.device.type, enabled=False):
            return self._cosines(z)[1].t()

    def loss(self, z: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.autocast(z.device.type, enabled=False):
            embedded, cosines = self._cosines(z)
            loss = 1 - cosines.gather(0, target[None, :]).mean()
            if self.xent_weight:  # the class coordinates of the embedding as logits (nodes 0..|L|-1 are the classes)
                loss = loss + self.xent_weight * columns_cross_entropy(embedded[: self.hierarchy.num_leaves], target)
            return loss, cosines.t()

    def class_weights(self) -> torch.Tensor:
        """(d, |L|) the class vectors in feature space, Mᵀφ(c)."""
        with torch.no_grad():
            vectors = all_node_weights(self._by_node(self.map.weight), self.scale, self.index)
            return vectors[: self.hierarchy.num_leaves].t()

    def config(self) -> dict:
        return {"xent_weight": self.xent_weight}
