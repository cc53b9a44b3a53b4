"""Figures as pure functions: tables in, ``plotly.graph_objects.Figure`` out.

The offline HTML report and the Streamlit dashboard draw the same figures from these functions;
none of them reads a file or computes a metric.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from hseval.hierarchy import Hierarchy

__all__ = ["accuracy_by_level", "node_sunburst", "angle_to_parent", "sibling_angles", "delta_vs_radius",
           "projection_scatter", "confusion_heatmap", "history_curves", "reliability_diagram", "child_angles",
           "node_deltas"]

TEMPLATE = "plotly_white"


def _empty(title: str, message: str) -> go.Figure:
    fig = go.Figure()
    fig.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    fig.update_layout(title=title, template=TEMPLATE, xaxis_visible=False, yaxis_visible=False, height=300)
    return fig


def accuracy_by_level(levels: pd.DataFrame, *, title: str = "Accuracy per level") -> go.Figure:
    """Grouped bars from a long table with columns run, level (e.g. "leaf", "level 1"), way
    ("leaf", "from leaf", "parent δ" ...) and accuracy in [0, 1]: one panel per way, one colour
    per run, so that a run keeps its colour across panels."""
    if levels.empty:
        return _empty(title, "no accuracy to show")
    ways = list(dict.fromkeys(levels["way"]))
    fig = px.bar(levels, x="level", y="accuracy", color="run", facet_col="way", barmode="group", text_auto=".3f",
                 template=TEMPLATE, title=title, range_y=[0, 1], category_orders={"way": ways})
    fig.for_each_annotation(lambda a: a.update(text=a.text.split("=", 1)[-1]))
    fig.update_xaxes(matches=None, title=None)
    fig.update_layout(legend_title_text="run", yaxis_tickformat=".0%")
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
    marker = dict(colors=colour, colorscale=scale, colorbar=dict(title=value), showscale=True,
                  cmid=0 if diverging else None,
                  cmin=-limit if limit else (None if diverging else 0),
                  cmax=limit if limit else (None if diverging else 1))
    trace = go.Sunburst if kind == "sunburst" else go.Treemap
    fig = go.Figure(trace(ids=names, labels=names, parents=parents, values=np.maximum(support, 0),
                          branchvalues="total", marker=marker, hovertext=hover, hoverinfo="text",
                          customdata=np.arange(hierarchy.num_nodes)))
    fig.update_layout(title=title, template=TEMPLATE, margin=dict(t=50, l=0, r=0, b=0), height=560)
    return fig


def angle_to_parent(geometry: pd.DataFrame, *, title: str = "Angle between each node and its parent") -> go.Figure:
    """Box plots of the parent/child angle (degrees) per depth, one colour per run; needs the
    columns run, depth, angle_to_parent."""
    data = geometry.dropna(subset=["angle_to_parent"]) if not geometry.empty else geometry
    if data.empty:
        return _empty(title, "no parent/child angles (depth-1 nodes have the root, w = 0, as parent)")
    fig = px.box(data, x="depth", y="angle_to_parent", color="run", points=False, template=TEMPLATE,
                 title=title, labels={"angle_to_parent": "angle to parent (°)"})
    return fig


def sibling_angles(pairs: pd.DataFrame, *, title: str = "Angles between siblings and non-siblings") -> go.Figure:
    """Violins of pairwise angles per depth, split by sibling / non-sibling (columns run, depth,
    kind, angle)."""
    if pairs.empty:
        return _empty(title, "no pairs of nodes to compare")
    fig = px.violin(pairs, x="depth", y="angle", color="kind", facet_col="run", box=True, points=False,
                    template=TEMPLATE, title=title, labels={"angle": "angle (°)"})
    fig.for_each_annotation(lambda a: a.update(text=a.text.split("=")[-1]))
    return fig


def delta_vs_radius(geometry: pd.DataFrame, *, title: str = "‖w_p − w_parent‖ against the radius R_p") -> go.Figure:
    """Scatter of the effective step ‖R_p δ_p‖ against R_p per node (columns run, name, depth,
    delta_norm, radius). When some node has no radius (heads without radii, alone or mixed with
    others) the step is shown per depth instead, so no run is drawn at a made-up R."""
    if geometry.empty or "delta_norm" not in geometry:
        return _empty(title, "no class vectors")
    radius = geometry["radius"] if "radius" in geometry else pd.Series(np.nan, index=geometry.index)
    all_radii = bool(radius.notna().all())
    fig = px.strip(geometry.assign(radius=radius), x="radius" if all_radii else "depth", y="delta_norm",
                   color="run" if "run" in geometry else None, hover_name="name" if "name" in geometry else None,
                   hover_data=["radius"] if not all_radii and radius.notna().any() else None, template=TEMPLATE,
                   title=title, labels={"delta_norm": "‖w_p − w_parent‖", "radius": "R_p"})
    return fig


def projection_scatter(points: pd.DataFrame, *, color: str = "level1", title: str = "Embeddings",
                       max_legend: int = 40, show_vectors: bool = True) -> go.Figure:
    """Samples (small dots) and class vectors (large diamonds, unless ``show_vectors`` is False) of
    one projection; ``color`` is a column (label, level1, level2, ..., correct). Hover shows the
    class path."""
    if points.empty or not {"x", "y", "label"} <= set(points.columns):
        return _empty(title, "no projection (run 'hseval evaluate --projections pca,tsne')")
    data = points.copy() if "kind" in points else points.assign(kind="sample")
    if color not in data.columns:
        color = "label"
    data[color] = data[color].astype(str)
    levels = [c for c in data.columns if c.startswith("level")]
    parts = data[levels + ["label"]].astype(object).where(data[levels + ["label"]].notna(), "")
    data["path"] = ["/".join(str(p) for p in row if str(p)) for row in parts.itertuples(index=False)]
    samples = data[data["kind"] == "sample"]
    vectors = data[data["kind"] == "class_vector"]
    fig = px.scatter(samples, x="x", y="y", color=color, hover_name="path", template=TEMPLATE, title=title,
                     hover_data={"x": False, "y": False, "correct": True} if "correct" in samples else None,
                     render_mode="webgl", opacity=0.6)
    fig.update_traces(marker=dict(size=4))
    if show_vectors and not vectors.empty:
        fig.add_trace(go.Scatter(x=vectors["x"], y=vectors["y"], mode="markers+text", text=vectors["label"],
                                 textposition="top center", name="class vectors", hovertext=vectors["path"],
                                 marker=dict(symbol="diamond", size=11, color="black", line=dict(width=1,
                                                                                                  color="white"))))
    fig.update_layout(showlegend=samples[color].nunique() <= max_legend, legend_title_text=color, height=600,
                      xaxis_title=None, yaxis_title=None)
    return fig


def confusion_heatmap(matrix: np.ndarray, labels: list[str], *, title: str = "Confusion matrix (tree order)",
                      normalize: bool = True) -> go.Figure:
    """Rows = true class, columns = prediction, in the given (tree) order; rows normalised to 1."""
    m = np.asarray(matrix, dtype=float)
    if m.size == 0:
        return _empty(title, "no samples")
    labels = [str(label) for label in labels]
    if normalize:
        sums = m.sum(axis=1, keepdims=True)
        m = np.divide(m, sums, out=np.zeros_like(m), where=sums > 0)
    fig = go.Figure(go.Heatmap(z=m, x=labels, y=labels, colorscale="Blues", zmin=0,
                               hovertemplate="true %{y}<br>predicted %{x}<br>%{z:.3f}<extra></extra>"))
    fig.update_layout(title=title, template=TEMPLATE, yaxis_autorange="reversed", height=max(400, 14 * len(labels)),
                      xaxis_title="predicted", yaxis_title="true")
    return fig


def history_curves(history: pd.DataFrame, *, title: str = "Training history") -> go.Figure:
    """Test accuracy per epoch for each run (columns run, epoch, test_acc)."""
    data = history.dropna(subset=["test_acc"]) if "test_acc" in history else pd.DataFrame()
    if data.empty:
        return _empty(title, "no history")
    return px.line(data, x="epoch", y="test_acc", color="run", markers=True, template=TEMPLATE, title=title,
                   labels={"test_acc": "test accuracy"})


def reliability_diagram(bins: pd.DataFrame, *, title: str = "Reliability") -> go.Figure:
    """Accuracy against confidence per bin (columns run, confidence, accuracy, count)."""
    if bins.empty:
        return _empty(title, "no calibration bins")
    fig = px.line(bins, x="confidence", y="accuracy", color="run", markers=True, template=TEMPLATE, title=title)
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfect", line=dict(dash="dot", color="grey")))
    return fig


def child_angles(children: pd.DataFrame, *, title: str = "Children: angle to their parent") -> go.Figure:
    """Bars of the angle (degrees) between each child's vector and its parent's, one colour per
    run (columns run, name, angle_to_parent; delta_norm and radius shown on hover when present)."""
    data = children.dropna(subset=["angle_to_parent"]) if "angle_to_parent" in children else pd.DataFrame()
    if data.empty:
        return _empty(title, "no child angles (a depth-1 node's parent is the root, w = 0)")
    hover = [c for c in ("delta_norm", "radius", "norm") if c in data]
    fig = px.bar(data, x="name", y="angle_to_parent", color="run" if "run" in data else None, barmode="group",
                 hover_data=hover, template=TEMPLATE, title=title,
                 labels={"angle_to_parent": "angle to parent (°)", "name": "child"})
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
