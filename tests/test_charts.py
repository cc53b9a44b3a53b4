"""Chart functions alone (no Streamlit): hand-made frames in, the expected traces out; empty
inputs give an annotated empty figure rather than an exception."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hseval.reporting import charts
from hseval.reporting.colours import (
    OUTCOME_COLOURS,
    PALETTE,
    SHALLOWER_COLOUR,
    category_colours,
    run_colours,
    shallower_label,
    under_node,
)
from hseval.reporting.colours import categories as colour_categories
from tests.helpers import appendix_a


def is_empty(fig: go.Figure) -> bool:
    return len(fig.data) == 0 and len(fig.layout.annotations) == 1 and fig.layout.annotations[0].text


def per_node_frame(tree, accuracy) -> pd.DataFrame:
    support = np.zeros(tree.num_nodes)
    support[: tree.num_leaves] = 10
    for leaf in range(tree.num_leaves):  # a super-class's support is the sum over its leaves
        for node in tree.path(leaf)[:-1]:
            support[node] += 10
    return pd.DataFrame({"node": np.arange(tree.num_nodes), "support": support, "accuracy": accuracy})


def levels_frame() -> pd.DataFrame:
    return pd.DataFrame({"run": ["a", "a", "a", "b", "b"], "level": ["leaf", "level 1", "level 1", "leaf", "level 1"],
                         "depth": [0, 1, 1, 0, 1], "way": ["leaf", "from leaf", "parent δ", "leaf", "from leaf"],
                         "accuracy": [0.5, 0.992, 0.7, 0.6, 0.994]})


def test_accuracy_by_level_dots_one_panel_per_level_zoomed():
    fig = charts.accuracy_by_level(levels_frame(), colours={"a": "#111111", "b": "#222222"})
    assert {t.type for t in fig.data} == {"scatter"} and {t.mode for t in fig.data} == {"markers"}
    assert [t.name for t in fig.data] == ["a", "b", "a", "b"]  # a run's dots in each panel, legend once
    assert [t.showlegend for t in fig.data] == [True, True, False, False]
    assert {t.name: t.marker.color for t in fig.data} == {"a": "#111111", "b": "#222222"}
    assert [a.text for a in fig.layout.annotations] == ["leaf", "level 1"]
    low, high = fig.layout.yaxis2.range  # level 1: zoomed so 0.992 and 0.994 are apart, not 0..1
    assert 0.6 < low < 0.7 and 1.0 < high < 1.02  # 0.994's dot stays off the frame
    low, high = fig.layout.yaxis.range
    assert 0.45 < low < 0.5 and 0.6 < high < 0.7
    assert sum(len(t.y) for t in fig.data) == 5
    assert is_empty(charts.accuracy_by_level(pd.DataFrame()))


def _tick_labels(low: float, high: float, nticks: int) -> list[str]:
    """The labels plotly draws on an axis of ``range`` [low, high] with at most ``nticks`` automatic
    ticks, formatted ".3f": its step is the smallest 1-2-5 number at least the span / nticks."""
    rough = (high - low) / nticks
    power = 10 ** math.floor(math.log10(rough))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= rough * (1 - 1e-9))
    first = math.ceil(low / step - 1e-9)
    return [f"{k * step:.3f}" for k in range(first, math.floor(high / step + 1e-9) + 1)]


def test_every_run_at_one_gets_an_axis_around_it_with_distinct_labels():
    """Every run at 1.0 once drew its dots on the axis's top edge, labelled 1.000, 1.000, 0.999 ..."""
    frame = pd.DataFrame({"run": ["a", "b", "c"], "level": "leaf", "depth": 0, "way": "leaf", "accuracy": 1.0})
    axis = charts.accuracy_by_level(frame).layout.yaxis
    low, high = axis.range
    span = high - low
    assert span >= 0.01 - 1e-12 and 0.02 * span <= high - 1.0 <= 0.05 * span  # the dots drawn whole, near the top
    labels = _tick_labels(low, high, axis.nticks)
    assert len(labels) >= 3 and len(set(labels)) == len(labels) and labels[-1] == "1.000", labels


