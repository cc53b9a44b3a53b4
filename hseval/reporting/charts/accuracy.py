"""Charts of accuracy over runs: per level, training history, calibration and the paired
differences from a baseline (forest plot)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from hseval.reporting.charts.common import (
    TEMPLATE,
    ZOOM_TICKS,
    _colour_args,
    _empty,
    _rows,
    _shown,
    _text,
    _zoomed,
    fit,
    legend_only,
)
from hseval.reporting.colours import run_colours
from hseval.reporting.columns import display_name, level_label
from hseval.reporting.significance import ALPHA
from hseval.tree.hierarchy import Hierarchy

__all__ = ["accuracy_by_level", "history_curves", "reliability_diagram", "difference_intervals", "error_and_severity"]


def accuracy_by_level(levels: pd.DataFrame, *, title: str = "Accuracy per level",
                      colours: dict[str, str] | None = None, tree: Hierarchy | None = None) -> go.Figure:
    """A dot plot from a long table with columns run, level ("leaf", "level 1" ...), way ("leaf",
    "from leaf", "own scores") and accuracy in [0, 1]; optional depth (panel order), std and seeds
    (a seed group's spread over seeds, drawn as an error bar). One panel per level, titled with the
    level's names in ``tree``, each with its own axis zoomed to its values (so 0.992 against 0.994
    shows), one colour per run (``colours``), the runs side by side within a way."""
    if levels.empty:
        return _empty(title, "no accuracy to show")
    data = levels.sort_values("depth", kind="stable") if "depth" in levels else levels
    order = list(dict.fromkeys(data["level"]))
    depths = dict(zip(data["level"], data["depth"])) if "depth" in data else {}
    titles = [_text(level_label(int(depths[lv]), tree) if depths.get(lv, 0) else lv) for lv in order]
    runs = list(dict.fromkeys(levels["run"]))
    palette = {**run_colours(runs), **(colours or {})}
    spread = data["std"] if "std" in data else pd.Series(np.nan, index=data.index)
    seeds = data["seeds"] if "seeds" in data else pd.Series(1, index=data.index)
    wrap = min(len(order), 3)
    rows = _rows(len(order), wrap)
    fig = make_subplots(rows=rows, cols=wrap, subplot_titles=titles, horizontal_spacing=0.08,
                        vertical_spacing=0.3 / rows)
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
                x=cell["way"], y=cell["accuracy"], mode="markers", name=_text(run), legendgroup=run,
                showlegend=i == 0,
                offsetgroup=run, marker=dict(size=10, color=palette[run], line=dict(width=1, color="white")),
                error_y=dict(type="data", array=np.nan_to_num(err), visible=bool(np.isfinite(err).any())),
                text=text, hovertemplate=f"<b>{_text(run)}</b><br>%{{x}}: %{{text}}<extra></extra>"), row=row, col=col)
        low_high = np.concatenate([part["accuracy"] - spread[part.index].fillna(0),
                                   part["accuracy"] + spread[part.index].fillna(0)])
        fig.update_yaxes(range=_zoomed(low_high), tickformat=".3f", nticks=ZOOM_TICKS, row=row, col=col)
    fig.update_annotations(font_size=13)
    fig.update_layout(title=_text(title), template=TEMPLATE, scattermode="group", scattergap=0.3,
                      legend_title_text="run",
                      font=dict(size=13))
    return fit(fig, rows=rows)


def history_curves(history: pd.DataFrame, *, title: str = "Training history",
                   colours: dict[str, str] | None = None) -> go.Figure:
    """The accuracy training measured after each epoch, per run (columns run, epoch, accuracy; split,
    "validation" or "test", and samples, when there, name what it tested on: ``data.test_subset`` may
    be fewer images than the evaluation's, ``data.val_fraction`` held out of the training split);
    whole-epoch ticks."""
    data = history.dropna(subset=["accuracy"]) if "accuracy" in history else pd.DataFrame()
    if data.empty:
        return _empty(title, "no history")
    data = _shown(data, "run")
    splits = data["split"].dropna().unique() if "split" in data else ["test"]
    samples = data["samples"].dropna().unique() if "samples" in data else []
    label = f"{splits[0]} accuracy" if len(splits) == 1 else "validation or test accuracy (per run)"
    label += f" ({int(samples[0]):,} images)" if len(samples) == 1 else ""
    fig = px.line(data, x="epoch", y="accuracy", markers=True, template=TEMPLATE, title=_text(title),
                  labels={"accuracy": label}, **_colour_args(data, colours))
    epochs = int(data["epoch"].max())
    fig.update_xaxes(tickmode="linear", tick0=0, dtick=max(1, -(-epochs // 10)), tickformat="d")
    return fit(fig)


def reliability_diagram(bins: pd.DataFrame, *, title: str = "Reliability",
                        colours: dict[str, str] | None = None) -> go.Figure:
    """Accuracy against confidence per bin (columns run, confidence, accuracy, count), and the
    diagonal of honest confidence."""
    if bins.empty:
        return _empty(title, "no calibration bins")
    bins = _shown(bins, "run")
    fig = px.line(bins, x="confidence", y="accuracy", markers=True, template=TEMPLATE, title=_text(title),
                  **_colour_args(bins, colours))
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="honest (diagonal)",
                             line=dict(dash="dot", color="grey")))
    fig.update_xaxes(range=[-0.03, 1.03], title="confidence (top-1 probability)")  # two 0s would meet at 0, 0
    fig.update_yaxes(range=[-0.03, 1.03], title="accuracy")
    return fit(fig)


def _metric_label(metric: str, tree: Hierarchy | None) -> str:
    """A forest plot's row: "level k" with the level's names beside it."""
    match = re.fullmatch(r"level ([0-9]+) \((.+)\)", metric)
    label = f"{level_label(int(match.group(1)), tree)} ({match.group(2)})" if match else display_name(metric, tree)
    return _text(label)


def _same_as(data: pd.DataFrame, digits: int = 4) -> list[str]:
    """Per row: the other runs with the same difference (to ``digits`` decimals) at its metric."""
    rounded = data["delta"].round(digits)
    out = []
    for run, metric, value in zip(data["run"], data["metric"], rounded):
        same = data.loc[(data["metric"] == metric) & (rounded == value) & (data["run"] != run), "run"]
        out.append(f"<br>same difference as {_text(', '.join(map(str, same)))}" if len(same) else "")
    return out


def difference_intervals(frame: pd.DataFrame, *, title: str = "Difference from the baseline, 95 % interval",
                         colours: dict[str, str] | None = None, tree: Hierarchy | None = None) -> go.Figure:
    """A forest plot of paired differences: one row per metric, one dot per run (columns run,
    metric, delta, low, high, p_value, p_holm), the interval as a horizontal error bar and a line at 0.
    Within a metric each run has its own line (so equal differences never hide each other; the
    hover names runs with the same difference). A dot whose Holm-adjusted p (over every difference
    drawn) is below :data:`~hseval.reporting.significance.ALPHA` is filled, otherwise hollow; the
    legend shows each run's colour and the two kinds of dot. Levels are labelled with their names in
    ``tree``."""
    data = frame.dropna(subset=["delta"]).reset_index(drop=True) if "delta" in frame else pd.DataFrame()
    if data.empty:
        return _empty(title, "no paired differences (the runs were not evaluated on the same samples)")
    runs = list(dict.fromkeys(data["run"]))
    palette = {**run_colours(runs), **(colours or {})}
    metrics = list(dict.fromkeys(data["metric"]))
    place = {m: len(metrics) - 1 - i for i, m in enumerate(metrics)}  # the first metric on top
    gap = min(0.16, 0.8 / len(runs))
    data["same"] = _same_as(data)
    fig = go.Figure()
    for k, run in enumerate(runs):
        part = data[data["run"] == run]
        real = (part["p_holm"] < ALPHA).to_numpy()
        fig.add_trace(go.Scatter(
            x=part["delta"], y=part["metric"].map(place) + ((len(runs) - 1) / 2 - k) * gap, mode="markers",
            name=_text(run), legendgroup=run, showlegend=False,
            marker=dict(size=10, color=palette[run], symbol=np.where(real, "circle", "circle-open"),
                        line=dict(width=2, color=palette[run])),
            error_x=dict(type="data", symmetric=False, array=part["high"] - part["delta"],
                         arrayminus=part["delta"] - part["low"], color=palette[run], thickness=1.5, width=3),
            customdata=np.stack([part["low"], part["high"], part["p_value"], part["metric"].map(_text), part["same"],
                                 part["p_holm"]], axis=1),
            hovertemplate=f"<b>{_text(run)}</b> − baseline<br>%{{customdata[3]}}: %{{x:+.4f}}<br>95 % interval "
                          "[%{customdata[0]:+.4f}, %{customdata[1]:+.4f}]<br>p = %{customdata[2]:.3g}, after Holm's "
                          "correction %{customdata[5]:.3g}%{customdata[4]}<extra></extra>"))
        fig.add_trace(legend_only(run, palette[run]))
    fig.add_trace(legend_only(f"filled: Holm-corrected p below {ALPHA:g}", "#555", group="kind"))
    fig.add_trace(legend_only("hollow: not significant after correction", "#555", group="kind", symbol="circle-open"))
    fig.add_vline(x=0, line=dict(color="#444", dash="dot"))
    for boundary in range(1, len(metrics)):
        fig.add_hline(y=boundary - 0.5, line=dict(color="#e5e5e5", width=1))
    fig.update_layout(title=_text(title), template=TEMPLATE, xaxis_title="accuracy difference (run − baseline)",
                      xaxis_tickformat="+.3f", legend_title_text="run",
                      yaxis=dict(tickvals=list(place.values()), ticktext=[_metric_label(m, tree) for m in place],
                                 range=[-0.5, len(metrics) - 0.5],
                                 showgrid=False, zeroline=False, title=None))
    return fit(fig, row_height=len(metrics) * max(44, 15 * len(runs) + 14))


LABELLED = 6
"""The most points :func:`error_and_severity` names beside them."""


def error_and_severity(points: pd.DataFrame, *, title: str = "Top-1 error against mistake severity",
                       colours: dict[str, str] | None = None, groups: dict[str, str] | None = None) -> go.Figure:
    """Making Better Mistakes' Figure 1: one point per run (a row of
    :func:`~hseval.reporting.ranking.mistake_intervals`), top-1 error across, mistake severity
    up, each with its 95 % bootstrap interval; coloured by ``groups`` (run -> seed group; default:
    the run)."""
    data = points.dropna(subset=["error"])
    if data.empty:
        return _empty(title, "no predictions to show")
    groups = groups or {}
    entries = list(dict.fromkeys(groups.get(r, r) for r in data["run"]))
    palette = {**run_colours(entries), **(colours or {})}
    fig = go.Figure()
    shown: set[str] = set()
    labelled = len(data) <= LABELLED  # more names than that overlap: the legend and the hover name them
    for row in data.itertuples(index=False):
        entry = groups.get(row.run, row.run)
        severity = row.severity if row.severity == row.severity else None
        fig.add_trace(go.Scatter(
            x=[row.error], y=[severity], mode="markers+text" if labelled else "markers", name=_text(entry),
            legendgroup=entry,
            showlegend=entry not in shown, text=[_text(row.run)], textposition="top center",
            marker=dict(size=11, color=palette[entry], line=dict(width=1, color="white")),
            error_x=dict(type="data", symmetric=False, array=[row.error_high - row.error],
                         arrayminus=[row.error - row.error_low]),
            error_y=dict(type="data", symmetric=False, visible=severity is not None,
                         array=[np.nan_to_num(row.severity_high - row.severity)],
                         arrayminus=[np.nan_to_num(row.severity - row.severity_low)]),
            hovertemplate=(f"<b>{_text(row.run)}</b><br>top-1 error {row.error:.4f} "
                           f"[{row.error_low:.4f}, {row.error_high:.4f}]<br>mistake severity "
                           + (f"{row.severity:.3f} [{row.severity_low:.3f}, {row.severity_high:.3f}]"
                              if severity is not None else "n/a (no mistakes)")
                           + f"<br>{row.mistakes:,} mistakes of {row.samples:,}<extra></extra>")))
        shown.add(entry)
    lows = np.concatenate([data["error_low"], data["error_high"]])
    fig.update_xaxes(title_text="top-1 error", range=_zoomed(lows, pad=0.3), tickformat=".3f")
    fig.update_yaxes(title_text="mistake severity")
    fig.update_layout(title=_text(title), template=TEMPLATE, legend_title_text="run", font=dict(size=13))
    return fit(fig)
