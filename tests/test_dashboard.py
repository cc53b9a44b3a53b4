"""Every page of the dashboard through ``streamlit.testing.v1.AppTest`` on a real evaluation folder
(the session fixture ``evaluated``: three of the paper's heads and the four peers): no exception, the expected
elements, widgets driven by ``key=`` change what is shown, and damaged folders give messages."""

from __future__ import annotations

import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from hseval.core import fileio
from hseval.metrics.geometry import CLUSTER_CLASSES
from tests.conftest import BESIDE_PLAIN, EVALUATED_RUNS
from tests.dashboard_helpers import MAIN, app, array, copy_runs, figures, page, table
from tests.helpers import reseal

PAGES = ["overview", "hierarchy", "geometry", "embeddings", "confusion", "compare", "decisions"]



@pytest.fixture
def at(evaluated, monkeypatch) -> AppTest:
    test = app(evaluated, monkeypatch).run()
    assert not test.exception, [e.message for e in test.exception]
    return test


def test_overview_shows_the_runs_table_and_level_bars(at):
    assert [t.value for t in at.title] == ["Overview"]
    runs = table(at, "dataset")
    assert runs["run"].tolist() == EVALUATED_RUNS
    assert {"top1", "level1_from_leaf", "level1_own_scores", "hierarchical_f1"} <= set(runs.columns)
    assert "head" not in runs.columns  # each run is named after its head: one column, not two repeating it
    charts = figures(at)
    assert "overview_levels" in charts
    assert {t["name"].split(" (")[0] for t in charts["overview_levels"]["data"]} == set(EVALUATED_RUNS)
    assert not at.error


def test_the_leaderboard_ranks_the_metrics_chosen(at, evaluated):
    from hseval.io.results import load_evaluation
    from hseval.reporting import sample_metrics

    board = table(at, "mistake severity ↓")  # the default metrics
    assert sorted(board["run"]) == EVALUATED_RUNS and sum("★" in v for v in board["top-1"]) >= 1
    chooser = at.multiselect(key="overview_leaderboard_metrics")
    chooser.set_value(["ece", "hf1@optimal:hf1", "level1_own_scores"]).run()
    board = table(at, "ECE ↓").set_index("run")
    assert list(board.columns) == ["ECE ↓", "hf1 by optimal:hf1", "level 1 (own scores)"]
    assert board.loc["barz-denzler", "ECE ↓"] == "n/a"  # cosine similarities: no probabilities to calibrate
    assert board.loc["plain", "level 1 (own scores)"] == "n/a"
    for run in load_evaluation(evaluated).runs:  # each cell: the run's value, from its prediction files
        for name, column in (("ece", "ECE ↓"), ("hf1@optimal:hf1", "hf1 by optimal:hf1")):
            value = sample_metrics.sample_metric(name).value(run)
            assert value != value or board.loc[run.name, column].startswith(f"{value:.4f} ["), (run.name, name)
    assert any("--leaderboard ece,hf1@optimal:hf1,level1_own_scores" in c.value for c in at.caption)
    chooser.set_value([]).run()
    assert any("Choose at least one metric" in i.value for i in at.info) and not at.exception


def test_overview_says_what_each_method_is_and_cites_it(at):
    methods = at.table[0].value
    assert sorted(methods.index) == EVALUATED_RUNS  # one row per head, whole (a table, not a scrolled grid)
    assert methods.loc["nbdt", "reference"] == "Wan et al., NBDT: Neural-Backed Decision Trees, ICLR 2021"
    assert methods.loc["hxe", "group"] == "peers" and methods.loc["riemann", "group"] == "paper"
    assert methods.loc["soft-labels", "what it is"].startswith("Cross-entropy against soft targets")
    assert not any("``" in text for text in methods["what it is"])


def test_run_selection_filters_the_other_pages(at):
    at.multiselect(key="runs").set_value(["plain", "riemann"]).run()
    bars = figures(at)["overview_levels"]["data"]
    assert {t["name"].split(" (")[0] for t in bars} == {"plain", "riemann"}
    assert table(at, "dataset")["run"].tolist() == EVALUATED_RUNS
    page(at, "hierarchy")
    assert at.selectbox(key="hierarchy_run").options == ["plain", "riemann"]
    at.multiselect(key="runs").set_value([]).run()
    assert any("Select at least 1 run" in i.value for i in at.info)


