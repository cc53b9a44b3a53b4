"""Compare page: the runs selected in the sidebar against its baseline (the one baseline control)
— is each difference real (paired bootstrap interval and exact McNemar p at every level; over seeds
for seed groups), where in the tree one run beats the baseline (per-node differences), and how
their class vectors differ."""

from __future__ import annotations

import streamlit as st

from hseval.app import loading, tables
from hseval.app.state import PageContext, context
from hseval.app.views.common import agreement_table, chart, page_title, pick_run, shows_problems
from hseval.io.results import RunResult
from hseval.reporting import charts, ranking
from hseval.reporting.escape import markdown
from hseval.reporting.sections import (
    FAMILY,
    GUIDES,
    concat_runs,
    level_frame,
    one_tree,
    seed_group_table,
    significance_table,
)
from hseval.reporting.significance import MCNEMAR, against_baseline, seed_groups
from hseval.reporting.summary import level_table
from hseval.tree.ancestry import same_tree


def _significance(runs: list[RunResult], baseline: RunResult, ctx: PageContext) -> None:
    st.subheader(f"Is the difference real? Each run against {baseline.name}")
    st.caption("Accuracy difference on the same samples (run − baseline) at every level, with a 95 % interval "
               "from a paired bootstrap over samples (10,000 resamples) and the exact McNemar test's p-value (from "
               "the samples only one of the two gets right); the table adds "
               f"{ranking.BASELINE_SAID} (their interval and p from {ranking.RESAMPLES:,} paired bootstrap resamples). "
               + FAMILY + " " + GUIDES["intervals"])
    paired, unpaired = against_baseline(runs, baseline, compare=loading.paired)
    for name, reason in unpaired.items():
        st.warning(f"No paired test for {name}: {reason}.")
    if paired.empty:
        return
    title = f"Difference from {baseline.name}, 95 % paired bootstrap interval"
    chart(charts.difference_intervals(paired[paired["test"] == MCNEMAR], colours=ctx.colours, title=title,
                                      tree=one_tree(runs)),
          key="compare_intervals")
    shown = significance_table(paired, {}, one_tree(runs))
    st.dataframe(shown, hide_index=True, key="compare_significance", column_config={
        "run": st.column_config.TextColumn(pinned=True),
        "run value": st.column_config.NumberColumn(format="%.4f"),
        "baseline value": st.column_config.NumberColumn(format="%.4f")})


def _seed_groups(runs: list[RunResult], baseline: RunResult) -> None:
    groups = seed_groups(runs)
    if not any(len(g.runs) > 1 for g in groups):
        return
    base = next(g for g in groups if baseline in g.runs)
    st.subheader(f"Over seeds: each seed group against {base.name}")
    st.caption("Mean ± std over seeds, and the difference of the means with its 95 % t interval over seeds (paired "
               "by seed when both groups ran the same seeds, Welch's otherwise); Holm p: the t-test's p adjusted by "
               "Holm's method over every group and level of this table.")
    shown, _ = seed_group_table(groups, base, level_table(runs))
    if shown.empty:
        return
    st.dataframe(shown, hide_index=True, key="compare_groups",
                 column_config={"group": st.column_config.TextColumn(pinned=True),
                                "difference": st.column_config.NumberColumn(format="%+.4f")})


def _nodes(runs: list[RunResult], baseline: RunResult) -> None:
    st.subheader("Per-node accuracy")
    others = [r for r in runs if r.name != baseline.name]
    run = pick_run(f"Run to set against {baseline.name}", others, key="compare_node_run")
    if not same_tree(run.hierarchy, baseline.hierarchy):
        st.warning(f"{run.name} and {baseline.name} use different trees: per-node differences need the same tree.")
        return
    with shows_problems():
        diff = tables.per_node_difference(run.hierarchy, run.per_node,
                                          baseline.per_node)
        left, right = st.columns(2)
        chart(charts.node_sunburst(run.hierarchy, diff, value="delta", diverging=True,
                                   title=f"{run.name} minus {baseline.name} (blue: {run.name} better)"),
              key="compare_sunburst", container=left)
        chart(charts.node_deltas(diff, title="Largest per-node differences"), key="compare_deltas", container=right)


def _geometry(runs: list[RunResult], ctx: PageContext) -> None:
    st.subheader("Geometry")
    kept = [r for r in runs if not (r.metrics.get("geometry") or {}).get("skipped")]
    for run in runs:
        if run not in kept:
            st.info(f"{run.name}: {run.metrics['geometry']['skipped']}")
    if not kept:
        return
    agreement_table(kept, key="compare_agreement")
    with shows_problems():
        geometry = concat_runs([(r.name, r.geometry) for r in kept])
        left, right = st.columns(2)
        chart(charts.angle_to_parent(geometry, colours=ctx.colours), key="compare_angles", container=left)
        chart(charts.step_by_depth(geometry, colours=ctx.colours), key="compare_steps", container=right)


def render(ctx: PageContext) -> None:
    page_title(ctx, "Compare")
    if ctx.baseline is None or len({r.name for r in ctx.runs} | {ctx.baseline.name}) < 2:
        st.info("Select at least one run besides the baseline under 'Runs to compare' in the sidebar.")
        return
    baseline = ctx.baseline
    runs = [baseline, *(r for r in ctx.runs if r.name != baseline.name)]
    st.caption(f"{len(runs) - 1} run(s) against the baseline **{markdown(baseline.name)}**; choose the runs and the "
               "baseline in the sidebar (they hold on every page).")
    levels = level_frame(runs, group_seeds=ctx.group_seeds)
    chart(charts.accuracy_by_level(levels, colours=ctx.colours, tree=one_tree(runs)), key="compare_levels")
    _significance(runs, baseline, ctx)
    if ctx.group_seeds:
        _seed_groups(runs, baseline)
    _nodes(runs, baseline)
    _geometry(runs, ctx)


render(context())
