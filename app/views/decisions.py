"""Decisions page: what each run answers when it may answer with any node — the operating curves
of the selected runs with the points of the single-answer rules, their summaries, each run against
the baseline at matched operating points, one run's rule × metric table (decisions.csv, the best
rule of each metric marked), and a threshold slider: where the answers stop at t, and the answers
at t of sample images (when the dataset is on this machine). Everything is read from the
evaluation's files (:mod:`hseval.reporting.decisions`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from hseval.app import loading
from hseval.app.state import PageContext, context
from hseval.app.views.common import chart, needs_runs, page_title, pick, pick_run, shown, table_config
from hseval.io.results import RunResult
from hseval.reporting import charts
from hseval.reporting import decisions as views
from hseval.reporting.escape import markdown
from hseval.reporting.sections import GUIDES
from hseval.reporting.significance import format_p

IMAGES = 16
_SHOW = {"answered above the class (unsure)": "above", "wrong answers": "wrong", "every sample": "all"}


def _curves(runs: list[RunResult], ctx: PageContext) -> None:
    left, right = st.columns(2)
    rule = left.radio("Curve", ["threshold", "info-threshold"], horizontal=True, key="decisions_curve",
                      help="threshold:t answers the deepest node of probability at least t; info-threshold:t the most "
                           "informative one (fewest classes below it).")
    own = any((r.curves["probabilities"] == "own scores").any() for r in runs)
    source = right.radio("Node probabilities", ["classes", "own scores"] if own else ["classes"], horizontal=True,
                         key="decisions_source", help="classes: a node's probability is the sum over its classes; "
                         "own scores: a level's softmax of the head's own super-class scores (the heads that have "
                         "them).")
    chart(charts.operating_curves(views.curve_frame(runs, source=source), views.point_frame(runs, source=source),
                                  rule=rule, colours=ctx.colours, title=f"{rule}:t for every t: correct against "
                                  "specific" + ("" if source == "classes" else " (own scores)")),
          key="decisions_curves")
    st.caption(GUIDES["curves"])
    summaries = shown(views.curve_summaries(runs), runs)
    st.dataframe(summaries, hide_index=True, key="decisions_summaries", column_config=table_config(summaries))


def _matched(runs: list[RunResult], ctx: PageContext) -> None:
    baseline = ctx.baseline
    if baseline is None or len({r.name for r in runs} | {baseline.name}) < 2:
        return
    st.subheader(f"At matched operating points, each run against {baseline.name}")
    st.caption("With 90 % and 95 % of the answers correct, the deepest (or most informative) a run's threshold curve "
               "reaches, minus the baseline's; 95 % interval and p from the standard error of a paired bootstrap over "
               f"the samples ({views.OPERATING_RESAMPLES} resamples, each curve rebuilt exactly); Holm p over the "
               "table.")
    table = loading.operating_points([baseline, *(r for r in runs if r.name != baseline.name)], baseline)
    if table.empty:
        st.info("No pair to compare: the runs give no probabilities, or were evaluated on other samples.")
        return
    shown = table.assign(correct=[f"{c:.0%}" for c in table["correct"]], p_value=table["p_value"].map(format_p),
                         p_holm=table["p_holm"].map(format_p))
    st.dataframe(shown, hide_index=True, key="decisions_matched", column_config={
        "run": st.column_config.TextColumn(pinned=True), "correct": "at correct",
        "run recall": st.column_config.NumberColumn(format="%.4f"),
        "baseline recall": st.column_config.NumberColumn(format="%.4f"),
        "difference": st.column_config.NumberColumn(format="%+.4f"), "low": st.column_config.NumberColumn(
            "95 % low", format="%+.4f"), "high": st.column_config.NumberColumn("95 % high", format="%+.4f"),
        "p_value": "p", "p_holm": "Holm p"})


def _first_decided(runs: list[RunResult], ctx: PageContext) -> int:
    """Where a run picker starts: the baseline when it gave probabilities, else the first run that did."""
    decided = [k for k, r in enumerate(runs) if len(r.depth_front[0])]
    baseline = next((k for k in decided if ctx.baseline is not None and runs[k].name == ctx.baseline.name), None)
    return baseline if baseline is not None else (decided[0] if decided else 0)


def _threshold(runs: list[RunResult], ctx: PageContext) -> None:
    st.subheader("At one threshold")
    t = st.slider("Threshold t", 0.0, 1.0, 0.5, 0.01, key="decisions_t",
                  help="Each sample's answer is the deepest node whose probability is at least t.")
    chart(charts.stop_depths(views.stop_depth_frame(runs, t), colours=ctx.colours,
                             title=f"Depth of the threshold:{t:g} answer"), key="decisions_stops")
    run = pick_run("Run whose answers to show", runs, key="decisions_run", index=_first_decided(runs, ctx))
    answers = views.answers_at(run, t)
    if not len(answers):
        st.info(f"{run.name} gives no probabilities: {run.unavailable.get('operating_curve', 'no curve')}.")
        return
    tree, names = run.hierarchy, np.asarray([*run.hierarchy.node_names, run.hierarchy.root_name], dtype=object)
    correct = (answers < 0) | (tree.ancestor_table[run.targets, np.maximum(np.r_[tree.depth, 0][answers] - 1, 0)]
                               == answers)
    show = _SHOW[pick("Show", list(_SHOW), key="decisions_show")]
    rows = np.flatnonzero({"above": correct & (answers != run.targets), "wrong": ~correct,
                           "all": np.ones(len(answers), bool)}[show])
    st.caption(f"{len(rows):,} of {len(answers):,} samples; the first {min(IMAGES, len(rows))} below.")
    listed = pd.DataFrame({"index": run.indices[rows[:IMAGES]], "class": names[run.targets[rows[:IMAGES]]],
                           f"answer at t = {t:g}": names[answers[rows[:IMAGES]]],
                           "correct": correct[rows[:IMAGES]]})
    data, split, reason = loading.dataset(run)
    if data is None:
        st.caption(f"No images: {reason}.")
    else:
        from hseval.data.display import sample_image  # torch: only once images are shown

        columns = st.columns(8)
        for k, (index, true, said) in enumerate(zip(listed["index"], listed["class"], listed.iloc[:, 2])):
            columns[k % 8].image(sample_image(data, split, int(index)), caption=f"{true} → {said}",
                                 width="stretch")
    st.dataframe(listed, hide_index=True, key="decisions_samples")


def _table(runs: list[RunResult], ctx: PageContext) -> None:
    st.subheader("Every rule × every metric")
    run = pick_run("Run", runs, key="decisions_table_run", index=_first_decided(runs, ctx))
    st.caption(f"{markdown(run.name)}'s decisions.csv: ★ the best rule of each metric, ↓ where lower is better. The "
               "optimal:<metric> row is the best answer under the model's own probabilities: where another row beats "
               "it on these samples, they are miscalibrated for that metric.")
    table = views.rule_table(run.decisions)
    st.dataframe(table, hide_index=True, key="decisions_table", row_height=30,
                 column_config={"rule": st.column_config.TextColumn(pinned=True)})


def render(ctx: PageContext) -> None:
    page_title(ctx, "Decisions")
    st.caption("What each model answers when it may answer with any node ('dog' instead of 'husky'): every threshold "
               "on the node probabilities is one trade-off between correct and specific.")
    if not needs_runs(ctx):
        return
    _curves(ctx.runs, ctx)
    _matched(ctx.runs, ctx)
    _threshold(ctx.runs, ctx)
    _table(ctx.runs, ctx)


render(context())
