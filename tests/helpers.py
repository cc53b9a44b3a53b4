"""Helpers shared by the tests: small trees (the paper's Appendix A, Fashion-MNIST, an unbalanced
one), random trees and a hypothesis strategy for them, a small Fashion-MNIST-like dataset in the
real file format, and ``reseal`` for mutation tests of evaluated runs. Fixtures stay in
``conftest.py``; test modules import these from here."""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import strategies as st

from hseval.train.config import load_config
from hseval.tree.hierarchy import Hierarchy

FIXTURES = Path(__file__).parent / "fixtures"


def appendix_a() -> Hierarchy:
    """The paper's Appendix A: fruit -> {apple, orange}, animal -> {cat, dog}."""
    edges = [("root", "fruit"), ("root", "animal"), ("fruit", "apple"), ("fruit", "orange"),
             ("animal", "cat"), ("animal", "dog")]
    return Hierarchy.from_edges(edges, classes=["apple", "orange", "cat", "dog"])


def fashion_tree() -> Hierarchy:
    from hseval.tree.builders.fashion_mnist import fashion_mnist_hierarchy

    return fashion_mnist_hierarchy()


def unbalanced() -> Hierarchy:
    """Leaves at depths 1, 2 and 4, and a super-class with a single child."""
    return Hierarchy.from_paths([("a", "x"), ("a", "b", "c", "y"), ("z",), ("a", "b", "w"), ("a", "b", "c", "v")])


def random_tree(num_leaves: int, seed: int, *, max_depth: int = 4, branching: float = 0.5) -> Hierarchy:
    """A random tree with leaves at varying depths (every super-class has >= 1 child)."""
    rng = np.random.default_rng(seed)
    parents = []
    supers: list[tuple[int, int]] = []  # (index among super-classes, depth)
    for k in range(max(1, int(num_leaves * branching))):
        candidates = [s for s in supers if s[1] < max_depth - 1]
        if candidates and rng.random() < 0.7:
            parent, depth = candidates[rng.integers(len(candidates))]
            supers.append((k, depth + 1))
            parents.append(parent)
        else:
            supers.append((k, 1))
            parents.append(-1)
    n_super = len(supers)
    leaf_parent = rng.integers(-1, n_super, size=num_leaves)
    parent_of = {j: (int(p) + num_leaves if p >= 0 else -1) for j, p in enumerate(leaf_parent)}
    parent_of.update({num_leaves + k: (p + num_leaves if p >= 0 else -1) for k, p in enumerate(parents)})
    while True:  # prune super-classes without children until none is left
        with_child = {p for p in parent_of.values() if p >= 0}
        childless = [n for n in parent_of if n >= num_leaves and n not in with_child]
        if not childless:
            break
        for n in childless:
            del parent_of[n]
    keep = sorted(parent_of)
    remap = {old: new for new, old in enumerate(keep)}
    names = [f"c{n}" if n < num_leaves else f"s{n}" for n in keep]
    return Hierarchy(names, [remap[parent_of[n]] if parent_of[n] >= 0 else -1 for n in keep], num_leaves)


@st.composite
def trees(draw, max_leaves: int = 30) -> Hierarchy:
    num_leaves = draw(st.integers(1, max_leaves))
    seed = draw(st.integers(0, 2**31 - 1))
    return random_tree(num_leaves, seed, max_depth=draw(st.integers(1, 5)), branching=draw(st.floats(0.1, 1.0)))


def write_fashion_like(folder: Path, *, n_train: int = 600, n_test: int = 200, seed: int = 0) -> Path:
    """A small learnable dataset in Fashion-MNIST's real on-disk format (gzipped IDX): class c is a
    stripe pattern (period and orientation depend on c) on noise, so a few steps lower the loss."""
    import gzip

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    grid = np.arange(28)
    for split, n in (("train", n_train), ("t10k", n_test)):
        labels = (np.arange(n) % 10).astype(np.uint8)
        rng.shuffle(labels)
        images = rng.integers(0, 80, (n, 28, 28), dtype=np.uint8)
        for i, c in enumerate(labels):
            period = 2 + int(c) % 5
            stripes = (grid % period) < period / 2
            mask = stripes[:, None] if c < 5 else stripes[None, :]
            images[i] = np.where(np.broadcast_to(mask, (28, 28)), 230, images[i])
        for kind, array, magic in (("images-idx3", images, b"\x00\x00\x08\x03"),
                                   ("labels-idx1", labels, b"\x00\x00\x08\x01")):
            header = magic + b"".join(int(s).to_bytes(4, "big") for s in array.shape)
            (folder / f"{split}-{kind}-ubyte.gz").write_bytes(gzip.compress(header + array.tobytes()))
    return folder


