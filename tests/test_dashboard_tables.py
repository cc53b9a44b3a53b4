"""The dashboard's parts that need no running app: table shaping (app/tables.py), where the folder
comes from (app/state.py), file checks (app/loading.py) and the ``hseval dashboard`` command."""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd
import pytest

from hseval.app import loading, state, tables
from hseval.cli import dashboard
from hseval.cli.main import main as hseval_main
from hseval.core.errors import RunFormatError
from tests.helpers import appendix_a, fashion_tree


def per_node(tree, accuracy):
    support = np.zeros(tree.num_nodes, dtype=int)
    for leaf in range(tree.num_leaves):
        for node in tree.path(leaf):
            support[node] += 10
    correct = np.round(support * accuracy).astype(int)
    return pd.DataFrame({"node": np.arange(tree.num_nodes), "name": tree.node_names, "depth": tree.depth,
                         "support": support, "correct": correct, "accuracy": correct / support})


def test_overview_columns_order_and_empty_columns_dropped():
    summary = pd.DataFrame({"samples": [1], "top1": [0.5], "run": ["a"], "level2_from_leaf": [0.7],
                            "level1_own_scores": [0.9], "level1_from_leaf": [0.8], "level1_agreement": [1.0],
                            "ece": [np.nan], "hierarchical_f1": [0.6]})
    assert list(tables.overview_columns(summary).columns) == ["run", "top1", "level1_from_leaf", "level1_own_scores",
                                                              "level2_from_leaf", "hierarchical_f1"]


def test_node_paths_in_tree_order():
    tree = appendix_a()
    assert list(tables.node_paths(tree)) == ["fruit", "fruit / apple", "fruit / orange", "animal", "animal / cat",
                                             "animal / dog"]
    assert tables.node_paths(tree)["animal / dog"] == tree.index("dog")


def test_per_node_difference_and_classes_under():
    tree = appendix_a()
    a, b = per_node(tree, np.full(tree.num_nodes, 0.8)), per_node(tree, np.full(tree.num_nodes, 0.5))
    diff = tables.per_node_difference(tree, a, b)
    np.testing.assert_allclose(diff["delta"], 0.3)
    assert diff.loc[tree.index("cat"), "path"] == "animal / cat" and diff["support"].tolist() == a["support"].tolist()
    classes = tables.classes_under(tree, a, tree.index("animal"))
    assert classes["class"].tolist() == ["cat", "dog"] and classes["support"].tolist() == [10, 10]
    assert tables.node_accuracy(a, tree.index("fruit")) == {"support": 20, "correct": 16, "accuracy": 0.8}
    assert np.isnan(tables.node_accuracy(a.iloc[:0], 0)["accuracy"])


def test_top_confusions_match_a_brute_force_count():
    tree = fashion_tree()
    rng = np.random.default_rng(0)
    target = rng.integers(0, tree.num_leaves, 500)
    pred = np.where(rng.random(500) < 0.6, target, rng.integers(0, tree.num_leaves, 500))
    from hseval.metrics.confusion import confusion_matrix

    matrix, labels = confusion_matrix(pred, target, tree)
    node = tree.index("tops")
    top = tables.top_confusions(matrix, labels, tree, node, k=5)
    under = set(tree.subtree_leaves(node).tolist())
    pairs = pd.Series([(tree.node_names[t], tree.node_names[p]) for t, p in zip(target, pred) if t != p and t in under])
    expected = pairs.value_counts()
    assert len(top) == 5
    for row in top.to_dict("records"):
        assert row["count"] == expected[(row["true"], row["predicted"])]
        assert row["inside"] == (tree.index(row["predicted"]) in under)
    assert top["count"].is_monotonic_decreasing and top["count"].iloc[0] == expected.max()
    assert tables.top_confusions(np.eye(tree.num_leaves, dtype=int), labels, tree, node).empty
    assert tables.matrix_accuracy(matrix) == pytest.approx((pred == target).mean())
    assert np.isnan(tables.matrix_accuracy(np.zeros((2, 2))))


def test_clicked_node_from_a_plotly_selection():
    tree = appendix_a()
    assert tables.clicked_node({"selection": {"points": [{"customdata": 3}]}}, tree) == 3
    assert tables.clicked_node({"selection": {"points": [{"customdata": [2]}]}}, tree) == 2
    assert tables.clicked_node({"selection": {"points": [{"label": "animal"}]}}, tree) == tree.index("animal")
    assert tables.clicked_node({"selection": {"points": []}}, tree) is None
    assert tables.clicked_node(None, tree) is None


