"""Hierarchy page: the tree coloured by per-node accuracy of a run (or the difference between two
runs), and one node in detail: its classes and its most frequent confusions."""

from __future__ import annotations

import streamlit as st

from hseval.app import loading, tables
from hseval.app.state import Context, context
from hseval.app.views.common import chart, needs_runs, pick, pick_run, shows_problems
from hseval.io import evaluation_format as eval_format
from hseval.io.results import RunResult
from hseval.reporting import charts
from hseval.reporting.escape import markdown
from hseval.reporting.sections import sunburst_guide

NONE = "(none)"
KEY_NODE = "hierarchy_node"
_LAST_CLICK = "_hierarchy_last_click"


def _tree_chart(ctx: Context, run: RunResult, kind: str) -> int | None:
    """Draw the tree; returns the node a click selected (None without a new click)."""
    others = [r.name for r in ctx.runs if r.name != run.name]
    baseline = pick("Colour by the difference with", [NONE, *others], key="hierarchy_baseline")
    per_node = loading.table(run, eval_format.PER_NODE)
    if baseline == NONE:
        fig = charts.node_sunburst(run.hierarchy, per_node, kind=kind,
                                   title=f"{run.name}: accuracy per node (size = samples)")
    else:
        base = ctx.evaluation.run(baseline)
        if base.hierarchy != run.hierarchy:
            st.warning(f"{run.name} and {baseline} use different trees; showing {run.name} alone.")
            fig = charts.node_sunburst(run.hierarchy, per_node, kind=kind, title=f"{run.name}: accuracy per node")
        else:
            diff = tables.per_node_difference(run.hierarchy, per_node, loading.table(base, eval_format.PER_NODE))
            fig = charts.node_sunburst(run.hierarchy, diff, value="delta", diverging=True, kind=kind,
                                       title=f"Accuracy of {run.name} minus {baseline} (blue: {run.name} better)")
    event = chart(fig, key="hierarchy_tree", on_select="rerun", selection_mode="points")
    if baseline == NONE:
        st.caption(markdown(sunburst_guide(run.hierarchy, per_node)) + " Click a sector to see it in detail below.")
    clicked = tables.clicked_node(event, run.hierarchy)
    if clicked is None or st.session_state.get(_LAST_CLICK) == clicked:
        return None
    st.session_state[_LAST_CLICK] = clicked
    return clicked


def _node_detail(run: RunResult, clicked: int | None) -> None:
    paths = tables.node_paths(run.hierarchy)
    names = list(paths)
    if clicked is not None:  # a click on the chart chooses the node, as if picked below
        st.session_state[KEY_NODE] = next(p for p, n in paths.items() if n == clicked)
    first_super = next((i for i, n in enumerate(paths.values()) if run.hierarchy.children[n]), 0)
    path = pick("Node", names, key=KEY_NODE, index=first_super)  # a super-class: a leaf's detail says little
    node = paths[path]
    per_node = loading.table(run, eval_format.PER_NODE)
    stats = tables.node_accuracy(per_node, node)
    left, middle, right = st.columns(3)
    left.metric("Accuracy at this node", f"{stats['accuracy']:.3f}" if stats["support"] else "n/a — no samples")
    middle.metric("Samples under it", f"{stats['support']:,}")
    right.metric("Depth", int(run.hierarchy.depth[node]))
    classes, errors = st.columns(2)
    with classes:
        st.markdown("**Classes under this node**")
        st.dataframe(tables.classes_under(run.hierarchy, per_node, node), hide_index=True,
                     key="hierarchy_classes", column_config={"accuracy": st.column_config.ProgressColumn(
                         "accuracy", min_value=0.0, max_value=1.0, format="%.3f")})
    with errors, shows_problems():
        st.markdown("**Most frequent confusions** (true class under this node)")
        matrix, labels = loading.confusion(run)
        st.dataframe(tables.top_confusions(matrix, labels, run.hierarchy, node), hide_index=True,
                     key="hierarchy_confusions",
                     column_config={"share": st.column_config.NumberColumn(format="%.3f"),
                                    "inside": st.column_config.CheckboxColumn("still under node")})


def render(ctx: Context) -> None:
    st.title("Hierarchy")
    if not needs_runs(ctx):
        return
    left, right = st.columns([3, 1])
    run = pick_run("Run", ctx.runs, key="hierarchy_run", container=left)
    kind = right.radio("Chart", ["sunburst", "treemap"], horizontal=True, key="hierarchy_chart")
    clicked = None
    with shows_problems():
        clicked = _tree_chart(ctx, run, kind)
    st.subheader("Node")
    with shows_problems():
        _node_detail(run, clicked)


render(context())
