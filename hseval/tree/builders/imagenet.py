"""ImageNet-1k's tree (ILSVRC-2012) from WordNet 3.0, by the paper's rules or by Making Better
Mistakes' (see :mod:`.wordnet`).

The 1,000 classes are the sorted wnids, the label order of the devkit, of torchvision and of every
pretrained model's logits. ``tree="paper"`` (NBDT's rule: the first hypernym in sorted order)
gives 1,369 nodes below the root ``entity``, depth 16. ``tree="mbm"`` (the longest path) gives
1,373 nodes below ``entity``, depth 16; the authors' tree has 1,371 below ``physical_entity``,
depth 15, and 1,354 of its edges are here: they rewired three abstract classes (street sign,
traffic light, bubble) under physical objects by hand, which puts this root one level higher,
and chose ties by hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hseval.core.errors import ConfigError
from hseval.tree.builders.packaged import read_table
from hseval.tree.builders.wordnet import wordnet_hierarchy
from hseval.tree.hierarchy import Hierarchy

__all__ = ["TREE_RULES", "check_tree_rule", "imagenet_wnids", "imagenet_words", "imagenet_hierarchy", "wordnet_tree"]

TABLE = "imagenet_wnids.tsv"
TREE_RULES = {"paper": "first", "mbm": "longest"}
"""The ``tree`` option of the ImageNet datasets: the WordNet path rule of :func:`~.wordnet.wordnet_hierarchy`
each names (the paper's and NBDT's; Making Better Mistakes')."""


def imagenet_wnids() -> list[str]:
    """The 1,000 ILSVRC-2012 wnids, sorted (the label order)."""
    return [wnid for wnid, _ in read_table(TABLE)]


def imagenet_words() -> dict[str, str]:
    """{wnid: its WordNet lemmas, comma-separated} for the 1,000 classes (ImageNet's words.txt)."""
    return dict(read_table(TABLE))


def check_tree_rule(tree: str) -> None:
    """Refuse a ``tree`` option that is not a key of :data:`TREE_RULES`."""
    if tree not in TREE_RULES:
        raise ConfigError(f"tree={tree!r}: choose paper (the first hypernym in sorted order, NBDT's rule) or mbm "
                          "(the longest WordNet path, Making Better Mistakes')")


def wordnet_tree(wnids: Sequence[str], *, tree: str, wordnet: str | Path | None = None) -> Hierarchy:
    """The WordNet tree of ``wnids`` by the rule ``tree`` names (a key of :data:`TREE_RULES`)."""
    check_tree_rule(tree)
    return wordnet_hierarchy(list(wnids), wordnet=wordnet, path=TREE_RULES[tree])


def imagenet_hierarchy(wnids: Sequence[str] | None = None, *, tree: str = "paper",
                       wordnet: str | Path | None = None) -> Hierarchy:
    """The WordNet tree of ``wnids`` (default: the 1,000 classes) by the rule ``tree`` (paper or
    mbm); nodes are named by wnid. ``wordnet`` is a WordNet folder (default: looked up, see
    :func:`~.wordnet.find_wordnet`)."""
    return wordnet_tree(imagenet_wnids() if wnids is None else wnids, tree=tree, wordnet=wordnet)
