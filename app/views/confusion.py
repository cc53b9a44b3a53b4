"""Confusion page: the confusion matrix with classes in tree order (each super-class a block, lines
at every level above), at the leaves or at any super-class level; classes with no node at a level
are named with the samples the level leaves out."""

from __future__ import annotations

import streamlit as st

from hseval.app import loading, tables
from hseval.app.state import Context, context
from hseval.app.views.common import chart, needs_runs, number, pick, pick_run, shows_problems
from hseval.reporting import charts
from hseval.reporting.columns import level_label
from hseval.reporting.escape import markdown


def render(ctx: Context) -> None:
    st.title("Confusion")
    if not needs_runs(ctx):
        return
    top = st.columns(3)
    run = pick_run("Run", ctx.runs, key="confusion_run", container=top[0])
    tree = run.hierarchy
    levels = {"classes (leaves)": None, **{level_label(d, tree): d for d in range(1, tree.max_depth)}}
    level = pick("Level", list(levels), key="confusion_level", container=top[1])
    depth = levels[level]
    normalize = top[2].toggle("Rows as fractions", value=True, key="confusion_normalize")
    with shows_problems():
        matrix, labels = loading.confusion(run, depth)
        shown = "the classes" if depth is None else f"level {depth}"
        st.metric(f"Accuracy at {shown}", number(tables.matrix_accuracy(matrix)))
        left_out = charts.shallower_samples(run.targets, tree, depth)
        chart(charts.confusion_heatmap(matrix, labels, tree, normalize=normalize, left_out=left_out,
                                       title=f"{run.name}: confusion at {shown}, tree order"), key="confusion_heatmap")
        st.caption(markdown(charts.confusion_guide(tree, depth)))


render(context())
