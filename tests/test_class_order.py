"""One class-order rule: a class is its name. A tree file whose classes are listed in another order
than an image folder's (sorted) folders is the same tree in train, evaluate (runs and prediction
files) and import: training and import put the tree's classes in the data's order, a prediction
file's columns follow its tree (or --classes), and runs pair by class name."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import safetensors.torch

from hseval.cli.main import main
from hseval.io.run_format import load_run
from hseval.tree import read_hierarchy
from hseval.tree.ancestry import same_tree
from tests.helpers import image_folder, random_tree


@pytest.mark.slow  # trains a run: not in the fast lane
def test_the_same_tree_file_pairs_with_itself_in_train_evaluate_and_import(tmp_path, capsys):
    data, tree_file = image_folder(tmp_path)  # tree.txt lists husky, beagle, tabby; the folders sort beagle first
    tree = read_hierarchy(tree_file)
    assert list(tree.leaf_names) == ["husky", "beagle", "tabby"]
    common = ["--dataset", "image-folder", "--data-root", str(data), "--hierarchy", str(tree_file)]
    assert main(["train", "--head", "plain", *common, "--backbone", "small-cnn", "--set", "data.batch_size=2",
                 "--set", "optim.epochs=1", "--set", "data.workers=0", "--quiet", "--out", str(tmp_path / "run")]) == 0
    run = load_run(tmp_path / "run")
    assert list(run.hierarchy.leaf_names) == ["beagle", "husky", "tabby"]  # the data's order
    assert same_tree(run.hierarchy, tree) and run.hierarchy != tree  # one tree, two orders
    eval_dir = tmp_path / "eval"
    assert main(["evaluate", str(tmp_path / "run"), "--projections", "pca", "--quiet", "--out", str(eval_dir)]) == 0

    # a prediction file of the same predictions, its columns and targets in the tree file's order
    arrays = np.load(eval_dir / "run" / "predictions.npz")
    to_file = np.array([list(tree.leaf_names).index(n) for n in run.hierarchy.leaf_names])
    targets, predicted = to_file[arrays["targets"]], to_file[arrays["topk"][:, 0]]
    logits = np.full((len(targets), 3), -2.0, dtype=np.float32)
    logits[np.arange(len(targets)), predicted] = 2.0
    np.savez(tmp_path / "p.npz", targets=targets, logits=logits)
    assert main(["evaluate", "--predictions", str(tmp_path / "p.npz"), "--hierarchy", str(tree_file), "--name",
                 "elsewhere", "--projections", "pca", "--out", str(eval_dir)]) == 0

    # the run's weights imported with the same tree file: put in the data's order, not refused
    state = {k: v.contiguous() for k, v in run.model.state_dict().items()}
    safetensors.torch.save_file(state, tmp_path / "ckpt.safetensors")
    assert main(["import", str(tmp_path / "ckpt.safetensors"), "--backbone", "small-cnn", "--head", "plain",
                 "--hierarchy", str(tree_file), *common[:4], "--out", str(tmp_path / "imported")]) == 0
    assert json.loads((tmp_path / "imported" / "run.json").read_text())["dataset"]["class_names"] == \
        ["beagle", "husky", "tabby"]
    assert main(["evaluate", str(tmp_path / "imported"), "--projections", "pca", "--quiet", "--out",
                 str(eval_dir)]) == 0
    capsys.readouterr()

    assert main(["report", str(eval_dir), "--baseline", "run"]) == 0
    table = pd.read_csv(eval_dir / "significance.csv")
    assert table["note"].isna().all(), table["note"]  # every run paired with the baseline: one tree
    leaf = table[table["metric"] == "leaf"].set_index("run")
    assert set(leaf.index) == {"elsewhere", "imported"}
    assert (leaf["difference"] == 0).all() and (leaf["only run right"] == 0).all()  # the same predictions


def test_same_tree_ignores_the_order_nodes_are_listed_in_and_nothing_else():
    tree = random_tree(30, seed=4)
    shuffled = np.random.default_rng(0)
    leaves = list(tree.leaf_names)
    shuffled.shuffle(leaves)
    assert same_tree(tree, tree.reorder_leaves(leaves))
    supers = list(tree.node_names[tree.num_leaves:])[::-1]
    assert same_tree(tree, tree.renumbered([*leaves, *supers]))
    moved = tree.parents.copy()
    leaf = 0
    moved[leaf] = next(p for p in range(tree.num_leaves, tree.num_nodes) if p != moved[leaf])
    from hseval.tree.hierarchy import Hierarchy
    other = Hierarchy(tree.node_names, moved, tree.num_leaves)
    assert not same_tree(tree, other)  # a class under another parent is another tree
