"""Fashion-MNIST, the embedded default: the real files (Debian's package) and damaged copies."""

from __future__ import annotations

import gzip
import shutil

import numpy as np
import pytest
import torch

from hseval.core.errors import DataError
from hseval.data import TensorPreprocess, load_dataset
from hseval.data.fashion_mnist import DEBIAN, find_fashion_mnist

needs_real = pytest.mark.skipif(find_fashion_mnist() is None,
                                reason="Fashion-MNIST is not installed (apt install dataset-fashion-mnist)")


@needs_real
def test_real_files_load_with_the_papers_tree():
    data = load_dataset("fashion-mnist")
    assert (len(data.train), len(data.test)) == (60_000, 10_000)
    assert data.train.images.shape == (60_000, 1, 28, 28) and data.train.images.dtype == torch.uint8
    assert np.bincount(data.test.labels).tolist() == [1000] * 10
    tree = data.hierarchy
    assert (tree.num_leaves, tree.num_nodes, tree.max_depth) == (10, 13, 3)
    assert list(tree.leaf_names) == data.class_names and data.class_names[9] == "Ankle boot"
    image, label = data.test[0]
    assert image.shape == (1, 28, 28) and image.dtype == torch.float32 and label == 9  # an ankle boot


def _fake_copy(folder, n_train=20, n_test=10, *, truncate=None):
    """Write a small Fashion-MNIST in the real IDX format (gzip), optionally with one file cut."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for split, n in (("train", n_train), ("t10k", n_test)):
        images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        labels = (np.arange(n) % 10).astype(np.uint8)
        for kind, array, magic in (("images-idx3", images, b"\x00\x00\x08\x03"),
                                   ("labels-idx1", labels, b"\x00\x00\x08\x01")):
            header = magic + b"".join(int(s).to_bytes(4, "big") for s in array.shape)
            data = header + array.tobytes()
            name = f"{split}-{kind}-ubyte"
            if truncate == name:
                data = data[:-7]
            (folder / f"{name}.gz").write_bytes(gzip.compress(data))
    return folder


def test_data_root_and_env_lookup(tmp_path, monkeypatch):
    _fake_copy(tmp_path / "mine" / "fashion-mnist")
    data = load_dataset("fashion-mnist", tmp_path / "mine", download=False)
    assert (len(data.train), len(data.test)) == (20, 10)
    monkeypatch.setenv("HSEVAL_DATA", str(tmp_path / "mine"))
    assert find_fashion_mnist() == tmp_path / "mine" / "fashion-mnist"
    assert find_fashion_mnist(tmp_path / "elsewhere") is None


def test_truncated_idx_file_is_a_one_line_error(tmp_path):
    _fake_copy(tmp_path, truncate="t10k-images-idx3-ubyte")
    with pytest.raises(DataError, match=r"t10k-images-idx3-ubyte.gz: truncated IDX file \(expected 7856 bytes"):
        load_dataset("fashion-mnist", tmp_path, download=False)


def test_broken_gzip_and_wrong_magic(tmp_path):
    _fake_copy(tmp_path)
    (tmp_path / "train-labels-idx1-ubyte.gz").write_bytes(b"\x1f\x8b garbage")
    with pytest.raises(DataError, match=r"train-labels-idx1-ubyte.gz: cannot decompress"):
        load_dataset("fashion-mnist", tmp_path, download=False)
    (tmp_path / "train-labels-idx1-ubyte.gz").write_bytes(gzip.compress(b"\x01\x02\x03\x04abcd"))
    with pytest.raises(DataError, match=r"not an IDX file \(bad magic number\)"):
        load_dataset("fashion-mnist", tmp_path, download=False)


def test_missing_data_names_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setattr("hseval.data.fashion_mnist.DEBIAN", tmp_path / "no-debian")
    monkeypatch.setattr("hseval.data.fashion_mnist.CACHE", tmp_path / "no-cache")
    monkeypatch.delenv("HSEVAL_DATA", raising=False)
    with pytest.raises(DataError, match=r"Fashion-MNIST not found \(looked in .*no-debian, .*no-cache\)"):
        load_dataset("fashion-mnist", download=False)
    # an explicit --data-root is the only place looked at: no silent fallback to other copies
    with pytest.raises(DataError, match=r"Fashion-MNIST not found \(looked in [^,]*empty\)"):
        load_dataset("fashion-mnist", tmp_path / "empty")


def test_uncompressed_idx_files_are_read_too(tmp_path):
    _fake_copy(tmp_path / "gz")
    (tmp_path / "raw").mkdir()
    for f in (tmp_path / "gz").iterdir():
        (tmp_path / "raw" / f.name[:-3]).write_bytes(gzip.decompress(f.read_bytes()))
    assert len(load_dataset("fashion-mnist", tmp_path / "raw", download=False).test) == 10


def test_preprocess_crop_is_a_shift_and_flip_mirrors():
    pre = TensorPreprocess((0.0,), (1.0,), crop_padding=2, flip=False)
    x = torch.arange(2 * 1 * 6 * 6, dtype=torch.uint8).view(2, 1, 6, 6)
    out = pre(x, train=True, generator=torch.Generator().manual_seed(1))
    padded = torch.nn.functional.pad(x.float() / 255, (2, 2, 2, 2))
    for b in range(2):  # every output is some 6×6 window of the padded image
        windows = [padded[b, :, i:i + 6, j:j + 6] for i in range(5) for j in range(5)]
        assert any(torch.equal(out[b], w) for w in windows)
    flip = TensorPreprocess((0.0,), (1.0,), flip=True)(x, train=True, generator=torch.Generator().manual_seed(0))
    for b in range(2):
        assert torch.equal(flip[b], x[b].float() / 255) or torch.equal(flip[b], x[b].flip(-1).float() / 255)
    same = [pre(x, train=True, generator=torch.Generator().manual_seed(5)) for _ in range(2)]
    assert torch.equal(*same)
    assert torch.equal(pre(x, train=False), x.float() / 255)


@needs_real
def test_debian_copy_is_not_modified(tmp_path):
    """Reading must never write next to the system's files (they are read-only for users)."""
    before = sorted(p.name for p in DEBIAN.iterdir())
    shutil.copy(DEBIAN / "t10k-labels-idx1-ubyte.gz", tmp_path)
    load_dataset("fashion-mnist")
    assert sorted(p.name for p in DEBIAN.iterdir()) == before
