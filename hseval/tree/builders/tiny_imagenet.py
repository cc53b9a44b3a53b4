"""Tiny-ImageNet-200's tree from WordNet 3.0 by the paper's rules (see :mod:`.wordnet`).

With the official 200 wnids it has 294 nodes below its root ``physical_entity`` (295 with the
root: the paper's |P| = 295 and NBDT's tree, whose edge set it equals), depth 11.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hseval.tree.builders.packaged import read_table
from hseval.tree.builders.wordnet import wordnet_hierarchy
from hseval.tree.hierarchy import Hierarchy

__all__ = ["tiny_imagenet_wnids", "tiny_imagenet_hierarchy"]

TABLE = "tiny_imagenet_wnids.tsv"


def tiny_imagenet_wnids() -> list[str]:
    """The 200 official wnids in ``wnids.txt`` order (the label order)."""
    return [wnid for wnid, _ in read_table(TABLE)]


def tiny_imagenet_hierarchy(wnids: Sequence[str] | None = None, *, wordnet: str | Path | None = None
                            ) -> Hierarchy:
    """The WordNet tree of ``wnids`` (default: the official 200); nodes are named by wnid.

    ``wordnet`` is a WordNet folder (default: looked up, see :func:`~.wordnet.find_wordnet`)."""
    return wordnet_hierarchy(tiny_imagenet_wnids() if wnids is None else list(wnids), wordnet=wordnet)
