"""The dashboard's parts that need no running app: table shaping (app/tables.py), where the folder
comes from (app/state.py), file checks (app/loading.py) and the ``hseval dashboard`` command."""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd
import pytest

from hseval.app import ENV_VAR, loading, state, tables
from hseval.cli import dashboard
from hseval.cli.main import main as hseval_main
from hseval.core.errors import RunFormatError
from hseval.metrics.confusion import confusion_matrix, most_confused
from hseval.reporting.sections import concat_runs
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


def test_per_node_difference_and_worst_children():
    tree = appendix_a()
    a, b = per_node(tree, np.full(tree.num_nodes, 0.8)), per_node(tree, np.full(tree.num_nodes, 0.5))
    diff = tables.per_node_difference(tree, a, b)
    np.testing.assert_allclose(diff["delta"], 0.3)
    assert diff.loc[tree.index("cat"), "path"] == "animal / cat" and diff["support"].tolist() == a["support"].tolist()
    a.loc[tree.index("dog"), ["correct", "accuracy"]] = [1, 0.1]
    children = tables.worst_children(tree, a, tree.index("animal"))
    assert children["child"].tolist() == ["dog", "cat"] and children["support"].tolist() == [10, 10]
    assert children["kind"].tolist() == ["class", "class"] and children["classes"].tolist() == [1, 1]
    top = tables.worst_children(tree, a, -1)
    assert set(top["child"]) == {"fruit", "animal"} and set(top["kind"]) == {"super-class"}
    assert tables.node_accuracy(a, tree.index("fruit")) == {"support": 20, "correct": 16, "accuracy": 0.8}
    assert np.isnan(tables.node_accuracy(a.iloc[:0], 0)["accuracy"])


def _mistakes(seed=0, n=500):
    tree = fashion_tree()
    rng = np.random.default_rng(seed)
    target = rng.integers(0, tree.num_leaves, n)
    pred = np.where(rng.random(n) < 0.6, target, rng.integers(0, tree.num_leaves, n))
    return tree, pred, target


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("depth", [None, 1, 2])
@pytest.mark.parametrize("under", [None, "tops", "clothing"])
def test_confused_pairs_match_a_brute_force_count(seed, depth, under):
    tree, pred, target = _mistakes(seed)
    node = None if under is None else tree.index(under)
    top = most_confused(pred, target, tree, depth=depth, under=node, k=5)
    leaves = set(tree.subtree_leaves(node).tolist()) if node is not None else set(range(tree.num_leaves))

    def at_level(c):
        return c if depth is None else int(tree.ancestor_at_depth([c], depth)[0])

    seen = [(at_level(t), at_level(p)) for t, p in zip(target.tolist(), pred.tolist()) if t in leaves]
    seen = [(t, p) for t, p in seen if t >= 0]
    support = pd.Series([t for t, _ in seen]).value_counts()
    expected = pd.Series([(t, p) for t, p in seen if t != p]).value_counts()
    assert len(top) == min(5, len(expected))
    assert top["count"].is_monotonic_decreasing and top["count"].iloc[0] == expected.max()
    for row in top.to_dict("records"):
        t = tree.index(row["true"])
        p = tree.index(row["predicted"]) if not row["predicted"].startswith("(no level") else -1
        assert row["count"] == expected[(t, p)]
        assert row["share"] == pytest.approx(row["count"] / support[t])
        if p >= 0:
            path_t, path_p = tree.path(t), tree.path(p)
            common = [a for a, b in zip(path_t, path_p) if a == b]
            assert row["lca"] == (tree.node_names[common[-1]] if common else "(root)")
            assert row["tree_distance"] == len(path_t) + len(path_p) - 2 * len(common)
        if node is not None:
            assert row["inside"] == (p >= 0 and node in tree.path(p))
    assert ("inside" in top) == (node is not None)


def test_confused_pairs_without_mistakes_and_matrix_sizes():
    tree, pred, target = _mistakes()
    assert most_confused(target, target, tree).empty
    for depth in (1, 2):
        matrix, _ = confusion_matrix(pred, target, tree, depth)
        assert tables.matrix_labels(tree, depth) == len(matrix)
    assert tables.matrix_labels(tree, None) == tree.num_leaves


