"""Charts that read at a glance (issue 25), checked on the figures themselves: every chart sized for
its content, legends that never clip, marks that do not hide each other, reading guides that look
at the data, and one name and one help per column. The browser test looks at the drawn pages."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pytest

from hseval.io import evaluation_format
from hseval.reporting import charts, sections
from hseval.reporting.charts.common import MIN_HEIGHT, legend_entries
from hseval.reporting.charts.embeddings import _label_spots
from hseval.reporting.columns import column_help, display_name, key_name, level_label, metric_help, not_available
from tests.helpers import appendix_a, fashion_tree

RUNS = ["plain", "multitask", "hierarchy", "manifold", "riemann", "manifold-learnable-radius",
        "riemann-learnable-radius", "hyperbolic"]


def geometry_frame() -> pd.DataFrame:
    rows = []
    for run in RUNS[:5]:
        for depth, name in ((1, "fruit"), (2, "apple"), (2, "orange")):
            step = 0.5 ** depth if run in ("manifold", "riemann") else 0.3 * depth
            rows.append({"run": run, "name": name, "depth": depth, "angle_to_parent": np.nan if depth == 1 else 20.0,
                         "delta_norm": step, "radius": 0.5 ** depth if run in ("manifold", "riemann") else np.nan})
    return pd.DataFrame(rows)


@functools.cache
def every_chart() -> dict:
    """One of each chart, built once for the module (the tests only read them)."""
    tree = appendix_a()
    levels = pd.DataFrame([{"run": r, "level": lv, "depth": d, "way": w, "accuracy": 0.5 + 0.01 * k}
                           for k, r in enumerate(RUNS) for lv, d, w in (("leaf", 0, "leaf"),
                                                                        ("level 1", 1, "from leaf"))])
    history = pd.DataFrame({"run": RUNS, "epoch": 1, "split": "test", "accuracy": 0.6})
    bins = pd.DataFrame({"run": "plain", "confidence": [0.2, 0.8], "accuracy": [0.1, 0.9], "count": [5, 5]})
    pairs = pd.DataFrame([{"run": r, "depth": d, "kind": k, "angle": 40.0 + d} for r in RUNS for d in (1, 2)
                          for k in ("sibling", "non-sibling")])
    diffs = pd.DataFrame([{"run": r, "metric": m, "delta": 0.01, "low": 0.0, "high": 0.02, "p_value": 0.05,
                           "p_holm": 0.1} for r in RUNS[1:] for m in ("leaf", "level 1 (from leaf)")])
    support = np.zeros(tree.num_nodes)
    support[: tree.num_leaves] = 10
    per_node = pd.DataFrame({"node": np.arange(tree.num_nodes), "support": support + 1, "accuracy": 0.5})
    points = pd.DataFrame({"method": "tsne", "kind": ["sample"] * 4 + ["class_vector"] * 2, "x": np.arange(6.0),
                           "y": np.arange(6.0), "label": ["apple", "cat", "apple", "dog", "apple", "cat"]})
    leaves = [tree.index(n) for n in ("apple", "orange", "cat", "dog")]
    return {
        "accuracy_by_level": charts.accuracy_by_level(levels),
        "history_curves": charts.history_curves(history),
        "reliability_diagram": charts.reliability_diagram(bins),
        "difference_intervals": charts.difference_intervals(diffs),
        "angle_to_parent": charts.angle_to_parent(geometry_frame()),
        "step_by_depth": charts.step_by_depth(geometry_frame()),
        "delta_vs_radius": charts.delta_vs_radius(geometry_frame()),
        "sibling_angles": charts.sibling_angles(pairs),
        "child_angles": charts.child_angles(geometry_frame()),
        "node_sunburst": charts.node_sunburst(tree, per_node),
        "node_deltas": charts.node_deltas(pd.DataFrame({"path": ["a", "b"], "delta": [0.1, -0.2]})),
        "projection_scatter": charts.projection_scatter(points, tree=tree),
        "confusion_heatmap": charts.confusion_heatmap(np.eye(4, dtype=int) * 5, leaves, tree),
        "empty": charts.history_curves(pd.DataFrame()),
    }


@pytest.mark.parametrize("name", list(every_chart()))
def test_every_chart_is_sized_for_its_content(name):
    """No chart leaves its height to the page (the report drew six of them 120 px tall), and a
    legend either fits beside the plot or lies below it, horizontal, with room made for it."""
    fig = every_chart()[name]
    height = fig.layout.height
    assert height is not None and height >= MIN_HEIGHT
    entries = legend_entries(fig)
    if fig.layout.legend.orientation == "h":  # below the plot, with the room it needs
        assert fig.layout.legend.y < 0 and fig.layout.margin.b >= 22 + 60
    elif entries:
        plot = height - fig.layout.margin.t - fig.layout.margin.b
        assert len(entries) * 22 + 30 <= plot, (len(entries), plot)


def test_a_long_legend_goes_below_and_the_figure_grows_by_its_lines():
    names = [f"a-rather-long-run-name-{k}" for k in range(12)]
    levels = pd.DataFrame({"run": names, "level": "leaf", "depth": 0, "way": "leaf", "accuracy": 0.5})
    few = charts.accuracy_by_level(levels.head(3))
    many = charts.accuracy_by_level(levels)
    assert few.layout.legend.orientation is None  # three entries fit beside the plot
    assert many.layout.legend.orientation == "h" and many.layout.height > few.layout.height + 100
    assert legend_entries(many) == names  # every run once in the legend, none left out


def test_the_forest_plot_gives_each_run_its_line_and_names_equal_differences():
    """Runs with equal differences were one dot; the legend copied a run's first (hollow) dot."""
    frame = pd.DataFrame({"run": ["a", "b", "c"], "metric": "level 2 (from leaf)", "delta": [0.01, 0.01, 0.03],
                          "low": [-0.01, -0.01, 0.02], "high": [0.02, 0.02, 0.04], "p_value": [0.5, 0.5, 0.01],
                          "p_holm": [1.0, 1.0, 0.03]})
    fig = charts.difference_intervals(frame, colours={"a": "#111111", "b": "#222222", "c": "#333333"})
    dots = [t for t in fig.data if t.customdata is not None]
    assert len({float(t.y[0]) for t in dots}) == 3  # three lines within the one metric
    assert all(abs(float(t.y[0])) < 0.5 for t in dots)  # ...all within its band
    assert "same difference as b" in dots[0].customdata[0][4] and dots[2].customdata[0][4] == ""
    entries = {t.name: t.marker for t in fig.data if t.showlegend}
    assert {n: (m.symbol, m.color) for n, m in entries.items() if n in "abc"} == {
        "a": ("circle", "#111111"), "b": ("circle", "#222222"), "c": ("circle", "#333333")}  # filled, not copied
    assert {"filled: Holm-corrected p below 0.05", "hollow: not significant after correction"} <= set(entries)


