"""The paper's tables beside the runs: the shipped numbers are the paper's (checked against an
excerpt of its LaTeX), cells are compared only where the recipe matches, and say why otherwise."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from hseval.io.results import load_evaluation
from hseval.reporting.paper_tables import paper_cells, paper_table, to_latex, to_markdown, tree_kind
from hseval.tree.builders import random_hierarchy
from hseval.tree.hierarchy import Hierarchy

ROOT = Path(__file__).parents[1]
EXCERPT = Path(__file__).parent / "fixtures" / "paper_table2.tex"
EXCERPTS = Path(__file__).parent / "fixtures" / "paper_tables_3_8.tex"


def _load(name: str):
    """A script of scripts/ as a module (registered: dataclasses look their module up)."""
    import sys

    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _shipped(table: str) -> dict[tuple, dict]:
    return {(c["row"], c["column"]): c for c in paper_cells() if c["table"] == table}


def test_shipped_numbers_are_the_papers():
    cells = paper_cells()
    assert len(cells) == 100 + 20 + 6 + 8 + 8 + 55  # Tables 1–2, 3 (4 columns), 4, 5, 6, 8 (11 decays)
    t2, t3, t8 = _shipped("Table 2"), _shipped("Table 3"), _shipped("Table 8")
    assert t2["CIFAR100 / ResNet-18", "plain"]["percent"] == 69.47
    assert t2["CIFAR100 / ResNet-18", "riemann"]["percent"] == 71.89
    assert t2["Tiny-ImNet / DenseNet-161", "manifold"]["percent"] == 68.95
    assert t2["Tiny-ImNet / ResNet-18", "riemann"]["radius_decay"] == 0.9
    assert _shipped("Table 1")["CUB200 / ResNet-50", "multitask"]["cell"] == "Table 1, CUB200 / ResNet-50 / multitask"
    cub = t3["CUB200", "riemann"]
    assert (cub["percent"], cub["std"], cub["seeds"], cub["radius_decay"]) == (61.62, 0.35, 6, 0.5)
    assert t3["Cars", "hyperbolic, lr 0.01"]["std"] == 16.54 and t3["Cars", "hyperbolic, lr 0.01"]["lr"] == 0.01
    assert t3["CIFAR-10", "riemann"]["dataset"] == "cifar100" and "CIFAR-10" in t3["CIFAR-10", "riemann"]["note"]
    assert _shipped("Table 4")["Cars", "riemann-learnable-radius"]["percent"] == 82.40
    assert _shipped("Table 5")["CUB200", "manifold"]["tree"] == "random"
    assert _shipped("Table 6")["Cars", "manifold"]["metric"] == "superclass"
    assert t8["0.90", "Tiny-ImageNet"]["percent"] == 64.16 and t8["0.90", "Tiny-ImageNet"]["radius_decay"] == 0.9


@pytest.mark.parametrize("excerpt, tables", [
    (EXCERPT, ("Table 2",)), (EXCERPTS, ("Table 3", "Table 4", "Table 5", "Table 6", "Table 8"))])
def test_the_parser_reads_the_papers_text(excerpt, tables):
    """Excerpts of the paper's LaTeX parse to exactly the shipped cells (bold and gray marks removed)."""
    module = _load("paper_numbers")
    parsed = module.parse(excerpt.read_text(), [s for s in module.SPECS if s.table in tables])
    assert parsed == [c for c in paper_cells() if c["table"] in tables]
    with pytest.raises(SystemExit, match="Table 2 .*cannot read 'n/a'"):
        module.parse(EXCERPT.read_text().replace("69.47", "n/a"), [module.SPECS[1]])


def _as(run, *, dataset, backbone, epochs=300, batch=64, lr=0.1, decay=0.5, top1=None, seed=0, name=None,
        head=None, tree_file=None, hierarchy=None, parent_acc=None):
    training = {"optim": {"epochs": epochs, "lr": lr}, "data": {"batch_size": batch, "hierarchy": tree_file},
                "model": {"head_options": {"radius_decay": decay}}}
    metrics = {**run.metrics, "dataset": dataset, "backbone": backbone, "training": training, "seed": seed,
               "top1": run.metrics["top1"] if top1 is None else top1, "head": head or run.head}
    if parent_acc is not None:
        metrics["superclass_acc_from_levels"] = {str(run.hierarchy.max_depth - 1): parent_acc}  # the parents
    return dataclasses.replace(run, name=name or run.name, metrics=metrics,
                               hierarchy=run.hierarchy if hierarchy is None else hierarchy)