def test_hierarchy_colours_follow_the_chosen_run(at):
    page(at, "hierarchy")
    assert [t.value for t in at.title] == ["Hierarchy"]
    first = figures(at)["hierarchy_tree"]["data"][0]
    assert first["type"] == "sunburst" and len(first["ids"]) == 13
    at.selectbox(key="hierarchy_run").set_value("riemann").run()
    second = figures(at)["hierarchy_tree"]["data"][0]
    assert not np.allclose(array(first["marker"]["colors"]), array(second["marker"]["colors"]), equal_nan=True)
    at.selectbox(key="hierarchy_baseline").set_value("plain").run()
    diff = figures(at)["hierarchy_tree"]["data"][0]
    assert diff["marker"]["cmid"] == 0 and diff["marker"]["colorscale"][0][1] != first["marker"]["colorscale"][0][1]
    at.radio(key="hierarchy_chart").set_value("treemap").run()
    assert figures(at)["hierarchy_tree"]["data"][0]["type"] == "treemap"


def test_hierarchy_node_detail_shows_classes_and_confusions(at):
    page(at, "hierarchy")
    at.selectbox(key="hierarchy_node").set_value("clothing / tops").run()
    classes = table(at, "child")
    assert sorted(classes["child"]) == sorted(["T-shirt/top", "Pullover", "Coat", "Shirt"])
    assert classes["accuracy"].is_monotonic_increasing  # the worst child first
    confusions = table(at, "predicted")
    assert set(confusions.columns) == {"true", "predicted", "count", "share", "tree_distance", "inside"}
    assert set(confusions["true"]) <= set(classes["child"])
    samples = {m.label: m.value for m in at.metric}["Samples under it"]
    at.selectbox(key="hierarchy_node").set_value("footwear").run()
    assert sorted(table(at, "child")["child"]) == sorted(["Sandal", "Sneaker", "Ankle boot"])
    assert {m.label: m.value for m in at.metric}["Samples under it"] != samples


def test_geometry_page(at):
    page(at, "geometry")
    charts = figures(at)
    assert {"geometry_angles", "geometry_steps", "geometry_siblings", "geometry_children"} <= set(charts)
    agreement = table(at, "cophenetic_correlation")
    assert agreement["run"].tolist() == EVALUATED_RUNS
    assert agreement["cophenetic_correlation"].between(-1, 1).all()
    at.selectbox(key="geometry_run").set_value("riemann").run()
    at.selectbox(key="geometry_node").set_value("footwear").run()
    children = table(at, "angle_to_parent")
    assert children["name"].tolist() == ["Sandal", "Sneaker", "Ankle boot"]
    assert np.allclose(children["delta_norm"], children["radius"], rtol=1e-4)  # riemann: ‖R δ‖ = R
    at.selectbox(key="geometry_run").set_value("multitask").run()
    radius = table(at, "angle_to_parent")["radius"]  # a head without radii: the reason, not "None"
    assert (radius == "n/a — head 'multitask' has no radius R_p").all()


def test_embeddings_page_colours_and_vectors(at):
    page(at, "embeddings")
    scatter = figures(at)["embeddings_scatter"]
    names = [t.get("name") for t in scatter["data"]]
    assert names[-1] == "class vectors" and set(names[:-1]) == {"clothing", "footwear", "Bag"}
    at.selectbox(key="embeddings_colour").set_value("correct").run()
    assert {t.get("name") for t in figures(at)["embeddings_scatter"]["data"][:-1]} in (
        {"correct", "wrong"}, {"correct"}, {"wrong"})
    at.toggle(key="embeddings_vectors").set_value(False).run()
    assert "class vectors" not in [t.get("name") for t in figures(at)["embeddings_scatter"]["data"]]
    assert at.selectbox(key="embeddings_method").options == ["PCA"]


