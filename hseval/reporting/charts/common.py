"""What every chart shares: the template, one colour per run, zoomed axes, the empty figure, and
names as plotly draws them literally (:func:`_shown`: a chart's title and every name a user chose,
a run's, a class's or a node's, pass through :func:`hseval.reporting.escape.plotly`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from hseval.reporting.escape import plotly as _text

TEMPLATE = "plotly_white"


PALETTE = px.colors.qualitative.D3 + px.colors.qualitative.Dark2 + px.colors.qualitative.Set1
"""Colours of runs, by their position among all runs of the folder (:func:`run_colours`)."""


def run_colours(names: list[str]) -> dict[str, str]:
    """One colour per run, fixed by the run's position in ``names`` (all runs of the folder, not
    the selection), so a run keeps its colour on every page, chart and in the report."""
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}


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
    fig.add_annotation(text=_text(message), showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    fig.update_layout(title=_text(title), template=TEMPLATE, xaxis_visible=False, yaxis_visible=False, height=300)
    return fig


def _merge_orders(args: dict, orders: dict) -> dict:
    return {**args, "category_orders": {**args.get("category_orders", {}), **orders}}
