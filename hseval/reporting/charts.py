"""Figures as pure functions: tables in, ``plotly.graph_objects.Figure`` out.

The offline HTML report and the Streamlit dashboard draw the same figures from these functions;
none of them reads a file or computes a metric.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from hseval.reporting import colours
from hseval.tree.hierarchy import Hierarchy

__all__ = ["accuracy_by_level", "node_sunburst", "angle_to_parent", "sibling_angles", "delta_vs_radius",
           "step_by_depth", "projection_scatter", "confusion_heatmap", "history_curves", "reliability_diagram",
           "child_angles", "node_deltas", "run_colours", "difference_intervals"]

TEMPLATE = "plotly_white"
PALETTE = px.colors.qualitative.D3 + px.colors.qualitative.Dark2 + px.colors.qualitative.Set1
"""Colours of runs, by their position among all runs of the folder (:func:`run_colours`)."""
ROOT_NOTE = "depth 1 has no angle to its parent: the parent is the root, whose vector is w = 0"


def run_colours(names: list[str]) -> dict[str, str]:
    """One colour per run, fixed by the run's position in ``names`` (all runs of the folder, not
    the selection), so a run keeps its colour on every page, chart and in the report."""
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}


def _colour_args(frame: pd.DataFrame, colours: dict[str, str] | None) -> dict:
    if "run" not in frame:
        return {}
    runs = list(dict.fromkeys(frame["run"]))
    mapping = {**run_colours(runs), **(colours or {})}
    return {"color": "run", "color_discrete_map": mapping, "category_orders": {"run": runs}}


def _zoomed(values: np.ndarray, *, low: float = 0.0, high: float = 1.0, pad: float = 0.15) -> list[float] | None:
    """An axis range around ``values`` (padded by ``pad`` of their spread, within [low, high]), so
    that 0.992 against 0.994 is visible; None without finite values."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if not len(v):
        return None
    lo, hi = float(v.min()), float(v.max())
    margin = max((hi - lo) * pad, 0.002)
    return [max(low, lo - margin), min(high, hi + margin)]


def _empty(title: str, message: str) -> go.Figure:
    fig = go.Figure()
    fig.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    fig.update_layout(title=title, template=TEMPLATE, xaxis_visible=False, yaxis_visible=False, height=300)
    return fig


def accuracy_by_level(levels: pd.DataFrame, *, title: str = "Accuracy per level",
                      colours: dict[str, str] | None = None) -> go.Figure:
    """A dot plot from a long table with columns run, level ("leaf", "level 1" ...), way ("leaf",
    "from leaf", "own scores") and accuracy in [0, 1]; optional std and seeds (a seed
    group's spread over seeds, drawn as an error bar). One panel per level, each with its own axis
    zoomed to its values (so 0.992 against 0.994 shows), one colour per run (``colours``)."""
    if levels.empty:
        return _empty(title, "no accuracy to show")
    data = levels.sort_values("depth", kind="stable") if "depth" in levels else levels
    order = list(dict.fromkeys(data["level"]))
    runs = list(dict.fromkeys(levels["run"]))
    palette = {**run_colours(runs), **(colours or {})}
    spread = data["std"] if "std" in data else pd.Series(np.nan, index=data.index)
    seeds = data["seeds"] if "seeds" in data else pd.Series(1, index=data.index)
    wrap = min(len(order), 4)
    rows = (len(order) + wrap - 1) // wrap
    fig = make_subplots(rows=rows, cols=wrap, subplot_titles=order, horizontal_spacing=0.07,
                        vertical_spacing=0.25 / rows)
    for i, level in enumerate(order):
        row, col = i // wrap + 1, i % wrap + 1
        part = data[data["level"] == level]
        for run in runs:
            cell = part[part["run"] == run]
            if cell.empty:
                continue
            err = spread[cell.index].to_numpy(dtype=float)
            text = [f"{a:.4f}" + (f" ± {s:.4f} (std over {int(n)} seeds)" if s == s else "")
                    for a, s, n in zip(cell["accuracy"], err, seeds[cell.index])]
            fig.add_trace(go.Scatter(
                x=cell["way"], y=cell["accuracy"], mode="markers", name=run, legendgroup=run, showlegend=i == 0,
                offsetgroup=run, marker=dict(size=11, color=palette[run], line=dict(width=1, color="white")),
                error_y=dict(type="data", array=np.nan_to_num(err), visible=bool(np.isfinite(err).any())),
                text=text, hovertemplate=f"<b>{run}</b><br>%{{x}}: %{{text}}<extra></extra>"), row=row, col=col)
        low_high = np.concatenate([part["accuracy"] - spread[part.index].fillna(0),
                                   part["accuracy"] + spread[part.index].fillna(0)])
        fig.update_yaxes(range=_zoomed(low_high), tickformat=".3f", row=row, col=col)
    fig.update_layout(title=title, template=TEMPLATE, scattermode="group", scattergap=0.4, legend_title_text="run",
                      height=330 * rows + 40, font=dict(size=13), margin=dict(t=90))
    return fig