def test_confusion_page_levels(at):
    page(at, "confusion")
    leaf = figures(at)["confusion_heatmap"]["data"][0]
    z = np.asarray(leaf["z"], dtype=float) if not isinstance(leaf["z"], dict) else array(leaf["z"]).reshape(10, 10)
    assert z.shape == (10, 10) and np.allclose(z.sum(axis=1), 1)
    leaf_accuracy = float(at.metric[0].value)
    if leaf_accuracy < 1:  # the mistakes, most frequent first (test_large_tree_pages checks them at 5,000 classes)
        pairs = table(at, "lca")
        assert pairs["count"].is_monotonic_decreasing and (pairs["true"] != pairs["predicted"]).all()
    else:
        assert any(i.value == "No mistakes at the classes." for i in at.info)
    level = at.selectbox(key="confusion_level").options[1]
    assert level == "level 1 · Bag, clothing, footwear"  # the level's names beside "level 1"
    at.selectbox(key="confusion_level").set_value(level).run()
    level1 = figures(at)["confusion_heatmap"]["data"][0]
    assert list(level1["x"]) == ["Bag", "clothing", "footwear"]  # tree order
    assert float(at.metric[0].value) >= leaf_accuracy
    within = figures(at)["confusion_within_map"]["data"][0]
    assert within["x"][-1].startswith("outside ") and len(within["x"]) <= 7


def test_large_trees_are_shown_in_parts(at, monkeypatch):
    """Past HEATMAP_MAX labels the matrix is not drawn but said; past SECTORS_MAX sectors the tree
    chart draws the levels that fit and a click draws it again from the clicked node."""
    monkeypatch.setattr("hseval.reporting.charts.HEATMAP_MAX", 4)
    monkeypatch.setattr("hseval.reporting.charts.nodes.SECTORS_MAX", 6)
    page(at, "confusion")
    assert "confusion_heatmap" not in figures(at)
    assert any("too many to draw" in i.value for i in at.info)
    within = figures(at)["confusion_within_map"]["data"][0]
    assert len(within["x"]) <= 5  # at most 4 classes and "outside"
    page(at, "hierarchy")
    tree = figures(at)["hierarchy_tree"]["data"][0]
    assert len(tree["ids"]) == 3 and tree["maxdepth"] == 1  # the 3 top-level nodes: 6 sectors hold 1 level
    assert any("1 of its 3 levels" in c.value for c in at.caption)


def test_compare_page(at):
    """Compare has no baseline control of its own: the sidebar's one holds on every page."""
    page(at, "compare")
    assert at.selectbox(key="baseline").value == "plain"  # plain by default, and the sidebar says why
    assert any("the first run with the plain head" in c.value for c in at.sidebar.caption)
    assert [s.key for s in at.selectbox if s.key.startswith("compare")] == ["compare_node_run"]
    significance = table(at, "p")
    assert set(significance["run"]) == set(BESIDE_PLAIN)
    assert {"compare_levels", "compare_intervals", "compare_sunburst", "compare_deltas", "compare_angles"} <= \
        set(figures(at))
    at.selectbox(key="baseline").set_value("riemann").run()
    assert set(table(at, "p")["run"]) == set(EVALUATED_RUNS) - {"riemann"}
    page(at, "overview")
    page(at, "compare")  # the choice survives a visit to another page
    assert at.selectbox(key="baseline").value == "riemann"
    assert set(table(at, "p")["run"]) == set(EVALUATED_RUNS) - {"riemann"}
    at.multiselect(key="runs").set_value(["riemann"]).run()
    assert any("at least one run besides the baseline" in i.value for i in at.info)


