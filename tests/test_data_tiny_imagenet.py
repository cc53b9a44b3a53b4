"""Tiny-ImageNet-200: a fake copy in the real layout loads with the WordNet tree; a damaged layout
is a one-line error raised before WordNet is needed."""

from __future__ import annotations

import pytest
import torch

from hseval.core.errors import DataError
from hseval.data import load_dataset
from hseval.tree.builders.wordnet import find_wordnet
from tests.fake_datasets import tiny_imagenet_wnids, write_image, write_tiny_imagenet

needs_wordnet = pytest.mark.skipif(find_wordnet() is None, reason="no WordNet 3.0 data installed (apt install "
                                                                  "wordnet-base, or python -m nltk.downloader wordnet)")


@needs_wordnet
def test_fake_copy_loads_with_the_wordnet_tree(tmp_path):
    write_tiny_imagenet(tmp_path, per_class=(2, 1))
    data = load_dataset("tiny-imagenet", tmp_path)
    wnids = tiny_imagenet_wnids()
    assert data.class_names == wnids and (len(data.train), len(data.test)) == (400, 200)
    assert data.train.labels[:4].tolist() == [0, 0, 1, 1] and data.test.labels[:3].tolist() == [0, 1, 2]
    tree = data.hierarchy
    assert (tree.num_leaves, tree.num_nodes, tree.max_depth, tree.root_name) == (200, 294, 11, "n00001930")
    assert data.info["class_words"]["n02124075"] == "Egyptian cat"
    image, label = data.test[199]
    assert image.shape == (3, 224, 224) and image.dtype == torch.float32 and label == 199


@pytest.mark.parametrize(("damage", "message"), [
    (lambda f: (f / "wnids.txt").unlink(), r"tiny-imagenet-200/wnids.txt: file is missing"),
    (lambda f: (f / "val" / "val_annotations.txt").unlink(), r"val/val_annotations.txt: file is missing"),
    (lambda f: write_image(f / "train" / "n99999999" / "images" / "a.JPEG"),
     r"train/n99999999: class folder 'n99999999' is not in .*wnids.txt \(1 such folders\)"),
    (lambda f: (f / "val" / "val_annotations.txt").write_text("val_0.JPEG\tn01443537\t0\t0\t7\t7\n"),
     r"val_annotations.txt, line 1: class 'n01443537' is not in wnids.txt"),
    (lambda f: (f / "val" / "images" / "val_1.JPEG").unlink(), r"val/images/val_1.JPEG: image file is missing"),
    (lambda f: (f / "wnids.txt").write_text("n02124075\nbanana\n"), r"wnids.txt, line 2: expected one WordNet id"),
], ids=["no-wnids", "no-val-annotations", "unknown-folder", "unknown-val-class", "missing-val-image", "bad-wnid"])
def test_damaged_layouts(tmp_path, damage, message):
    folder = write_tiny_imagenet(tmp_path, wnids=["n02124075", "n04067472", "n04540053"])
    damage(folder)
    with pytest.raises(DataError, match=message):
        load_dataset("tiny-imagenet", tmp_path)


def test_empty_class(tmp_path):
    folder = write_tiny_imagenet(tmp_path, wnids=["n02124075", "n04067472"])
    (folder / "train" / "n04067472" / "images" / "n04067472_0.JPEG").unlink()
    with pytest.raises(DataError, match=r"train: class 'n04067472' has no training images"):
        load_dataset("tiny-imagenet", tmp_path)