def node_sunburst(hierarchy: Hierarchy, per_node: pd.DataFrame, *, value: str = "accuracy",
                  title: str = "Accuracy per node", diverging: bool = False, kind: str = "sunburst") -> go.Figure:
    """The tree as a sunburst (or ``kind="treemap"``): sector size = support (samples), colour =
    ``value`` per node (``diverging`` for a difference between two runs, centred on 0).

    ``per_node`` has the columns node (canonical index), support and ``value``; each sector's
    ``customdata`` is its node index, so a click can be mapped back to the tree."""
    if kind not in ("sunburst", "treemap"):
        raise ValueError(f"kind must be 'sunburst' or 'treemap', got {kind!r}")
    if per_node.empty or not {"node", "support", value} <= set(per_node.columns):
        return _empty(title, f"no per-node {value} to show")
    names = [*hierarchy.node_names]
    parents = ["" if p < 0 else names[p] for p in hierarchy.parents.tolist()]
    frame = per_node.set_index("node").reindex(range(hierarchy.num_nodes))
    support = frame["support"].fillna(0).to_numpy(dtype=float)
    colour = frame[value].to_numpy(dtype=float)
    hover = [f"{' / '.join(hierarchy.path_names(i))}<br>{value}: {c:.3f}<br>samples: {int(s)}"
             for i, (c, s) in enumerate(zip(colour, support))]
    scale = "RdBu" if diverging else "Viridis"
    finite = np.isfinite(colour)
    limit = float(np.abs(colour[finite]).max()) if diverging and finite.any() else None
    # the scale spans the data (accuracies of 0.93..1 would otherwise all be one yellow)
    low, high = (float(colour[finite].min()), float(colour[finite].max())) if finite.any() else (0.0, 1.0)
    if high - low < 1e-9:
        low, high = low - 0.005, high + 0.005
    marker = dict(colors=colour, colorscale=scale, colorbar=dict(title=value), showscale=True,
                  cmid=0 if diverging else None,
                  cmin=-limit if limit else (None if diverging else low),
                  cmax=limit if limit else (None if diverging else high))
    trace = go.Sunburst if kind == "sunburst" else go.Treemap
    fig = go.Figure(trace(ids=names, labels=names, parents=parents, values=np.maximum(support, 0),
                          branchvalues="total", marker=marker, hovertext=hover, hoverinfo="text",
                          customdata=np.arange(hierarchy.num_nodes)))
    fig.update_layout(title=title, template=TEMPLATE, margin=dict(t=50, l=0, r=0, b=0), height=560)
    return fig


def angle_to_parent(geometry: pd.DataFrame, *, title: str = "Angle between each node and its parent",
                    colours: dict[str, str] | None = None) -> go.Figure:
    """Box plots of the parent/child angle (degrees, axis 0–180) per depth, one colour per run;
    needs the columns run, depth, angle_to_parent. Depths without an angle (depth 1: its parent
    is the root, w = 0) keep their place on the axis and are named in a note."""
    data = geometry.dropna(subset=["angle_to_parent"]) if not geometry.empty else geometry
    if data.empty:
        return _empty(title, f"no parent/child angles ({ROOT_NOTE})")
    depths = sorted({int(d) for d in geometry["depth"]})
    fig = px.box(data.assign(depth=data["depth"].astype(int).astype(str)), x="depth", y="angle_to_parent",
                 points=False, template=TEMPLATE, title=title, labels={"angle_to_parent": "angle to parent (°)"},
                 **_merge_orders(_colour_args(data, colours), {"depth": [str(d) for d in depths]}))
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=[str(d) for d in depths])
    fig.update_yaxes(range=[0, 180], dtick=30)
    missing = [d for d in depths if d not in set(data["depth"].astype(int))]
    if missing:
        fig.add_annotation(text=f"no angle at depth {', '.join(map(str, missing))}: "
                                + ("the parent is the root (w = 0)" if missing == [1] else "no parent vector"),
                           showarrow=False, x=0, xanchor="left", y=1.06, yanchor="bottom", xref="paper", yref="paper",
                           font=dict(size=12, color="#555"))
    return fig