def test_cells_are_compared_only_under_the_papers_recipe(evaluated):
    runs = {r.name: r for r in load_evaluation(evaluated).runs}
    table = paper_table([
        _as(runs["plain"], dataset="cifar100", backbone="resnet18", top1=0.70, name="p0"),
        _as(runs["plain"], dataset="cifar100", backbone="resnet18", top1=0.72, seed=1, name="p1"),
        _as(runs["riemann"], dataset="cifar100", backbone="resnet50", epochs=2),
        _as(runs["multitask"], dataset="fashion-mnist", backbone="small-cnn")])
    main = table[table["table"] == "Tables 1–2"].set_index("head")
    assert set(table["table"]) == {"Tables 1–2"}  # no ResNet-18 ablation run, no other table
    plain = main.loc["plain"]
    assert (plain["ours"], plain["seeds"], plain["paper"]) == (pytest.approx(71.0), 2, 69.47)
    assert plain["difference"] == pytest.approx(71.0 - 69.47) and plain["std"] == pytest.approx(1.4142, rel=1e-3)
    riemann = main.loc["riemann"]
    assert riemann["paper"] == 73.97 and riemann["difference"] != riemann["difference"]  # not compared
    assert "recipe differs: epochs 2 (paper 300)" in riemann["note"]
    assert main.loc["multitask", "note"] == "no matching paper cell (dataset, backbone or setting)"
    markdown = to_markdown(table)
    assert "| cifar100 / resnet18 | 71.00 ± 1.41 (paper 69.47, +1.53) |" in markdown
    assert "(paper 73.97, not compared)" in markdown
    assert "## Table 8: Radius decay" in markdown and "_No run fills it: it takes ResNet-18 riemann runs" in markdown
    latex = to_latex(table)
    assert r"71.00 $\pm$ 1.41 (paper 69.47, +1.53)" in latex and r"\begin{tabular}" in latex
    assert "Table 8" not in latex  # only the tables runs fill


def test_ablation_runs_land_in_their_tables(evaluated):
    """ResNet-18 runs reach Tables 3–8 by what they were trained with: seeds, the hyperbolic head's lr,
    a random tree, the radius decay; Table 6 reads the parent level of the head's own scores."""
    runs = {r.name: r for r in load_evaluation(evaluated).runs}
    riemann = [_as(runs["riemann"], dataset="stanford-cars", backbone="resnet18", top1=t, seed=s, name=f"r{s}",
                   parent_acc=0.9) for s, t in enumerate((0.83, 0.84))]
    table = paper_table([
        *riemann,
        _as(runs["riemann"], dataset="stanford-cars", backbone="resnet18", decay=0.7, top1=0.845, name="d7"),
        _as(runs["plain"], dataset="stanford-cars", backbone="resnet18", head="hyperbolic", lr=0.001, top1=0.62,
            name="hyp"),
        _as(runs["multitask"], dataset="fashion-mnist", backbone="resnet18", tree_file="random.txt",
            hierarchy=random_hierarchy(runs["multitask"].hierarchy, seed=3), name="rand")])
    cell = table.set_index(["table", "row", "column"])
    # decay 0.5 (two seeds) and 0.7: two settings, never pooled; each a column named by what differs
    both = table[(table["table"] == "Table 3") & (table["row"] == "stanford-cars") & (table["head"] == "riemann")]
    assert both["column"].tolist() == ["+Riemann [model.head_options.radius_decay=0.5]",
                                       "+Riemann [model.head_options.radius_decay=0.7]"]
    assert both["seeds"].tolist() == [2, 1] and "recipe differs: radius decay 0.7" in both["note"].iloc[1]
    t3 = both.iloc[0]
    assert (t3["ours"], t3["seeds"], t3["paper"], t3["paper_std"]) == (pytest.approx(83.5), 2, 83.41, 0.54)
    assert t3["difference"] == pytest.approx(83.5 - 83.41)
    hyperbolic = cell.loc["Table 3", "stanford-cars", "Hyperbolic (lr 0.001)"]
    assert (hyperbolic["paper"], hyperbolic["difference"]) == (62.41, pytest.approx(62.0 - 62.41))
    parent = cell.loc[("Table 6", "stanford-cars", "+Riemann [model.head_options.radius_decay=0.5]")]  # own scores
    assert (parent["ours"], parent["paper"], parent["difference"]) == (pytest.approx(90.0), 90.97, pytest.approx(-0.97))
    assert cell.loc["Table 8", "0.70", "stanford-cars"]["paper"] == 84.43
    assert cell.loc["Table 8", "0.50", "stanford-cars"]["difference"] == pytest.approx(83.5 - 84.74)
    markdown = to_markdown(table)  # both settings shown, side by side: the one the paper's recipe matches compared
    assert "+Riemann \\[model.head\\_options.radius\\_decay=0.7\\]" in markdown
    assert "84.50 (paper 84.16, not compared)" in markdown
    assert "83.50 ± 0.71 (paper 84.16, -0.66)" in to_markdown(table)
    random_run = cell.loc["Table 5", "fashion-mnist", "Multitask"]
    assert random_run["note"].startswith("no matching paper cell")
    assert "fashion-mnist" not in set(table[table["table"] == "Tables 1–2"]["dataset"])  # random trees: Table 5 only


