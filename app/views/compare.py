"""Compare page: two runs side by side — accuracy per level, where in the tree one beats the
other (per-node differences) and how their class vectors differ."""

from __future__ import annotations

import streamlit as st

from app import loading, tables
from app.state import Context, context
from app.views.common import PLOT, needs_runs, number, pick_run, shows_problems
from hseval import charts
from hseval.results import RunResult, level_long, level_table


def _levels(a: RunResult, b: RunResult) -> None:
    levels = level_table([a, b])
    st.subheader("Accuracy per level")
    deltas = tables.metric_deltas(levels, a.name, b.name)
    columns = st.columns(min(len(deltas), 6) or 1)
    for column, row in zip(columns, deltas.to_dict("records")):
        delta = number(row["delta"], signed=True)
        column.metric(row["metric"], number(row[a.name]), None if delta == "–" else delta,
                      help=f"{a.name}; the arrow shows {a.name} minus {b.name}")
    st.plotly_chart(charts.accuracy_by_level(level_long([a, b])), key="compare_levels", config=PLOT)
    st.dataframe(deltas, hide_index=True, key="compare_level_table")


def _nodes(a: RunResult, b: RunResult) -> None:
    st.subheader("Per-node accuracy")
    if a.hierarchy != b.hierarchy:
        st.warning(f"{a.name} and {b.name} use different trees: per-node differences need the same tree.")
        return
    with shows_problems():
        diff = tables.per_node_difference(a.hierarchy, loading.table(a, "per_node.csv"),
                                          loading.table(b, "per_node.csv"))
        left, right = st.columns(2)
        left.plotly_chart(charts.node_sunburst(a.hierarchy, diff, value="delta", diverging=True,
                                               title=f"{a.name} minus {b.name} (blue: {a.name} better)"),
                          key="compare_sunburst", config=PLOT)
        right.plotly_chart(charts.node_deltas(diff, title="Largest per-node differences"), key="compare_deltas",
                           config=PLOT)


def _geometry(a: RunResult, b: RunResult) -> None:
    st.subheader("Geometry")
    runs = [r for r in (a, b) if not (r.metrics.get("geometry") or {}).get("skipped")]
    for run in {a.name: a, b.name: b}.values():
        if run not in runs:
            st.info(f"{run.name}: {run.metrics['geometry']['skipped']}")
    if not runs:
        return
    metrics = {r.name: r.metrics for r in runs}
    st.dataframe(tables.tree_agreement(metrics), hide_index=True, key="compare_agreement")
    with shows_problems():
        geometry = tables.concat_runs({r.name: loading.table(r, "geometry.csv") for r in runs})
        left, right = st.columns(2)
        left.plotly_chart(charts.angle_to_parent(geometry), key="compare_angles", config=PLOT)
        right.plotly_chart(charts.delta_vs_radius(geometry), key="compare_steps", config=PLOT)


def render(ctx: Context) -> None:
    st.title("Compare")
    if not needs_runs(ctx, 2):
        return
    left, right = st.columns(2)
    a = pick_run("Run A", ctx.runs, key="compare_a", index=0, container=left)
    b = pick_run("Run B", ctx.runs, key="compare_b", index=1, container=right)
    if a.name == b.name:
        st.info("Choose two different runs.")
        return
    _levels(a, b)
    _nodes(a, b)
    _geometry(a, b)


render(context())