def test_equal_steps_are_drawn_apart_and_said_so():
    """manifold's dots sat exactly under riemann's: one head never showed."""
    fig = charts.delta_vs_radius(geometry_frame())
    drawn = {t.name: t for t in fig.data if t.customdata is not None}
    manifold, riemann = drawn["manifold"], drawn["riemann"]
    np.testing.assert_allclose(manifold.customdata[:, 0].astype(float), riemann.customdata[:, 0].astype(float))
    assert (np.asarray(manifold.y) != np.asarray(riemann.y)).all()  # drawn apart...
    assert all("same value as riemann" in note for note in manifold.customdata[:, 1])  # ...and said in the hover
    assert any(t.name == "step = R_p" for t in fig.data)


def test_confusion_lines_mark_every_super_class_and_the_guide_says_which():
    tree = fashion_tree()
    order = [n for n in tree.preorder().tolist() if n < tree.num_leaves]
    fig = charts.confusion_heatmap(np.eye(len(order), dtype=int) * 10, order, tree)
    cuts = {round(s.x0 + 0.5): s.line.width for s in fig.layout.shapes if s.x0 == s.x1}
    names = [tree.node_names[n] for n in order]
    # tree order: Bag | Trouser, Dress, T-shirt/top ... Shirt | Sandal ...: clothing | footwear thicker than | tops
    assert cuts[names.index("Sandal")] > cuts[names.index("T-shirt/top")] > 0
    assert names.index("Trouser") in cuts and names.index("Dress") not in cuts  # Trouser, Dress: one clothing block
    assert "level-1 super-classes (Bag, clothing, footwear)" in charts.confusion_guide(tree, None)
    assert "no blocks" in charts.confusion_guide(tree, 1)
    level1 = [tree.index(n) for n in ("clothing", "footwear", "Bag")]
    assert not charts.confusion_heatmap(np.eye(3, dtype=int), level1, tree).layout.shapes


def test_a_level_names_the_classes_it_leaves_out():
    tree = fashion_tree()
    targets = np.repeat(np.arange(tree.num_leaves), 100)
    left_out = charts.shallower_samples(targets, tree, 2)
    assert left_out == {"Bag": 100}
    nodes = [n for n in tree.preorder().tolist() if tree.depth[n] == 2] + [-1]
    matrix = np.diag([400, 100, 100, 100, 100, 100, 0])
    fig = charts.confusion_heatmap(matrix, nodes, tree, left_out=left_out)
    assert "Bag has no level-2 super-class: its 100 samples are left out (900 counted)" in fig.layout.title.text
    assert fig.data[0].x[-1] == "Bag (no level-2 node)"


