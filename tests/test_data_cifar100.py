"""CIFAR-100: a fake copy in the official Python 2 pickle format loads with the paper's tree and
augmentation; a planted or damaged pickle is a one-line error that runs nothing."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest
import torch

from hseval.core.errors import DataError
from hseval.data import load_dataset
from hseval.data.pickles import load_pickle
from tests.fake_datasets import cifar100_lists, py2_pickle, write_cifar100


def test_fake_copy_loads_with_the_coarse_label_tree(tmp_path):
    write_cifar100(tmp_path, per_class=(2, 1))
    data = load_dataset("cifar100", tmp_path)
    fine, coarse, fine_to_coarse = cifar100_lists()
    assert data.class_names == fine and (len(data.train), len(data.test)) == (200, 100)
    assert data.train.images.shape == (200, 3, 32, 32) and data.train.images.dtype == torch.uint8
    tree = data.hierarchy
    assert (tree.num_leaves, tree.num_nodes, tree.max_depth) == (100, 120, 2)
    assert list(tree.node_names[100:]) == coarse
    assert [tree.parents[j] - 100 for j in range(100)] == fine_to_coarse
    pre = data.train.preprocess
    assert (pre.mean, pre.std) == ((0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762)) and pre.crop_padding == 4
    assert pre.flip
    assert data.test.preprocess.crop_padding == 0 and not data.test.preprocess.flip
    image, label = data.test[99]
    assert image.shape == (3, 32, 32) and image.dtype == torch.float32 and label == 99


def test_pixel_layout_is_three_planes(tmp_path):
    folder = write_cifar100(tmp_path, per_class=(1, 1))
    record = load_pickle(folder / "train")
    row = record["data"][0]
    images = load_dataset("cifar100", folder).train.images  # the folder itself is accepted too
    assert torch.equal(images[0, 1], torch.from_numpy(row[1024:2048].reshape(32, 32)))


def test_planted_pickle_is_refused_before_running(tmp_path):
    folder = write_cifar100(tmp_path, per_class=(1, 1))
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return os.system, (f"touch {marker}",)

    (folder / "meta").write_bytes(pickle.dumps({"fine_label_names": Payload()}, protocol=2))
    with pytest.raises(DataError, match=r"meta: refused to load: the pickle asks for (posix|nt)\.system"):
        load_dataset("cifar100", tmp_path)
    assert not marker.exists()


def test_python3_resaved_copy_loads(tmp_path):
    """Copies re-saved by Python 3 (protocol 2 writes bytes through _codecs.encode) still load."""
    folder = write_cifar100(tmp_path, per_class=(1, 1))
    for name in ("train", "test", "meta"):
        (folder / name).write_bytes(pickle.dumps(load_pickle(folder / name), protocol=2))
    assert load_dataset("cifar100", tmp_path).hierarchy.num_nodes == 120


def test_missing_and_damaged_files(tmp_path, monkeypatch):
    monkeypatch.delenv("HSEVAL_DATA", raising=False)
    with pytest.raises(DataError, match=r"CIFAR-100 not found \(looked in .*nowhere/cifar-100-python, .*nowhere\)"):
        load_dataset("cifar100", tmp_path / "nowhere")
    folder = write_cifar100(tmp_path, per_class=(1, 1))
    (folder / "meta").unlink()
    with pytest.raises(DataError, match=r"cifar-100-python/meta: file is missing; the CIFAR-100 folder"):
        load_dataset("cifar100", tmp_path)
    folder = write_cifar100(tmp_path, per_class=(1, 1))
    (folder / "test").write_bytes((folder / "test").read_bytes()[:500])
    with pytest.raises(DataError, match=r"cifar-100-python/test: not a readable pickle \(.*download it again$"):
        load_dataset("cifar100", tmp_path)


def _rewrite_train(folder, **changes):
    record = load_pickle(folder / "train")
    record.update(changes)
    (folder / "train").write_bytes(py2_pickle(record))


def test_labels_out_of_range_and_inconsistent_coarse_labels(tmp_path):
    folder = write_cifar100(tmp_path, per_class=(1, 1))
    record = load_pickle(folder / "train")
    _rewrite_train(folder, fine_labels=[*record["fine_labels"][:-1], 100])
    with pytest.raises(DataError, match=r"train: 'fine_labels' has label 100, out of range 0\.\.99"):
        load_dataset("cifar100", tmp_path)
    folder = write_cifar100(tmp_path, per_class=(2, 1))
    coarse = list(load_pickle(folder / "train")["coarse_labels"])
    coarse[0] = (coarse[0] + 1) % 20
    _rewrite_train(folder, coarse_labels=coarse)
    with pytest.raises(DataError, match=r"class 'apple' has images under two coarse labels"):
        load_dataset("cifar100", tmp_path)


def test_wrong_array_shape(tmp_path):
    folder = write_cifar100(tmp_path, per_class=(1, 1))
    _rewrite_train(folder, data=np.zeros((100, 1024), dtype=np.uint8))
    with pytest.raises(DataError, match=r"'data' should be a uint8 array of N rows of 3072 pixels, found \(100, "):
        load_dataset("cifar100", tmp_path)
