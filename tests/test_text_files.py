"""Every text file a user gives reads the same with a byte-order mark in front (as Windows editors
save UTF-8) as without: trees in each format, ``--classes`` lists, prediction CSVs, recipes, a run's
``run.json``, a dataset's annotation files. One decoder reads them all (``hseval.core.fileio.decode``)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from hseval.cli.main import main
from hseval.data.folders import read_lines
from hseval.io.prediction_format import read_class_list, read_predictions
from hseval.io.run_format import read_run_meta, save_run
from hseval.nn.model import build_model
from hseval.train.config import load_config
from hseval.tree import read_hierarchy, write_hierarchy
from hseval.tree.formats import FORMATS
from tests.helpers import appendix_a, fashion_tree, read_rows

BOM = b"\xef\xbb\xbf"
TREE = fashion_tree()


def with_bom(path: Path) -> Path:
    """A copy of ``path`` with a byte-order mark in front."""
    marked = path.with_name("bom-" + path.name)
    marked.write_bytes(BOM + path.read_bytes())
    return marked


def _tree(fmt: str) -> Callable[[Path], tuple[Path, Callable[[Path], object]]]:
    def build(folder: Path):
        write_hierarchy(appendix_a(), folder / "tree.txt", format=fmt)  # names every format holds
        for companion in folder.glob("tree.txt.*"):  # the pairs format's names file: marked too
            (folder / ("bom-" + companion.name)).write_bytes(BOM + companion.read_bytes())
        return folder / "tree.txt", lambda p: read_hierarchy(p).to_dict()
    return build


def _classes(folder: Path):
    path = folder / "classes.txt"
    path.write_text("".join(f"{c}\n" for c in reversed(TREE.leaf_names)), encoding="utf-8")
    return path, lambda p: read_class_list(p, TREE).tolist()


def _csv(folder: Path):
    path = folder / "p.csv"
    rows = "".join(f"{TREE.leaf_names[i % 10]},{','.join(str(float(i % 10 == j)) for j in range(10))}\n"
                   for i in range(20))
    path.write_text("target," + ",".join(f"prob_{j}" for j in range(10)) + "\n" + rows, encoding="utf-8")
    return path, lambda p: read_rows(read_predictions(p, TREE)).tolist()


def _recipe(folder: Path):
    path = folder / "recipe.yaml"
    path.write_text("optim:\n  epochs: 3\n  lr: 0.05\n", encoding="utf-8")
    return path, lambda p: load_config(str(p)).model_dump(exclude={"recipe"})


def _annotations(folder: Path):
    path = folder / "classes.txt"
    path.write_text("1 001.Black_footed_Albatross\n2 002.Laysan_Albatross\n", encoding="utf-8")
    return path, read_lines




BUILDERS = {**{f"tree ({fmt})": _tree(fmt) for fmt in FORMATS}, "--classes": _classes, "prediction CSV": _csv,
            "recipe": _recipe, "dataset annotations": _annotations}


@pytest.mark.parametrize("kind", BUILDERS)
def test_a_byte_order_mark_changes_nothing(kind, tmp_path):
    path, read = BUILDERS[kind](tmp_path)
    assert read(with_bom(path)) == read(path)


def test_a_run_json_saved_with_a_byte_order_mark_loads(tmp_path):
    spec = {"backbone": {"name": "small-cnn", "config": {"in_channels": 1, "image_size": 28}},
            "head": {"name": "plain", "config": {}}}
    run = save_run(tmp_path / "run", build_model(spec, TREE), {"dataset": {"name": "fashion-mnist",
                                                                          "class_names": list(TREE.leaf_names)}})
    marked = Path(shutil.copytree(run, tmp_path / "bom-run"))
    (marked / "run.json").write_bytes(BOM + (run / "run.json").read_bytes())
    assert read_run_meta(marked) == read_run_meta(run)


def test_a_classes_list_with_a_byte_order_mark_is_evaluated(tmp_path, capsys):
    """The example of the issue: ``evaluate --predictions ... --classes`` with a BOM in the list."""
    write_hierarchy(TREE, tmp_path / "tree.json")
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "p.npz", targets=np.arange(20) % 10, logits=rng.normal(size=(20, 10)))
    path, _ = _classes(tmp_path)
    outs = []
    for classes in (path, with_bom(path)):
        out = tmp_path / f"ev-{classes.stem}"
        assert main(["evaluate", "--predictions", str(tmp_path / "p.npz"), "--hierarchy", str(tmp_path / "tree.json"),
                     "--classes", str(classes), "--projections", "none", "--out", str(out)]) == 0, \
            capsys.readouterr().err
        outs.append(json.loads((out / "p" / "metrics.json").read_text())["top1"])
    assert outs[0] == outs[1]
