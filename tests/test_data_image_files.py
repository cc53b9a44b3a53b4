"""CUB-200, Stanford Cars, Stanford Dogs and image folders: fake copies in the real layouts load
through the real code with the paper's trees; missing or broken data is a one-line error."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.io
import torch

from hseval.core.errors import ConfigError, DataError
from hseval.data import load_dataset
from hseval.tree import read_hierarchy
from tests.fake_datasets import (
    fixture_rows,
    write_cub200,
    write_image,
    write_stanford_cars,
    write_stanford_dogs,
)
from tests.helpers import image_folder

WRITERS = {"cub200": write_cub200, "stanford-cars": write_stanford_cars, "stanford-dogs": write_stanford_dogs}
OFFICIAL = {"cub200": ("cub200_classes.txt", " "), "stanford-cars": ("stanford_cars_classes.txt", "\t"),
            "stanford-dogs": ("stanford_dogs_classes.txt", "\t")}


@pytest.mark.parametrize(("name", "leaves", "nodes"), [
    ("cub200", 200, 270), ("stanford-cars", 196, 205), ("stanford-dogs", 120, 198)])
def test_fake_copy_loads_with_the_papers_tree(tmp_path, name, leaves, nodes):
    WRITERS[name](tmp_path, per_class=(2, 1))
    data = load_dataset(name, tmp_path)
    list_file, sep = OFFICIAL[name]
    assert data.class_names == [row[1] for row in fixture_rows(list_file, sep=sep)]
    assert (len(data.train), len(data.test)) == (2 * leaves, leaves)
    assert np.bincount(data.train.labels).tolist() == [2] * leaves
    tree = data.hierarchy
    assert (tree.num_leaves, tree.num_nodes, tree.max_depth) == (leaves, nodes, 2)
    assert list(tree.leaf_names) == data.class_names
    assert (data.image_size, data.channels, data.mean) == (224, 3, (0.485, 0.456, 0.406))
    image, label = data.test[leaves - 1]
    assert image.shape == (3, 224, 224) and image.dtype == torch.float32 and label == leaves - 1
    assert data.train[0][0].shape == (3, 224, 224)


def test_cub_groups_match_the_published_derivation(tmp_path):
    write_cub200(tmp_path)
    tree = load_dataset("cub200", tmp_path / "CUB_200_2011").hierarchy
    expected = {row[1]: row[3] for row in fixture_rows("derived_cub200_name_suffix_groups.tsv")}
    assert {tree.node_names[j]: tree.node_names[tree.parents[j]] for j in range(200)} == expected
    assert tree.node_names[tree.parents[tree.index("003.Sooty_Albatross")]] == "Albatross"


@pytest.mark.parametrize(("name", "remove", "message"), [
    ("cub200", "CUB_200_2011/train_test_split.txt", r"train_test_split.txt: file is missing; the CUB-200-2011 "
                                                    r"folder .* is incomplete"),
    ("cub200", "CUB_200_2011/images", r"CUB_200_2011/images: folder is missing"),
    ("stanford-cars", "stanford_cars/cars_test_annos_withlabels.mat",
     r"cars_test_annos_withlabels.mat: file is missing \(also looked in .*devkit\)"),
    ("stanford-cars", "stanford_cars/devkit/cars_train_annos.mat", r"devkit/cars_train_annos.mat: file is missing"),
    ("stanford-dogs", "stanford_dogs/test_list.mat", r"test_list.mat: file is missing"),
])
def test_missing_file_is_named(tmp_path, name, remove, message):
    WRITERS[name](tmp_path)
    path = tmp_path / remove
    if path.is_dir():
        import shutil

        shutil.rmtree(path)
    else:
        path.unlink()
    with pytest.raises(DataError, match=message):
        load_dataset(name, tmp_path)


def test_missing_dataset_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setenv("HSEVAL_DATA", str(tmp_path / "env"))
    # an explicit --data-root is the only place looked at
    with pytest.raises(DataError, match=r"^CUB-200-2011 not found \(looked in .*mine/CUB_200_2011, [^,]*mine\); "
                                        r"pass --data-root DIR, the CUB_200_2011/"):
        load_dataset("cub200", tmp_path / "mine")
    with pytest.raises(DataError, match=r"^CUB-200-2011 not found \(looked in .*env/CUB_200_2011, [^,]*env\)"):
        load_dataset("cub200")


def test_labels_out_of_range(tmp_path):
    folder = write_cub200(tmp_path)
    labels = folder / "image_class_labels.txt"
    labels.write_text(labels.read_text().replace("\n1 1\n", "\n1 201\n", 1).replace("1 1\n", "1 201\n", 1))
    with pytest.raises(DataError, match=r"image_class_labels.txt: label 201 is out of range 1\.\.200"):
        load_dataset("cub200", tmp_path)
    folder = write_stanford_dogs(tmp_path)
    mat = scipy.io.loadmat(folder / "train_list.mat")
    mat["labels"][3, 0] = 121
    scipy.io.savemat(folder / "train_list.mat", {k: v for k, v in mat.items() if not k.startswith("__")})
    with pytest.raises(DataError, match=r"train_list.mat: label 121 is out of range 1\.\.120"):
        load_dataset("stanford-dogs", tmp_path)


def test_cars_label_out_of_range_and_unknown_class(tmp_path):
    folder = write_stanford_cars(tmp_path)
    mat = scipy.io.loadmat(folder / "cars_test_annos_withlabels.mat")
    mat["annotations"][0, 5]["class"] = np.uint8(197)
    scipy.io.savemat(folder / "cars_test_annos_withlabels.mat", {"annotations": mat["annotations"]})
    with pytest.raises(DataError, match=r"cars_test_annos_withlabels.mat: label 197 is out of range 1\.\.196"):
        load_dataset("stanford-cars", tmp_path)
    folder = write_stanford_cars(tmp_path / "again")
    meta = scipy.io.loadmat(folder / "devkit" / "cars_meta.mat")
    meta["class_names"][0, 0] = np.array(["Flying Car 2031"])
    scipy.io.savemat(folder / "devkit" / "cars_meta.mat", {"class_names": meta["class_names"]})
    with pytest.raises(DataError, match=r"cars_meta.mat: Stanford Cars class 'Flying Car 2031' is not in the model"):
        load_dataset("stanford-cars", folder)


def test_damaged_mat_file_and_missing_field(tmp_path):
    folder = write_stanford_cars(tmp_path)
    (folder / "devkit" / "cars_meta.mat").write_bytes(b"MATLAB 5.0 MAT-file, garbage")
    with pytest.raises(DataError, match=r"cars_meta.mat: not a readable MATLAB file \(.*download it again$"):
        load_dataset("stanford-cars", tmp_path)
    folder = write_stanford_dogs(tmp_path)
    scipy.io.savemat(folder / "test_list.mat", {"files": np.zeros(3)})
    with pytest.raises(DataError, match=r"test_list.mat: no variable 'file_list' \(found: files\)"):
        load_dataset("stanford-dogs", tmp_path)


def test_missing_and_corrupt_images(tmp_path):
    folder = write_stanford_dogs(tmp_path)
    victim = next((folder / "Images" / "n02085620-Chihuahua").iterdir())
    victim.unlink()
    with pytest.raises(DataError, match=r"n02085620-Chihuahua/.*\.jpg: image file is missing \(1 of the 120 listed"):
        load_dataset("stanford-dogs", tmp_path)
    write_image(victim).write_bytes(b"not a jpeg")
    data = load_dataset("stanford-dogs", tmp_path)  # loading decodes nothing: the damage shows when read
    index = data.train.paths.index(victim)
    with pytest.raises(DataError, match=r"n02085620-Chihuahua/.*\.jpg: corrupt or unreadable image"):
        data.train[index]


def test_dogs_extra_class_folder_would_shift_labels(tmp_path):
    folder = write_stanford_dogs(tmp_path)
    write_image(folder / "Images" / "n02085000-Wolf" / "a.jpg")
    with pytest.raises(DataError, match=r"train_list.mat: n02085620-Chihuahua/.* has label 1 \(n02085000-Wolf\) but "
                                        r"lies in another folder"):
        load_dataset("stanford-dogs", tmp_path)


# ------------------------------------------------------------------ image-folder


def test_image_folder_orders_classes_by_folder_name(tmp_path):
    root, tree_file = image_folder(tmp_path)
    data = load_dataset("image-folder", root, hierarchy=tree_file)
    assert data.class_names == ["beagle", "husky", "tabby"] and list(data.hierarchy.leaf_names) == data.class_names
    assert data.hierarchy.path_names(1) == ("animal", "dog", "husky")
    assert (len(data.train), len(data.test)) == (6, 6) and data.train.labels.tolist() == [0, 0, 1, 1, 2, 2]
    assert data.test[5][0].shape == (3, 224, 224)
    from_file = read_hierarchy(tree_file)
    assert {data.hierarchy.path_names(j) for j in range(3)} == {from_file.path_names(j) for j in range(3)}


def test_image_folder_errors(tmp_path):
    root, tree_file = image_folder(tmp_path)
    with pytest.raises(ConfigError, match=r"image-folder needs a hierarchy file .* pass --hierarchy FILE"):
        load_dataset("image-folder", root)
    write_image(root / "train" / "poodle" / "0.jpg")
    with pytest.raises(DataError, match=r"train/poodle: class folder 'poodle' is not a leaf of the hierarchy "
                                        r".*tree.txt \(1 such folders\)"):
        load_dataset("image-folder", root, hierarchy=tree_file)
    (root / "train" / "poodle" / "0.jpg").unlink()
    tree_file.write_text(tree_file.read_text() + "animal/dog/poodle\n")
    with pytest.raises(DataError, match=r"train/poodle: class folder holds no images"):
        load_dataset("image-folder", root, hierarchy=tree_file)
    (root / "train" / "poodle").rmdir()
    with pytest.raises(DataError, match=r"tree.txt: leaf 'poodle' has no class folder in .*train"):
        load_dataset("image-folder", root, hierarchy=tree_file)
    with pytest.raises(DataError, match=r"nowhere: no such folder"):
        load_dataset("image-folder", tmp_path / "nowhere", hierarchy=tree_file)


@pytest.mark.slow  # trains and evaluates a run (224-pixel images): the full suite's
def test_image_folder_trains_and_evaluates_end_to_end(tmp_path):
    """A user's own folders and tree through train-all, evaluate and report (small images)."""
    from hseval.cli.main import main

    root, tree_file = image_folder(tmp_path)
    runs, out = tmp_path / "runs", tmp_path / "eval"
    assert main(["train-all", "--dataset", "image-folder", "--data-root", str(root), "--hierarchy", str(tree_file),
                 "--heads", "plain,riemann", "--backbone", "small-cnn", "--recipe", "paper", "--quiet",
                 "--set", "optim.epochs=1", "--set", "data.batch_size=2", "--set", "data.workers=0",
                 "--set", "engine.threads=1", "--out", str(runs)]) == 0
    assert main(["evaluate", str(runs), "--projections", "none", "--quiet", "--out", str(out)]) == 0
    assert main(["report", str(out)]) == 0
    assert (out / "riemann" / "metrics.json").is_file() and (out / "report.html").is_file()


def test_a_subset_of_a_split_keeps_its_samples_in_the_order_asked(tmp_path):
    """``subset`` (data.test_subset, evaluate --subset) of a file split and of an in-memory split:
    the same images and labels as indexing the whole split."""
    from hseval.data.base import TensorImages, TensorPreprocess

    data, tree = image_folder(tmp_path)
    files = load_dataset("image-folder", data, hierarchy=str(tree)).test
    part = files.subset(np.array([3, 0]))
    assert part.paths == [files.paths[3], files.paths[0]] and list(part.labels) == [files.labels[3], files.labels[0]]
    torch.testing.assert_close(part[1][0], files[0][0])
    images = torch.arange(4 * 2 * 2, dtype=torch.uint8).reshape(4, 1, 2, 2)
    memory = TensorImages(images, np.array([0, 1, 0, 1]), TensorPreprocess((0.0,), (1.0,)), train=False)
    part = memory.subset(np.array([2, 1]))
    assert torch.equal(part.images, images[[2, 1]]) and list(part.labels) == [0, 1]