def _merge_orders(args: dict, orders: dict) -> dict:
    return {**args, "category_orders": {**args.get("category_orders", {}), **orders}}



def sibling_angles(pairs: pd.DataFrame, *, title: str = "Angles between siblings and non-siblings") -> go.Figure:
    """Violins of pairwise angles per depth, split by sibling / non-sibling (columns run, depth,
    kind, angle); each violin's kernel stops at its smallest and largest angle (no tails below 0°
    or past 180°)."""
    if pairs.empty:
        return _empty(title, "no pairs of nodes to compare")
    runs = list(dict.fromkeys(pairs["run"])) if "run" in pairs else []
    fig = px.violin(pairs, x="depth", y="angle", color="kind", facet_col="run" if runs else None, box=True,
                    points=False, template=TEMPLATE, title=title, labels={"angle": "angle (°)"},
                    color_discrete_map={"sibling": "#1f77b4", "non-sibling": "#b0b0b0"},
                    category_orders={"kind": ["sibling", "non-sibling"], "run": runs}, facet_col_spacing=0.03)
    fig.update_traces(spanmode="hard")
    fig.update_yaxes(range=[0, 180], dtick=30)
    fig.update_xaxes(dtick=1)
    fig.for_each_annotation(lambda a: a.update(text=a.text.split("=")[-1]))
    return fig



def delta_vs_radius(geometry: pd.DataFrame, *, title: str = "‖w_p − w_parent‖ against the radius R_p",
                    colours: dict[str, str] | None = None) -> go.Figure:
    """Scatter of the effective step ‖R_p δ_p‖ against R_p per node (columns run, name, depth,
    delta_norm, radius), for the runs whose head has radii; the others are named in a note (their
    steps are in :func:`step_by_depth`). The x axis is always R_p."""
    if geometry.empty or "delta_norm" not in geometry:
        return _empty(title, "no class vectors")
    radius = geometry["radius"] if "radius" in geometry else pd.Series(np.nan, index=geometry.index)
    data = geometry.assign(radius=radius)
    runs = list(dict.fromkeys(data["run"])) if "run" in data else []
    with_radius = data[data["radius"].notna()]
    without = [r for r in runs if r not in set(with_radius["run"])]
    if with_radius.empty:
        return _empty(title, "no radii R_p: these heads have no radius per node (see the step per depth)")
    fig = px.scatter(with_radius, x="radius", y="delta_norm", hover_name="name" if "name" in data else None,
                     hover_data={"depth": True} if "depth" in data else None, template=TEMPLATE, title=title,
                     labels={"delta_norm": "‖w_p − w_parent‖", "radius": "R_p"}, **_colour_args(with_radius, colours))
    if without:
        fig.add_annotation(text=f"not drawn (no radius R_p): {', '.join(without)}", showarrow=False, x=0,
                           xanchor="left", y=1.06, yanchor="bottom", xref="paper", yref="paper",
                           font=dict(size=12, color="#555"))
    return fig


def step_by_depth(geometry: pd.DataFrame, *, title: str = "Step ‖w_p − w_parent‖ per depth",
                  colours: dict[str, str] | None = None) -> go.Figure:
    """Box plots of each node's step from its parent per depth, one colour per run: every head with
    class vectors, radii or not (columns run, depth, delta_norm)."""
    if geometry.empty or "delta_norm" not in geometry:
        return _empty(title, "no class vectors")
    depths = [str(d) for d in sorted({int(d) for d in geometry["depth"]})]
    fig = px.box(geometry.assign(depth=geometry["depth"].astype(int).astype(str)), x="depth", y="delta_norm",
                 points=False, template=TEMPLATE, title=title, labels={"delta_norm": "‖w_p − w_parent‖"},
                 **_merge_orders(_colour_args(geometry, colours), {"depth": depths}))
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=depths)
    return fig