def test_decisions_page_reads_the_files(at, evaluated):
    """The curves and points are the files' own, the slider moves where the answers stop, the rule
    table is the chosen run's decisions.csv, and a run without probabilities says why."""
    from hseval.io.results import read_run
    from hseval.reporting.decisions import answers_at

    page(at, "decisions")
    assert [t.value for t in at.title] == ["Decisions"]
    curves = figures(at)["decisions_curves"]["data"]
    plain = read_run(evaluated / "plain")
    drawn = [t for t in curves if t.get("mode") == "lines" and t["name"] == "plain"]
    threshold = plain.curves[plain.curves["rule"] == "threshold"]
    assert max(array(t["y"]).max() for t in drawn) == threshold["correct"].max()  # the file's points, not others
    assert at.selectbox(key="decisions_run").value == "plain"  # the baseline: it gave probabilities
    stops = figures(at)["decisions_stops"]["data"]
    at_half = next(t for t in stops if t["name"] == "plain")
    depth = np.r_[plain.hierarchy.depth, 0][answers_at(plain, 0.5)]
    assert array(at_half["y"]).tolist() == np.bincount(depth, minlength=plain.hierarchy.max_depth + 1).tolist()
    at.slider(key="decisions_t").set_value(1.0).run()
    at_one = next(t for t in figures(at)["decisions_stops"]["data"] if t["name"] == "plain")
    assert array(at_one["y"])[0] == len(plain.targets)  # at t = 1 every answer is the root
    assert "decisions_curves" in figures(at)
    rules = table(at, "hf1")
    assert [r.split(" — ")[0] for r in rules["rule"]] == plain.decisions["rule"].tolist()
    assert sum("★" in str(v) for v in rules["hf1"]) >= 1  # the best rule of the column marked
    matched = table(at, "baseline recall")
    assert set(matched["run"]) <= set(BESIDE_PLAIN) and len(matched) == 4 * len(set(matched["run"]))
    at.selectbox(key="decisions_table_run").set_value("barz-denzler").run()
    cells = table(at, "hf1")
    assert cells["hf1"].iloc[0][0].isdigit() and cells["rule"].iloc[0].startswith("leaf")
    assert len(cells) == 2 and "threshold:0.5" in cells["rule"].iloc[1]  # the others share one row: one reason
    assert "softmax is no probability" in cells["rule"].iloc[1] and cells["hf1"].iloc[1] == "n/a"
    assert not at.error


def test_missing_values_say_why(at):
    levels = table(at, "level 1 (own scores)")
    cell = levels.set_index("run").loc["plain", "level 1 (own scores)"]
    assert cell.startswith("n/a — ") and "None" not in str(levels.to_numpy().tolist())


def test_an_unreadable_run_changes_no_colour_and_the_baseline_change_is_said(evaluated, tmp_path, monkeypatch):
    """Skipping a run (an edited metrics.json) turned riemann from pink to brown, and a skipped
    plain run changed the baseline without a word."""
    folder = copy_runs(evaluated, tmp_path / "eval")
    at = app(folder, monkeypatch).run()
    before = {t["name"]: t["marker"]["color"] for t in figures(at)["overview_levels"]["data"]}
    metrics = json.loads((folder / "plain" / "metrics.json").read_text())
    (folder / "plain" / "metrics.json").write_text(json.dumps({**metrics, "top1": 0.99}))  # not resealed: skipped
    at = app(folder, monkeypatch).run()
    assert not at.exception and table(at, "dataset")["run"].tolist() == BESIDE_PLAIN
    after = {t["name"]: t["marker"]["color"] for t in figures(at)["overview_levels"]["data"]}
    assert after == {name: before[name] for name in after}
    assert at.selectbox(key="baseline").value == BESIDE_PLAIN[0]  # the first readable run
    assert any("no readable run has the plain head" in w.value for w in at.sidebar.warning)


def test_a_corrupt_metrics_file_is_named_and_the_other_runs_render(evaluated, tmp_path, monkeypatch):
    folder = copy_runs(evaluated, tmp_path / "eval")
    (folder / "plain" / "metrics.json").write_text('{"top1": 0.5, "hier')
    at = app(folder, monkeypatch).run()
    assert not at.exception
    assert any("plain" in e.value and "metrics.json" in e.value for e in at.error)
    assert table(at, "dataset")["run"].tolist() == BESIDE_PLAIN
    for name in PAGES[1:]:
        page(at, name)


