"""Overview page: every run of the folder in one table (run pinned, scrolls sideways) with its
difference from the baseline at the leaves (95 % interval, McNemar p), accuracy per level as dots
on zoomed axes (seed groups as mean ± std), and the training history."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from hseval.app import tables
from hseval.app.state import Context, context
from hseval.app.views.common import PLOT, needs_runs
from hseval.reporting import charts
from hseval.reporting.escape import markdown
from hseval.reporting.significance import versus
from hseval.reporting.summary import level_table, summary_table, unavailable_table

IDENTITY = ("run", "head")  # kept in view while the table scrolls sideways
# (no bare strings at the top level of a page: Streamlit's magic would print them on the page)


def column_config(frame: pd.DataFrame, reasons: dict[str, str]) -> dict:
    """One precision per column (4 decimals for metrics, integers for counts and seeds), identity
    columns pinned, and each column with empty cells saying why in its header's help."""
    config = {}
    for column in frame.columns:
        help_text = reasons.get(column)
        if column in IDENTITY:
            config[column] = st.column_config.TextColumn(column, pinned=True)
        elif column in ("seed", "samples", "seeds"):
            config[column] = st.column_config.NumberColumn(column, format="%d", help=help_text)
        elif pd.api.types.is_float_dtype(frame[column]):
            config[column] = st.column_config.NumberColumn(column, format="%.4f", help=help_text)
    return config


def render(ctx: Context) -> None:
    st.title("Overview")
    st.caption(f"{len(ctx.available)} evaluated run(s) of **{markdown(ctx.dataset)}** in {markdown(ctx.folder)}; "
               f"{len(ctx.runs)} selected in the sidebar.")
    for problem in ctx.evaluation.problems:
        st.error(f"Skipped a run: {problem}")
    summary = tables.overview_columns(summary_table(ctx.available))
    if ctx.baseline is not None and len(ctx.available) > 1:
        column = f"top1 vs {ctx.baseline.name}"
        summary.insert(summary.columns.get_loc("top1") + 1, column,
                       tables.versus_baseline(versus(ctx.available, ctx.baseline)))
    st.subheader("Runs")
    reasons = tables.missing_reasons(summary, ctx.available)
    st.dataframe(summary, hide_index=True, column_config=column_config(summary, reasons), key="overview_table")
    if ctx.baseline is not None and len(ctx.available) > 1:
        st.caption(f"'{markdown(column)}': leaf accuracy minus {markdown(ctx.baseline.name)}'s on the same test "
                   "samples, with a 95 % paired bootstrap interval and the exact McNemar test's p-value (choose the "
                   "baseline in the sidebar; the Compare page has every level).")
    _not_available(ctx.available)
    if not needs_runs(ctx):
        return
    st.subheader("Accuracy per level")
    st.caption("Super-class accuracy two ways: 'from leaf' maps the predicted class to its ancestor; "
               "'own scores' uses the head's own super-class scores. Each panel's axis is zoomed to its "
               "values" + ("; seed groups show mean ± std over seeds." if ctx.group_seeds else "."))
    st.plotly_chart(charts.accuracy_by_level(tables.level_frame(ctx.runs, group_seeds=ctx.group_seeds),
                                             colours=ctx.colours), key="overview_levels", config=PLOT)
    levels = level_table(ctx.runs)
    st.dataframe(levels, hide_index=True, key="overview_level_table",
                 column_config=column_config(levels, tables.missing_reasons(levels, ctx.runs)))
    history = tables.grouped_history(ctx.runs, group_seeds=ctx.group_seeds)
    if not history.empty:
        st.plotly_chart(charts.history_curves(history, colours=ctx.colours), key="overview_history", config=PLOT)


def _not_available(runs) -> None:
    """Why cells are empty: each run's unavailable metrics with the reason."""
    missing = unavailable_table(runs)
    if not missing.empty:
        with st.expander(f"Not available: why {len(missing)} group(s) of cells are empty (also in each column's "
                         "help)"):
            st.dataframe(missing, hide_index=True, key="overview_unavailable")


render(context())
