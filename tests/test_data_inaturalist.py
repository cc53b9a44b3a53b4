"""iNaturalist: fake copies in the competitions' layouts (COCO-style JSON, image folders) load with
the classes in id order and the taxonomy tree; the year comes from the files or the option; a
damaged or foreign JSON is a one-line error naming the file and the entry, raised before anything
is returned. Making Better Mistakes' rule gives their iNat-19 tree, edge for edge."""

from __future__ import annotations

import json
import re

import pytest
import torch

from hseval.cli.main import main
from hseval.core.errors import ConfigError, DataError, HierarchyError
from hseval.data import load_dataset
from hseval.data.inaturalist import FILES
from hseval.tree import read_hierarchy
from hseval.tree.builders.inaturalist import YEARS, inaturalist_hierarchy
from tests.fake_datasets import INATURALIST_FILES, inaturalist_classes, write_image, write_inaturalist
from tests.helpers import FIXTURES


def _edges(tree) -> set[tuple[str, str]]:
    names = tree.node_names
    return {(names[p] if p >= 0 else tree.root_name, names[i]) for i, p in enumerate(tree.parents.tolist())}


def _edit(path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_the_module_knows_the_files_of_every_year():
    assert tuple(FILES) == YEARS == tuple(INATURALIST_FILES)
    assert all(FILES[year][:2] == INATURALIST_FILES[year] for year in YEARS)


@pytest.mark.parametrize("year", YEARS)
def test_fake_copy_loads_with_the_classes_in_id_order(tmp_path, year):
    write_inaturalist(tmp_path, year=year)
    data = load_dataset("inaturalist", tmp_path)
    names, _ = inaturalist_classes()
    assert data.class_names == names and data.hierarchy.leaf_names == tuple(names)
    assert (len(data.train), len(data.test), data.val) == (20, 10, None)
    assert data.info["year"] == year and data.info["tree_rule"] == "taxonomy"
    for split in (data.train, data.test):  # each image has its own category's label (the ids are 0..9)
        folders = [path.parent.name for path in split.paths]
        assert [int(f[:5]) if year.startswith("2021") else int(f) for f in folders] == split.labels.tolist()
    assert data.train.paths[0].is_relative_to(tmp_path / FILES[year][2])
    image, label = data.test[3]
    assert image.shape == (3, 224, 224) and image.dtype == torch.float32 and label == data.test.labels[3]


def test_taxonomy_tree_merges_chains_and_names_homonyms_by_their_parent(tmp_path):
    tree = load_dataset("inaturalist", write_inaturalist(tmp_path)).hierarchy
    morus_plant, morus_bird = "genus Morus (family Moraceae)", "genus Morus (family Sulidae)"
    assert _edges(tree) == {
        ("root", "class Magnoliopsida"), ("root", "class Aves"),
        ("class Magnoliopsida", morus_plant), ("class Magnoliopsida", "order Sapindales"),
        (morus_plant, "Morus alba"), (morus_plant, "Morus rubra"),
        ("order Sapindales", "genus Acer"), ("order Sapindales", "Rhus typhina"),
        ("genus Acer", "Acer rubrum"), ("genus Acer", "Acer saccharum"),
        ("class Aves", "family Sulidae"), ("class Aves", "genus Poecile"),
        ("family Sulidae", morus_bird), ("family Sulidae", "Sula sula"),
        (morus_bird, "Morus bassanus"), (morus_bird, "Morus serrator"),
        ("genus Poecile", "Poecile atricapillus"), ("genus Poecile", "Poecile gambeli")}
    assert tree.max_depth == 4


def test_mbm_rule_keeps_the_seven_ranks(tmp_path):
    tree = load_dataset("inaturalist", write_inaturalist(tmp_path, year="2019"), tree="mbm").hierarchy
    assert tree.nodes_per_depth == [2, 2, 2, 4, 5, 6, 10] and tree.max_depth == 7
    assert tree.path_names(tree.index("Rhus typhina")) == (
        "kingdom Plantae", "phylum Tracheophyta", "class Magnoliopsida", "order Sapindales", "family Anacardiaceae",
        "genus Rhus", "Rhus typhina")


def test_mbm_rule_gives_making_better_mistakes_inaturalist19_tree():
    """Their tree's lineages (anonymised names, leaves nat0000.. = category ids) built again by the
    rule: the same edges, up to the rank in front of each name; merged, 77 single-child nodes go."""
    theirs = read_hierarchy(FIXTURES / "hierarchies" / "inaturalist19_isa.txt")
    leaves = list(theirs.leaf_names)
    lineages = [theirs.path_names(theirs.index(leaf))[:-1] for leaf in leaves]
    ours = inaturalist_hierarchy(leaves, lineages, tree="mbm")
    assert {(p.split(" ", 1)[-1], c.split(" ", 1)[-1]) for p, c in _edges(ours)} == _edges(theirs)
    assert ours.nodes_per_depth == theirs.nodes_per_depth == [3, 4, 9, 34, 57, 72, 1010]
    merged = inaturalist_hierarchy(leaves, lineages)
    assert merged.num_nodes == ours.num_nodes - 77 and merged.num_leaves == 1010


def test_the_year_comes_from_the_files_or_the_option(tmp_path):
    write_inaturalist(tmp_path, year="2019", per_class=(1, 1))
    write_inaturalist(tmp_path, year="2021", per_class=(2, 1))
    with pytest.raises(DataError, match=r"holds the files of several iNaturalist years: 2019 \(train2019.json\), "
                                        r"2021 \(train.json\); choose one with --year YEAR .* or year=YEAR"):
        load_dataset("inaturalist", tmp_path)
    assert len(load_dataset("inaturalist", tmp_path, year="2019").train) == 10
    assert len(load_dataset("inaturalist", tmp_path, year="2021").train) == 20
    with pytest.raises(DataError, match=r"iNaturalist 2018 not found .*train2018.json, val2018.json, "
                                        r"train_val2018/\), from github.com/visipedia/inat_comp"):
        load_dataset("inaturalist", tmp_path, year="2018")


def test_a_folder_named_inaturalist_is_found_below_the_root(tmp_path):
    write_inaturalist(tmp_path / "inaturalist", year="2021-mini")
    assert load_dataset("inaturalist", tmp_path).info["year"] == "2021-mini"


@pytest.mark.parametrize(("options", "message"), [
    ({"year": "2020"}, r"year='2020' is not an iNaturalist competition hseval reads; choose one of '2018', '2019', "),
    ({"year": 2019}, r"year=2019 is not an iNaturalist competition hseval reads; choose one of '2018', '2019', "),
    ({"tree": "linnaeus"}, r"tree='linnaeus': choose taxonomy .* or mbm"),
])
def test_options_are_checked_before_any_file_is_read(tmp_path, options, message):
    with pytest.raises(ConfigError, match=message):
        load_dataset("inaturalist", tmp_path / "absent", **options)


def test_the_builder_says_where_the_taxonomy_comes_from():
    with pytest.raises(DataError, match=r"iNaturalist 2019 tree is built from the taxonomy in the competition's "
                                        r"JSON, .*pass --data-root DIR"):
        inaturalist_hierarchy(year="2019")
    with pytest.raises(HierarchyError, match=r"species 'Acer rubrum' has the lineage \('Plantae',\); give its"):
        inaturalist_hierarchy(["Acer rubrum"], [("Plantae",)])


def _category(data, name):
    return next(c for c in data["categories"] if c["name"] == name)


def _drop_class(data, name):  # no training image of that species left
    cid = _category(data, name)["id"]
    gone = {a["image_id"] for a in data["annotations"] if a["category_id"] == cid}
    data["images"] = [i for i in data["images"] if i["id"] not in gone]
    data["annotations"] = [a for a in data["annotations"] if a["image_id"] not in gone]


TRAIN, VAL = "train.json", "val.json"
DAMAGES = {  # what is done to the fake 2021 copy, and the message's key fragment
    "not-json": (lambda f: (f / TRAIN).write_text('{"images": ['), r"train.json, line 1: not valid JSON"),
    "not-utf8": (lambda f: (f / TRAIN).write_bytes(b"\xff\xfe{}"), r"train.json: file is not UTF-8 text"),
    "a-list": (lambda f: (f / TRAIN).write_text("[]"), r"train.json: holds a JSON list, not the COCO-style"),
    "no-annotations": (lambda f: (f / VAL).write_text('{"images": [], "categories": []}'),
                       r"val.json: has no 'annotations' list"),
    "no-val-json": (lambda f: (f / VAL).unlink(), r"val.json: file is missing"),
    "unknown-image": (lambda f: _edit(f / TRAIN, lambda d: d["annotations"][0].update(image_id=99999)),
                      r"train.json: annotations\[0\] is of image 99999, which is not in 'images'"),
    "no-annotation": (lambda f: _edit(f / TRAIN, lambda d: d["annotations"].pop()),
                      r"train.json: image \d+ \(train/\d{5}_\w+/train\d+\.jpg\) has no annotations \(1 such images\)"),
    "two-annotations": (lambda f: _edit(f / VAL, lambda d: d["annotations"].append({**d["annotations"][2], "id": 77})),
                        r"val.json: image \d+ \(val/.*\) has 2 annotations \(1 such images\); hseval needs one label"),
    "unknown-category": (lambda f: _edit(f / VAL, lambda d: d["annotations"][1].update(category_id=42)),
                         r"val.json: annotations\[1\] is of category 42, which is not among the categories of "
                         r"train.json"),
    "no-family": (lambda f: _edit(f / TRAIN, lambda d: _category(d, "Sula sula").pop("family")),
                  r"train.json: category 2 has no 'family'; every category needs its kingdom, phylum"),
    "empty-genus": (lambda f: _edit(f / TRAIN, lambda d: _category(d, "Sula sula").update(genus=" ")),
                    r"train.json: category 2 has no 'genus'"),
    "twice-named": (lambda f: _edit(f / TRAIN, lambda d: _category(d, "Sula sula").update(name="Acer rubrum")),
                    r"train.json: categories 0 and 2 are both named 'Acer rubrum'; the class names must be unique"),
    "category-id-twice": (lambda f: _edit(f / TRAIN, lambda d: _category(d, "Sula sula").update(id=0)),
                          r"train.json: category id 0 is listed twice"),
    "image-id-twice": (lambda f: _edit(f / TRAIN, lambda d: d["images"][1].update(id=d["images"][0]["id"])),
                       r"train.json: image id \d+ is listed twice"),
    "text-id": (lambda f: _edit(f / TRAIN, lambda d: d["images"][3].update(id="17")),
                r"train.json: images\[3\] has no integer 'id'"),
    "no-file-name": (lambda f: _edit(f / TRAIN, lambda d: d["images"][4].pop("file_name")),
                     r"train.json: images\[4\] has no 'file_name' text"),
    "dot-dot": (lambda f: _edit(f / TRAIN, lambda d: d["images"][5].update(file_name="train/../../x.jpg")),
                r"train.json: images\[5\] has file_name 'train/../../x.jpg', which leaves the dataset folder"),
    "absolute": (lambda f: _edit(f / VAL, lambda d: d["images"][0].update(file_name="/etc/passwd")),
                 r"val.json: images\[0\] has file_name '/etc/passwd', which leaves the dataset folder"),
    "backslash-dot-dot": (lambda f: _edit(f / VAL, lambda d: d["images"][0].update(file_name="..\\x.jpg")),
                          r"val.json: images\[0\] has file_name '..\\\\x.jpg', which leaves"),
    "missing-image": (lambda f: next((f / "val").rglob("*.jpg")).unlink(),
                      r"val/\d{5}_\w+/val\d+\.jpg: image file is missing \(1 of the 30 listed images are\)"),
    "val-category-renamed": (lambda f: _edit(f / VAL, lambda d: _category(d, "Acer rubrum").update(name="Acer")),
                             r"val.json: category 0 is 'Acer' \(Plantae > .* > Acer\) but 'Acer rubrum' .* in "
                             r"train.json; the two files must be of one competition"),
    "val-category-moved": (lambda f: _edit(f / VAL, lambda d: _category(d, "Sula sula").update(order="Pelecaniformes")),
                           r"val.json: category 2 is 'Sula sula' \(.* > Pelecaniformes > .*\) but 'Sula sula'"),
    "val-category-new": (lambda f: _edit(f / VAL, lambda d: d["categories"].append({**d["categories"][0], "id": 99,
                                                                                    "name": "Acer nigrum"})),
                         r"val.json: category 99 \('Acer nigrum'\) is not among the categories of train.json"),
    "empty-class": (lambda f: _edit(f / TRAIN, lambda d: _drop_class(d, "Sula sula")),
                    r"train.json: class 'Sula sula' has no training images"),
    "species-with-tab": (lambda f: [_edit(f / name, lambda d: _category(d, "Sula sula").update(name="Sula\tsula"))
                                    for name in (TRAIN, VAL)],
                         r"train.json: .*node name 'Sula\\tsula' is empty or holds a tab"),
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_copy_is_one_line_naming_the_file(tmp_path, damage):
    folder = write_inaturalist(tmp_path, year="2021")
    change, message = DAMAGES[damage]
    change(folder)
    with pytest.raises(DataError, match=message) as refused:
        load_dataset("inaturalist", tmp_path)
    assert "\n" not in str(refused.value)


def test_a_listed_image_outside_its_folder_is_not_looked_for_elsewhere(tmp_path):
    folder = write_inaturalist(tmp_path, year="2019")
    write_image(folder / "elsewhere.jpg")
    _edit(folder / "train2019.json", lambda d: d["images"][0].update(file_name=str(folder / "elsewhere.jpg")))
    with pytest.raises(DataError, match=r"which leaves the dataset folder"):
        load_dataset("inaturalist", folder)


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_data_info_without_a_copy_says_which_files_and_where_to_get_them(capsys, monkeypatch):
    monkeypatch.delenv("HSEVAL_DATA", raising=False)
    code, out, err = run(capsys, "data", "info", "inaturalist")
    assert code == 0 and err == ""
    assert "images: 2,686,843 train, 100,000 test" in out and "tree: the taxonomy, kingdom to species" in out
    assert "not built here: the iNaturalist tree is built from the taxonomy in the competition's JSON" in out
    assert re.search(r"files: not read here: iNaturalist not found \(no --data-root given.*2018: train2018.json.*"
                     r"2021: train.json, val.json, train/, val/; 2021-mini: .*github.com/visipedia/inat_comp", out)
    code, out, _ = run(capsys, "data", "info", "inaturalist", "--year", "2019")
    assert code == 0 and "iNaturalist 2019 not found" in out and "2019: train2019.json, val2019.json" in out
    assert "2021:" not in out


def test_data_info_and_hierarchy_build_read_a_copy_of_the_year_asked_for(capsys, tmp_path):
    write_inaturalist(tmp_path, year="2019", per_class=(1, 1))
    write_inaturalist(tmp_path, year="2021")
    code, _, err = run(capsys, "data", "info", "inaturalist", "--data-root", tmp_path)
    assert code == 2 and "choose one with --year YEAR" in err and len(err.strip().splitlines()) == 1
    code, out, _ = run(capsys, "data", "info", "inaturalist", "--data-root", tmp_path, "--year", "2019")
    assert code == 0 and "images: 10 train, 10 test" in out and "classes (10):" in out
    assert "hierarchy: 10 classes, 18 nodes, depth 4" in out
    code, out, _ = run(capsys, "hierarchy", "build", "inaturalist", "--data-root", tmp_path, "--year", "2021",
                       "--tree", "mbm", "--out", tmp_path / "mbm.txt")
    assert code == 0 and "(10 classes, 31 nodes, depth 7)" in out
    assert read_hierarchy(tmp_path / "mbm.txt").nodes_per_depth == [2, 2, 2, 4, 5, 6, 10]
    code, _, err = run(capsys, "hierarchy", "build", "inaturalist", "--out", tmp_path / "x.txt")
    assert code == 2 and "pass --data-root DIR" in err


def test_data_list_shows_the_options(capsys):
    code, out, _ = run(capsys, "data", "list")
    row = next(line for line in out.splitlines() if line.startswith("inaturalist "))
    assert code == 0 and row.split()[1:4] == ["2,686,843", "100,000", "10,000"]
    assert "--year YEAR" in row and "--tree" in row