@given(values=st.lists(st.floats(0, 1), min_size=1, max_size=6), share=st.floats(0, 1))
def test_a_zoomed_axis_holds_every_dot_whole_and_labels_apart(values, share):
    """Any accuracies, equal or not, at the bounds or inside: the axis holds every value away from
    its ends, is at least 0.01 wide (distinct three-decimal labels) and reaches past [0, 1] only by
    the little a dot at a bound needs."""
    values = values + [values[0]] * int(share * 3)  # ties
    frame = pd.DataFrame({"run": [f"r{i}" for i in range(len(values))], "level": "leaf", "depth": 0, "way": "leaf",
                          "accuracy": values})
    axis = charts.accuracy_by_level(frame).layout.yaxis
    low, high = axis.range
    span = high - low
    assert span >= 0.01 - 1e-12 and -0.06 * span <= low and high <= 1 + 0.06 * span
    assert all(low + 0.03 * span <= v <= high - 0.03 * span for v in values)
    labels = _tick_labels(low, high, axis.nticks)
    assert len(set(labels)) == len(labels) >= 2


def test_accuracy_by_level_draws_seed_spread_as_error_bars():
    frame = levels_frame().assign(std=[0.01, 0.002, np.nan, 0.02, 0.001], seeds=[3, 3, 1, 3, 3])
    fig = charts.accuracy_by_level(frame)
    assert fig.data[0].error_y.visible and list(fig.data[0].error_y.array) == [0.01]
    assert "± 0.0100 (std over 3 seeds)" in fig.data[0].text[0]


def test_run_colours_are_a_function_of_the_name_among_the_folders_runs():
    known = ["plain", "multitask", "hierarchy", "manifold", "riemann", "riemann-learnable-radius", "hyperbolic"]
    everyone = run_colours(known, known=known)
    assert len(set(everyone.values())) == len(known)  # no two runs of a folder share a colour
    assert set(everyone.values()) <= set(PALETTE[:10])  # the ten well-told-apart colours first
    for skipped in known:  # a run that cannot be read changes no other run's colour
        rest = [n for n in known if n != skipped]
        assert run_colours(rest, known=known) == {n: everyone[n] for n in rest}
    assert run_colours(known[::-1], known=known) == everyone  # nor does the order or the selection
    assert run_colours(["riemann"], known=known) == {"riemann": everyone["riemann"]}
    many = [f"run{i}" for i in range(27)]
    assert len(set(run_colours(many).values())) == 27


@pytest.mark.parametrize("kind", ["sunburst", "treemap"])
def test_node_sunburst_ids_and_parents_are_the_tree(kind):
    tree = appendix_a()
    accuracy = np.linspace(0, 1, tree.num_nodes)
    fig = charts.node_sunburst(tree, per_node_frame(tree, accuracy), kind=kind)
    (trace,) = fig.data
    assert trace.type == kind
    assert list(trace.ids) == list(tree.node_names)
    expected_parents = ["" if p < 0 else tree.node_names[p] for p in tree.parents.tolist()]
    assert list(trace.parents) == expected_parents
    np.testing.assert_allclose(trace.marker.colors, accuracy)
    assert (trace.marker.cmin, trace.marker.cmax) == (0, 1)
    assert list(trace.customdata) == list(range(tree.num_nodes))
    fruit = tree.index("fruit")
    assert trace.values[fruit] == trace.values[tree.index("apple")] + trace.values[tree.index("orange")]


def test_node_sunburst_diverging_is_symmetric_around_zero():
    tree = appendix_a()
    frame = per_node_frame(tree, np.zeros(tree.num_nodes)).rename(columns={"accuracy": "delta"})
    frame.loc[0, "delta"], frame.loc[1, "delta"] = -0.2, 0.1
    trace = charts.node_sunburst(tree, frame, value="delta", diverging=True).data[0]
    assert trace.marker.cmid == 0
    assert (trace.marker.cmin, trace.marker.cmax) == (pytest.approx(-0.2), pytest.approx(0.2))


def test_node_sunburst_empty_and_bad_kind():
    tree = appendix_a()
    assert is_empty(charts.node_sunburst(tree, pd.DataFrame()))
    with pytest.raises(ValueError, match="sunburst' or 'treemap"):
        charts.node_sunburst(tree, per_node_frame(tree, np.ones(tree.num_nodes)), kind="pie")


