"""ImageNet-1k and tiered-ImageNet-H: fake copies in each real layout (val/ as class folders, as
Kaggle's flat folder with LOC_val_solution.csv, as the devkit's ground truth with meta.mat) give the
same test split; a damaged copy is one line naming the file (and line); a copy without train/ loads
for evaluation and training refuses it; the WordNet trees by both rules, against Making Better
Mistakes' own files (already among the public fixtures)."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from hseval.core.errors import ConfigError, DataError
from hseval.data import load_dataset
from hseval.data.imagenet import read_imagenet
from hseval.train.config import TrainConfig
from hseval.train.engine import load_data
from hseval.tree import read_hierarchy
from hseval.tree.builders.imagenet import imagenet_hierarchy, imagenet_wnids, imagenet_words
from hseval.tree.builders.tiered_imagenet import tiered_imagenet_hierarchy, tiered_imagenet_wnids
from hseval.tree.builders.wordnet import find_wordnet, wordnet_hierarchy
from tests.fake_datasets import (
    imagenet_val_wnid,
    write_image,
    write_imagenet,
    write_imagenet_meta,
)
from tests.helpers import FIXTURES
from tests.test_cli_data import run

needs_wordnet = pytest.mark.skipif(find_wordnet() is None, reason="no WordNet 3.0 data installed (apt install "
                                                                  "wordnet-base, or python -m nltk.downloader wordnet)")
WNIDS = imagenet_wnids()
MBM = FIXTURES / "hierarchies"  # Making Better Mistakes' trees, verbatim (tests/fixtures/hierarchies/SOURCES.md)


def test_shipped_class_lists():
    assert WNIDS == sorted(WNIDS) and len(set(WNIDS)) == 1000
    timm = importlib.util.find_spec("timm")  # its files, without importing it (slow)
    if timm is None:
        pytest.skip("timm is not installed")
    info = Path(timm.submodule_search_locations[0]) / "data" / "_info"
    assert WNIDS == (info / "imagenet_synsets.txt").read_text().split()
    lemmas = dict(line.split("\t", 1) for line in (info / "imagenet_synset_to_lemma.txt").read_text().splitlines())
    assert imagenet_words() == {wnid: lemmas[wnid] for wnid in WNIDS}
    tiered = read_hierarchy(MBM / "tiered_imagenet_isa.txt")
    assert tiered_imagenet_wnids() == sorted(tiered.leaf_names) and set(tiered_imagenet_wnids()) <= set(WNIDS)


@pytest.mark.parametrize("layout", ["folders", "kaggle", "devkit"])
def test_every_val_layout_gives_the_same_test_split(tmp_path, layout):
    train = int(layout == "kaggle")  # listing train/ is the same in every layout
    folder = write_imagenet(tmp_path, layout=layout, train=train)
    (paths, labels), (test_paths, test_labels), info = read_imagenet(folder, WNIDS)
    assert len(paths) == 1000 * train and labels.tolist() == list(range(1000))[:len(paths)]
    assert info == ({} if train else {"no_training_images": f"{folder / 'train'} is absent (a copy of the "
                                                            "validation images only)"})
    # in file-name order whatever the layout, each image with its own class
    assert [p.name for p in test_paths] == [f"ILSVRC2012_val_{k:08d}.JPEG" for k in range(1, 1001)]
    assert [WNIDS[j] for j in test_labels] == [imagenet_val_wnid(k, WNIDS) for k in range(1, 1001)]
    assert all(p.is_file() for p in test_paths)
    # tiered-ImageNet-H reads the same copy: its classes' images only, labelled in its order
    tiered = tiered_imagenet_wnids()
    (t_paths, t_labels), (tt_paths, tt_labels), _ = read_imagenet(folder, tiered)
    assert len(t_paths) == 608 * train and [tiered[j] for j in tt_labels] == \
        [WNIDS[j] for j in test_labels if WNIDS[j] in set(tiered)]
    assert [p.name for p in tt_paths] == sorted(p.name for p in tt_paths)


def test_a_copy_of_the_validation_images_only(tmp_path):
    folder = write_imagenet(tmp_path, layout="devkit", train=0, val=12)
    (paths, labels), (test_paths, _), info = read_imagenet(folder, WNIDS)
    assert paths == [] and labels.dtype == np.int64 and len(test_paths) == 12
    assert info["no_training_images"].endswith("imagenet/train is absent (a copy of the validation images only)")


def _devkit_truth(folder):
    return folder / "ILSVRC2012_devkit_t12" / "data" / "ILSVRC2012_validation_ground_truth.txt"


def _rewrite_line(path, number, text):
    lines = path.read_text().splitlines()
    lines[number - 1] = text
    path.write_text("\n".join(lines) + "\n")


def _meta_with_id(folder, wnid, new_id):
    ids = {w: (3 * j) % 1000 + 1 for j, w in enumerate(WNIDS)}
    write_imagenet_meta(folder / "ILSVRC2012_devkit_t12" / "data" / "meta.mat", WNIDS, ids={**ids, wnid: new_id})


# (layout, train images per class, damage, message): every message names the file (and line)
DAMAGES = {
    "unknown-train-folder": ("kaggle", 1, lambda f: write_image(f / "train" / "n99999999" / "a.JPEG"),
                             r"CLS-LOC/train/n99999999: folder 'n99999999' is not one of the 1,000 ILSVRC-2012 "
                             r"classes \(1 such folders\)"),
    "missing-train-folder": ("kaggle", 1, lambda f: shutil.rmtree(f / "train" / WNIDS[3]),
                             rf"train/{WNIDS[3]}: folder is missing \(1 of the 1000 classes are\)"),
    "empty-train-folder": ("kaggle", 1, lambda f: (f / "train" / WNIDS[5] / f"{WNIDS[5]}_0.JPEG").unlink(),
                           rf"train: class '{WNIDS[5]}' has no training images"),
    "unknown-val-folder": ("folders", 0, lambda f: write_image(f / "val" / "n99999999" / "a.JPEG"),
                           r"imagenet/val/n99999999: folder 'n99999999' is not one of the 1,000"),
    # 12 images: classes 7, 14, ..., 84 only (imagenet_val_wnid)
    "val-folders-lack-a-class": ("folders", 0, lambda f: None,
                                 rf"val/{WNIDS[0]}: no validation images of class {WNIDS[0]}"),
    "image-in-two-folders": ("folders", 0, lambda f: write_image(f / "val" / WNIDS[1] / "ILSVRC2012_val_00000007.JPEG"),
                             r"ILSVRC2012_val_00000007.JPEG lies in two class folders"),
    "no-val": ("devkit", 0, lambda f: shutil.rmtree(f / "val"), r"imagenet/val: folder is missing"),
    "kaggle-unknown-class": ("kaggle", 0, lambda f: _rewrite_line(f.parents[2] / "LOC_val_solution.csv", 3,
                                                                  "ILSVRC2012_val_00000004,n99999999 1 2 3 4"),
                             r"LOC_val_solution.csv, line 3: class 'n99999999' is not one of the 1,000"),
    "kaggle-two-classes": ("kaggle", 0, lambda f: _rewrite_line(f.parents[2] / "LOC_val_solution.csv", 2,
                                                                f"ILSVRC2012_val_00000001,{WNIDS[1]} 1 2 3 4 "
                                                                f"{WNIDS[2]} 5 6 7 8"),
                           r"LOC_val_solution.csv, line 2: boxes of 2 classes"),
    "kaggle-header": ("kaggle", 0, lambda f: _rewrite_line(f.parents[2] / "LOC_val_solution.csv", 1, "id,label"),
                      r"LOC_val_solution.csv, line 1: expected the header 'ImageId,PredictionString'"),
    "kaggle-missing-image": ("kaggle", 0, lambda f: (f / "val" / "ILSVRC2012_val_00000003.JPEG").unlink(),
                             r"CLS-LOC/val/ILSVRC2012_val_00000003.JPEG: image file is missing \(1 of the 12 images "
                             r"LOC_val_solution.csv lists are\)"),
    "devkit-more-images": ("devkit", 0, lambda f: write_image(f / "val" / "ILSVRC2012_val_00000013.JPEG"),
                           r"ILSVRC2012_validation_ground_truth.txt: labels 12 images but .*val holds 13 "
                           r"\(ILSVRC2012_val_00000013.JPEG has no label\)"),
    "devkit-fewer-images": ("devkit", 0, lambda f: (f / "val" / "ILSVRC2012_val_00000012.JPEG").unlink(),
                            r"val/ILSVRC2012_val_00000012.JPEG: image file is missing"),
    "devkit-id-out-of-range": ("devkit", 0, lambda f: _rewrite_line(_devkit_truth(f), 2, "1001"),
                               r"ground_truth.txt, line 2: ILSVRC2012_ID 1001 is not a class of .*meta.mat"),
    "devkit-not-an-id": ("devkit", 0, lambda f: _rewrite_line(_devkit_truth(f), 4, "n01440764"),
                         r"ground_truth.txt, line 4: expected one ILSVRC2012_ID, got 'n01440764'"),
    "meta-id-of-no-class": ("devkit", 0, lambda f: _meta_with_id(f, WNIDS[0], 1500),
                            r"meta.mat: no class has ILSVRC2012_ID 1 \(1 such IDs\)"),
    "meta-strange-wnid": ("devkit", 0, lambda f: write_imagenet_meta(
        f / "ILSVRC2012_devkit_t12" / "data" / "meta.mat", ["n00001740", *WNIDS[1:]]),
                          r"meta.mat: ILSVRC2012_ID 1 is 'n00001740', not one of the 1,000"),
    "meta-no-synsets": ("devkit", 0, lambda f: (f / "ILSVRC2012_devkit_t12" / "data" / "meta.mat").write_bytes(
        (f / "ILSVRC2012_devkit_t12" / "data" / "meta.mat").read_bytes().replace(b"synsets", b"classes")),
                        r"meta.mat: no variable 'synsets' \(found: classes\)"),
    "no-labels": ("devkit", 0, lambda f: shutil.rmtree(f / "ILSVRC2012_devkit_t12"),
                  r"imagenet/val: 12 images without labels; put Kaggle's LOC_val_solution.csv in"),
    "mixed-val": ("devkit", 0, lambda f: write_image(f / "val" / WNIDS[0] / "a.JPEG"),
                  r"imagenet/val: holds both class folders and loose images"),
}


@pytest.mark.parametrize("case", DAMAGES)
def test_damaged_layouts(tmp_path, case):
    layout, train, damage, message = DAMAGES[case]
    folder = write_imagenet(tmp_path, layout=layout, train=train, val=1000 if case == "image-in-two-folders" else 12)
    damage(folder)
    with pytest.raises(DataError, match=message) as refused:
        read_imagenet(folder, WNIDS)
    assert "\n" not in str(refused.value)


def test_no_copy_says_what_to_get_and_where(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("HSEVAL_DATA", raising=False)
    with pytest.raises(DataError, match=r"ImageNet \(ILSVRC-2012\) not found \(looked in .*absent\); .*val/<wnid>/"
                                        r"\*.JPEG.*LOC_val_solution.csv.*image-net.org.*kaggle.com") as refused:
        load_dataset("tiered-imagenet-h", tmp_path / "absent")
    assert "\n" not in str(refused.value)
    for name, sizes in (("imagenet", "1,281,167 train, 50,000 test"), ("tiered-imagenet-h", "779,165 train, 30,400")):
        code, out, _ = run(capsys, "data", "info", name)
        assert code == 0 and f"images: {sizes}" in out
        assert "files: not read here: ImageNet (ILSVRC-2012) not found" in out and "image-net.org" in out
    with pytest.raises(ConfigError, match=r"tree='nbdt': choose paper .* or mbm"):
        load_dataset("imagenet", tmp_path, tree="nbdt")


@needs_wordnet
def test_fake_copy_loads_with_the_wordnet_tree_and_training_needs_train(tmp_path, capsys):
    folder = write_imagenet(tmp_path, layout="kaggle")
    data = load_dataset("imagenet", tmp_path)
    assert data.root == folder and data.class_names == WNIDS and (len(data.train), len(data.test)) == (1000, 1000)
    assert (data.hierarchy.num_nodes, data.hierarchy.max_depth, data.hierarchy.root_name) == (1369, 16, "n00001740")
    assert data.info["class_words"]["n01440764"] == "tench, Tinca tinca" and data.info["tree_rule"] == "paper"
    image, label = data.test[0]
    assert image.shape == (3, 224, 224) and image.dtype == torch.float32 and WNIDS[label] == imagenet_val_wnid(1, WNIDS)
    tiered = load_dataset("tiered-imagenet-h", tmp_path)
    assert tiered.class_names == tiered_imagenet_wnids() and len(tiered.test) == 608
    assert (tiered.hierarchy.num_nodes, tiered.info["tree_rule"]) == (842, "mbm")

    val_only = write_imagenet(tmp_path / "val-only", layout="devkit", train=0, val=12)
    code, out, _ = run(capsys, "data", "info", "imagenet", "--data-root", tmp_path / "val-only", "--tree", "mbm")
    assert code == 0 and "images: 0 train, 12 test" in out
    assert f"training images: none: {val_only / 'train'} is absent (a copy of the validation images only)" in out
    assert "hierarchy: 1000 classes, 1373 nodes, depth 16" in out
    config = TrainConfig.from_dict({"data": {"dataset": "imagenet", "root": str(tmp_path / "val-only")}})
    with pytest.raises(DataError, match=r"^data.dataset=imagenet: nothing to train on: .*val-only/imagenet/train is "
                                        r"absent .*; add the training images, or evaluate a model trained elsewhere"):
        load_data(config)


# ---------------------------------------------------------------- the trees, against Making Better Mistakes'
def _edges(tree):
    names = [*tree.node_names, tree.root_name]
    return {(names[p], names[c]) for c, p in enumerate(tree.parents.tolist())}


@pytest.fixture(scope="module")
def trees():
    if find_wordnet() is None:
        pytest.skip("no WordNet 3.0 data installed")
    return {(name, rule): build(tree=rule) for name, build in (("imagenet", imagenet_hierarchy),
                                                              ("tiered", tiered_imagenet_hierarchy))
            for rule in ("paper", "mbm")}


def test_tree_sizes(trees):
    sizes = {key: (tree.num_leaves, tree.num_nodes, tree.max_depth, tree.root_name) for key, tree in trees.items()}
    assert sizes == {("imagenet", "paper"): (1000, 1369, 16, "n00001740"),
                     ("imagenet", "mbm"): (1000, 1373, 16, "n00001740"),
                     ("tiered", "paper"): (608, 842, 12, "n00001930"),
                     ("tiered", "mbm"): (608, 842, 12, "n00001930")}


def test_mbm_trees_agree_with_the_authors_but_for_their_hand_picked_choices(trees):
    """Their tiered tree: 843 nodes with the root physical_entity, depth 12. Ours differs only where
    they chose between equally long paths by hand (prayer rug under furnishing, not covering;
    missile under weapon, not vehicle) and, for ImageNet-1k, where they also rewired three
    abstract classes (street sign, traffic light, bubble) under physical objects."""
    theirs = read_hierarchy(MBM / "tiered_imagenet_isa.txt")
    ours = trees["tiered", "mbm"]
    assert (ours.num_nodes, ours.max_depth, ours.root_name) == (theirs.num_nodes, theirs.max_depth, theirs.root_name)
    assert len(_edges(ours) & _edges(theirs)) == 837
    assert {c for _, c in _edges(ours) - _edges(theirs)} == {"n03998194", "n03773504", "n03122748", "n04014297",
                                                             "n03405725"}  # prayer rug, missile; their parents
    theirs = read_hierarchy(MBM / "imagenet_isa.txt")
    ours = trees["imagenet", "mbm"]
    assert len(_edges(ours) & _edges(theirs)) == 1354 and theirs.num_nodes == 1371
    paths = {tree: {w: tree.path_names(tree.index(w)) for w in WNIDS} for tree in (ours, theirs)}
    same = sum(paths[ours][w][-len(paths[theirs][w]):] == paths[theirs][w] for w in WNIDS)
    assert same == 964
    # the paper's rule does not keep their paths as often
    assert len(_edges(trees["imagenet", "paper"]) & _edges(theirs)) == 1310


@needs_wordnet
def test_longest_path_rule_on_a_small_set():
    """Minivan is both a car and a passenger van; the van's path up is the longer (13 edges to 11):
    the paper's rule puts it with the sports car, Making Better Mistakes' with the moving van.
    Beverages reach the top longer through abstraction than through matter; the rule keeps the
    path through physical_entity, the authors' root."""
    classes = ["n03770679", "n04285008", "n03796401", "n07920052", "n07892512"]  # + espresso, red wine
    first, longest = wordnet_hierarchy(classes), wordnet_hierarchy(classes, path="longest")
    assert first.path_names(0) == ("n03791235", "n02958343", "n03770679")  # motor vehicle > car > minivan
    assert longest.path_names(0) == ("n03791235", "n04520170", "n03770679")  # motor vehicle > van > minivan
    assert longest.path_names(2) == ("n03791235", "n04520170", "n03796401")
    assert first.root_name == longest.root_name == "n00001930"  # physical_entity
    with pytest.raises(ConfigError, match=r"path='shortest': choose 'first' .* or 'longest'"):
        wordnet_hierarchy(classes, path="shortest")
