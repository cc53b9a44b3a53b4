"""Runs pool as seeds of one setting only when every setting but the seed is equal: one function
(``hseval.reporting.summary.config_key``) decides it for the paper's tables, the seed groups of the
report and the dashboard, and summary_grouped.csv; groups that share a place are named by what
differs."""

from __future__ import annotations

import dataclasses
import json

import pytest

from hseval.data import load_dataset
from hseval.io.data_identity import data_identity
from hseval.io.results import load_evaluation
from hseval.reporting.paper_tables import paper_table
from hseval.reporting.significance import seed_groups
from hseval.reporting.summary import config_key, grouped_summary, setting_names
from tests.helpers import DATA_CHANGES, changed_fashion_like


def _with(run, name: str, seed: int, edit=None):
    metrics = json.loads(json.dumps(run.metrics))
    metrics.update(run=name, seed=seed)
    metrics["training"]["engine"]["seed"] = seed
    if edit:
        edit(metrics)
    return dataclasses.replace(run, name=name, metrics=metrics)


def _set(section, key, value):
    def edit(metrics):
        metrics["training"][section][key] = value
    return edit


def _tree(metrics):
    metrics["hierarchy"]["names"] = [*metrics["hierarchy"]["names"][:-1], "renamed super-class"]


def _init(metrics):
    metrics["initialised_from"] = {"path": "/w.pt", "sha256": "f" * 64}


SPLITS = {  # each setting the issue names, and what tells the groups apart
    "data": (_set("data", "train_subset", 123), "data.train_subset"),
    "tree": (_tree, "tree="),
    "init file": (_init, "init file="),
    "freeze": (_set("model", "freeze_backbone", True), "model.freeze_backbone=True"),
    "recipe": (lambda m: m["training"].update(recipe="cub200"), "recipe=cub200"),
    "head options": (lambda m: m["training"]["model"]["head_options"].update(radius=4.0),
                     "model.head_options.radius=4.0"),
    "learning rate": (_set("optim", "lr", 0.01), "optim.lr=0.01"),
}


@pytest.mark.parametrize("what", list(SPLITS))
def test_a_setting_other_than_the_seed_splits_a_group(evaluated, what):
    edit, named = SPLITS[what]
    plain = {r.name: r for r in load_evaluation(evaluated).runs}["plain"]
    seeds = [_with(plain, f"plain-s{s}", s) for s in (0, 1)]
    other = [_with(plain, f"plain-x{s}", s, edit) for s in (0, 1)]
    runs = seeds + other
    assert config_key(seeds[0]) == config_key(seeds[1]) != config_key(other[0]) == config_key(other[1])
    groups = seed_groups(runs)
    assert [[r.name for r in g.runs] for g in groups] == [["plain-s0", "plain-s1"], ["plain-x0", "plain-x1"]]
    names = setting_names([seeds, other])
    assert named in names[1] and names[0] and "engine.seed" not in names[0]
    grouped = grouped_summary(runs)
    assert grouped["seeds"].tolist() == [2, 2] and named in grouped["setting"].iloc[1]
    cells = paper_table(runs)
    assert cells["seeds"].tolist() == [2, 2] and cells["column"].nunique() == 2  # two places, never one pooled


def test_seeds_alone_pool_and_need_no_name(evaluated):
    plain = {r.name: r for r in load_evaluation(evaluated).runs}["plain"]
    runs = [_with(plain, f"plain-s{s}", s) for s in (0, 1, 2)]
    (group,) = seed_groups(runs)
    assert len(group.runs) == 3 and setting_names([runs]) == [""]
    cells = paper_table(runs)
    assert cells["seeds"].tolist() == [3] and "[" not in cells["column"].iloc[0]


@pytest.mark.parametrize("change", list(DATA_CHANGES))
def test_runs_pool_only_on_the_same_data_by_content(evaluated, fashion_like, tmp_path, change):
    """A run trained on other data (other pixels under the same count and labels, a label, an image
    more or fewer), with every setting equal, is its own group, named by what differs; the same
    files under another root are the same data, and its run pools with the others as a seed."""
    plain = {r.name: r for r in load_evaluation(evaluated).runs}["plain"]
    run_json = json.loads((evaluated.parent / "runs" / "plain" / "run.json").read_text())
    assert plain.metrics["trained_on"] == data_identity(run_json["dataset"])  # evaluate records the run's identity
    assert data_identity(load_dataset("fashion-mnist", fashion_like).describe()) == plain.metrics["trained_on"]
    described = load_dataset("fashion-mnist", changed_fashion_like(fashion_like, tmp_path / "data", change)).describe()
    seeds = [_with(plain, f"plain-s{s}", s) for s in (0, 1)]
    other = _with(plain, "plain-s2", 2, lambda m: m.update(trained_on=data_identity(described)))
    groups = seed_groups([*seeds, other])
    grouped = grouped_summary([*seeds, other])
    if DATA_CHANGES[change]:
        assert [[r.name for r in g.runs] for g in groups] == [["plain-s0", "plain-s1", "plain-s2"]]
        assert grouped["seeds"].tolist() == [3]
        return
    assert [[r.name for r in g.runs] for g in groups] == [["plain-s0", "plain-s1"], ["plain-s2"]]
    assert grouped["seeds"].tolist() == [2, 1]
    assert "dataset.content_sha256=" in grouped["setting"].iloc[1]
    assert described["content_sha256"][:12] + "…" in grouped["setting"].iloc[1]
    assert paper_table([*seeds, other])["seeds"].tolist() == [2, 1]