def test_angle_to_parent_one_box_per_run():
    geometry = pd.DataFrame({"run": ["a", "a", "b"], "depth": [2, 2, 2], "angle_to_parent": [10.0, 20.0, 30.0]})
    fig = charts.angle_to_parent(geometry)
    assert [t.type for t in fig.data] == ["box", "box"] and [t.name for t in fig.data] == ["a", "b"]
    assert tuple(fig.layout.yaxis.range) == (0, 180)
    with_root = pd.concat([geometry, pd.DataFrame({"run": "a", "depth": [1], "angle_to_parent": [np.nan]})])
    fig = charts.angle_to_parent(with_root)
    assert list(fig.layout.xaxis.categoryarray) == ["1", "2"]  # depth 1 keeps its place...
    assert "no angle at depth 1: the parent is the root" in fig.layout.annotations[0].text  # ...and says why
    assert is_empty(charts.angle_to_parent(pd.DataFrame()))
    assert is_empty(charts.angle_to_parent(geometry.assign(angle_to_parent=np.nan)))


def test_sibling_angles_split_by_kind():
    pairs = pd.DataFrame({"run": "a", "depth": [1, 1, 2, 2], "kind": ["sibling", "non-sibling"] * 2,
                          "angle": [80.0, 100.0, 30.0, 110.0]})
    fig = charts.sibling_angles(pairs)
    assert {t.type for t in fig.data} == {"violin"} and {t.name for t in fig.data} == {"sibling", "non-sibling"}
    assert {t.spanmode for t in fig.data} == {"hard"}  # the kernel stops at the data: no tails past 180°
    assert tuple(fig.layout.yaxis.range) == (0, 180)
    assert is_empty(charts.sibling_angles(pd.DataFrame()))


def test_delta_vs_radius_uses_radius_when_there_is_one():
    geometry = pd.DataFrame({"run": "a", "name": ["x", "y"], "depth": [1, 2], "delta_norm": [1.0, 0.5],
                             "radius": [1.0, 0.5]})
    assert charts.delta_vs_radius(geometry).layout.xaxis.title.text == "radius R_p"
    assert is_empty(charts.delta_vs_radius(geometry.assign(radius=np.nan)))
    mixed = pd.concat([geometry, geometry.assign(run="b", radius=np.nan)], ignore_index=True)
    fig = charts.delta_vs_radius(mixed)  # the axis never switches: b is named, not drawn at another x
    assert fig.layout.xaxis.title.text == "radius R_p" and [t.name for t in fig.data] == ["a", "step = R_p"]
    assert fig.layout.annotations[0].text == "not drawn (no radius R_p): b"
    steps = charts.step_by_depth(mixed)
    assert [t.name for t in steps.data] == ["a", "b"] and {t.type for t in steps.data} == {"box"}
    assert is_empty(charts.delta_vs_radius(pd.DataFrame()))


def projection_points() -> pd.DataFrame:
    return pd.DataFrame({"method": "pca", "kind": ["sample"] * 4 + ["class_vector"] * 2,
                         "x": np.arange(6.0), "y": np.arange(6.0),
                         "label": ["apple", "cat", "apple", "dog", "apple", "cat"],
                         "level1": ["fruit", "animal", "fruit", "animal", "fruit", "animal"],
                         "correct": [True, False, True, True, np.nan, np.nan]})


def samples(fig: go.Figure) -> list:
    """The traces of a projection's samples (the legend's entries are traces of their own)."""
    return [t for t in fig.data if t.customdata is not None]


def legend(fig: go.Figure) -> list[str]:
    return [t.name for t in fig.data if t.showlegend is not False]


def test_projection_scatter_samples_coloured_and_vectors_overlaid():
    fig = charts.projection_scatter(projection_points(), color="level1")
    assert [t.name for t in samples(fig)] == ["animal", "fruit"]  # without a tree: in name order
    assert legend(fig) == ["animal", "fruit", "class vectors"]
    vectors = fig.data[-1]
    assert list(vectors.text) == ["apple", "cat"] and vectors.marker.symbol == "diamond"
    assert "fruit/apple" in set(samples(fig)[1].hovertext)
    assert (fig.layout.xaxis.title.text, fig.layout.yaxis.title.text) == ("PCA 1", "PCA 2")


