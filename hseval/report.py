"""``hseval report``: tables (CSV, Markdown) and one self-contained offline HTML page.

Writes into the evaluation folder: ``summary.csv`` (one row per run), ``summary_grouped.csv``
(runs differing only by seed as mean ± std), ``superclass_accuracy.csv`` / ``.md`` (runs × levels,
both ways), ``report.md`` and ``report.html`` (plotly's JavaScript inlined once: the page loads
nothing from the network).
"""

from __future__ import annotations

import html
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.io as pio

from hseval import charts, fileio, ownership
from hseval.errors import HsevalWarning, RunFormatError
from hseval.results import (
    Evaluation,
    grouped_summary,
    level_long,
    level_table,
    load_evaluation,
    mark_unavailable,
    summary_table,
    unavailable_table,
)

__all__ = ["write_report", "figures"]


def _markdown(frame: pd.DataFrame, digits: int = 4) -> str:
    if frame.empty:
        return "_(none)_\n"
    cols = list(frame.columns)

    def cell(v) -> str:
        if isinstance(v, float):
            return "" if np.isnan(v) else f"{v:.{digits}f}"
        return str(v).replace("|", "\\|")

    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def _mean_std(grouped: pd.DataFrame) -> pd.DataFrame:
    """'mean ± std' strings for the headline metrics of a grouped summary."""
    if grouped.empty:
        return grouped
    out = grouped[["dataset", "backbone", "head", "seeds"]].copy()
    for col in [c[:-5] for c in grouped.columns if c.endswith("_mean")]:
        if col in ("top1", "top5", "hierarchical_f1", "mistake_severity", "ece") or col.startswith("level"):
            if col.endswith("_agreement"):
                continue
            out[col] = [f"{m:.4f} ± {s:.4f}" if np.isfinite(m) else "" for m, s in
                        zip(grouped[f"{col}_mean"], grouped[f"{col}_std"])]
    return out


def figures(evaluation: Evaluation) -> list[tuple[str, object]]:
    """(section title, figure) pairs of the report, from the evaluation's tables."""
    from hseval.metrics import confusion_matrix

    runs = evaluation.runs
    out: list[tuple[str, object]] = []
    out.append(("Accuracy per head and level", charts.accuracy_by_level(level_long(runs))))
    history = pd.DataFrame([{**h, "run": r.name} for r in runs for h in r.history])
    if not history.empty:
        out.append(("Training history", charts.history_curves(history)))
    geometry = pd.concat([r.geometry.assign(run=r.name) for r in runs if not r.geometry.empty], ignore_index=True) \
        if any(not r.geometry.empty for r in runs) else pd.DataFrame()
    out.append(("Angle between each node and its parent", charts.angle_to_parent(geometry)))
    out.append(("Step ‖w_p − w_parent‖ against the radius", charts.delta_vs_radius(geometry)))
    pairs = pd.concat([r.pair_angles.assign(run=r.name) for r in runs if not r.pair_angles.empty],
                      ignore_index=True) if any(not r.pair_angles.empty for r in runs) else pd.DataFrame()
    out.append(("Sibling and non-sibling angles", charts.sibling_angles(pairs)))
    bins = []
    for r in runs:
        rel = r.metrics.get("reliability") or {}
        if rel:
            frame = pd.DataFrame(rel)
            frame = frame[frame.get("count", 0) > 0] if "count" in frame else frame
            bins.append(frame.assign(run=r.name))
    if bins:
        out.append(("Calibration", charts.reliability_diagram(pd.concat(bins, ignore_index=True))))
    for r in runs:
        out.append((f"{r.name}: accuracy per node", charts.node_sunburst(r.hierarchy, r.per_node,
                                                                         title=f"{r.name}: accuracy per node")))
        proj = r.projections
        if not proj.empty:
            method = "tsne" if (proj["method"] == "tsne").any() else proj["method"].iloc[0]
            points = proj[proj["method"] == method]
            color = "level1" if "level1" in points else "label"
            out.append((f"{r.name}: {method} of the embeddings",
                        charts.projection_scatter(points, color=color, title=f"{r.name}: {method}, coloured by "
                                                                              "super-class")))
        targets, topk = r.predictions()
        matrix, labels = confusion_matrix(topk[:, 0], targets, r.hierarchy)
        if len(labels) <= 200:
            out.append((f"{r.name}: confusion matrix", charts.confusion_heatmap(
                matrix, labels, title=f"{r.name}: confusion matrix (classes in tree order)")))
    return out


