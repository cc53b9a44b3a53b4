"""Charts of decisions (:mod:`hseval.metrics.decisions`): the operating curves of every run on
one pair of axes, with the points of the single-answer rules, and where the samples stop at a
threshold (a run's rule × metric table is :func:`hseval.reporting.decisions.rule_table`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from hseval.reporting.charts.common import TEMPLATE, _empty, _text, fit, legend_only
from hseval.reporting.colours import run_colours

__all__ = ["operating_curves", "stop_depths", "POINT_SYMBOLS", "thinned_curve"]

POINT_SYMBOLS = {"leaf": "circle", "crm": "diamond", "top-down": "triangle-down", "plurality": "star",
                 "optimal": "x"}
"""The marker of each kind of single-answer rule on the curves' axes."""
_AXES = {"depth_recall": "depth recall (how deep the answer goes)",
         "info_recall": "information recall (how few classes it leaves open)"}


def thinned_curve(curve: pd.DataFrame, most: int = 400) -> pd.DataFrame:
    """At most about ``most`` rows of a curve for drawing (evenly spaced in threshold order, the first
    and last kept, and the point at t = 0.5 where the line changes style); the file keeps every breakpoint."""
    if len(curve) <= most:
        return curve
    keep = np.unique(np.r_[np.linspace(0, len(curve) - 1, most).round().astype(int),
                           np.searchsorted(-curve["threshold"].to_numpy(), -0.5, side="right") - 1])
    return curve.iloc[keep[keep >= 0]]


def operating_curves(curves: pd.DataFrame, points: pd.DataFrame, *, rule: str = "threshold",
                     colours: dict[str, str] | None = None,
                     title: str = "Operating curves: correct against specific") -> go.Figure:
    """One panel per measure of specificity (depth recall, information recall), correct on the y
    axis: each run's curve of ``rule`` (``curves``: run, rule, threshold, correct, depth_recall,
    info_recall; solid for t ≥ 0.5, dashed below, as Valmadre draws them), and the single-answer
    rules' points (``points``: run, rule and the same metrics) in the run's colour, one marker per
    kind of rule (:data:`POINT_SYMBOLS`)."""
    data = curves[curves["rule"] == rule] if not curves.empty else curves
    if data.empty and points.empty:
        return _empty(title, "no operating curve: the runs give no probabilities")
    runs = list(dict.fromkeys([*data.get("run", []), *points.get("run", [])]))
    palette = {**run_colours(runs), **(colours or {})}
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.06,
                        subplot_titles=[_AXES["depth_recall"], _AXES["info_recall"]])
    for run in runs:
        part = thinned_curve(data[data["run"] == run]) if not data.empty else data
        kinds = points[points["run"] == run] if not points.empty else points
        for col, recall in enumerate(_AXES, start=1):
            for above in (True, False):
                piece = part[(part["threshold"] >= 0.5) if above else (part["threshold"] <= 0.5)]
                if piece.empty:
                    continue
                fig.add_trace(go.Scatter(
                    x=piece[recall], y=piece["correct"], mode="lines", name=_text(run), legendgroup=run,
                    showlegend=False, line=dict(color=palette[run], width=2, dash="solid" if above else "dash"),
                    customdata=piece["threshold"],
                    hovertemplate=f"<b>{_text(run)}</b> at t = %{{customdata:.3f}}<br>correct %{{y:.4f}}<br>"
                                  f"{recall.replace('_', ' ')} %{{x:.4f}}<extra></extra>"), row=1, col=col)
            if not kinds.empty:
                family = [str(r).split(":")[0] for r in kinds["rule"]]
                fig.add_trace(go.Scatter(
                    x=kinds[recall], y=kinds["correct"], mode="markers", showlegend=False, legendgroup=run,
                    marker=dict(size=[8 if f == "optimal" else 11 for f in family], color=palette[run],
                                symbol=[POINT_SYMBOLS.get(f, "square") for f in family],
                                line=dict(width=1, color="white")),
                    customdata=kinds["rule"].map(_text),
                    hovertemplate=f"<b>{_text(run)}</b>: %{{customdata}}<br>correct %{{y:.4f}}<br>"
                                  f"{recall.replace('_', ' ')} %{{x:.4f}}<extra></extra>"), row=1, col=col)
        fig.add_trace(legend_only(run, palette[run]))
    shown = {str(r).split(":")[0] for r in points.get("rule", [])}
    for kind, symbol in POINT_SYMBOLS.items():
        if kind in shown:
            fig.add_trace(legend_only(f"{kind}{':*' if kind == 'optimal' else ''} rule", "#555", group="kind",
                                      symbol=symbol))
    for col, recall in enumerate(_AXES, start=1):
        x, y = _view(data, points, recall)
        fig.update_xaxes(range=x, row=1, col=col)
        fig.update_yaxes(range=y, row=1, col=col)
    fig.update_xaxes(tickformat=".2f")
    fig.update_yaxes(title_text="correct (the answer is the class or its ancestor)", tickformat=".2f", row=1, col=1)
    fig.update_annotations(font_size=13)
    fig.update_layout(title=_text(title + " (solid: t ≥ 0.5, dashed: t < 0.5)"),
                      template=TEMPLATE, legend_title_text="run", font=dict(size=13))
    return fit(fig, row_height=400)


def _view(curves: pd.DataFrame, points: pd.DataFrame, recall: str) -> tuple[list[float], list[float]]:
    """The ranges of a panel: around the curves' points of t ≥ 0.5 below full certainty (where they
    bend; the flat start at correct 1 is left out) and the rules' points that answer below the root."""
    parts = [curves.loc[(curves["threshold"] >= 0.5) & (curves["correct"] < 0.999), [recall, "correct"]]
             if not curves.empty else pd.DataFrame(),
             points.loc[points[recall] > 0, [recall, "correct"]] if not points.empty else pd.DataFrame()]
    seen = pd.concat([p for p in parts if not p.empty]) if any(not p.empty for p in parts) else pd.DataFrame()
    if seen.empty:
        return [-0.02, 1.02], [-0.02, 1.02]
    x_low, x_high = seen[recall].min(), seen[recall].max()
    y_low = seen["correct"].min()
    x_pad, y_pad = max(0.02, 0.08 * (x_high - x_low)), max(0.01, 0.08 * (1 - y_low))
    return [max(-0.02, x_low - x_pad), min(1.02, x_high + x_pad)], [max(-0.02, y_low - y_pad), 1 + y_pad / 2]


def stop_depths(depths: pd.DataFrame, *, title: str, colours: dict[str, str] | None = None) -> go.Figure:
    """How many samples each run's answer stops at each depth (columns run, depth, samples; depth 0
    is the root) at one threshold, as grouped bars."""
    if depths.empty:
        return _empty(title, "no probabilities to decode")
    runs = list(dict.fromkeys(depths["run"]))
    palette = {**run_colours(runs), **(colours or {})}
    fig = go.Figure([go.Bar(x=part["depth"], y=part["samples"], name=_text(run), marker_color=palette[run],
                            hovertemplate=f"<b>{_text(run)}</b><br>depth %{{x}}: %{{y:,}} samples<extra></extra>")
                     for run, part in depths.groupby("run", sort=False)])
    fig.update_xaxes(title_text="depth of the answer (0: the root, 'no idea')", tickmode="linear", dtick=1)
    fig.update_yaxes(title_text="samples")
    fig.update_layout(title=_text(title), template=TEMPLATE, barmode="group", legend_title_text="run")
    return fit(fig)
