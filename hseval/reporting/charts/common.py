"""What every chart shares: the template, the layout that sizes a figure for its content
(:func:`fit`), legend-only entries, marks set apart where they would hide each other
(:func:`dodge`), zoomed axes, the empty figure, and names as plotly draws them literally
(:func:`_shown`: a chart's title and every name a user chose, a run's, a class's or a node's, pass
through :func:`hseval.reporting.escape.plotly`). Run colours are :func:`hseval.reporting.colours.run_colours`."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from hseval.reporting.colours import run_colours
from hseval.reporting.escape import plotly as _text

TEMPLATE = "plotly_white"
ROW_HEIGHT = 300
"""Pixels of plot area per row of panels."""
MIN_HEIGHT = 320
NARROWEST = 520
"""The narrowest width a chart is drawn at (one of two columns of the dashboard): a horizontal
legend's lines are counted at this width, so it never needs more room than the figure gives it."""
_LINE = 22  # px per legend line (font 13)
_NO_LEGEND = ("heatmap", "sunburst", "treemap", "histogram2d", "contour")


def legend_entries(fig: go.Figure) -> list[str]:
    """The names the figure's legend shows, one per trace shown in it."""
    if fig.layout.showlegend is False:
        return []
    return [t.name for t in fig.data if t.type not in _NO_LEGEND and t.showlegend is not False and t.name
            and t.visible is not False]


def _text_width(text: str) -> float:
    return 7.2 * len(str(text))


def _legend_lines(entries: Sequence[str], title: str) -> int:
    """Lines a horizontal legend of ``entries`` wraps into at :data:`NARROWEST` pixels."""
    lines, used = 1, _text_width(title) + 10
    for entry in entries:
        width = 46 + _text_width(entry)
        if used + width > NARROWEST and used > 0:
            lines, used = lines + 1, 0
        used += width
    return lines


def fit(fig: go.Figure, *, rows: int = 1, row_height: int = ROW_HEIGHT, bottom: int = 60) -> go.Figure:
    """Size ``fig`` for its content: a height from its rows of panels, its title and its legend, so
    that nothing is flattened or clipped. A legend whose entries fit beside the plot stays there,
    vertical; a longer one (or long names) goes below the chart, horizontal and wrapped, and the
    figure grows by its lines. ``bottom``: room for the x axis's tick labels and title."""
    title = fig.layout.title.text or ""
    top = (70 if title else 30) + 18 * title.count("<br>")
    plot = rows * row_height
    entries = legend_entries(fig)
    legend_title = fig.layout.legend.title.text or ""
    longest = max((len(str(e)) for e in [*entries, legend_title]), default=0)
    legend: dict = {}
    if entries and (len(entries) * _LINE + 30 > plot or longest > 24):
        lines = _legend_lines(entries, legend_title)
        # just under the x axis's labels (in the plot's own units: the plot is ``plot`` px tall), so a
        # wide page, where the legend takes fewer lines than counted, leaves its spare room at the bottom
        legend = dict(orientation="h", x=0, xanchor="left", y=-bottom / plot, yanchor="top", traceorder="normal")
        bottom += lines * _LINE + 16
    fig.update_layout(height=max(MIN_HEIGHT, top + plot + bottom), margin=dict(t=top, b=bottom), legend=legend)
    return fig


def legend_only(name: str, colour: str, *, group: str | None = None, symbol: str = "circle") -> go.Scatter:
    """A legend entry that draws nothing: a run's symbol in its colour, however its points are
    styled (a hollow or faded first point would otherwise become the legend's symbol)."""
    return go.Scatter(x=[None], y=[None], mode="markers", name=_text(name), legendgroup=group or name, showlegend=True,
                      marker=dict(size=10, color=colour, symbol=symbol, line=dict(width=1.5, color=colour)),
                      hoverinfo="skip")


