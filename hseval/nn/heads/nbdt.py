"""``nbdt``: Neural-Backed Decision Trees with soft inference and the soft tree-supervision loss
(Wan et al., ICLR 2021; following alvinwan/neural-backed-decision-trees, MIT licence: ``nbdt/model.py``
``SoftEmbeddedDecisionRules``, ``nbdt/loss.py`` ``SoftTreeSupLoss``).

A linear layer gives class logits. Each inner node decides between its children with a softmax
over the children's logits, a child's logit being the mean of the class logits below it (the
embedded decision rule: the logit of the mean of the class vectors below the child); a class's
probability is the product of the decisions along its path. The model's scores are the log of
those path probabilities, so the super-class scores of every depth come with them. The inner-node
vector NBDT defines, the mean of the class vectors below the node, is what the geometry measures
for every head without node vectors of its own ("centroid" vectors).

The loss is NBDT's: ``CE(logits, y) + tree_weight · CE(p, y)`` with p the soft-inference path
probabilities, which their code hands to ``nn.CrossEntropyLoss`` as they are (as logits: a softmax
over probabilities, not −log p(y) as the paper writes); hseval does the same, so that its runs
reproduce theirs. ``tree_weight`` stays constant over training, and so does the cross-entropy's
weight (1): NBDT's paper and their later code schedule the weights instead (``TreeSupLoss.get_weight``
moves each from its start value to ``tree_supervision_weight_end`` as the epochs pass, shaped by
``tree_supervision_weight_power``), which hseval does not. Every node's decision is computed at
once in a (nodes, batch) layout with ``embedding_bag`` and index sums: O(B·|P|) per step, at any
tree size.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from pydantic import NonNegativeFloat

from hseval.nn.heads.base import columns_cross_entropy, full_precision, register_head
from hseval.nn.heads.plain import PlainHead
from hseval.nn.heads.tree import TreeIndex
from hseval.tree.hierarchy import Hierarchy

NBDT = "Wan et al., NBDT: Neural-Backed Decision Trees, ICLR 2021"


@register_head("nbdt", group="peers", citation=NBDT)
class NBDTHead(PlainHead):
    """Soft decision tree on a linear layer: a node softmaxes its children's mean class logits; constant tree weight."""

    def __init__(self, hierarchy: Hierarchy, in_features: int, *, tree_weight: NonNegativeFloat = 1.0) -> None:
        super().__init__(hierarchy, in_features)
        self.tree_weight = float(tree_weight)
        self.index = TreeIndex(hierarchy)
        parents = torch.tensor(hierarchy.parents[hierarchy.num_leaves:])
        self.register_buffer("super_parent", torch.where(parents >= 0, parents - hierarchy.num_leaves,
                                                         self.index.num_super), persistent=False)
        # the nodes of depths 1 .. max_depth − 1, depth after depth; a buffer, so it moves with the head
        levels = [hierarchy.nodes_at_depth(k) for k in range(1, hierarchy.max_depth)]
        self._level_sizes = [len(nodes) for nodes in levels]
        self.register_buffer("level_nodes", torch.as_tensor(np.concatenate([np.zeros(0, np.int64), *levels])),
                             persistent=False)

    def _logits_by_class(self, z: torch.Tensor) -> torch.Tensor:
        """(|L|, B) class logits of the linear layer, laid out as the tree's sums want them."""
        return self.classifier.weight @ full_precision(z).t()

    def path_log_probs(self, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The soft inference of class logits laid out (|L|, B): the log path probability of every
        class (|L|, B) and of every super-class (|P| − |L|, B)."""
        index, B = self.index, logits.shape[1]
        mean = F.embedding_bag(index.super_leaves, logits, index.super_leaves_offsets, mode="mean")  # (|P| − |L|, B)
        slots = (index.num_super + 1, B)  # a decision per super-class, and the root's (last row)
        with torch.no_grad():
            peak = torch.full(slots, -torch.inf, dtype=logits.dtype, device=logits.device)
            peak.scatter_reduce_(0, index.leaf_parent[:, None].expand(-1, B), logits, "amax")
            peak.scatter_reduce_(0, self.super_parent[:, None].expand(-1, B), mean, "amax")
        leaf_shifted = logits - peak.index_select(0, index.leaf_parent)
        super_shifted = mean - peak.index_select(0, self.super_parent)
        total = torch.zeros(slots, dtype=logits.dtype, device=logits.device)
        total = total.index_add(0, index.leaf_parent, leaf_shifted.exp()).index_add(0, self.super_parent,
                                                                                     super_shifted.exp())
        log_total = total.clamp_min(0.5).log()  # a decision sums to at least 1 (its peak); never clamped
        super_step = super_shifted - log_total.index_select(0, self.super_parent)
        levels: list[torch.Tensor] = []  # top-down: a super-class's path is its parent's plus its own step
        for level, (a, b) in enumerate(index.levels):
            own = super_step[a:b]
            if level:
                own = own + torch.cat(levels).index_select(0, index.level_parent(level))
            levels.append(own)
        supers = torch.cat([*levels, logits.new_zeros(1, B)])  # the root's row: log 1
        leaves = leaf_shifted - log_total.index_select(0, index.leaf_parent) + supers.index_select(0, index.leaf_parent)
        return leaves, supers[:-1]

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        with torch.autocast(z.device.type, enabled=False):
            return self.path_log_probs(self._logits_by_class(z))[0].t()

    def level_logits(self, z: torch.Tensor) -> dict[int, torch.Tensor]:
        """Log path probabilities of the nodes of each depth (soft inference)."""
        with torch.autocast(z.device.type, enabled=False):
            every = torch.cat(self.path_log_probs(self._logits_by_class(z))).t()  # (B, |P|), canonical order
        levels = every.index_select(1, self.level_nodes).split(self._level_sizes, dim=1)
        return dict(enumerate(levels, start=1))

    def loss(self, z: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.autocast(z.device.type, enabled=False):
            logits = self._logits_by_class(z)
            leaves = self.path_log_probs(logits)[0]
            loss = columns_cross_entropy(logits, target)
            if self.tree_weight:
                loss = loss + self.tree_weight * columns_cross_entropy(leaves.exp(), target)
            return loss, leaves.t()

    def config(self) -> dict:
        return {"tree_weight": self.tree_weight}
