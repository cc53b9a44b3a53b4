"""``barz-denzler``: hierarchy-based class embeddings (Barz & Denzler, Hierarchy-based Image
Embeddings for Semantic Image Retrieval, WACV 2019; following cvjena/semantic-embeddings, MIT
licence: ``ClassHierarchy.lcs_height``, ``compute_class_embedding.py --method unitsphere``).

Every class c has a fixed unit vector φ(c) with ``⟨φ(u), φ(v)⟩ = 1 − h(lcs(u, v))/h(root)``: h a
node's height (its longest way down to a class, 0 for a class) and lcs the lowest common
ancestor, as their ``lcs_height`` divides it. Below a single-child chain at the top every pair of
classes shares the chain: their similarity is at least its length over h(root), never 0. A learned
linear map M sends the features z into that space, and the loss is ``1 − cos(Mz, φ(y))``. A
sample's scores are the cosines ``cos(Mz, φ(c))``: the nearest class embedding is the prediction.

``xent_weight`` adds that weight times a cross-entropy whose logits are the coordinates of Mz on
the classes' own nodes (nodes 0..|L|−1 of the embedding below). It stands where Making Better
Mistakes' ``CosinePlusXentLoss`` (their ``cosine-plus-xent``, weight 0.1) puts its cross-entropy,
but theirs reads the coordinates of the authors' embedding, another basis of the same space (one
built class by class in class order, which takes O(|L|³)), so the two terms differ in value and
gradient for the same sample. Barz & Denzler's own default has no such term (``--cls_weight 0``;
their optional one is a separate softmax layer on the embedding): ``xent_weight=0`` is theirs.

The embedding is not the authors' dense |L|×|L| one (O(|L|³) time, O(|L|²) memory) but one with
the same Gram matrix, read off the tree: a coordinate per non-root node p, on which every class
below p has ``√((h(parent(p)) − h(p))/h(root))``. The squares along a class's path add up to
``(h(root) − h(c))/h(root) = 1`` (the norm) and two classes share exactly their common ancestors,
whose squares add up to ``1 − h(lcs)/h(root)``: the Gram matrix is theirs (tests check it against
numbers from their code, on trees with classes at several depths and a chain at the top, and
against the iNaturalist-19 embeddings Making Better Mistakes ships). It has depth(c) non-zeros, so
``⟨Mz, φ(c)⟩`` is a path sum over the rows of M (:func:`~hseval.nn.heads.tree.all_node_weights`):
one matmul of |P| columns, at any tree size. The class vectors in feature space are ``Mᵀφ(c)``:
``⟨z, Mᵀφ(c)⟩ = ⟨Mz, φ(c)⟩``, so they rank the classes as the cosines do and share the space of the
features the Embeddings page shows.
"""

from __future__ import annotations

import numpy as np
import torch
from pydantic import NonNegativeFloat
from torch import nn

from hseval.nn.heads.base import Head, columns_cross_entropy, full_precision, register_head
from hseval.nn.heads.lca import needs_two_classes
from hseval.nn.heads.tree import TreeIndex, all_node_weights
from hseval.tree.hierarchy import Hierarchy

BARZ_DENZLER = "Barz & Denzler, Hierarchy-based Image Embeddings for Semantic Image Retrieval, WACV 2019"


def node_heights(hierarchy: Hierarchy) -> np.ndarray:
    """(|P|,) int64: the height of every node, its longest way down to a class (0 for a class); the
    root's is ``max_depth``."""
    height = np.zeros(hierarchy.num_nodes, dtype=np.int64)
    parents = hierarchy.parents
    for depth in range(hierarchy.max_depth, 1, -1):  # bottom-up: a node's height is final before its parent's
        nodes = hierarchy.nodes_at_depth(depth)
        np.maximum.at(height, parents[nodes], height[nodes] + 1)
    return height


def embedding_scale(hierarchy: Hierarchy) -> np.ndarray:
    """(|P|,) float64: the coordinate node p gives every class below it, ``√((h(parent) − h(p))/h(root))``."""
    height, top = node_heights(hierarchy), hierarchy.max_depth
    parents = hierarchy.parents
    above = np.where(parents >= 0, height[np.maximum(parents, 0)], top)
    return np.sqrt((above - height) / top)


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
    """Cosine loss to fixed embeddings of dot products 1 − height(LCA)/height(root), + xent on hseval's coordinates."""

    scores = "cosine similarities"

    def __init__(self, hierarchy: Hierarchy, in_features: int, *, xent_weight: NonNegativeFloat = 0.1) -> None:
        super().__init__(hierarchy, in_features)
        self.xent_weight = float(xent_weight)
        self.index = TreeIndex(hierarchy)
        self.map = nn.Linear(in_features, hierarchy.num_nodes, bias=False)  # a row per node: the coordinates
        self.register_buffer("scale", torch.tensor(embedding_scale(hierarchy), dtype=torch.get_default_dtype()),
                             persistent=False)

    @classmethod
    def check_tree(cls, hierarchy: Hierarchy) -> None:
        needs_two_classes("barz-denzler", hierarchy)

    def _cosines(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The embedding Mz and the cosine of every class, both laid out (rows, B)."""
        embedded = self.map.weight @ full_precision(z).t()  # (|P|, B): the tree's sums run over rows
        paths = all_node_weights(embedded, self.scale, self.index)[: self.hierarchy.num_leaves]
        return embedded, paths / torch.linalg.vector_norm(embedded, dim=0).clamp_min(1e-8)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        with torch.autocast(z.device.type, enabled=False):
            return self._cosines(z)[1].t()

    def loss(self, z: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.autocast(z.device.type, enabled=False):
            embedded, cosines = self._cosines(z)
            loss = 1 - cosines.gather(0, target[None, :]).mean()
            if self.xent_weight:  # hseval's basis: the coordinates of the classes' own nodes (0..|L|-1)
                loss = loss + self.xent_weight * columns_cross_entropy(embedded[: self.hierarchy.num_leaves], target)
            return loss, cosines.t()

    def class_weights(self) -> torch.Tensor:
        """(d, |L|) the class vectors in feature space, Mᵀφ(c)."""
        with torch.no_grad():
            vectors = all_node_weights(self.map.weight, self.scale, self.index)
            return vectors[: self.hierarchy.num_leaves].t()

    def config(self) -> dict:
        return {"xent_weight": self.xent_weight}
