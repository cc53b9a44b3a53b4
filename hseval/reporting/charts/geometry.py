"""Charts of the hyperplanes' geometry: angles to the parent and between siblings, the step per depth
and against the radius."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from hseval.reporting.charts.common import (
    TEMPLATE,
    _colour_args,
    _empty,
    _merge_orders,
    _rows,
    _shown,
    _text,
    dodge,
    fit,
)

ROOT_NOTE = "depth 1 has no angle to its parent: the parent is the root, whose vector is w = 0"


def angle_to_parent(geometry: pd.DataFrame, *, title: str = "Angle between each node and its parent",
                    colours: dict[str, str] | None = None) -> go.Figure:
    """Box plots of the parent/child angle (degrees, axis 0–180) per depth, one colour per run;
    needs the columns run, depth, angle_to_parent. Depths without an angle (depth 1: its parent
    is the root, w = 0) keep their place on the axis and are named in a note."""
    data = geometry.dropna(subset=["angle_to_parent"]) if not geometry.empty else geometry
    if data.empty:
        return _empty(title, f"no parent/child angles ({ROOT_NOTE})")
    depths = sorted({int(d) for d in geometry["depth"]})
    data = _shown(data, "run")
    fig = px.box(data.assign(depth=data["depth"].astype(int).astype(str)), x="depth", y="angle_to_parent",
                 points=False, template=TEMPLATE, title=_text(title), labels={"angle_to_parent": "angle to parent (°)"},
                 **_merge_orders(_colour_args(data, colours), {"depth": [str(d) for d in depths]}))
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=[str(d) for d in depths])
    fig.update_yaxes(range=[0, 180], dtick=30)
    missing = [d for d in depths if d not in set(data["depth"].astype(int))]
    if missing:
        fig.add_annotation(text=f"no angle at depth {', '.join(map(str, missing))}: "
                                + ("the parent is the root (w = 0)" if missing == [1] else "no parent vector"),
                           showarrow=False, x=0, xanchor="left", y=1.02, yanchor="bottom", xref="paper", yref="paper",
                           font=dict(size=12, color="#555"))
    return fit(fig)


def sibling_angles(pairs: pd.DataFrame, *, title: str = "Angles between siblings and non-siblings",
                   per_row: int = 4) -> go.Figure:
    """Violins of pairwise angles per depth, split by sibling / non-sibling (columns run, depth,
    kind, angle), one panel per run, ``per_row`` panels a row; each violin's kernel stops at its
    smallest and largest angle (no tails below 0° or past 180°)."""
    if pairs.empty:
        return _empty(title, "no pairs of nodes to compare")
    pairs = _shown(pairs, "run")
    runs = list(dict.fromkeys(pairs["run"])) if "run" in pairs else []
    wrap = min(len(runs), per_row) if runs else None
    fig = px.violin(pairs, x="depth", y="angle", color="kind", facet_col="run" if runs else None, box=True,
                    facet_col_wrap=wrap or 0, points=False, template=TEMPLATE, title=_text(title),
                    labels={"angle": "angle (°)"},
                    color_discrete_map={"sibling": "#1f77b4", "non-sibling": "#b0b0b0"},
                    category_orders={"kind": ["sibling", "non-sibling"], "run": runs}, facet_col_spacing=0.04,
                    facet_row_spacing=0.12 / max(1, _rows(len(runs), per_row)))
    fig.update_traces(spanmode="hard")
    fig.update_yaxes(range=[0, 180], dtick=45)
    fig.update_xaxes(dtick=1)
    fig.for_each_annotation(lambda a: a.update(text=a.text.partition("=")[2]))  # "run=NAME": the name
    return fit(fig, rows=_rows(len(runs), per_row), row_height=260)


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
    with_radius = with_radius.reset_index(drop=True)
    span = float(np.ptp(np.r_[with_radius["delta_norm"], with_radius["radius"]])) or 1.0
    node = with_radius["name"].astype(str) if "name" in with_radius else pd.Series("", index=with_radius.index)
    where = with_radius["radius"].round(6).astype(str) + "|" + node
    offset, same = dodge(with_radius.assign(where=where), at="where", value="delta_norm", step=0.03 * span)
    shown = _shown(with_radius.assign(drawn=with_radius["delta_norm"] + offset, same=same), "run", "name")
    fig = px.scatter(shown, x="radius", y="drawn", hover_name="name" if "name" in data else None,
                     custom_data=["delta_norm", "same"], template=TEMPLATE, title=_text(title),
                     labels={"drawn": "step ‖w_p − w_parent‖", "radius": "radius R_p"},
                     **_colour_args(shown, colours))
    fig.update_traces(marker=dict(size=9, line=dict(width=1, color="white")),
                      hovertemplate="%{hovertext}<br>R_p = %{x:.4g}<br>step = %{customdata[0]:.4g}"
                                    "<br>%{customdata[1]}<extra></extra>")
    top = float(max(with_radius["radius"].max(), with_radius["delta_norm"].max()))
    fig.add_trace(go.Scatter(x=[0, top], y=[0, top], mode="lines", name="step = R_p",
                             line=dict(color="#999", dash="dot"), hoverinfo="skip"))
    if without:
        fig.add_annotation(text=_text(f"not drawn (no radius R_p): {', '.join(without)}"), showarrow=False, x=0,
                           xanchor="left", y=1.02, yanchor="bottom", xref="paper", yref="paper",
                           font=dict(size=12, color="#555"))
    return fit(fig)


def step_by_depth(geometry: pd.DataFrame, *, title: str = "Step ‖w_p − w_parent‖ per depth",
                  colours: dict[str, str] | None = None) -> go.Figure:
    """Box plots of each node's step from its parent per depth, one colour per run: every head with class
    vectors, radii or not (columns run, depth, delta_norm)."""
    if geometry.empty or "delta_norm" not in geometry:
        return _empty(title, "no class vectors")
    depths = [str(d) for d in sorted({int(d) for d in geometry["depth"]})]
    geometry = _shown(geometry, "run")
    fig = px.box(geometry.assign(depth=geometry["depth"].astype(int).astype(str)), x="depth", y="delta_norm",
                 points=False, template=TEMPLATE, title=_text(title), labels={"delta_norm": "step ‖w_p − w_parent‖"},
                 **_merge_orders(_colour_args(geometry, colours), {"depth": depths}))
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=depths)
    return fit(fig)


def child_angles(children: pd.DataFrame, *, title: str = "Children: angle to their parent",
                 colours: dict[str, str] | None = None) -> go.Figure:
    """Bars of the angle (degrees) between each child's vector and its parent's, one colour per
    run (columns run, name, angle_to_parent; delta_norm and radius shown on hover when present)."""
    data = children.dropna(subset=["angle_to_parent"]) if "angle_to_parent" in children else pd.DataFrame()
    if data.empty:
        return _empty(title, f"no child angles ({ROOT_NOTE})")
    hover = [c for c in ("delta_norm", "radius", "norm") if c in data]
    data = _shown(data, "run", "name")
    fig = px.bar(data, x="name", y="angle_to_parent", barmode="group", hover_data=hover, template=TEMPLATE,
                 title=_text(title), labels={"angle_to_parent": "angle to parent (°)", "name": "child"},
                 **_colour_args(data, colours))
    longest = max(len(str(n)) for n in data["name"])
    fig.update_xaxes(tickangle=-45 if longest * len(data) > 60 else 0)
    return fit(fig, bottom=60 + (int(5 * longest) if longest * len(data) > 60 else 0))