def test_confusion_within_a_super_class_is_the_block_of_the_full_matrix():
    tree, pred, target = _mistakes()
    full, labels = confusion_matrix(pred, target, tree)
    with pytest.raises(ValueError, match="must be a super-class of the tree"):
        confusion_matrix(pred, target, tree, within=0)
    for name in ("tops", "clothing", "footwear"):
        node = tree.index(name)
        matrix, within = confusion_matrix(pred, target, tree, within=node)
        classes = within[:-1]
        assert within[-1] == -1 and set(classes.tolist()) == set(tree.subtree_leaves(node).tolist())
        block = np.isin(labels, classes)
        assert list(labels[block]) == list(classes)  # tree order, as in the full matrix
        np.testing.assert_array_equal(matrix[:-1, :-1], full[np.ix_(block, block)])
        np.testing.assert_array_equal(matrix[:-1, -1], full[block][:, ~block].sum(axis=1))
        assert not matrix[-1].any()


def test_busiest_superclass_has_the_most_mistakes():
    tree = appendix_a()
    frame = per_node(tree, np.array([0.9 if n != tree.index("animal") else 0.2 for n in range(tree.num_nodes)]))
    nodes = [tree.index("fruit"), tree.index("animal")]
    assert tables.busiest_superclass(tree, frame, nodes) == 1
    assert tables.busiest_superclass(tree, frame.iloc[:0], nodes) == 0


def test_find_nodes():
    paths = {f"top{i // 100} / mid{i // 10} / leaf{i}": i for i in range(1000)}
    assert tables.find_nodes(paths, "LEAF99", limit=5) == ["top0 / mid9 / leaf99", "top9 / mid99 / leaf990",
                                                            "top9 / mid99 / leaf991", "top9 / mid99 / leaf992",
                                                            "top9 / mid99 / leaf993"]
    assert tables.find_nodes(paths, "top3 leaf35", limit=100) == [f"top3 / mid{i // 10} / leaf{i}"
                                                                   for i in range(350, 360)]
    assert len(tables.find_nodes(paths, "", limit=7)) == 7 and tables.find_nodes(paths, "zebra", limit=7) == []


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
                                  "tree_agreement": {"cophenetic_correlation": 0.9, "classes": 6,
                                                     "levels": {"1": {"adjusted_rand": 1.0, "rand": 1.0}}}}},
               "h": {"geometry": {"skipped": "no vectors"}}}
    agreement = tables.tree_agreement(metrics)
    assert agreement.to_dict("records") == [{"run": "r", "vectors": "learned", "classes clustered": 6,
                                             "cophenetic_correlation": 0.9, "level 1 adjusted Rand": 1.0,
                                             "level 1 Rand": 1.0}]
    assert tables.depth_summary(metrics)["depth"].tolist() == [1, 2]
    tree = appendix_a()
    geometry = pd.DataFrame({"name": ["apple", "orange", "cat"], "parent": ["fruit", "fruit", "animal"],
                             "angle_to_parent": [10.0, 20.0, 30.0]})
    assert tables.children_of(geometry, "fruit")["name"].tolist() == ["apple", "orange"]
    assert tables.children_of(pd.DataFrame(), "fruit").empty
    pairs = pd.DataFrame({"depth": 2, "kind": "sibling", "node_a": [0, 2], "node_b": [1, 3], "angle": [40.0, 50.0]})
    assert tables.child_pair_angles(pairs, tree, tree.index("fruit")).to_dict("records") == [
        {"child_a": "apple", "child_b": "orange", "angle": 40.0}]
    assert concat_runs([("a", geometry), ("b", pd.DataFrame())])["run"].unique().tolist() == ["a"]
    assert concat_runs([]).empty


def test_eval_dir_prefers_the_environment():
    assert state.eval_dir(["main.py", "/a"], {}) == "/a"
    assert state.eval_dir(["main.py", "/a"], {ENV_VAR: "/b"}) == "/b"
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
