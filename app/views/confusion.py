"""Confusion page: the confusion matrix with classes in tree order (each super-class a block),
at the leaves or at any super-class level."""

from __future__ import annotations

import streamlit as st

from hseval.app import loading, tables
from hseval.app.state import Context, context
from hseval.app.views.common import PLOT, needs_runs, number, pick, pick_run, shows_problems
from hseval.reporting import charts
from hseval.reporting.escape import markdown


def render(ctx: Context) -> None:
    st.title("Confusion")
    if not needs_runs(ctx):
        return
    top = st.columns(3)
    run = pick_run("Run", ctx.runs, key="confusion_run", container=top[0])
    levels = {"classes (leaves)": None, **{f"level {d}": d for d in range(1, run.hierarchy.max_depth)}}
    level = pick("Level", list(levels), key="confusion_level", container=top[1])
    normalize = top[2].toggle("Rows as fractions", value=True, key="confusion_normalize")
    with shows_problems():
        matrix, labels = loading.confusion(run, levels[level])
        accuracy = tables.matrix_accuracy(matrix)
        st.metric(f"Accuracy at {level}", number(accuracy))
        st.plotly_chart(charts.confusion_heatmap(matrix, labels, run.hierarchy, normalize=normalize,
                                                 title=f"{run.name}: confusion at {level}, tree order"),
                        key="confusion_heatmap", config=PLOT)
        empty = tables.empty_rows(matrix, labels, run.hierarchy)
        notes = ["Lines separate the super-classes one level up; hover a cell for its count."]
        if empty:
            notes.append(f"Rows without samples left out: {markdown(', '.join(empty))} (no test sample's class is there"
                         + (", or is shallower than this level" if "(shallower class)" in empty else "") + ").")
        st.caption(" ".join(notes))


render(context())