DATA_CHANGES = {"pixels": False, "a label": False, "an image added": False, "an image removed": False,
                "moved": True}
"""Each way the data of a Fashion-MNIST-like folder changes (:func:`changed_fashion_like`), and
whether it is still the same data: other pixels under the same count and labels, one label, one
training image more or fewer are other data; the same files under another root are the same."""


def changed_fashion_like(source: Path, target: Path, change: str) -> Path:
    """A copy at ``target`` of the Fashion-MNIST-like folder ``source`` whose training split is
    changed as ``change`` (a key of :data:`DATA_CHANGES`) says; "moved": the same files."""
    import gzip

    shutil.copytree(source, target)
    if change == "moved":
        return target
    arrays = {}
    for kind in ("images-idx3", "labels-idx1"):
        raw = gzip.decompress((target / f"train-{kind}-ubyte.gz").read_bytes())
        dims = raw[3]
        shape = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims)]
        arrays[kind] = np.frombuffer(raw[4 + 4 * dims:], dtype=np.uint8).reshape(shape).copy()
    images, labels = arrays["images-idx3"], arrays["labels-idx1"]
    if change == "pixels":  # the same count and labels
        images[0] = 255 - images[0]
    elif change == "a label":
        labels[0] = (labels[0] + 1) % 10
    elif change == "an image added":
        images, labels = np.concatenate([images, images[:1]]), np.concatenate([labels, labels[:1]])
    elif change == "an image removed":
        images, labels = images[:-1], labels[:-1]
    else:
        raise ValueError(f"unknown change {change!r}")
    for kind, array, magic in (("images-idx3", images, b"\x00\x00\x08\x03"),
                               ("labels-idx1", labels, b"\x00\x00\x08\x01")):
        header = magic + b"".join(int(n).to_bytes(4, "big") for n in array.shape)
        (target / f"train-{kind}-ubyte.gz").write_bytes(gzip.compress(header + array.tobytes()))
    return target


def prediction_file(path: Path, classes: int, samples: int, *, seed: int = 0, dim: int = 32) -> int:
    """A tree (``random_tree``, written to ``path.with_suffix(".txt")``) and a prediction file as
    ``np.savez`` writes it (``path.with_suffix(".npz")``): each class vector its parent's plus noise,
    each embedding its class's vector plus noise, float32 logits of their nearest-vector scores — so
    about 60 % top-1 and most mistakes inside a super-class, as a trained model makes them. Returns
    the logits' size in bytes."""
    from hseval.tree import write_hierarchy

    tree = random_tree(classes, seed, branching=0.1)
    write_hierarchy(tree, path.with_suffix(".txt"))
    rng = np.random.default_rng(seed)
    vectors = np.zeros((tree.num_nodes + 1, dim))  # the last row: the root
    parents = np.where(tree.parents >= 0, tree.parents, tree.num_nodes)
    for depth in range(1, tree.max_depth + 1):
        nodes = tree.nodes_at_depth(depth)
        vectors[nodes] = vectors[parents[nodes]] + rng.normal(size=(len(nodes), dim))
    weights = vectors[:classes]
    targets = rng.integers(0, classes, samples)
    embeddings = weights[targets] + 2.0 * rng.normal(size=(samples, dim))
    logits = (embeddings @ weights.T - 0.5 * (weights ** 2).sum(axis=1)).astype(np.float32)
    np.savez(path.with_suffix(".npz"), targets=targets, logits=logits, embeddings=embeddings.astype(np.float32),
             class_weights=weights.astype(np.float32))
    return logits.nbytes


