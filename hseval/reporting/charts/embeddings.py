"""The embedding scatter: samples and class vectors of one projection, coloured by class, level or
correctness."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from hseval.reporting import colours
from hseval.reporting.charts.common import TEMPLATE, _empty, _shown, _text, fit, legend_only
from hseval.tree.hierarchy import Hierarchy

__all__ = ["projection_scatter", "with_predictions", "METHOD_NAMES", "VECTORS_MAX", "LABELS_MAX"]

METHOD_NAMES = {"pca": "PCA", "tsne": "t-SNE", "umap": "UMAP"}
_PLOT_PX = (560, 460)  # the smallest plot area the scatter is drawn in: labels are placed for it
VECTORS_MAX = 300
"""The most class vectors drawn: with more, only those under the highlighted node (none without one)."""
LABELS_MAX = 40
"""The most class vectors named on the scatter: all of them up to this many, else those under the
highlighted node (when they are this few); the others are named in their hover."""
WEBGL_FROM = 1000
_SPOTS = {"top center": (0, 1), "bottom center": (0, -1), "middle right": (1, 0), "middle left": (-1, 0),
          "top right": (1, 1), "top left": (-1, 1), "bottom right": (1, -1), "bottom left": (-1, -1)}


def with_predictions(points: pd.DataFrame, tree: Hierarchy, topk: np.ndarray) -> pd.DataFrame:
    """``points`` (projections.csv rows) with a ``predicted`` column: the class the run predicted
    for each sample (its top-1, by the sample's ``index`` in the split; empty for a class vector)."""
    index = points["index"].to_numpy(dtype=float) if "index" in points else np.full(len(points), np.nan)
    known = ~np.isnan(index) & (index >= 0) & (index < len(topk))
    predicted = np.full(len(points), "", dtype=object)
    predicted[known] = [tree.leaf_names[c] for c in topk[index[known].astype(np.int64), 0].tolist()]
    return points.assign(predicted=predicted)


def _label_spots(x: np.ndarray, y: np.ndarray, labels: list[str], extent: tuple[float, float, float, float]) \
        -> list[str | None]:
    """A text position per label that keeps it off the other labels and markers in a plot of
    :data:`_PLOT_PX` pixels spanning ``extent`` (x0, x1, y0, y1); None where every spot is taken
    (the name stays in the hover)."""
    width, height = _PLOT_PX
    x0, x1, y0, y1 = extent
    px_x = (x - x0) / ((x1 - x0) or 1) * width
    px_y = (y - y0) / ((y1 - y0) or 1) * height
    placed = [(cx - 7, cy - 7, cx + 7, cy + 7) for cx, cy in zip(px_x, px_y)]  # the diamonds themselves
    out: list[str | None] = []
    for cx, cy, label in zip(px_x, px_y, labels):
        w, h = 7.0 * len(label) + 4, 16.0
        spot = None
        for name, (dx, dy) in _SPOTS.items():
            mx, my = cx + dx * (w / 2 + 8), cy + dy * (h / 2 + 8)
            box = (mx - w / 2, my - h / 2, mx + w / 2, my + h / 2)
            if all(box[2] <= b[0] or box[0] >= b[2] or box[3] <= b[1] or box[1] >= b[3] for b in placed):
                spot = name
                placed.append(box)
                break
        out.append(spot)
    return out


def _vectors(fig: go.Figure, vectors: pd.DataFrame, data: pd.DataFrame, named: np.ndarray) -> None:
    """The class vectors as diamonds; those of ``named`` (at most :data:`LABELS_MAX`) with their
    names placed off each other, the others named in their hover only. Many unnamed diamonds are
    drawn with WebGL."""
    x, y = vectors["x"].to_numpy(float), vectors["y"].to_numpy(float)
    extent = (float(data["x"].min()), float(data["x"].max()), float(data["y"].min()), float(data["y"].max()))
    labels = vectors["label"].astype(str).to_numpy()
    spots = np.full(len(vectors), None, dtype=object)
    spots[named] = _label_spots(x[named], y[named], labels[named].tolist(), extent)
    marker = dict(symbol="diamond", size=11, color="black", line=dict(width=1, color="white"))
    hover = vectors["path"].map(_text)
    if not named.any() and len(vectors) > WEBGL_FROM:
        fig.add_trace(go.Scattergl(x=x, y=y, mode="markers", name="class vectors", hovertext=hover, hoverinfo="text",
                                   marker=marker))
        return
    fig.add_trace(go.Scatter(x=x, y=y, mode="markers+text", name="class vectors", hovertext=hover,
                             hoverinfo="text", text=[_text(lb) if s else "" for lb, s in zip(labels, spots)],
                             textposition=[s or "top center" for s in spots], textfont=dict(size=12), marker=marker))


def projection_scatter(points: pd.DataFrame, *, color: str = "level1", title: str = "Embeddings",
                       max_legend: int = 40, show_vectors: bool = True, tree: Hierarchy | None = None,
                       highlight: str | None = None) -> go.Figure:
    """Samples (small dots) and class vectors (large diamonds, unless ``show_vectors`` is False) of
    one projection; ``color`` is a column (label, level1, level2, ..., correct). Hover shows the
    class path, the predicted class (a ``predicted`` column, :func:`with_predictions`) and whether
    it is right; each sample's ``customdata[0]`` is its row position in ``points`` (what a selection
    event names). The axes are the projection's two dimensions ("t-SNE 1", "t-SNE 2").

    Colours mean the same in every run: correct/wrong always the same two; classes and
    super-classes by their place in ``tree`` (:mod:`hseval.reporting.colours`); samples whose class is
    shallower than the chosen level are a grey category of their own. ``highlight`` (a node name)
    draws the samples under that node larger and in colour, and fades the others to grey; the
    legend keeps each category's colour (its entries are drawn apart from the points). The class
    vectors' names are placed off each other (at most :data:`LABELS_MAX`: with more vectors, those
    under ``highlight``); a name with no free spot is in its hover only. Past :data:`VECTORS_MAX`
    vectors only those under ``highlight`` are drawn. Thousands of classes are
    one WebGL trace coloured point by point, without a legend."""
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
    present = [c for c in palette if c in set(samples["colour"])]
    samples = _shown(samples, "colour", "path", "predicted")
    shown_palette = {_text(k): v for k, v in palette.items()}
    hover = {"x": False, "y": False, "row": False, "colour": False}
    hover.update({c: True for c in ("predicted", "correct", "index") if c in samples})
    shown = samples["colour"].nunique() <= max_legend
    if shown:  # a trace per category, each with its legend entry
        fig = px.scatter(samples, x="x", y="y", color="colour", hover_name="path", template=TEMPLATE,
                         title=_text(title), custom_data=["row"], hover_data=hover, render_mode="webgl", opacity=0.6,
                         color_discrete_map=shown_palette, category_orders={"colour": [_text(c) for c in present]})
    else:  # thousands of classes: one trace coloured point by point (a trace each would take the browser minutes)
        fig = px.scatter(samples, x="x", y="y", hover_name="path", template=TEMPLATE, title=_text(title),
                         custom_data=["row"], hover_data=hover, render_mode="webgl", opacity=0.6)
        fig.data[0].marker.color = samples["colour"].map(shown_palette).fillna(colours.FADED).tolist()
    fig.update_traces(marker=dict(size=4), showlegend=False)
    if highlight:
        colours.fade_unmarked(fig, marked)
    for category in present if shown else []:
        fig.add_trace(legend_only(category, palette[category], group=_text(category)))
    vector_marked = marked[(data["kind"] == "class_vector").to_numpy()]
    if len(vectors) > VECTORS_MAX:  # thousands of diamonds would hide the samples: those under the highlight only
        vectors, vector_marked = vectors[vector_marked] if highlight else vectors.iloc[:0], vector_marked[vector_marked]
    if show_vectors and not vectors.empty:
        named = (np.ones(len(vectors), dtype=bool) if len(vectors) <= LABELS_MAX
                 else vector_marked if highlight and vector_marked.sum() <= LABELS_MAX
                 else np.zeros(len(vectors), dtype=bool))
        _vectors(fig, vectors, data, named)
    method = str(points["method"].iloc[0]) if "method" in points and len(points) else ""
    name = METHOD_NAMES.get(method, method)
    fig.update_layout(xaxis_title=f"{name} 1".strip(), yaxis_title=f"{name} 2".strip(),
                      legend_title_text=colours.legend_title(color))
    return fit(fig, row_height=470)