def projection_scatter(points: pd.DataFrame, *, color: str = "level1", title: str = "Embeddings",
                       max_legend: int = 40, show_vectors: bool = True, tree: Hierarchy | None = None,
                       highlight: str | None = None) -> go.Figure:
    """Samples (small dots) and class vectors (large diamonds, unless ``show_vectors`` is False) of
    one projection; ``color`` is a column (label, level1, level2, ..., correct). Hover shows the
    class path; each sample's ``customdata[0]`` is its row position in ``points`` (what a selection
    event names).

    Colours mean the same in every run: correct/wrong always the same two; classes and
    super-classes by their place in ``tree`` (:mod:`hseval.reporting.colours`); samples whose class is
    shallower than the chosen level are a grey category of their own. ``highlight`` (a node name)
    draws the samples under that node larger and in colour, and fades the others to grey."""
    if points.empty or not {"x", "y", "label"} <= set(points.columns):
        return _empty(title, "no projection (run 'hseval evaluate --projections pca,tsne')")
    data = points.copy() if "kind" in points else points.assign(kind="sample")
    if color not in data.columns:
        color = "label"
    data["row"] = np.arange(len(data), dtype=np.int32)
    data[["x", "y"]] = data[["x", "y"]].astype(np.float32)  # 7 digits are plenty for a 2-D picture; half the bytes
    data["colour"] = colours.categories(data, color).to_numpy()
    levels = [c for c in data.columns if c.startswith("level")]
    parts = data[levels + ["label"]].astype(object).where(data[levels + ["label"]].notna(), "")
    data["path"] = ["/".join(str(p) for p in row if str(p)) for row in parts.itertuples(index=False)]
    marked = colours.under_node(data, highlight) if highlight else np.ones(len(data), dtype=bool)
    samples = data[data["kind"] == "sample"].assign(marked=marked[(data["kind"] == "sample").to_numpy()])
    samples = samples.sort_values("marked", kind="stable")  # highlighted samples drawn last, on top
    vectors = data[data["kind"] == "class_vector"]
    palette = colours.category_colours(tree, color) if tree is not None else colours.by_name(samples["colour"], color)
    present = set(samples["colour"])
    hover = {"x": False, "y": False, "row": False, "colour": False}
    hover.update({c: True for c in ("correct", "index") if c in samples})
    fig = px.scatter(samples, x="x", y="y", color="colour", hover_name="path", template=TEMPLATE, title=title,
                     custom_data=["row"], hover_data=hover, render_mode="webgl", opacity=0.6,
                     color_discrete_map=palette, category_orders={"colour": [c for c in palette if c in present]})
    fig.update_traces(marker=dict(size=4))
    if highlight:
        colours.fade_unmarked(fig, marked)
    if show_vectors and not vectors.empty:
        fig.add_trace(go.Scatter(x=vectors["x"], y=vectors["y"], mode="markers+text", text=vectors["label"],
                                 textposition="top center", name="class vectors", hovertext=vectors["path"],
                                 marker=dict(symbol="diamond", size=11, color="black", line=dict(width=1,
                                                                                                  color="white"))))
    fig.update_layout(showlegend=samples["colour"].nunique() <= max_legend, height=600, xaxis_title=None,
                      yaxis_title=None, legend_title_text=colours.legend_title(color))
    return fig