def dodge(frame: pd.DataFrame, *, at: str, value: str, step: float, run: str = "run",
          digits: int = 4) -> tuple[np.ndarray, list[str]]:
    """Offsets that set apart the runs' marks at one place: within each group of rows with the same
    ``at``, runs whose ``value`` is within ``step`` of each other get offsets ``step`` apart around
    0 (a cluster of m runs spans (m − 1)·``step``); others get 0. Returns (offset per row, a hover
    note per row naming the runs with the same value to ``digits`` decimals, or "")."""
    offsets = np.zeros(len(frame))
    notes = [""] * len(frame)
    positions = np.arange(len(frame))
    for _, group in frame.assign(_pos=positions).groupby(at, sort=False):
        ordered = group.sort_values(value, kind="stable")
        values = ordered[value].to_numpy(dtype=float)
        starts = np.flatnonzero(np.r_[True, np.diff(values) > step / 2])
        for start, end in zip(starts, [*starts[1:], len(values)]):
            members = ordered.iloc[start:end]
            members = members.iloc[np.argsort(members[run].astype(str).to_numpy(), kind="stable")]
            count = len(members)
            for k, pos in enumerate(members["_pos"]):
                offsets[pos] = (k - (count - 1) / 2) * step
            rounded = members[value].round(digits)
            for pos, name, v in zip(members["_pos"], members[run], rounded):
                same = [str(o) for o, w in zip(members[run], rounded) if o != name and w == v]
                if same:
                    notes[pos] = _text(f"same value as {', '.join(same)} (drawn apart)")
    return offsets, notes


def _shown(frame: pd.DataFrame, *columns: str) -> pd.DataFrame:
    """``frame`` with the names in ``columns`` as plotly draws them literally (legend entries, hover
    names and ticks come from the data)."""
    return frame.assign(**{c: frame[c].map(_text) for c in columns if c in frame})


def _colour_args(frame: pd.DataFrame, colours: dict[str, str] | None) -> dict:
    """The colour arguments of a plotly express chart of ``frame``, whose ``run`` column is
    :func:`_shown` already (``colours`` is keyed by the runs' names)."""
    if "run" not in frame:
        return {}
    runs = list(dict.fromkeys(frame["run"]))
    mapping = {**run_colours(runs), **{_text(k): v for k, v in (colours or {}).items()}}
    return {"color": "run", "color_discrete_map": mapping, "category_orders": {"run": runs}}


ZOOM_SPAN = 0.01
"""The narrowest range :func:`_zoomed` gives: with at most :data:`ZOOM_TICKS` ticks their step is
at least 0.002, so labels of three decimals differ (equal values once read 1.000, 1.000, 0.999)."""
ZOOM_TICKS = 6


def _zoomed(values: np.ndarray, *, low: float = 0.0, high: float = 1.0, pad: float = 0.15,
            edge: float = 0.04) -> list[float] | None:
    """An axis range around ``values``, so that 0.992 against 0.994 is visible: padded by ``pad``
    of their spread and at least :data:`ZOOM_SPAN` wide (equal values get a window around them),
    kept within [low, high] by moving the window rather than cutting it, except that a value at or
    near a bound (an accuracy of 1) keeps ``edge`` of the range between it and the axis's end, so
    that its dot is drawn whole and not on the frame. None without finite values."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if not len(v):
        return None
    lo, hi = float(v.min()), float(v.max())
    margin = max((hi - lo) * pad, (ZOOM_SPAN - (hi - lo)) / 2)
    bottom, top = lo - margin, hi + margin
    span = top - bottom
    floor, ceiling = min(low, lo - edge * span), max(high, hi + edge * span)  # how far the axis may reach
    if top > ceiling:
        bottom, top = max(floor, ceiling - span), ceiling
    if bottom < floor:
        bottom, top = floor, min(ceiling, floor + span)
    return [bottom, top]


def _empty(title: str, message: str) -> go.Figure:
    fig = go.Figure()
    fig.add_annotation(text=_text(message), showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    fig.update_layout(title=_text(title), template=TEMPLATE, xaxis_visible=False, yaxis_visible=False)
    return fit(fig)


def _merge_orders(args: dict, orders: dict) -> dict:
    return {**args, "category_orders": {**args.get("category_orders", {}), **orders}}


def _rows(count: int, per_row: int) -> int:
    return max(1, math.ceil(count / per_row))
