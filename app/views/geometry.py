"""Geometry page: how the learned class vectors sit relative to the tree — parent/child angles and
steps ‖w_p − w_parent‖ against the radius R per depth, sibling vs non-sibling angles, agreement of
the tree recovered from the vectors with the given one, and one node's children in detail."""

from __future__ import annotations

import streamlit as st

from hseval.app import tables
from hseval.app.state import PageContext, context
from hseval.app.views.common import (
    agreement_table,
    chart,
    needs_runs,
    page_title,
    paged_table,
    pick_node,
    pick_run,
    shows_problems,
    table_config,
)
from hseval.io.results import RunResult
from hseval.reporting import charts
from hseval.reporting.columns import not_available
from hseval.reporting.escape import markdown
from hseval.reporting.sections import GUIDES, concat_runs


def _with_vectors(ctx: PageContext) -> list[RunResult]:
    """Runs whose head has class vectors; the others get a note saying why they are left out."""
    kept = []
    for run in ctx.runs:
        skipped = (run.metrics.get("geometry") or {}).get("skipped")
        if skipped:
            st.info(f"{run.name}: no geometry — {skipped} (e.g. the hyperbolic head's classes are points and "
                    "normals in the Poincaré ball, not vectors).")
            continue
        with shows_problems():
            if not run.geometry.empty:
                kept.append(run)
            else:
                st.info(f"{run.name}: geometry.csv is empty (no class vectors).")
    return kept


def _drill_down(runs: list[RunResult], colours: dict[str, str]) -> None:
    st.subheader("A node and its children")
    left, right = st.columns(2)
    run = pick_run("Run", runs, key="geometry_run", container=left)
    paths = {p: n for p, n in tables.node_paths(run.hierarchy).items() if run.hierarchy.children[n]}
    if not paths:
        st.info("This tree has no super-classes.")
        return
    node = pick_node("Super-class", paths, key="geometry_node", container=right)
    name = run.hierarchy.node_names[node]
    with shows_problems():
        children = tables.children_of(run.geometry, name)
        chart(charts.child_angles(children.assign(run=run.name), title=f"Children of {name}: angle to it",
                                  colours=colours), key="geometry_children")
        columns = [c for c in ("name", "depth", "is_leaf", "angle_to_parent", "delta_norm", "radius", "norm")
                   if c in children]
        shown = children[columns]
        if "radius" in shown and shown["radius"].isna().all():  # a head without radii: say so, not "None"
            shown = shown.assign(radius=not_available(f"head '{run.head}' has no radius R_p"))
        paged_table(shown, key="geometry_children_table", what="children", column_config=table_config(shown))
        pairs = tables.child_pair_angles(run.pair_angles, run.hierarchy, node)
        if not pairs.empty:
            st.caption(f"Angles between children of {markdown(name)} (sampled pairs)")
            paged_table(pairs, key="geometry_child_pairs", what="pairs", column_config=table_config(pairs))


def render(ctx: PageContext) -> None:
    page_title(ctx, "Geometry")
    if not needs_runs(ctx):
        return
    runs = _with_vectors(ctx)
    if not runs:
        st.warning("None of the selected runs has class vectors to measure.")
        return
    metrics = {r.name: r.metrics for r in runs}
    st.subheader("Tree recovered from the class vectors")
    sampled = [f"{markdown(r.name)}: {n:,} of {r.hierarchy.num_leaves:,}" for r in runs
               if (n := ((r.metrics.get("geometry") or {}).get("tree_agreement") or {}).get("classes"))
               and n < r.hierarchy.num_leaves]
    st.caption("Agreement between the given tree and hierarchical clustering of the leaf vectors: cophenetic "
               "correlation and Rand indices per level (1 = identical)." + (
                   " Clustering takes memory quadratic in the classes, so a sample of the classes drawn with a "
                   f"fixed seed was clustered ({'; '.join(sampled)} classes)." if sampled else ""))
    agreement_table(runs, key="geometry_agreement")
    with st.expander("Per-depth summary"):
        depths = tables.depth_summary(metrics)
        st.dataframe(depths, hide_index=True, key="geometry_depths", column_config=table_config(depths))
        st.caption("Depth 1 has no angle to its parent: its parent is the root, whose vector is w = 0.")
    with shows_problems():
        geometry = concat_runs([(r.name, r.geometry) for r in runs])
        left, right = st.columns(2)
        chart(charts.angle_to_parent(geometry, colours=ctx.colours), key="geometry_angles", container=left)
        chart(charts.step_by_depth(geometry, colours=ctx.colours), key="geometry_step_depth", container=right)
        chart(charts.delta_vs_radius(geometry, colours=ctx.colours), key="geometry_steps")
        st.caption(GUIDES["radius"])
    with shows_problems():
        pairs = concat_runs([(r.name, r.pair_angles) for r in runs])
        chart(charts.sibling_angles(pairs), key="geometry_siblings")
        st.caption(GUIDES["siblings"])
    _drill_down(runs, ctx.colours)


render(context())
