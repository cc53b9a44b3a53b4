"""Conditional risk minimisation (CRM; Karthik et al., ICLR 2021, "No cost likelihood manipulation
at test time for making better mistakes"): predict the class of least expected tree distance
under the model's probabilities, ``argmin_k R(k)`` with ``R(k) = Σ_j p(j|x) d(k, j)``, instead of
the argmax.

``d`` is the hierarchical distance of :func:`hseval.metrics.mistakes.hierarchical_distance`
(``H − depth(LCA)``, 0 on the diagonal), so CRM's mistakes are scored by the same ruler as the
argmax's. No |L|×|L| distance matrix is needed: the depth of the LCA of k and j counts the
(non-root) nodes above both, so ``Σ_j p_j depth(LCA(k, j))`` is ``s_k``, the sum over the nodes on
k's path of the probability below each node, and

    R(k) = H · (Σ_j p_j − p_k) − s_k + depth(k) · p_k,    s_k = p_k + s(parent(k)),

where ``s(q)``, the same sum for k's parent, is shared by k's siblings: the node probabilities
and path sums of :class:`hseval.metrics.nodes.NodeBlock` (the ones every decoding rule reads; the
evaluation hands CRM the block its decisions made). Exact for every class and every tree, at a few
passes over the probabilities: CRM at any number of classes, in the time of a softmax.
:class:`CrmMetrics` ranks each batch by it and scores the ranking as
:class:`~hseval.metrics.HierarchicalMetrics` scores the argmax's, from the same statistics.
"""

from __future__ import annotations

import numpy as np

from hseval.metrics import _checks, statistics
from hseval.metrics.accuracy import _topk
from hseval.metrics.nodes import NodeBlock, layout_of
from hseval.metrics.stream_state import StreamState
from hseval.tree.hierarchy import Hierarchy

__all__ = ["crm_risk", "crm_summary", "CrmMetrics"]


def crm_risk(probs: np.ndarray, hierarchy: Hierarchy) -> np.ndarray:
    """Each class's expected hierarchical distance under ``probs``; CRM predicts the least.

    Parameters
    ----------
    probs : (N, |L|) array_like
        Rows of class probabilities (softmax outputs), columns in the tree's leaf order.
    hierarchy : Hierarchy
        The tree whose leaves are the classes.

    Returns
    -------
    (N, |L|) ndarray of float64
        ``R[i, k] = Σ_j probs[i, j] · d(k, j)``, computed through the tree's paths (no |L|×|L| matrix).

    Raises
    ------
    ValueError
        If ``probs`` is not 2-D with one column per class, or holds NaN or infinite values.

    Examples
    --------
    apple 0.4, cat 0.3, dog 0.3: the argmax says apple, but an animal costs less in expectation.

    >>> import numpy as np
    >>> from hseval.tree.hierarchy import Hierarchy
    >>> from hseval.metrics.crm import crm_risk
    >>> tree = Hierarchy.from_paths([["fruit", "apple"], ["animal", "cat"], ["animal", "dog"]])
    >>> crm_risk(np.array([[0.4, 0.3, 0.3]]), tree).round(3).tolist()
    [[1.2, 1.1, 1.1]]
    """
    return NodeBlock(layout_of(hierarchy), _checks.scores(probs, "probs", hierarchy.num_leaves)).class_risk()


def crm_summary(computed: dict) -> dict:
    """The metrics of :meth:`HierarchicalMetrics.compute` that mean something for CRM's ranking,
    those declared so (``Metric.crm``): top-k, super-class accuracy from the predicted class,
    mistake severity, hierarchical distance@k and hierarchical precision/recall/F1 (not
    calibration: CRM's scores are no probabilities)."""
    return {k: v for k, v in computed.items() if (found := statistics.key_of(k)) and found[0].crm}


class CrmMetrics:
    """The metrics of CRM's ranking, fed batch by batch: :meth:`update` takes a batch's
    probabilities, :meth:`compute` gives :func:`crm_summary`. A shell over the statistics of
    :mod:`hseval.metrics.statistics`, as :class:`~hseval.metrics.HierarchicalMetrics` is, fed the
    ranked classes (no scores: nothing of calibration is computed)."""

    def __init__(self, hierarchy: Hierarchy, *, topk: tuple[int, ...]) -> None:
        self.hierarchy = hierarchy
        self.ks = tuple(sorted({1, *topk}))
        self._capped = tuple(min(k, hierarchy.num_leaves) for k in self.ks)
        self._layout = layout_of(hierarchy)
        self._stream = StreamState(statistics.state_zeros(hierarchy, len(self.ks), 1), hierarchy.num_leaves)

    def update(self, probs: np.ndarray, targets: np.ndarray, block: NodeBlock | None = None) -> None:
        """A batch: (B, |L|) probabilities and (B,) class indices, checked (the scores they come from
        were); ``block``: the same probabilities through the tree already (the decisions' block)."""
        block = NodeBlock(self._layout, np.asarray(probs, dtype=np.float64)) if block is None else block
        top = _topk(-block.class_risk(), max(self._capped))
        self._stream.add(statistics.batch_update(top, targets, self.hierarchy, self._capped))

    def compute(self) -> dict:
        """:func:`crm_summary` of every k, with "unavailable": why each undefined value is (no mistakes ...)."""
        computed = statistics.state_compute(self._stream.sums, self._stream.confusion.pairs(), self.hierarchy, self.ks,
                                            shown=range(len(self.ks)), levels=None, scored=False)
        summary = crm_summary(computed)
        return {**summary, "unavailable": {key: why for key, why in computed["unavailable"].items()
                                           if key.split(".")[0] in summary}}
