"""The embedding scatter: samples and class vectors of one projection, coloured by class, level or
correctness."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from hseval.reporting import colours
from hseval.reporting.charts.common import TEMPLATE, _empty, _shown, _text
from hseval.tree.hierarchy import Hierarchy


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
    samples, palette = _shown(samples, "colour", "path"), {_text(k): v for k, v in palette.items()}
    present = set(samples["colour"])
    hover = {"x": False, "y": False, "row": False, "colour": False}
    hover.update({c: True for c in ("correct", "index") if c in samples})
    fig = px.scatter(samples, x="x", y="y", color="colour", hover_name="path", template=TEMPLATE, title=_text(title),
                     custom_data=["row"], hover_data=hover, render_mode="webgl", opacity=0.6,
                     color_discrete_map=palette, category_orders={"colour": [c for c in palette if c in present]})
    fig.update_traces(marker=dict(size=4))
    if highlight:
        colours.fade_unmarked(fig, marked)
    if show_vectors and not vectors.empty:
        fig.add_trace(go.Scatter(x=vectors["x"], y=vectors["y"], mode="markers+text", text=vectors["label"].map(_text),
                                 textposition="top center", name="class vectors", hovertext=vectors["path"].map(_text),
                                 marker=dict(symbol="diamond", size=11, color="black", line=dict(width=1,
                                                                                                  color="white"))))
    fig.update_layout(showlegend=samples["colour"].nunique() <= max_legend, height=600, xaxis_title=None,
                      yaxis_title=None, legend_title_text=colours.legend_title(color))
    return fig
