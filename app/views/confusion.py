"""Confusion page: the confusion matrix with classes in tree order (each super-class a block, lines
at every level above), at the leaves or at any super-class level; the most-confused pairs (true →
predicted, with their lowest common ancestor and tree distance) at any size; and the classes inside
one super-class. A matrix too large to draw (more than ``charts.HEATMAP_MAX`` labels) is not
drawn: the page says so and the pairs and the super-class view show it in parts."""

from __future__ import annotations

import numpy as np
import streamlit as st

from hseval.app import loading, tables
from hseval.app.state import PageContext, context
from hseval.app.views.common import (
    chart,
    needs_runs,
    page_title,
    paged_table,
    pick,
    pick_node,
    pick_run,
    shows_problems,
)
from hseval.io.results import RunResult
from hseval.reporting import charts
from hseval.reporting.columns import level_label
from hseval.reporting.escape import markdown

WITHIN_FIRST = 30  # the super-class shown first inside has at most this many classes (every name readable)
PAIR_COLUMNS = {"share": st.column_config.NumberColumn("share", format="%.3f",
                                                       help="Of the true class's (or super-class's) samples"),
                "lca": st.column_config.TextColumn("LCA", help="Lowest common ancestor of the two"),
                "tree_distance": st.column_config.NumberColumn("tree distance", format="%d",
                                                               help="Edges on the tree path between the two")}


def _pairs(run: RunResult, depth: int | None, shown: str) -> None:
    st.subheader("Most-confused pairs")
    frame = loading.confused_pairs(run, depth)
    if frame.empty:
        st.info(f"No mistakes at {shown}.")
        return
    st.caption(f"The {len(frame):,} most frequent mistakes at {markdown(shown)}, most frequent first: true → "
               "predicted. A small tree distance is a mild mistake (inside a super-class); a large one crosses "
               "the tree near its top.")
    paged_table(frame, key="confusion_pairs", what="pairs", column_config=PAIR_COLUMNS)


def _within(run: RunResult, normalize: bool) -> None:
    tree = run.hierarchy
    classes = np.asarray(tree.H.sum(axis=1)).ravel()  # classes under each node
    paths = {p: n for p, n in tables.node_paths(tree).items() if tree.children[n] and classes[n] <= charts.HEATMAP_MAX}
    if not paths:
        st.info(f"No super-class has at most {charts.HEATMAP_MAX} classes to draw.")
        return
    nodes = list(paths.values())
    readable = [n for n in nodes if classes[n] <= WITHIN_FIRST] or nodes
    busiest = readable[tables.busiest_superclass(tree, run.per_node, readable)]
    default = nodes.index(busiest)
    node = pick_node("Super-class", paths, key="confusion_within", index=default,
                     help="Its classes' confusions; the last column counts predictions outside it. "
                          f"The default is the super-class of at most {WITHIN_FIRST} classes with the most "
                          "mistakes.")
    name = tree.node_names[node]
    matrix, labels = loading.confusion(run, within=node)
    chart(charts.confusion_heatmap(matrix, labels, tree, normalize=normalize, outside=f"outside {name}",
                                   title=f"{run.name}: the classes of {name}, tree order"), key="confusion_within_map")
    st.caption(f"Rows: the samples of {markdown(name)}'s classes; columns: their predictions, the last one any "
               "class outside it. " + markdown(charts.confusion_guide(tree, None)))


def render(ctx: PageContext) -> None:
    page_title(ctx, "Confusion")
    if not needs_runs(ctx):
        return
    top = st.columns(3)
    run = pick_run("Run", ctx.runs, key="confusion_run", container=top[0])
    tree = run.hierarchy
    levels = {"classes (leaves)": None, **{level_label(d, tree): d for d in range(1, tree.max_depth)}}
    level = pick("Level", list(levels), key="confusion_level", container=top[1])
    depth = levels[level]
    normalize = top[2].toggle("Rows as fractions", value=True, key="confusion_normalize")
    shown = "the classes" if depth is None else f"level {depth}"
    with shows_problems():
        accuracy = run.metrics["top1"] if depth is None else (run.metrics.get("superclass_acc") or {}).get(str(depth))
        st.metric(f"Accuracy at {shown}", "n/a" if accuracy is None or accuracy != accuracy else f"{accuracy:.4f}")
        size = tables.matrix_labels(tree, depth)
        if size <= charts.HEATMAP_MAX:
            matrix, labels = loading.confusion(run, depth)
            left_out = charts.shallower_samples(run.targets, tree, depth)
            chart(charts.confusion_heatmap(matrix, labels, tree, normalize=normalize, left_out=left_out,
                                           title=f"{run.name}: confusion at {shown}, tree order"),
                  key="confusion_heatmap")
            st.caption(markdown(charts.confusion_guide(tree, depth)))
        else:
            st.info(f"The matrix at {shown} has {size:,} rows and columns ({size * size:,} cells): too many to draw "
                    f"or read (at most {charts.HEATMAP_MAX}). It is shown in parts: the most-confused pairs, a "
                    "super-class level with fewer nodes (Level above), and the classes inside one super-class.")
        _pairs(run, depth, shown)
    with st.expander("Inside one super-class", expanded=tables.matrix_labels(tree, None) > charts.HEATMAP_MAX), \
            shows_problems():
        _within(run, normalize)


render(context())