def confusion_heatmap(matrix: np.ndarray, nodes: np.ndarray, hierarchy: Hierarchy, *,
                      title: str = "Confusion matrix (tree order)", normalize: bool = True) -> go.Figure:
    """Rows = true class, columns = prediction, in tree order (``nodes``: the node of each row and
    column, -1 for "a class shallower than this level"), labelled by name; lines separate the
    super-classes one level up (the blocks); hover gives the count, the row's share and both
    classes' super-class. Rows without samples (the shallower row of a level) are left out, and
    the title says so. ``normalize`` colours by the row's share instead of the count."""
    counts = np.asarray(matrix, dtype=float)
    if counts.size == 0:
        return _empty(title, "no samples")
    nodes = np.asarray(nodes, dtype=np.int64)
    names = [hierarchy.node_names[n] if n >= 0 else "(shallower class)" for n in nodes.tolist()]
    sums = counts.sum(axis=1, keepdims=True)
    share = np.divide(counts, sums, out=np.zeros_like(counts), where=sums > 0)
    rows = np.flatnonzero(sums[:, 0] > 0)
    dropped = [names[i] for i in range(len(names)) if i not in set(rows.tolist())]
    depth = int(hierarchy.depth[nodes[nodes >= 0]].max()) if (nodes >= 0).any() else 0
    block_depth = depth - 1 if depth > 1 else 0
    groups = [hierarchy.node_names[a] if n >= 0 and a >= 0 else "–" for n, a in
              zip(nodes.tolist(), (hierarchy.ancestor_at_depth(np.maximum(nodes, 0), block_depth).tolist()
                                   if block_depth else [-1] * len(nodes)))]
    row_names = [names[i] for i in rows]
    hover = np.array([[f"true {row_names[r]} ({groups[i]})<br>predicted {names[j]} ({groups[j]})<br>"
                       f"{int(counts[i, j]):,} of {int(sums[i, 0]):,} ({share[i, j]:.1%})"
                       for j in range(len(names))] for r, i in enumerate(rows)])
    z = share[rows] if normalize else counts[rows]
    fig = go.Figure(go.Heatmap(z=z, x=names, y=row_names, colorscale="Blues", zmin=0, text=hover,
                               hovertemplate="%{text}<extra></extra>",
                               colorbar=dict(title="share of row" if normalize else "samples")))
    if block_depth:  # a line wherever the super-class changes, along both axes (one layout update)
        line = dict(color="#444", width=1)
        row_groups = [groups[i] for i in rows]
        shapes = [dict(type="line", x0=k - 0.5, x1=k - 0.5, y0=0, y1=1, yref="paper", line=line)
                  for k in range(1, len(names)) if groups[k] != groups[k - 1]]
        shapes += [dict(type="line", y0=k - 0.5, y1=k - 0.5, x0=0, x1=1, xref="paper", line=line)
                   for k in range(1, len(rows)) if row_groups[k] != row_groups[k - 1]]
        fig.update_layout(shapes=shapes)
    note = f"<br><sup>left out, no samples: {', '.join(dropped)}</sup>" if dropped else ""
    size = max(420, 16 * len(names) + 160)
    fig.update_layout(title=title + note, template=TEMPLATE, yaxis_autorange="reversed", height=size,
                      xaxis_title="predicted", yaxis_title="true", xaxis_tickangle=-45)
    return fig



