"""tiered-ImageNet-H: the 608 ImageNet classes of tiered-ImageNet (Ren et al., ICLR 2018) with the
WordNet tree of Making Better Mistakes (Bertinetto et al., CVPR 2020), read from the user's
ImageNet copy (the layout of :mod:`hseval.data.imagenet`, read by the same functions).

Train: the ``train/`` images of the 608 classes (779,165, tiered-ImageNet's count; optional, as for
``imagenet``).
Test: the official ILSVRC-2012 validation images of the 608 classes (30,400). This departs from
Making Better Mistakes, whose splits re-divide ImageNet's training images: models pretrained on
ImageNet have trained on those, never on the validation images, so hseval tests on these. Classes:
the sorted wnids. Tree: Making Better Mistakes' rule (option ``tree="mbm"``, the default: the
longest WordNet path, built from WordNet 3.0, not copied) or the paper's (``tree="paper"``), see
:mod:`hseval.tree.builders.tiered_imagenet`.
"""

from __future__ import annotations

from pathlib import Path

from hseval.data.base import LoadedDataset, register_dataset
from hseval.data.imagenet import imagenet_classes
from hseval.tree.builders.tiered_imagenet import tiered_imagenet_hierarchy, tiered_imagenet_wnids

__all__ = ["load_tiered_imagenet"]


@register_dataset("tiered-imagenet-h", train=779_165, test=30_400, classes=608,
                  tree="WordNet 3.0 (Making Better Mistakes' rule; tree=paper: the paper's)")
def load_tiered_imagenet(root: str | Path | None = None, *, tree: str = "mbm", wordnet: str | Path | None = None
                         ) -> LoadedDataset:
    """tiered-ImageNet-H from an ImageNet copy (test = its official validation images of the 608
    classes) with the paper's 224-pixel recipe."""
    return imagenet_classes("tiered-imagenet-h", root, tiered_imagenet_wnids(), tiered_imagenet_hierarchy, tree=tree,
                            wordnet=wordnet)
