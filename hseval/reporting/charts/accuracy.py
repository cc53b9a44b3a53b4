"""Charts of accuracy: per level, per node (sunburst, differences), confusion, training history,
calibration and paired differences."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from hseval.reporting.charts.common import TEMPLATE, _colour_args, _empty, _shown, _text, _zoomed, run_colours
from hseval.tree.hierarchy import Hierarchy


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
                x=cell["way"], y=cell["accuracy"], mode="markers", name=_text(run), legendgroup=run, showlegend=i == 0,
                offsetgroup=run, marker=dict(size=11, color=palette[run], line=dict(width=1, color="white")),
                error_y=dict(type="data", array=np.nan_to_num(err), visible=bool(np.isfinite(err).any())),
                text=text, hovertemplate=f"<b>{_text(run)}</b><br>%{{x}}: %{{text}}<extra></extra>"), row=row, col=col)
        low_high = np.concatenate([part["accuracy"] - spread[part.index].fillna(0),
                                   part["accuracy"] + spread[part.index].fillna(0)])
        fig.update_yaxes(range=_zoomed(low_high), tickformat=".3f", row=row, col=col)
    fig.update_layout(title=_text(title), template=TEMPLATE, scattermode="group", scattergap=0.4,
                      legend_title_text="run", height=330 * rows + 40, font=dict(size=13), margin=dict(t=90))
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
    names = [*hierarchy.node_names]  # the sectors' ids; their labels are the names as drawn
    parents = ["" if p < 0 else names[p] for p in hierarchy.parents.tolist()]
    frame = per_node.set_index("node").reindex(range(hierarchy.num_nodes))
    support = frame["support"].fillna(0).to_numpy(dtype=float)
    colour = frame[value].to_numpy(dtype=float)
    hover = [f"{_text(' / '.join(hierarchy.path_names(i)))}<br>{value}: {c:.3f}<br>samples: {int(s)}"
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
    fig = go.Figure(trace(ids=names, labels=[_text(n) for n in names], parents=parents, values=np.maximum(support, 0),
                          branchvalues="total", marker=marker, hovertext=hover, hoverinfo="text",
                          customdata=np.arange(hierarchy.num_nodes)))
    fig.update_layout(title=_text(title), template=TEMPLATE, margin=dict(t=50, l=0, r=0, b=0), height=560)
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
    names = [_text(hierarchy.node_names[n]) if n >= 0 else "(shallower class)" for n in nodes.tolist()]
    sums = counts.sum(axis=1, keepdims=True)
    share = np.divide(counts, sums, out=np.zeros_like(counts), where=sums > 0)
    rows = np.flatnonzero(sums[:, 0] > 0)
    dropped = [names[i] for i in range(len(names)) if i not in set(rows.tolist())]
    depth = int(hierarchy.depth[nodes[nodes >= 0]].max()) if (nodes >= 0).any() else 0
    block_depth = depth - 1 if depth > 1 else 0
    groups = [_text(hierarchy.node_names[a]) if n >= 0 and a >= 0 else "–" for n, a in
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
    fig.update_layout(title=_text(title) + note, template=TEMPLATE, yaxis_autorange="reversed", height=size,
                      xaxis_title="predicted", yaxis_title="true", xaxis_tickangle=-45)
    return fig


def history_curves(history: pd.DataFrame, *, title: str = "Training history",
                   colours: dict[str, str] | None = None) -> go.Figure:
    """Test accuracy per epoch for each run (columns run, epoch, test_acc); whole-epoch ticks."""
    data = history.dropna(subset=["test_acc"]) if "test_acc" in history else pd.DataFrame()
    if data.empty:
        return _empty(title, "no history")
    data = _shown(data, "run")
    fig = px.line(data, x="epoch", y="test_acc", markers=True, template=TEMPLATE, title=_text(title),
                  labels={"test_acc": "test accuracy"}, **_colour_args(data, colours))
    epochs = int(data["epoch"].max())
    fig.update_xaxes(tickmode="linear", tick0=0, dtick=max(1, -(-epochs // 10)), tickformat="d")
    return fig


def reliability_diagram(bins: pd.DataFrame, *, title: str = "Reliability",
                        colours: dict[str, str] | None = None) -> go.Figure:
    """Accuracy against confidence per bin (columns run, confidence, accuracy, count)."""
    if bins.empty:
        return _empty(title, "no calibration bins")
    bins = _shown(bins, "run")
    fig = px.line(bins, x="confidence", y="accuracy", markers=True, template=TEMPLATE, title=_text(title),
                  **_colour_args(bins, colours))
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfect", line=dict(dash="dot", color="grey")))
    return fig


def node_deltas(deltas: pd.DataFrame, *, title: str = "Per-node accuracy difference", top: int = 30) -> go.Figure:
    """Horizontal bars of the per-node difference (columns path, delta), the ``top`` largest in
    absolute value, red below zero and blue above (the diverging scale of the sunburst)."""
    data = deltas.dropna(subset=["delta"]) if "delta" in deltas else pd.DataFrame()
    if data.empty:
        return _empty(title, "no nodes to compare")
    data = data.reindex(data["delta"].abs().sort_values(ascending=False).index).head(top).iloc[::-1]
    limit = float(data["delta"].abs().max()) or 1.0
    fig = go.Figure(go.Bar(x=data["delta"], y=data["path"].map(_text), orientation="h",
                           marker=dict(color=data["delta"], colorscale="RdBu", cmin=-limit, cmax=limit, cmid=0),
                           hovertemplate="%{y}<br>Δ %{x:+.3f}<extra></extra>"))
    fig.update_layout(title=_text(title), template=TEMPLATE, height=max(300, 22 * len(data) + 120),
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
            x=part["delta"], y=part["metric"], mode="markers", name=_text(run), offsetgroup=run,
            marker=dict(size=11, color=palette[run], symbol=np.where(real, "circle", "circle-open"),
                        line=dict(width=2, color=palette[run])),
            error_x=dict(type="data", symmetric=False, array=part["high"] - part["delta"],
                         arrayminus=part["delta"] - part["low"], color=palette[run]),
            customdata=np.stack([part["low"], part["high"], part["p_value"]], axis=1),
            hovertemplate=f"<b>{_text(run)}</b> − baseline<br>%{{y}}: %{{x:+.4f}}<br>95 % interval "
                          "[%{customdata[0]:+.4f}, %{customdata[1]:+.4f}]<br>McNemar p = %{customdata[2]:.3g}"
                          "<extra></extra>"))
    fig.add_vline(x=0, line=dict(color="#444", dash="dot"))
    fig.update_layout(title=_text(title), template=TEMPLATE, scattermode="group", height=140 + 46 * len(metrics) *
                      max(1, min(len(runs), 4)) ** 0.5, xaxis_title="accuracy difference (run − baseline)",
                      yaxis=dict(categoryorder="array", categoryarray=metrics[::-1], title=None),
                      legend_title_text="run", xaxis_tickformat="+.3f")
    return fig