def test_projection_scatter_options():
    points = projection_points()
    assert legend(charts.projection_scatter(points, color="correct", show_vectors=False)) == ["correct", "wrong"]
    assert legend(charts.projection_scatter(points, color="nope"))[:3] == ["apple", "cat", "dog"]
    assert is_empty(charts.projection_scatter(pd.DataFrame()))


def test_confusion_heatmap_names_blocks_and_counts():
    tree = appendix_a()
    leaves = [tree.index(n) for n in ("apple", "orange", "cat", "dog")]
    matrix = np.array([[3, 1, 0, 0], [0, 0, 0, 0], [2, 2, 4, 0], [0, 0, 1, 5]])
    fig = charts.confusion_heatmap(matrix, leaves, tree)
    (trace,) = fig.data
    z = np.asarray(trace.z)
    np.testing.assert_allclose(z.sum(axis=1), [1, 1, 1])
    assert list(trace.x) == ["apple", "orange", "cat", "dog"]
    assert list(trace.y) == ["apple", "cat", "dog"]  # orange has no samples: left out, and said so
    assert "no samples: orange" in fig.layout.title.text
    assert trace.text[1][0] == "true cat (in animal)<br>predicted apple (in fruit)<br>2 of 8 (25.0%)"
    assert [s.x0 for s in fig.layout.shapes if s.type == "line" and s.x0 == s.x1] == [1.5]  # fruit | animal
    counts = charts.confusion_heatmap(matrix, leaves, tree, normalize=False).data[0].z
    np.testing.assert_array_equal(np.asarray(counts), matrix[[0, 2, 3]])
    level = charts.confusion_heatmap(np.array([[5, 1], [0, 0]]), [tree.index("fruit"), -1], tree)
    assert list(level.data[0].x) == ["fruit", "shallower class (no level-1 node)"]
    assert list(level.data[0].y) == ["fruit"]
    assert not level.layout.shapes  # level 1: no blocks above it
    assert is_empty(charts.confusion_heatmap(np.zeros((0, 0)), [], tree))


def test_history_and_reliability():
    history = pd.DataFrame({"run": "a", "epoch": [1, 2], "split": "test", "accuracy": [0.5, 0.6]})
    fig = charts.history_curves(history)
    assert [t.type for t in fig.data] == ["scatter"]
    assert (fig.layout.xaxis.dtick, fig.layout.xaxis.tickformat) == (1, "d")  # epochs 1, 2 — never 1.2, 1.4
    assert is_empty(charts.history_curves(pd.DataFrame()))
    assert fig.layout.yaxis.title.text == "test accuracy"
    # data.test_subset: the axis says on how many images training tested (the evaluation may use more)
    subset = charts.history_curves(history.assign(samples=2000))
    assert subset.layout.yaxis.title.text == "test accuracy (2,000 images)"
    mixed = charts.history_curves(history.assign(samples=[2000, 10000]))
    assert mixed.layout.yaxis.title.text == "test accuracy"
    # data.val_fraction: training tested on the held-out validation images, and the axis says so
    held = charts.history_curves(history.assign(split="validation", samples=600))
    assert held.layout.yaxis.title.text == "validation accuracy (600 images)"
    both = charts.history_curves(history.assign(split=["validation", "test"]))
    assert both.layout.yaxis.title.text == "validation or test accuracy (per run)"
    bins = pd.DataFrame({"run": "a", "confidence": [0.2, 0.8], "accuracy": [0.1, 0.9], "count": [5, 5]})
    assert [t.name for t in charts.reliability_diagram(bins).data] == ["a", "honest (diagonal)"]
    assert is_empty(charts.reliability_diagram(pd.DataFrame()))


def test_child_angles_bars_per_child():
    children = pd.DataFrame({"run": "a", "name": ["apple", "orange"], "angle_to_parent": [12.0, 15.0],
                             "delta_norm": [0.5, 0.5], "radius": [0.5, 0.5]})
    (trace,) = charts.child_angles(children).data
    assert trace.type == "bar" and list(trace.x) == ["apple", "orange"] and list(trace.y) == [12.0, 15.0]
    assert is_empty(charts.child_angles(pd.DataFrame()))
    assert is_empty(charts.child_angles(children.assign(angle_to_parent=np.nan)))