def test_runs_with_damaged_files_are_named_and_left_out(evaluated, tmp_path, monkeypatch):
    """Every file is checked when the folder is read: a run with a damaged file is listed with the
    file and the reason, and the pages show the other runs."""
    folder = copy_runs(evaluated, tmp_path / "eval")
    (folder / "plain" / "predictions.npz").write_bytes(b"PK\x03\x04 half-written")
    (folder / "multitask" / "per_node.csv").write_text("node,name\n0,x\n")
    reseal(folder / "multitask")
    at = app(folder, monkeypatch).run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert any("plain/predictions.npz: was changed after 'hseval evaluate' wrote it" in e for e in errors)
    assert any("multitask/per_node.csv, line 1: no column 'depth'" in e for e in errors)
    assert table(at, "dataset")["run"].tolist() == [r for r in BESIDE_PLAIN if r != "multitask"]
    for name in PAGES[1:]:
        page(at, name)
        assert not at.exception


def test_runs_of_different_datasets_are_separated(evaluated, tmp_path, monkeypatch):
    folder = copy_runs(evaluated, tmp_path / "eval")
    metrics = json.loads((folder / "plain" / "metrics.json").read_text())
    metrics["dataset"] = "cifar100"
    fileio.write_json(folder / "plain" / "metrics.json", metrics)
    reseal(folder / "plain")
    at = app(folder, monkeypatch).run()
    assert any("mixes runs of 2 datasets" in w.value for w in at.sidebar.warning)
    assert at.selectbox(key="dataset").options == ["cifar100", "fashion-mnist"]
    assert table(at, "dataset")["run"].tolist() == ["plain"]
    at.selectbox(key="dataset").set_value("fashion-mnist").run()
    assert table(at, "dataset")["run"].tolist() == BESIDE_PLAIN
    assert at.multiselect(key="runs").value == BESIDE_PLAIN


def test_a_tree_that_cannot_be_recovered_says_why(tmp_path, monkeypatch):
    """A zero class vector leaves the tree recovered from the class vectors undefined: the Geometry
    page says so with the reason the evaluation recorded (it showed a row of "None" cells)."""
    from hseval.cli.main import main
    from hseval.tree import write_hierarchy
    from tests.helpers import fashion_tree

    rng = np.random.default_rng(0)
    weights, embeddings = rng.normal(size=(10, 4)), rng.normal(size=(60, 4))
    weights[3] = 0.0
    np.savez(tmp_path / "m.npz", targets=np.arange(60) % 10, logits=embeddings @ weights.T, embeddings=embeddings,
             class_weights=weights)
    write_hierarchy(fashion_tree(), tmp_path / "tree.txt")
    assert main(["evaluate", "--predictions", str(tmp_path / "m.npz"), "--hierarchy", str(tmp_path / "tree.txt"),
                 "--projections", "pca", "--out", str(tmp_path / "eval")]) == 0
    at = page(app(tmp_path / "eval", monkeypatch).run(), "geometry")
    assert any(i.value == "m: no tree recovered from its class vectors — a class vector is zero." for i in at.info)
    assert not [d for d in at.dataframe if d.key == "geometry_agreement"]
    assert "geometry_angles" in figures(at)  # the rest of the page is drawn


def test_an_empty_folder_gives_a_clear_message(tmp_path, monkeypatch):
    at = app(tmp_path, monkeypatch).run()
    assert not at.exception
    assert any("holds no evaluated runs" in e.value for e in at.error)


def test_no_folder_given(monkeypatch):
    monkeypatch.delenv("HSEVAL_EVAL_DIR", raising=False)
    monkeypatch.setattr("sys.argv", ["main.py"])
    at = AppTest.from_file(str(MAIN), default_timeout=60).run()
    assert any("hseval dashboard DIR" in e.value for e in at.error)


