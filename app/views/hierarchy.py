"""Hierarchy page: the tree coloured by per-node accuracy of a run (or the difference between two
runs), and one node in detail: its children, worst first, and the most frequent confusions of its
classes.

A large tree is shown, not all of it: the chart opens at most 3 levels and sends at most
``charts.SECTORS_MAX`` sectors (a click on a sector opens it: in the browser where its levels were
sent, else by drawing the chart again from that node); the node picker searches on the server; the
tables are paged."""

from __future__ import annotations

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
from hseval.reporting.escape import markdown
from hseval.reporting.sections import sunburst_guide
from hseval.tree.ancestry import same_tree
from hseval.tree.hierarchy import Hierarchy

NONE = "(none)"
KEY_NODE = "hierarchy_node"
_LAST_CLICK = "_hierarchy_last_click"
_TOP = "_hierarchy_top"  # the node a large tree's chart is drawn from (None: the top of the tree)
CONFUSIONS_SHOWN = 20


def _top(tree: Hierarchy) -> int | None:
    top = st.session_state.get(_TOP)
    return top if top is not None and 0 <= top < tree.num_nodes and tree.children[top] else None


def _tree_chart(ctx: PageContext, run: RunResult, kind: str) -> int | None:
    """Draw the tree; returns the node a click selected (None without a new click)."""
    tree = run.hierarchy
    others = [r.name for r in ctx.runs if r.name != run.name]
    baseline = pick("Colour by the difference with", [NONE, *others], key="hierarchy_baseline")
    per_node = run.per_node
    top = _top(tree)
    if baseline == NONE:
        fig = charts.node_sunburst(tree, per_node, kind=kind, top=top,
                                   title=f"{run.name}: accuracy per node (size = samples)")
    else:
        base = ctx.evaluation.run(baseline)
        if not same_tree(base.hierarchy, tree):
            st.warning(f"{run.name} and {baseline} use different trees; showing {run.name} alone.")
            fig = charts.node_sunburst(tree, per_node, kind=kind, top=top, title=f"{run.name}: accuracy per node")
        else:
            diff = tables.per_node_difference(tree, per_node, base.per_node)
            fig = charts.node_sunburst(tree, diff, value="delta", diverging=True, kind=kind, top=top,
                                       title=f"Accuracy of {run.name} minus {baseline} (blue: {run.name} better)")
    event = chart(fig, key="hierarchy_tree", on_select="rerun", selection_mode="points")
    sent, levels, deepest = charts.sunburst_levels(tree, top)
    where = "the top of the tree" if top is None else markdown(" / ".join(tree.path_names(top)))
    note = ("" if levels == deepest else f" Drawn from {where}: {levels} of its {deepest} levels at first "
            f"({len(sent):,} of {tree.num_nodes:,} nodes sent).")
    st.caption((markdown(sunburst_guide(tree, per_node)) if baseline == NONE else "") + note
               + (" Click a sector to open it and see it in detail below." if note else
                  " Click a sector to see it in detail below."))
    if top is not None and st.button("Back to the top of the tree", key="hierarchy_top_button"):
        st.session_state[_TOP] = None
        st.rerun()
    clicked = tables.clicked_node(event, tree)
    if clicked is None or st.session_state.get(_LAST_CLICK) == clicked:
        return None
    st.session_state[_LAST_CLICK] = clicked
    if tree.num_nodes > charts.SECTORS_MAX and tree.children[clicked] and clicked != top:
        st.session_state[_TOP] = clicked  # a tree not sent whole: draw again from the clicked node
        st.session_state[KEY_NODE] = tables.node_path(tree, clicked)
        st.session_state.pop(f"{KEY_NODE}_find", None)
        st.rerun()
    return clicked


def _node_detail(run: RunResult, clicked: int | None) -> None:
    tree = run.hierarchy
    paths = tables.node_paths(tree)
    if clicked is not None:  # a click on the chart chooses the node, as if picked below (no search left over)
        st.session_state[KEY_NODE] = tables.node_path(tree, clicked)
        st.session_state.pop(f"{KEY_NODE}_find", None)
    first_super = next((i for i, n in enumerate(paths.values()) if tree.children[n]), 0)
    node = pick_node("Node", paths, key=KEY_NODE, index=first_super)  # a super-class: a leaf's detail says little
    per_node = run.per_node
    stats = tables.node_accuracy(per_node, node)
    left, middle, right = st.columns(3)
    left.metric("Accuracy at this node", f"{stats['accuracy']:.3f}" if stats["support"] else "n/a — no samples")
    middle.metric("Samples under it", f"{stats['support']:,}")
    right.metric("Depth", int(tree.depth[node]))
    children, errors = st.columns(2)
    with children:
        if tree.children[node]:
            st.markdown("**Its children, least accurate first**")
            paged_table(tables.worst_children(tree, per_node, node), key="hierarchy_children", what="children",
                        column_config={"accuracy": st.column_config.ProgressColumn(
                            "accuracy", min_value=0.0, max_value=1.0, format="%.3f")})
        else:
            st.markdown(f"**{markdown(tree.node_names[node])} is a class**: it has no children.")
    with errors, shows_problems():
        st.markdown("**Most frequent confusions** (true class under this node)")
        pairs = loading.confused_pairs(run, None, node).head(CONFUSIONS_SHOWN)
        st.dataframe(pairs.drop(columns="lca"), hide_index=True, key="hierarchy_confusions",
                     column_config={"share": st.column_config.NumberColumn(format="%.3f"),
                                    "tree_distance": st.column_config.NumberColumn("tree distance", format="%d"),
                                    "inside": st.column_config.CheckboxColumn("still under node")})


def render(ctx: PageContext) -> None:
    page_title(ctx, "Hierarchy")
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
