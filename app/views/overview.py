"""Overview page: every run of the folder in one table (run pinned, scrolls sideways) with its
difference from the baseline at the leaves (95 % interval, McNemar p), accuracy per level as dots
on zoomed axes (seed groups as mean ± std), and the training history. Columns carry their display
name and help; a missing value reads "n/a — reason"."""

from __future__ import annotations

import shlex

import streamlit as st

from hseval.app import loading, tables
from hseval.app.state import PageContext, context
from hseval.app.views.common import chart, needs_runs, page_title, shown, table_config
from hseval.reporting import charts, ranking, sample_metrics
from hseval.reporting.columns import level_legend
from hseval.reporting.escape import markdown
from hseval.reporting.sections import GUIDES, history_guide, level_frame, levels_guide, one_tree
from hseval.reporting.significance import COLUMNS, PairedDifference, against_baseline, seed_groups
from hseval.reporting.summary import (
    history_long,
    level_table,
    methods_table,
    summary_table,
    unavailable_table,
)

# (no bare strings at the top level of a page: Streamlit's magic would print them on the page)


def render(ctx: PageContext) -> None:
    page_title(ctx, "Overview")
    for problem in ctx.evaluation.problems:
        st.error(f"Skipped a run: {problem}")
    tree = one_tree(ctx.available)
    _leaderboard(ctx)
    summary = tables.overview_columns(summary_table(ctx.available))
    compared = ctx.baseline is not None and len(ctx.available) > 1
    if compared:
        column = f"top1 vs {ctx.baseline.name}"
        paired, unpaired = against_baseline(ctx.available, ctx.baseline, compare=loading.paired)
        leaf = {row["run"]: PairedDifference(*row[COLUMNS[1:]]).text() for _, row in paired.iterrows()
                if row["metric"] == "leaf"}
        summary.insert(summary.columns.get_loc("top1") + 1, column,
                       [leaf.get(r.name) or unpaired.get(r.name, "baseline") for r in ctx.available])
    st.subheader("Runs")
    table = shown(summary, ctx.available)
    config = table_config(table, tree)
    if compared:
        config[column] = st.column_config.TextColumn(
            f"top-1 vs {ctx.baseline.name}", help="Leaf accuracy minus the baseline's on the same samples, with "
            "a 95 % paired bootstrap interval and the exact McNemar test's p-value.")
    st.dataframe(table, hide_index=True, key="overview_table", column_config=config)
    notes = ["Hover a column's name for what it measures."]
    if compared:
        notes.append(f"'{markdown(column)}': leaf accuracy minus {markdown(ctx.baseline.name)}'s on the same "
                     "samples, with a 95 % paired bootstrap interval and the exact McNemar test's p-value (the "
                     "baseline is chosen in the sidebar; the Compare page has every level).")
    if tree is not None and tree.max_depth > 1:
        notes.append(f"Levels: {markdown(level_legend(tree))}.")
    st.caption(" ".join(notes))
    st.subheader("Methods")
    st.table(methods_table(ctx.available).set_index("head"))  # a few rows of prose: shown whole, wrapped
    st.caption("What each head is and the paper it comes from: 'paper' marks the heads of Scieur & Kim (ICML 2021) "
               "and its comparison, 'peers' the hierarchy-aware methods of other papers.")
    missing = unavailable_table(ctx.available)  # each run's unavailable metrics, named as their columns, and why
    if not missing.empty:
        with st.expander(f"Not available: why {len(missing)} group(s) of cells read n/a"):
            st.dataframe(missing, hide_index=True, key="overview_unavailable")
    if not needs_runs(ctx):
        return
    st.subheader("Accuracy per level")
    st.caption("Super-class accuracy two ways: 'from leaf' maps the predicted class to its ancestor; "
               "'own scores' uses the head's own super-class scores. " + levels_guide(ctx.group_seeds))
    chart(charts.accuracy_by_level(level_frame(ctx.runs, group_seeds=ctx.group_seeds), colours=ctx.colours,
                                   tree=one_tree(ctx.runs)), key="overview_levels")
    levels = shown(level_table(ctx.runs), ctx.runs)
    st.dataframe(levels, hide_index=True, key="overview_level_table",
                 column_config=table_config(levels, one_tree(ctx.runs)))
    st.subheader("Top-1 error against mistake severity")
    groups = {r.name: g.name for g in seed_groups(ctx.runs) for r in g.runs} if ctx.group_seeds else None
    chart(charts.error_and_severity(loading.mistake_intervals(ctx.runs), colours=ctx.colours, groups=groups),
          key="overview_mistakes")
    st.caption(GUIDES["mistakes"])
    history = history_long(ctx.runs, names={r.name: g.name for g in seed_groups(ctx.runs) for r in g.runs}
                           if ctx.group_seeds else None)
    if not history.empty:
        chart(charts.history_curves(history, colours=ctx.colours), key="overview_history")
        st.caption(markdown(history_guide(history)))


def _leaderboard(ctx: PageContext) -> None:
    """Every run (or seed group) of the folder on the leaderboard's metrics, with intervals and ties."""
    groups = seed_groups(ctx.available)
    entries = [(g.name, g.runs) for g in groups] if ctx.group_seeds else [(r.name, [r]) for r in ctx.available]
    runs = [r for _, members in entries for r in members]
    st.subheader("Leaderboard")
    tree, options = runs[0].hierarchy, sample_metrics.available_metrics(runs)
    chosen = st.multiselect("Metrics", options, default=[m.name for m in sample_metrics.chosen_metrics(None, runs)],
                            format_func=lambda name: sample_metrics.sample_metric(name).label(tree),
                            key="overview_leaderboard_metrics", help="Any metric some run has: accuracies, mistake "
                            "severity, distances, hierarchical P/R/F1, cross-entropy, ECE, and every decision metric "
                            "of each rule (METRIC by RULE).")
    if not chosen:
        st.info("Choose at least one metric.")
        return
    _, table, left_out = loading.leaderboard(entries, tuple(chosen))
    st.dataframe(table, hide_index=True, key="overview_leaderboard")
    command = f"hseval report --leaderboard {shlex.quote(','.join(chosen))}"
    st.caption(f"Each {'seed group' if ctx.group_seeds else 'run'} on the {markdown(ctx.evaluation.split)} split: the "
               f"value with its 95 % interval ({ranking.RESAMPLES:,} paired bootstrap resamples of the samples); ★ the "
               "best, = not significantly different from it (Holm's p ≥ 0.05 over every test of the table); ↓ lower "
               f"is better. The report takes the same metrics: `{command}`."
               + "".join(f" Left out: {markdown(name)}, {markdown(why)}." for name, why in left_out.items()))


render(context())