def test_node_deltas_keeps_the_largest_absolute_differences():
    deltas = pd.DataFrame({"path": ["a", "b", "c", "d"], "delta": [0.1, -0.5, 0.3, np.nan]})
    (trace,) = charts.node_deltas(deltas, top=2).data
    assert list(trace.y) == ["c", "b"]  # largest |delta| drawn at the top (last)
    assert trace.marker.cmid == 0
    assert is_empty(charts.node_deltas(pd.DataFrame()))


def test_difference_intervals_fill_the_real_differences():
    """Filled: significant after Holm's correction. The third interval excludes 0 but its adjusted p
    does not stay below 0.05: hollow."""
    frame = pd.DataFrame({"run": ["a", "a", "a"], "metric": ["leaf", "level 1 (from leaf)", "level 2 (from leaf)"],
                          "delta": [0.02, 0.001, 0.01], "low": [0.01, -0.002, 0.0005], "high": [0.03, 0.004, 0.02],
                          "p_value": [0.001, 0.6, 0.03], "p_holm": [0.003, 0.6, 0.06]})
    (trace,) = [t for t in charts.difference_intervals(frame).data if t.customdata is not None]
    assert list(trace.marker.symbol) == ["circle", "circle-open", "circle-open"]
    np.testing.assert_allclose(trace.error_x.array, [0.01, 0.003, 0.01])
    np.testing.assert_allclose(trace.error_x.arrayminus, [0.01, 0.003, 0.0095])
    assert is_empty(charts.difference_intervals(pd.DataFrame()))


def test_sunburst_colour_scale_is_fixed_so_one_accuracy_has_one_colour_everywhere():
    tree = appendix_a()
    for accuracy in (np.linspace(0.93, 0.99, tree.num_nodes), np.linspace(0.123, 0.9, tree.num_nodes)):
        trace = charts.node_sunburst(tree, per_node_frame(tree, accuracy)).data[0]
        assert (trace.marker.cmin, trace.marker.cmax) == (0.0, 1.0)


def test_projection_scatter_outcome_colours_do_not_depend_on_the_data():
    points = projection_points()
    flipped = points.iloc[[1, 0, 2, 3, 4, 5]].reset_index(drop=True)  # a wrong sample comes first
    for frame in (points, flipped):
        fig = charts.projection_scatter(frame, color="correct", tree=appendix_a(), show_vectors=False)
        for traces in (samples(fig), [t for t in fig.data if t.showlegend]):
            assert [(t.name, t.marker.color) for t in traces] == [("correct", OUTCOME_COLOURS["correct"]),
                                                                 ("wrong", OUTCOME_COLOURS["wrong"])]


def test_category_colours_are_fixed_by_the_tree():
    tree = appendix_a()
    colours = category_colours(tree, "label")
    assert list(colours) == ["apple", "orange", "cat", "dog"] and len(set(colours.values())) == 4
    assert list(category_colours(tree, "level1")) == ["fruit", "animal", shallower_label("level1")]
    only_cats = projection_points().query("label != 'apple'")  # a run whose sample lacks a class
    traces = {t.name: t.marker.color for t in samples(charts.projection_scatter(only_cats, color="label", tree=tree))}
    assert traces["cat"] == colours["cat"] and traces["dog"] == colours["dog"]


def test_projection_scatter_draws_shallower_samples_in_grey():
    from tests.helpers import unbalanced

    tree = unbalanced()  # leaves x (depth 2), z (depth 1), y, v (depth 4), w (depth 3)
    points = pd.DataFrame({"kind": "sample", "x": np.arange(5.0), "y": np.arange(5.0),
                           "label": ["x", "z", "z", "w", "y"], "level1": ["a", "z", "z", "a", "a"],
                           "level2": ["x", np.nan, "", "b", "b"], "level3": [np.nan, np.nan, np.nan, "w", "c"],
                           "correct": True})
    traces = {t.name: t for t in samples(charts.projection_scatter(points, color="level2", tree=tree))}
    grey = traces[shallower_label("level2")]
    assert len(grey.x) == 2 and grey.marker.color == SHALLOWER_COLOUR
    assert sum(len(t.x) for t in traces.values()) == 5
    categories = colour_categories(points, "level3")
    assert (categories == "(no level-3 ancestor: shallower class)").sum() == 3