def test_class_vector_names_are_placed_off_each_other():
    x, y = np.array([0.0, 0.01, 0.02, 0.03, 5.0]), np.array([0.0, 0.0, 0.01, 0.0, 5.0])
    spots = _label_spots(x, y, ["Pullover", "Coat", "Shirt", "tops", "Bag"], (0.0, 5.0, 0.0, 5.0))
    placed = [s for s in spots[:4] if s]
    assert len(placed) >= 3 and len(placed) == len(set(placed))  # crowded names take other spots, or none
    assert spots[-1] == "top center"


def test_projection_hover_names_the_prediction():
    tree = appendix_a()
    points = pd.DataFrame({"kind": ["sample", "sample", "class_vector"], "x": [0.0, 1, 2], "y": [0.0, 1, 2],
                           "label": ["apple", "cat", "cat"], "index": [1, 0, np.nan], "correct": [False, True, None]})
    shown = charts.with_predictions(points, tree, np.array([[2, 0], [3, 1]]))
    assert shown["predicted"].tolist() == ["dog", "cat", ""]
    fig = charts.projection_scatter(shown, color="label", tree=tree)
    assert any("predicted" in (t.hovertemplate or "") for t in fig.data if t.customdata is not None)


def test_guides_say_only_what_the_data_shows():
    one_epoch = pd.DataFrame({"run": ["a", "b"], "epoch": 1, "accuracy": [0.6, 0.7]})
    assert "rise" not in sections.history_guide(one_epoch) and "One epoch" in sections.history_guide(one_epoch)
    rising = pd.DataFrame({"run": ["a", "a", "b", "b"], "epoch": [1, 2, 1, 2], "accuracy": [0.5, 0.6, 0.7, 0.7]})
    assert "Still rising at the last epoch (more epochs may help): a." in sections.history_guide(rising)
    assert "seeds" not in sections.levels_guide(False) and "± std over seeds" in sections.levels_guide(True)
    tree = fashion_tree()
    accuracy = np.full(tree.num_nodes, 0.9)
    accuracy[tree.index("Shirt")] = 0.3
    per_node = pd.DataFrame({"node": np.arange(tree.num_nodes), "support": 10, "accuracy": accuracy})
    guide = sections.sunburst_guide(tree, per_node)
    assert "Darkest classes: Shirt (0.30)" in guide and "(Bag at level 1, Trouser at level 2, T-shirt/top" in guide
    assert "super-classes where" not in guide


def test_every_summary_column_has_one_name_and_a_help():
    from hseval.reporting.summary import summary_table  # noqa: F401  (the columns listed below are its own)

    tree = fashion_tree()
    columns = ["top1", "top5", "level1_from_leaf", "level2_own_scores", "level1_agreement", "mistake_severity",
               "avg_hdist@1", "best_hdist@5", "hierarchical_precision", "hierarchical_recall", "hierarchical_f1",
               "crm_top1", "crm_mistake_severity", "crm_avg_hdist@1", "crm_hierarchical_f1", "ece", "cross_entropy",
               "feature_norm", "max_logit", "cophenetic_correlation", "seed", "samples", "head", "backbone"]
    for column in columns:
        assert column_help(column, tree), column
    assert display_name("level1_from_leaf", tree) == display_name("level 1 (from leaf)", tree) \
        == "level 1 (from leaf)"
    assert level_label(1, tree) == "level 1 · Bag, clothing, footwear"  # in tree order, as every chart lists them
    assert "Level 2: Trouser, Dress, tops, Sandal, Sneaker, Ankle boot." in column_help("level2_own_scores", tree)
    assert display_name("angle_to_parent") == "angle to parent (°)"
    assert display_name("mean_sibling_angle") == "mean sibling angle (°)"
    assert level_label(2, tree) == "level 2 · Trouser, Dress, tops +3 more"
    assert key_name("superclass_acc_from_levels", tree) == "level 1, 2 (own scores)"
    assert not_available("no scores") == "n/a — no scores"


def test_every_score_of_metrics_json_has_its_help_where_it_is_defined():
    scores = [k for k, f in evaluation_format.metrics_record().model_fields.items()
              if k not in ("hierarchy", "training", "history", "source", "unavailable", "run_path", "split",
                           "dataset", "train_seconds", "eval_seconds", "reliability")]
    for key in [*scores, "top1", "top5", "avg_hdist@1", "best_hdist@3"]:
        assert metric_help(key), key
    assert metric_help("crm", "hierarchical_f1") == metric_help("hierarchical_f1")