def history_curves(history: pd.DataFrame, *, title: str = "Training history",
                   colours: dict[str, str] | None = None) -> go.Figure:
    """Test accuracy per epoch for each run (columns run, epoch, test_acc); whole-epoch ticks."""
    data = history.dropna(subset=["test_acc"]) if "test_acc" in history else pd.DataFrame()
    if data.empty:
        return _empty(title, "no history")
    fig = px.line(data, x="epoch", y="test_acc", markers=True, template=TEMPLATE, title=title,
                  labels={"test_acc": "test accuracy"}, **_colour_args(data, colours))
    epochs = int(data["epoch"].max())
    fig.update_xaxes(tickmode="linear", tick0=0, dtick=max(1, -(-epochs // 10)), tickformat="d")
    return fig



def reliability_diagram(bins: pd.DataFrame, *, title: str = "Reliability",
                        colours: dict[str, str] | None = None) -> go.Figure:
    """Accuracy against confidence per bin (columns run, confidence, accuracy, count)."""
    if bins.empty:
        return _empty(title, "no calibration bins")
    fig = px.line(bins, x="confidence", y="accuracy", markers=True, template=TEMPLATE, title=title,
                  **_colour_args(bins, colours))
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfect", line=dict(dash="dot", color="grey")))
    return fig



def child_angles(children: pd.DataFrame, *, title: str = "Children: angle to their parent",
                 colours: dict[str, str] | None = None) -> go.Figure:
    """Bars of the angle (degrees) between each child's vector and its parent's, one colour per
    run (columns run, name, angle_to_parent; delta_norm and radius shown on hover when present)."""
    data = children.dropna(subset=["angle_to_parent"]) if "angle_to_parent" in children else pd.DataFrame()
    if data.empty:
        return _empty(title, f"no child angles ({ROOT_NOTE})")
    hover = [c for c in ("delta_norm", "radius", "norm") if c in data]
    fig = px.bar(data, x="name", y="angle_to_parent", barmode="group", hover_data=hover, template=TEMPLATE,
                 title=title, labels={"angle_to_parent": "angle to parent (°)", "name": "child"},
                 **_colour_args(data, colours))
    return fig



def node_deltas(deltas: pd.DataFrame, *, title: str = "Per-node accuracy difference", top: int = 30) -> go.Figure:
    """Horizontal bars of the per-node difference (columns path, delta), the ``top`` largest in
    absolute value, red below zero and blue above (the diverging scale of the sunburst)."""
    data = deltas.dropna(subset=["delta"]) if "delta" in deltas else pd.DataFrame()
    if data.empty:
        return _empty(title, "no nodes to compare")
    data = data.reindex(data["delta"].abs().sort_values(ascending=False).index).head(top).iloc[::-1]
    limit = float(data["delta"].abs().max()) or 1.0
    fig = go.Figure(go.Bar(x=data["delta"], y=data["path"], orientation="h",
                           marker=dict(color=data["delta"], colorscale="RdBu", cmin=-limit, cmax=limit, cmid=0),
                           hovertemplate="%{y}<br>Δ %{x:+.3f}<extra></extra>"))
    fig.update_layout(title=title, template=TEMPLATE, height=max(300, 22 * len(data) + 120),
                      xaxis_title="difference", yaxis_title=None)
    return fig


def difference_intervals(frame: pd.DataFrame, *, title: str = "Difference from the baseline, 95 % interval",
                         colours: dict[str, str] | None = None) -> go.Figure:
    """A forest plot of paired differences: one row per metric, one dot per run (columns run,
    metric, delta, low, high, p_value), the interval as a horizontal error bar and a line at 0.
    A dot whose interval excludes 0 is filled, otherwise hollow."""
    data = frame.dropna(subset=["delta"]) if "delta" in frame else pd.DataFrame()
    if data.empty:
        return _empty(title, "no paired differences (the runs were not evaluated on the same samples)")
    runs = list(dict.fromkeys(data["run"]))
    palette = {**run_colours(runs), **(colours or {})}
    metrics = list(dict.fromkeys(data["metric"]))
    fig = go.Figure()
    for run in runs:
        part = data[data["run"] == run]
        real = ((part["low"] > 0) | (part["high"] < 0)).to_numpy()
        fig.add_trace(go.Scatter(
            x=part["delta"], y=part["metric"], mode="markers", name=run, offsetgroup=run,
            marker=dict(size=11, color=palette[run], symbol=np.where(real, "circle", "circle-open"),
                        line=dict(width=2, color=palette[run])),
            error_x=dict(type="data", symmetric=False, array=part["high"] - part["delta"],
                         arrayminus=part["delta"] - part["low"], color=palette[run]),
            customdata=np.stack([part["low"], part["high"], part["p_value"]], axis=1),
            hovertemplate=f"<b>{run}</b> − baseline<br>%{{y}}: %{{x:+.4f}}<br>95 % interval "
                          "[%{customdata[0]:+.4f}, %{customdata[1]:+.4f}]<br>McNemar p = %{customdata[2]:.3g}"
                          "<extra></extra>"))
    fig.add_vline(x=0, line=dict(color="#444", dash="dot"))
    fig.update_layout(title=title, template=TEMPLATE, scattermode="group", height=140 + 46 * len(metrics) *
                      max(1, min(len(runs), 4)) ** 0.5, xaxis_title="accuracy difference (run − baseline)",
                      yaxis=dict(categoryorder="array", categoryarray=metrics[::-1], title=None),
                      legend_title_text="run", xaxis_tickformat="+.3f")
    return fig