def _html(evaluation: Evaluation, tables: list[tuple[str, pd.DataFrame]], figs: list[tuple[str, object]]) -> str:
    from plotly.offline import get_plotlyjs

    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>hseval report</title>",
             "<style>body{font-family:system-ui,sans-serif;margin:2em;max-width:1300px}"
             "table{border-collapse:collapse;font-size:13px;margin:1em 0}td,th{border:1px solid #ccc;"
             "padding:3px 6px;text-align:right}th{background:#f3f3f3}td:first-child{text-align:left}"
             "h2{margin-top:2em}.problem{color:#a00}</style>",
             f"<script type='text/javascript'>{get_plotlyjs()}</script></head><body>",
             f"<h1>hseval report</h1><p>{len(evaluation.runs)} run(s) from {html.escape(str(evaluation.root))}; "
             f"dataset(s): {html.escape(', '.join(evaluation.datasets))}.</p>"]
    for problem in evaluation.problems:
        parts.append(f"<p class='problem'>Skipped: {html.escape(problem)}</p>")
    for title, frame in tables:
        parts.append(f"<h2>{html.escape(title)}</h2>")
        parts.append(frame.to_html(index=False, float_format=lambda v: f"{v:.4f}", na_rep="", border=0))
    for title, fig in figs:
        parts.append(f"<h2>{html.escape(title)}</h2>")
        parts.append(pio.to_html(fig, include_plotlyjs=False, full_html=False, config={"displaylogo": False}))
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(root: str | Path, *, out: str | Path | None = None) -> list[Path]:
    """Write the tables and the HTML report of the evaluation folder ``root``; returns the paths.

    Every file is rendered before the first is written (a bad ``out`` or a damaged run writes
    nothing), and each is written atomically: a killed report leaves the old file or the new one.
    A run whose files are damaged is left out, with its reason in the report and as a warning.
    The evaluation folder is locked while the report is written."""
    root = Path(root)
    evaluation = load_evaluation(root)
    if not evaluation.runs:
        raise RunFormatError(f"{root}: no readable evaluated run ({'; '.join(evaluation.problems)})")
    for problem in evaluation.problems:
        warnings.warn(f"left out of the report: {problem}", HsevalWarning, stacklevel=2)
    html_path = Path(out) if out else root / "report.html"
    fileio.check_output_folder(html_path.parent, option="--out folder")
    summary = summary_table(evaluation.runs)
    grouped = grouped_summary(evaluation.runs)
    levels = level_table(evaluation.runs)
    files: dict[Path, str] = {}
    for name, frame in (("summary.csv", summary), ("summary_grouped.csv", grouped),
                        ("superclass_accuracy.csv", levels)):
        files[root / name] = frame.to_csv(index=False)
    files[root / "superclass_accuracy.md"] = "# Super-class accuracy\n\n" + _markdown(levels)
    headline = summary[[c for c in ("run", "head", "top1", "top5", "mistake_severity", "hierarchical_f1", "ece",
                                    "feature_norm", "max_logit", "cophenetic_correlation") if c in summary]]
    shown_headline = mark_unavailable(headline, evaluation.runs)
    shown_levels = mark_unavailable(levels, evaluation.runs)
    missing = unavailable_table(evaluation.runs)
    md = ["# hseval report", "", f"{len(evaluation.runs)} run(s) from `{root}`.", "",
          "## Runs", "", _markdown(shown_headline), "## Super-class accuracy", "", _markdown(shown_levels)]
    if (grouped["seeds"] > 1).any():
        md += ["## Mean ± std over seeds", "", _markdown(_mean_std(grouped))]
    if not missing.empty:
        md += ["## Not available", "", "Why a cell reads n/a:", "", _markdown(missing)]
    files[root / "report.md"] = "\n".join(md)
    tables = [("Runs", shown_headline), ("Super-class accuracy (runs × levels)", shown_levels)]
    if (grouped["seeds"] > 1).any():
        tables.append(("Mean ± std over seeds", _mean_std(grouped)))
    if not missing.empty:
        tables.append(("Not available (why a cell reads n/a)", missing))
    files[html_path] = _html(evaluation, tables, figures(evaluation))
    with ownership.locked(root):
        for folder in {root, html_path.parent}:
            fileio.remove_stale_temporaries(folder)  # left by a killed report
        for path, text in files.items():
            fileio.write_text(path, text)
    return list(files)