def test_projection_scatter_highlight_fades_without_dropping():
    points = projection_points()
    fig = charts.projection_scatter(points, color="level1", tree=appendix_a(), highlight="apple")
    drawn = samples(fig)
    rows = np.concatenate([np.asarray(t.customdata)[:, 0].astype(int) for t in drawn])
    assert sorted(rows) == [0, 1, 2, 3]  # every sample, customdata[0] its row in points
    opacity = np.concatenate([t.marker.opacity for t in drawn])
    colour = np.concatenate([t.marker.color for t in drawn])
    hit = under_node(points, "apple")[rows]
    assert hit.sum() == 2 and (opacity[hit] > 0.9).all() and (opacity[~hit] < 0.5).all()
    assert len(set(colour[~hit])) == 1 and colour[~hit][0] not in set(colour[hit])
    assert under_node(points, "fruit").tolist() == [True, False, True, False, True, False]
    palette = category_colours(appendix_a(), "level1")  # the legend keeps the colours the highlight fades
    assert {t.name: t.marker.color for t in fig.data if t.showlegend and t.name in palette} == \
        {"fruit": palette["fruit"], "animal": palette["animal"]}


def _many_classes(classes: int, per_class: int = 2) -> pd.DataFrame:
    """Projection rows of ``classes`` classes under 10 super-classes: samples and one vector each."""
    rng = np.random.default_rng(0)
    label = np.repeat([f"c{i}" for i in range(classes)], per_class).tolist() + [f"c{i}" for i in range(classes)]
    kind = ["sample"] * (classes * per_class) + ["class_vector"] * classes
    return pd.DataFrame({"method": "pca", "kind": kind, "x": rng.normal(size=len(kind)),
                         "y": rng.normal(size=len(kind)), "label": label,
                         "level1": [f"s{int(c[1:]) % 10}" for c in label]})


def test_projection_scatter_at_many_classes_draws_one_trace_and_only_the_highlighted_vectors():
    points = _many_classes(charts.VECTORS_MAX + 200)
    fig = charts.projection_scatter(points, color="label")
    assert len(samples(fig)) == 1 and len(set(samples(fig)[0].marker.color)) >= 20  # one trace, coloured per point
    assert "class vectors" not in [t.name for t in fig.data]  # 500 diamonds would hide the samples
    lit = charts.projection_scatter(points, color="level1", highlight="s3")
    vectors = next(t for t in lit.data if t.name == "class vectors")
    assert len(vectors.x) == 50 and not any(vectors.text)  # its 50 vectors, named in their hover only (> 40)
    few = charts.projection_scatter(_many_classes(30), color="level1")
    assert sum(bool(t) for t in next(t for t in few.data if t.name == "class vectors").text) > 0


def test_sunburst_levels_send_whole_levels_within_the_budget():
    from tests.helpers import random_tree

    tree = random_tree(2000, 1, branching=0.2)
    per_level = np.bincount(tree.depth)[1:]
    for budget in (per_level[0], per_level[:2].sum(), tree.num_nodes, 10):
        nodes, levels, deepest = charts.sunburst_levels(tree, max_sectors=budget)
        assert deepest == tree.max_depth and 1 <= levels <= 3
        if len(nodes) < tree.num_nodes:  # cut: whole levels from the top, as many as fit (at least one)
            assert set(nodes.tolist()) == set(np.flatnonzero(tree.depth <= levels).tolist())
            assert len(nodes) <= budget or levels == 1
        fig = charts.node_sunburst(tree, per_node_frame(tree, np.full(tree.num_nodes, 0.5)), max_sectors=budget)
        assert list(fig.data[0].customdata) == nodes.tolist() and fig.data[0].maxdepth == levels
    top = int(np.flatnonzero(tree.depth == 1)[np.argmax([len(tree.subtree_leaves(n))
                                                          for n in np.flatnonzero(tree.depth == 1)])])
    nodes, levels, _ = charts.sunburst_levels(tree, top, max_sectors=10_000)
    under = {n for n in range(tree.num_nodes) if top in tree.path(n)}
    assert set(nodes.tolist()) == under
    fig = charts.node_sunburst(tree, per_node_frame(tree, np.full(tree.num_nodes, 0.5)), top=top)
    parents = dict(zip(fig.data[0].ids, fig.data[0].parents))
    assert parents[tree.node_names[top]] == "" and fig.data[0].maxdepth == levels + 1