def test_a_5000_class_tree_is_shown_in_parts(large_evaluated, monkeypatch):
    """At 5,000 classes: the leaf matrix is not drawn but said, the most-confused pairs are listed
    (counted right: their total is the mistakes when all fit), a level with at most HEATMAP_MAX
    nodes is drawn, the tree chart sends at most SECTORS_MAX sectors and opens at most 3 levels, the
    node picker searches on the server, and tables come a page at a time."""
    from hseval.reporting import charts as chart_module
    from hseval.tree import read_hierarchy

    at = app(large_evaluated, monkeypatch).run()
    assert not at.exception, [e.message for e in at.exception]
    page(at, "confusion")
    assert "confusion_heatmap" not in figures(at)
    assert any("5,000 rows and columns" in i.value and "too many to draw" in i.value for i in at.info)
    pairs = table(at, "lca")
    assert len(pairs) == 50 and pairs["count"].is_monotonic_decreasing  # the first page of 200
    assert any(c.value.startswith("pairs 1–50 of 200") for c in at.caption)
    within = figures(at)["confusion_within_map"]["data"][0]
    assert within["x"][-1].startswith("outside ") and len(within["x"]) <= chart_module.HEATMAP_MAX + 1
    tree = read_hierarchy(next(large_evaluated.parent.glob("large.txt")))
    level = next(o for o in at.selectbox(key="confusion_level").options if o.startswith("level 1"))
    at.selectbox(key="confusion_level").set_value(level).run()
    tops = set(tree.node_names[n] for n in tree.nodes_at_depth(1))
    assert len(tops) > chart_module.HEATMAP_MAX and "confusion_heatmap" not in figures(at)
    assert any(f"at level 1 has {len(tops)} rows" in i.value for i in at.info)
    assert set(table(at, "lca")["true"]) <= tops  # the pairs of level-1 super-classes

    page(at, "hierarchy")
    drawn = figures(at)["hierarchy_tree"]["data"][0]
    assert len(drawn["ids"]) <= chart_module.SECTORS_MAX and drawn["maxdepth"] <= 3
    assert len(drawn["ids"]) == int((tree.depth <= drawn["maxdepth"]).sum())  # whole levels, from the top
    at.text_input(key="hierarchy_node_find").set_value("c4321").run()
    assert at.selectbox(key="hierarchy_node").options[0].endswith(" / c4321")
    assert all("c4321" in o for o in at.selectbox(key="hierarchy_node").options)
    assert {m.label for m in at.metric} >= {"Accuracy at this node", "Samples under it"}

    page(at, "geometry")  # the tree agreement of a seeded sample of the classes, and the page says so
    assert table(at, "classes clustered")["classes clustered"].tolist() == [CLUSTER_CLASSES]
    assert any(f"(large: {CLUSTER_CLASSES:,} of {tree.num_leaves:,} classes)" in c.value for c in at.caption)


TORCH_FREE = """
import sys
from streamlit.testing.v1 import AppTest
at = AppTest.from_file(sys.argv[1], default_timeout=120).run()
for name in sys.argv[2:]:
    at.switch_page(f"views/{name}.py").run()
    assert not at.exception, (name, [e.message for e in at.exception])
print(sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "torchvision")))
"""


@pytest.mark.slow  # a dashboard in its own process
def test_the_pages_of_a_prediction_file_never_import_torch(tmp_path):
    """A prediction file of a dataset hseval cannot load has no image to show: no page imports torch
    (half a gigabyte of memory and seconds), the Decisions page's image panel included."""
    import os
    import subprocess
    import sys

    from hseval.cli.main import main
    from hseval.tree import write_hierarchy
    from tests.helpers import random_tree

    write_hierarchy(random_tree(12, 2), tmp_path / "tree.txt")
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "p.npz", targets=rng.integers(0, 12, 100), logits=rng.normal(size=(100, 12)).astype("f4"))
    assert main(["evaluate", "--predictions", str(tmp_path / "p.npz"), "--hierarchy", str(tmp_path / "tree.txt"),
                 "--projections", "pca", "--out", str(tmp_path / "eval")]) == 0
    done = subprocess.run([sys.executable, "-c", TORCH_FREE, str(MAIN), *PAGES], capture_output=True, text=True,
                          env=dict(os.environ, HSEVAL_EVAL_DIR=str(tmp_path / "eval")), timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