def test_tree_kind_tells_the_papers_tree_from_a_random_and_a_custom_one(evaluated):
    run = next(r for r in load_evaluation(evaluated).runs if r.name == "plain")
    tree = run.hierarchy
    assert tree_kind(_as(run, dataset="fashion-mnist", backbone="small-cnn")) == "paper"
    assert tree_kind(_as(run, dataset="fashion-mnist", backbone="small-cnn", tree_file="same.txt")) == "paper"
    shuffled = random_hierarchy(tree, seed=1)
    assert tree_kind(_as(run, dataset="fashion-mnist", backbone="x", tree_file="r.txt", hierarchy=shuffled)) == "random"
    flat = Hierarchy(tree.node_names[: tree.num_leaves], np.full(tree.num_leaves, -1), tree.num_leaves)
    assert tree_kind(_as(run, dataset="fashion-mnist", backbone="x", tree_file="f.txt", hierarchy=flat)) == "custom"
    assert tree_kind(_as(run, dataset="my-data", backbone="x", tree_file="f.txt")) == "custom"


def test_the_reproduction_plan_estimates_only_measured_rows(capsys):
    module = _load("reproduce_paper")
    steps = module.plan("2", "/data")
    assert [(s.dataset, s.backbone) for s in steps][:2] == [("cifar100", "resnet18"), ("cifar100", "resnet50")]
    cifar = steps[0]
    assert cifar.seconds_per_run == pytest.approx(300 * 50_000 / 14_000)  # ~18 min a run, as the issue measured
    assert cifar.commands[0][:4] == ["hseval", "train-all", "--recipe", "cifar100-resnet18"]
    assert "not measured" in steps[1].estimate()
    assert module.main(["1", "--dry-run", "--throughput", "resnet18@224=2000"]) == 0
    out = capsys.readouterr().out
    assert "# Table 1, cub200 / resnet18: 5 runs × 15 min = 1.2 GPU-h" in out and "measured steps: 3 of 12" in out
    assert module.main(["3", "--dry-run"]) == 0
    assert "# Table 3, cifar100 / resnet18: 24 runs × 18 min = 7.1 GPU-h" in capsys.readouterr().out


def test_every_planned_command_is_one_hseval_accepts():
    """Each train-all of every table parses, names a shipped recipe, sets only real keys, and trains
    the number of runs its estimate counts; the tree commands of Table 5 parse too."""
    from hseval.cli.main import build_parser
    from hseval.cli.train_plan import plan_runs, run_config

    module = _load("reproduce_paper")
    steps = module.plan("all", "/data")
    assert {s.table for s in steps} == {"1", "2", "3", "4", "5", "6", "8"}
    for step in steps:
        runs = 0
        for command in step.commands:
            args = build_parser().parse_args(command[1:])
            if command[1] == "train-all":
                planned = plan_runs(args, note=lambda _: None)
                for head, overrides, _ in planned:  # the recipe exists, every key is real, and the
                    config = run_config(args, head, overrides)  # recipe's dataset is the one trained
                    assert (config.data.dataset, config.model.backbone) == (step.dataset, step.backbone)
                runs += len(planned)
        assert runs == step.runs, (step.table, step.dataset)
    assert sum(s.runs for s in steps if s.table == "8") == 5 * 11


def test_runs_without_training_settings_are_shown_with_n_a(evaluated):
    """Imported runs and prediction files record no training settings (lr, epochs, batch, radius
    decay): a table keyed by one shows "n/a" with the reason, and no cell is compared with the
    paper's. (A radius decay or lr of None once failed with an internal TypeError.)"""
    runs = {r.name: r for r in load_evaluation(evaluated).runs}

    def untrained(run, head, name):
        metrics = {**run.metrics, "dataset": "cifar100", "backbone": "resnet18", "head": head, "training": {}}
        return dataclasses.replace(run, name=name, metrics=metrics)

    table = paper_table([untrained(runs["riemann"], "riemann", "r"), untrained(runs["plain"], "hyperbolic", "h")])
    cell = table.set_index(["table", "row", "column"])
    decay = cell.loc[("Table 8", "n/a", "cifar100")]
    assert decay["note"] == ("n/a: the radius decay is not recorded (imported runs and prediction files record no "
                             "training settings)")
    assert decay["ours"] == pytest.approx(100 * runs["riemann"].metrics["top1"])
    assert cell.loc[("Table 3", "cifar100", "Hyperbolic (lr n/a)"), "note"].startswith("n/a: the learning rate")
    main = cell.loc[("Tables 1–2", "cifar100 / resnet18", "+Riemann")]
    assert main["difference"] != main["difference"] and "epochs, batch, lr, radius decay not recorded" in main["note"]
    assert "| n/a |" in to_markdown(table) and r"n/a & " in to_latex(table)
