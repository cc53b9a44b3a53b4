"""Overview page: every run of the folder in one sortable table, accuracy per level as bars."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app import tables
from app.state import Context, context
from app.views.common import PLOT, needs_runs
from hseval import charts
from hseval.results import level_long, level_table, summary_table, unavailable_table


def _number_formats(frame: pd.DataFrame) -> dict:
    return {c: st.column_config.NumberColumn(format="%.4f") for c in frame.columns
            if pd.api.types.is_float_dtype(frame[c])}


def render(ctx: Context) -> None:
    st.title("Overview")
    st.caption(f"{len(ctx.available)} evaluated run(s) of **{ctx.dataset}** in `{ctx.root}`; "
               f"{len(ctx.runs)} selected in the sidebar.")
    for problem in ctx.evaluation.problems:
        st.error(f"Skipped a run: {problem}")
    summary = tables.overview_columns(summary_table(ctx.available))
    st.subheader("Runs")
    st.dataframe(summary, hide_index=True, column_config=_number_formats(summary), key="overview_table")
    _not_available(ctx.available)
    if not needs_runs(ctx):
        return
    levels = level_table(ctx.runs)
    st.subheader("Accuracy per level")
    st.caption("Super-class accuracy two ways: 'from leaf' maps the predicted class to its ancestor; "
               "'parent δ / level head' uses the head's own super-class scores.")
    st.plotly_chart(charts.accuracy_by_level(level_long(ctx.runs)), key="overview_levels", config=PLOT)
    st.dataframe(levels, hide_index=True, column_config=_number_formats(levels), key="overview_level_table")
    history = tables.history({r.name: r.history for r in ctx.runs})
    if not history.empty:
        st.plotly_chart(charts.history_curves(history), key="overview_history", config=PLOT)


def _not_available(runs) -> None:
    """Why cells are empty: each run's unavailable metrics with the reason."""
    missing = unavailable_table(runs)
    if not missing.empty:
        with st.expander(f"Not available: why {len(missing)} group(s) of cells are empty"):
            st.dataframe(missing, hide_index=True, key="overview_unavailable")


render(context())