def test_geometry_tables():
    metrics = {"r": {"geometry": {"node_vectors": "learned", "depths": {"2": {"nodes": 4, "mean_norm": 1.0},
                                                                         "1": {"nodes": 2, "mean_norm": 0.5}},
                                  "tree_agreement": {"cophenetic_correlation": 0.9,
                                                     "levels": {"1": {"adjusted_rand": 1.0, "rand": 1.0}}}}},
               "h": {"geometry": {"skipped": "no vectors"}}}
    agreement = tables.tree_agreement(metrics)
    assert agreement.to_dict("records") == [{"run": "r", "vectors": "learned", "cophenetic_correlation": 0.9,
                                             "level 1 adjusted Rand": 1.0, "level 1 Rand": 1.0}]
    assert tables.depth_summary(metrics)["depth"].tolist() == [1, 2]
    tree = appendix_a()
    geometry = pd.DataFrame({"name": ["apple", "orange", "cat"], "parent": ["fruit", "fruit", "animal"],
                             "angle_to_parent": [10.0, 20.0, 30.0]})
    assert tables.children_of(geometry, "fruit")["name"].tolist() == ["apple", "orange"]
    assert tables.children_of(pd.DataFrame(), "fruit").empty
    pairs = pd.DataFrame({"depth": 2, "kind": "sibling", "node_a": [0, 2], "node_b": [1, 3], "angle": [40.0, 50.0]})
    assert tables.child_pair_angles(pairs, tree, tree.index("fruit")).to_dict("records") == [
        {"child_a": "apple", "child_b": "orange", "angle": 40.0}]
    assert tables.concat_runs({"a": geometry, "b": pd.DataFrame()})["run"].unique().tolist() == ["a"]
    assert tables.concat_runs({}).empty


def test_metric_deltas():
    levels = pd.DataFrame({"run": ["a", "b"], "head": ["x", "y"], "leaf": [0.5, 0.4],
                           "level 1 (from leaf)": [0.9, 0.8]})
    deltas = tables.metric_deltas(levels, "a", "b")
    assert deltas["metric"].tolist() == ["leaf", "level 1 (from leaf)"]
    np.testing.assert_allclose(deltas["delta"], [0.1, 0.1])


def test_eval_dir_prefers_the_environment():
    assert state.ENV_VAR == dashboard.ENV_VAR
    assert state.eval_dir(["main.py", "/a"], {}) == "/a"
    assert state.eval_dir(["main.py", "/a"], {state.ENV_VAR: "/b"}) == "/b"
    assert state.eval_dir(["main.py"], {}) is None


def test_loading_fingerprint_changes_with_any_file(evaluated, tmp_path):
    import shutil

    folder = tmp_path / "eval"
    shutil.copytree(evaluated, folder)
    before = loading.fingerprint(folder)
    (folder / "plain" / "geometry.csv").write_text("")
    assert loading.fingerprint(folder) != before
    assert loading.fingerprint(tmp_path / "missing") == ()


def test_dashboard_command_line(tmp_path):
    parser = argparse.ArgumentParser()
    dashboard.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["dashboard", str(tmp_path), "--port", "8600"])
    assert (args.port, args.host, args.func) == (8600, "127.0.0.1", dashboard.cmd_dashboard)
    with pytest.raises(SystemExit):
        parser.parse_args(["dashboard", str(tmp_path), "--port", "70000"])
    cmd = dashboard.streamlit_command(tmp_path, host="127.0.0.1", port=8600)
    assert cmd[:4] == [sys.executable, "-m", "streamlit", "run"] and cmd[4].endswith("app/main.py")
    assert cmd[-2:] == ["--", str(tmp_path)]
    flags = dict(zip(cmd[5:-2:2], cmd[6:-2:2]))
    assert flags == {"--server.headless": "true", "--browser.gatherUsageStats": "false",
                     "--server.fileWatcherType": "none", "--server.scriptHealthCheckEnabled": "true",
                     "--client.toolbarMode": "minimal",
                     "--server.address": "127.0.0.1", "--server.port": "8600"}
    assert 0 < dashboard.free_port() < 65536


def test_dashboard_refuses_what_is_not_an_evaluation_folder(tmp_path, capsys):
    assert hseval_main(["dashboard", str(tmp_path / "nope")]) == 2
    assert "no such evaluation folder" in capsys.readouterr().err
    (tmp_path / "plots").mkdir()
    assert hseval_main(["dashboard", str(tmp_path)]) == 2
    assert "holds no evaluated runs" in capsys.readouterr().err
    with pytest.raises(RunFormatError, match="holds no evaluated runs"):
        dashboard.cmd_dashboard(argparse.Namespace(dir=str(tmp_path), port=None, host="127.0.0.1"))


def test_dashboard_refuses_a_busy_port(evaluated, capsys):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert hseval_main(["dashboard", str(evaluated), "--port", str(port)]) == 2
    assert f"cannot serve on port {port} on 127.0.0.1" in capsys.readouterr().err


def test_app_entry_is_the_packaged_app():
    entry = dashboard.app_entry()
    assert entry.name == "main.py" and (entry.parent / "loading.py").is_file()
