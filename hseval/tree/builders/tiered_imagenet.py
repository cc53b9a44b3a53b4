"""tiered-ImageNet-H's tree: Making Better Mistakes' 608 classes (tiered-ImageNet's, Ren et al. 2018)
under WordNet 3.0, by Making Better Mistakes' rule by default (see :mod:`.wordnet`).

The classes are the leaves of the authors' ``tiered_imagenet_isa.txt``, sorted (shipped as a list;
the tree is built here, not copied). ``tree="mbm"`` (the longest path) gives 842 nodes below the
root ``physical_entity``, depth 12, as the authors' tree; 837 of its 842 edges are theirs (the
rest follow from two ties they chose by hand: prayer rug, missile). ``tree="paper"`` gives 842
nodes, depth 12.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hseval.tree.builders.imagenet import wordnet_tree
from hseval.tree.builders.packaged import read_table
from hseval.tree.hierarchy import Hierarchy

__all__ = ["tiered_imagenet_wnids", "tiered_imagenet_hierarchy"]

TABLE = "tiered_imagenet_wnids.tsv"


def tiered_imagenet_wnids() -> list[str]:
    """The 608 wnids, sorted (the label order)."""
    return [wnid for wnid, _ in read_table(TABLE)]


def tiered_imagenet_hierarchy(wnids: Sequence[str] | None = None, *, tree: str = "mbm",
                              wordnet: str | Path | None = None) -> Hierarchy:
    """The WordNet tree of ``wnids`` (default: the 608 classes) by the rule ``tree`` (mbm or
    paper); nodes are named by wnid. ``wordnet`` is a WordNet folder (default: looked up, see
    :func:`~.wordnet.find_wordnet`)."""
    return wordnet_tree(tiered_imagenet_wnids() if wnids is None else wnids, tree=tree, wordnet=wordnet)