def built_once(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """``name``'s folder, built by ``build(folder)`` once per test run and shared by every xdist
    worker: the workers' temporary folders share a parent, where the first worker to take the lock
    builds and the others wait, then read (pytest-xdist's recipe for session fixtures). A build
    that failed leaves no ``.built`` stamp, so the next worker tries again. Tests treat the folder
    as read-only: copy it to change it. Without xdist the folder is the run's own temporary folder:
    its parent is shared by every earlier run, whose folders an older hseval wrote."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = shared / name
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (shared / f"{name}.built").exists():
            shutil.rmtree(folder, ignore_errors=True)
            build(folder)
            (shared / f"{name}.built").touch()
    return folder


def reseal(folder: Path) -> Path:
    """Record the current checksums of an evaluated run's files in its marker (a new marker of an
    evaluation where it has none), as a user who knows the format would after editing one:
    reaches the checks behind the checksums."""
    import hashlib

    from hseval.io import evaluation_format as eval_format
    from hseval.io.folders import MARKER, new_marker, read_marker
    from hseval.io.records import write_record

    files = {name: hashlib.sha256((folder / name).read_bytes()).hexdigest()
             for name in eval_format.FILES if (folder / name).is_file()}
    marker = read_marker(folder) or new_marker("evaluation", source=str(folder), inputs={},
                                               schema_version=eval_format.SCHEMA_VERSION, files={})
    write_record(folder / MARKER, marker.model_copy(update={"files": files}))
    return folder


def interrupted_after_last_epoch(run: Path) -> Path:
    """A finished run as its training leaves it when killed after its last epoch, before run.json:
    its training state with the weights (a finished run's names its model.safetensors instead), no
    run.json, no model.safetensors."""
    import torch

    from hseval.io.run_format import MODEL_FILE, STATE_FILE, load_train_state

    state = load_train_state(run)
    state.pop("model_sha256", None)
    torch.save(state, run / STATE_FILE)
    for name in ("run.json", MODEL_FILE):
        (run / name).unlink()
    return run


def flat_tree(n: int = 3) -> Hierarchy:
    """Every class a child of the root: no super-class level."""
    return Hierarchy([f"c{i}" for i in range(n)], [-1] * n, n)


def path(tree: Hierarchy, node: int) -> list[int]:
    """Brute force: walk the parent links up to the root."""
    out = []
    while node >= 0:
        out.append(int(node))
        node = tree.parents[node]
    return out[::-1]


def quick(root, head="plain", *extra):
    return load_config("fashion-mnist", [f"data.root={root}", f"model.head={head}", "data.train_subset=null",
                                         "data.batch_size=32", "engine.progress=false", *extra])


def image_folder(tmp_path, classes=("husky", "beagle", "tabby")):
    """A user's own image folders (train/ and test/, one folder per class) and a paths tree file."""
    from tests.fake_datasets import write_image  # it reads FIXTURES from here

    for split in ("train", "test"):
        for name in classes:
            write_image(tmp_path / "data" / split / name / "0.jpg")
            write_image(tmp_path / "data" / split / name / "1.png")
    (tmp_path / "data" / "train" / "husky" / "notes.txt").write_text("not an image")
    (tmp_path / "tree.txt").write_text("animal/dog/husky\nanimal/dog/beagle\nanimal/cat/tabby\n")
    return tmp_path / "data", tmp_path / "tree.txt"


def read_rows(got) -> np.ndarray:
    """Every per-sample matrix of a read prediction file (:class:`~hseval.io.prediction_format.Rows`,
    whose values are checked as they are read); the scores."""
    for rows in (got.embeddings, *got.level_scores.values()):
        if rows is not None:
            np.asarray(rows)
    return np.asarray(got.scores)


def read_checked(path, tree, **options):
    """:func:`~hseval.io.prediction_format.read_predictions` with every row read, so that a damaged
    value is refused here as ``hseval evaluate`` refuses it."""
    from hseval.io.prediction_format import read_predictions

    got = read_predictions(path, tree, **options)
    read_rows(got)
    return got


LIGHT_BACKBONES = ("small-cnn", "resnet18")
"""The backbones the fast lane builds; the others (ResNet-50, the DenseNets: seconds each on a CPU)
are checked in the full suite."""


def by_weight(*values: str, backbone: str) -> pytest.param:
    """``values`` as one parameter set, ``slow`` when ``backbone`` is not one of :data:`LIGHT_BACKBONES`."""
    return pytest.param(*values, marks=() if backbone in LIGHT_BACKBONES else pytest.mark.slow)


FAST_LANE = False
"""True under ``pytest -m "not slow"`` (set by ``tests/conftest.py`` before the test modules load)."""


def examples(n: int) -> int:
    """A property test's ``max_examples``: ``n`` in the full suite, a tenth of it (at least 5) in the
    fast lane, as Hypothesis's own advice has a quick profile for development and the full one for CI."""
    return max(5, n // 10) if FAST_LANE else n


def thinned(items: list) -> list:
    """A mutation test's cases: all of them in the full suite, every tenth in the fast lane."""
    return items[::10] if FAST_LANE else items
