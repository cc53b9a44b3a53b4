"""Runs pool as seeds of one setting only when every setting but the seed is equal: one function
(``hseval.reporting.summary.config_key``) decides it for the paper's tables, the seed groups of the
report and the dashboard, and summary_grouped.csv; groups that share a place are named by what
differs."""

from __future__ import annotations

import dataclasses
import json

import pytest

from hseval.io.results import load_evaluation
from hseval.reporting.paper_tables import paper_table
from hseval.reporting.significance import seed_groups
from hseval.reporting.summary import config_key, grouped_summary, setting_names


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
