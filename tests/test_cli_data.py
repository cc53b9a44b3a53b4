"""``hseval hierarchy build | random`` and ``hseval data list | info``, wired into a local parser the
way ``hseval.cli.main`` wires them (so these tests do not depend on the front door's wiring)."""

from __future__ import annotations

import json
import re
import sys

import pytest

from hseval.cli import data, hierarchy
from hseval.cli.main import _Parser
from hseval.core.errors import DataError, HsevalError
from hseval.tree import read_hierarchy
from hseval.tree.formats.pairs import names_sidecar
from tests.fake_datasets import builder_inputs, write_cifar100, write_cub200


def main(argv: list[str]) -> int:
    parser = _Parser(prog="hseval")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    data.register(commands, hierarchy.register(commands))
    try:
        args = parser.parse_args(argv)
        return int(args.func(args) or 0)
    except HsevalError as exc:
        print(f"hseval: error: {exc}", file=sys.stderr)
        return 2


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_build_from_the_shipped_lists_writes_the_papers_pairs_file(capsys, tmp_path):
    out_file = tmp_path / "CUB200_child_parent_pairs.txt"
    code, out, _ = run(capsys, "hierarchy", "build", "cub200", "--out", out_file)
    assert code == 0 and "(200 classes, 270 nodes, depth 2)" in out
    lines = out_file.read_text().splitlines()
    assert lines[0] == "270" and len(lines) == 271
    assert names_sidecar(out_file).read_text().splitlines()[0] == "0\t001.Black_footed_Albatross"
    assert read_hierarchy(out_file).num_nodes == 270


def test_build_from_a_data_root(capsys, tmp_path):
    write_cifar100(tmp_path / "data", per_class=(1, 1))
    code, out, _ = run(capsys, "hierarchy", "build", "cifar100", "--data-root", tmp_path / "data",
                       "--out", tmp_path / "cifar.txt")
    assert code == 0 and "(100 classes, 120 nodes" in out
    assert read_hierarchy(tmp_path / "cifar.txt").leaf_names[:2] == ("apple", "aquarium_fish")


def test_random_tree_keeps_the_shape(capsys, tmp_path):
    run(capsys, "hierarchy", "build", "stanford-dogs", "--out", tmp_path / "dogs.txt")
    code, out, _ = run(capsys, "hierarchy", "random", tmp_path / "dogs.txt", "--seed", 7, "--out",
                       tmp_path / "shuffled.json")
    assert code == 0 and "seed 7" in out
    tree, shuffled = read_hierarchy(tmp_path / "dogs.txt"), read_hierarchy(tmp_path / "shuffled.json")
    assert shuffled.nodes_per_depth == tree.nodes_per_depth == [78, 120]
    assert shuffled.leaf_names == tree.leaf_names and shuffled != tree


def test_data_info_text_and_json(capsys, tmp_path):
    write_cub200(tmp_path)
    code, out, _ = run(capsys, "data", "info", "cub200", "--data-root", tmp_path)
    assert code == 0
    assert "images: 200 train, 200 test; 3×224×224" in out and "classes (200):" in out
    assert "  001.Black_footed_Albatross, 002.Laysan_Albatross" in out
    assert "hierarchy: 200 classes, 270 nodes, depth 2, nodes per depth [70, 200]" in out
    code, out, _ = run(capsys, "data", "info", "cub200", "--data-root", tmp_path, "--json")
    summary = json.loads(out)
    assert summary["train_size"] == 200 and summary["hierarchy"]["num_nodes"] == 270
    assert len(summary["class_names"]) == 200


def test_data_list_gives_every_dataset_its_sizes_classes_tree_and_options(capsys):
    """README: ``data list`` prints the datasets with their sizes, classes and tree; one row per
    registered dataset, read from the card it registers with."""
    from hseval.data import DATASETS, dataset_card

    code, out, _ = run(capsys, "data", "list")
    assert code == 0
    rows = {line.split()[0]: line for line in out.splitlines()[1:-1]}
    assert list(rows) == DATASETS.names() and out.splitlines()[0].split()[:5] == ["dataset", "train", "test",
                                                                                   "classes", "tree"]
    for name, line in rows.items():
        card = dataset_card(name)
        numbers = [f"{n:,}" for n in (card.train, card.test, card.classes) if n is not None] or ["yours"] * 3
        assert line.split()[1:4] == numbers and card.tree in line, line
    assert rows["cifar100"].split()[1:4] == ["50,000", "10,000", "100"]
    assert rows["image-folder"].endswith("--hierarchy FILE") and rows["tiny-imagenet"].endswith("--wordnet DIR")


def test_every_card_counts_the_classes_of_its_shipped_tree():
    """A dataset's card declares its classes; the tree built from the shipped class lists has as many
    (where hseval ships none, iNaturalist's, the builder says that the dataset's files give them)."""
    from hseval.data import DATASETS, dataset_card
    from hseval.tree.builders import BUILDERS

    for name in DATASETS.names():
        card = dataset_card(name)
        assert (card.classes is None) == (name not in BUILDERS), name
        if card.classes is not None and builder_inputs(name):
            with pytest.raises(DataError, match=r"pass --data-root DIR"):
                BUILDERS.get(name)()
        elif card.classes is not None:
            assert BUILDERS.get(name)().num_leaves == card.classes, name


def test_data_info_without_a_copy_says_what_hseval_knows_and_where_it_looked(capsys, monkeypatch):
    monkeypatch.delenv("HSEVAL_DATA", raising=False)
    code, out, err = run(capsys, "data", "info", "cub200")
    assert code == 0 and err == ""
    assert "images: 5,994 train, 5,794 test (the official splits)" in out and "classes (200):" in out
    assert "hierarchy: 200 classes, 270 nodes, depth 2" in out and "tree: the last word of the species" in out
    assert "files: not read here: CUB-200-2011 not found (no --data-root given" in out
    code, out, _ = run(capsys, "data", "info", "cub200", "--json")
    summary = json.loads(out)
    assert summary["train_size"] == 5994 and summary["hierarchy"]["num_nodes"] == 270 and "not found" in \
        summary["files"]


@pytest.mark.parametrize(("argv", "message"), [
    (["hierarchy", "build", "mnist", "--out", "x.txt"], r"no built-in hierarchy for 'mnist'; choose one of"),
    (["hierarchy", "build", "image-folder", "--out", "x.txt"], r"no built-in hierarchy for 'image-folder'"),
    (["hierarchy", "build", "cub200", "--wordnet", "wn", "--out", "x.txt"],
     r"--wordnet does not apply to cub200 \(its options: none\)"),
    (["data", "info", "cifar100", "--data-root", "{tmp}/nowhere"], r"CIFAR-100 not found \(looked in "),
    (["data", "info", "image-folder", "--data-root", "{tmp}"], r"image-folder needs a hierarchy file"),
    (["data", "info", "imagenet-21k"], r"unknown dataset 'imagenet-21k'; choose one of"),
    (["hierarchy", "random", "missing.txt", "--seed", "1", "--out", "y.txt"], r"missing.txt: no such file"),
    (["hierarchy", "random", "missing.txt", "--seed", "-1", "--out", "y.txt"],
     r"argument --seed: expected a non-negative integer, got -1"),
])
def test_errors_are_one_line_with_exit_code_2(capsys, tmp_path, monkeypatch, argv, message):
    monkeypatch.delenv("HSEVAL_DATA", raising=False)
    code, out, err = run(capsys, *[a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("hseval: error: ")
    assert re.search(message, err), err
