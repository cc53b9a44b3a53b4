"""Widgets and messages shared by the pages: the sidebar that chooses the runs and the one baseline,
a run picker that survives a changing selection, how every chart is drawn (:func:`chart`), tables
under their display names with each column's help (:func:`table_config`), and the guard that turns
a damaged file into a message."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import pandas as pd
import streamlit as st

from hseval.app import tables
from hseval.app.state import KEY_BASELINE, KEY_DATASET, KEY_GROUPS, KEY_RUNS, PageContext
from hseval.core.errors import HsevalError
from hseval.io.results import Evaluation, RunResult
from hseval.reporting.columns import column_help, display_name, identity
from hseval.reporting.escape import markdown
from hseval.reporting.sections import baseline as default_baseline
from hseval.reporting.sections import entry_colours
from hseval.reporting.significance import seed_groups
from hseval.reporting.summary import mark_unavailable

__all__ = ["sidebar", "shown", "pick", "pick_run", "pick_node", "paged_table", "PICKER_MAX", "ROWS", "shows_problems",
           "needs_runs", "PLOT", "chart", "table_config"]

PLOT = {"displaylogo": False}
"""plotly config of every chart (no logo; the mode bar stays for zoom and PNG export)."""
_RUNS_OF = "_hseval_runs_dataset"  # the dataset the remembered run selection belongs to


def _keep_valid(key: str, options: Sequence, *, multi: bool = False) -> None:
    """Drop a remembered widget value that is no longer among ``options`` (the run selection or
    the dataset changed), before the widget is created, so it falls back to its default."""
    if key not in st.session_state:
        return
    value = st.session_state[key]
    if multi:
        st.session_state[key] = [v for v in value if v in options]
    elif value not in options:
        del st.session_state[key]


def chart(fig, *, key: str, container=st, **options):
    """Draw a figure as the report does (no Streamlit theme over its colours and layout)."""
    return container.plotly_chart(fig, key=key, config=PLOT, theme=None, **options)


def table_config(frame, tree=None, *, pinned=("run", "head")) -> dict:
    """Column config of a table: each column under its display name with its help (level names
    from ``tree``), identity columns pinned, 4 decimals for floats (angles 1), integers for counts."""
    config = {}
    for column in frame.columns:
        label = display_name(column, tree)
        help_text = column_help(column, tree)
        if column in pinned:
            config[column] = st.column_config.TextColumn(label, pinned=True, help=help_text)
        elif column in ("seed", "samples", "seeds", "nodes", "depth", "classes clustered"):
            config[column] = st.column_config.NumberColumn(label, format="%d", help=help_text)
        elif frame[column].dtype.kind == "f":
            config[column] = st.column_config.NumberColumn(label, format="%.1f" if "angle" in column else "%.4f",
                                                           help=help_text)
        else:
            config[column] = st.column_config.Column(label, help=help_text)
    return config


def shown(frame: pd.DataFrame, runs) -> pd.DataFrame:
    """``frame`` as a page shows a table of runs: without a head column that repeats the run's name,
    and the columns with empty cells as text, "n/a — reason" in those cells."""
    frame = identity(frame)
    gaps = [c for c in frame.columns if c != "run" and frame[c].dtype.kind == "f" and frame[c].isna().any()]
    return mark_unavailable(frame, runs, columns=gaps) if gaps else frame


def _baseline(available: list[RunResult], names: list[str], unreadable: set[str]) -> RunResult | None:
    """The one baseline control: the sidebar's, remembered across pages. Its default and every
    change are said: the default's reason below it, a toast on a change, and a warning when the
    run chosen before can no longer be read."""
    if not names:
        return None
    run, why = default_baseline(available, None)
    before = st.session_state.get(KEY_BASELINE)
    gone = before is not None and before not in names
    if before not in names:  # the first visit, or the run chosen before is gone: set (and show) the default
        if gone:
            why_gone = "could not be read" if before in unreadable else "is not a run of this dataset"
            st.warning(f"The baseline {markdown(before)} {why_gone}: comparing with {markdown(run.name)} instead.")
        st.session_state[KEY_BASELINE] = run.name  # set, not dropped: the widget then shows it too

    def changed() -> None:
        st.toast(f"Baseline: {markdown(st.session_state[KEY_BASELINE])}. Every comparison now uses it.")

    chosen = st.selectbox("Baseline", names, key=KEY_BASELINE, on_change=changed,
                          help="The run every other is compared with, on every page.")
    if chosen == run.name and not gone:
        (st.warning if run.head != "plain" else st.caption)(f"Baseline: {markdown(why)}.")
    return next(r for r in available if r.name == chosen)


def page_title(ctx: PageContext, name: str) -> None:
    """A page's title, with the data its numbers are of under it: the dataset and the split."""
    st.title(name)
    st.caption(f"**{markdown(ctx.dataset)}**, **{markdown(ctx.evaluation.split)} split** · {len(ctx.runs)} of "
               f"{len(ctx.available)} run(s) chosen in the sidebar · {markdown(ctx.folder)}")


def sidebar(evaluation: Evaluation, folder: str | None = None) -> PageContext:
    """The folder's dataset (when runs of several are mixed) and the runs to compare, shown on every page."""
    with st.sidebar:
        datasets = evaluation.datasets
        if len(datasets) > 1:
            st.warning(f"This folder mixes runs of {len(datasets)} datasets ({', '.join(datasets)}); "
                       "pages show one dataset at a time.")
            _keep_valid(KEY_DATASET, datasets)
            dataset = st.selectbox("Dataset", datasets, key=KEY_DATASET)
        else:
            dataset = datasets[0] if datasets else "?"
        available = [r for r in evaluation.runs if str(r.metrics.get("dataset")) == dataset]
        names = [r.name for r in available]
        if KEY_RUNS in st.session_state and st.session_state.get(_RUNS_OF) == dataset:
            _keep_valid(KEY_RUNS, names, multi=True)
        else:  # first visit, or another dataset: start from all its runs
            st.session_state[KEY_RUNS] = names
            st.session_state[_RUNS_OF] = dataset
        chosen = st.multiselect("Runs to compare", names, key=KEY_RUNS,
                                help="The runs the Hierarchy, Geometry, Embeddings, Confusion and Compare pages "
                                     "offer, and the Overview's charts show.")
        baseline = _baseline(available, names, set(evaluation.names) - {r.name for r in evaluation.runs})
        groups = seed_groups(available)
        repeated = sum(len(g.runs) > 1 for g in groups)
        grouped = st.toggle("Group seeds", value=repeated > 0, key=KEY_GROUPS, disabled=not repeated,
                            help="Runs that differ only by their seed drawn as one entry: mean ± std over seeds "
                                 f"({repeated} group(s) of several seeds here)." if repeated else
                                 "No runs here differ only by their seed.")
        if evaluation.problems:
            st.warning(f"{len(evaluation.problems)} run(s) could not be read; see the Overview page.")
        st.caption(f"Folder: {markdown(folder or evaluation.root)}")
    runs = [r for r in available if r.name in chosen]
    return PageContext(root=evaluation.root, evaluation=evaluation, dataset=dataset, available=available, runs=runs,
                       folder=folder or str(evaluation.root), baseline=baseline, group_seeds=bool(grouped and repeated),
                       colours=entry_colours(evaluation.runs, groups, evaluation.names))


def pick(label: str, options: Sequence[str], *, key: str, index: int = 0, container=st, **widget) -> str:
    """A selectbox whose remembered value is dropped when it left ``options``."""
    _keep_valid(key, options)
    return container.selectbox(label, options, index=min(index, len(options) - 1), key=key, **widget)


PICKER_MAX = 1000
"""The most nodes a node picker lists; a larger tree is searched on the server (:func:`pick_node`)."""
ROWS = 50
"""Rows per page of :func:`paged_table`."""


def pick_node(label: str, paths: dict[str, int], *, key: str, index: int = 0, container=st, **widget) -> int:
    """One node of ``paths`` (:func:`hseval.app.tables.node_paths`, perhaps filtered), chosen by its
    path. Up to :data:`PICKER_MAX` nodes are one searchable list; a larger tree gets a search box
    first and the list holds the first matches (in tree order), never the whole tree. A node set in
    ``st.session_state[key]`` (a click on a chart) stays chosen while no search is typed; a search
    chooses its first match unless the node chosen matches it too."""
    names = list(paths)
    if len(names) > PICKER_MAX:
        box = container.container()
        nodes = sum(n >= 0 for n in paths.values())  # a "(none)" entry is not a node
        query = box.text_input(f"Find a node among {nodes:,}", key=f"{key}_find", placeholder="words of its path",
                               help="Every word must appear in the node's path (any case); the list below "
                                    f"offers the first {PICKER_MAX:,} matches in tree order.")
        found = tables.find_nodes(paths, query, limit=PICKER_MAX)
        chosen = st.session_state.get(key)
        names = [chosen, *(n for n in found if n != chosen)] if chosen in paths and not query else found
        if not names:
            box.warning(f"No node's path contains {markdown(query)}.")
            names = list(paths)[:1]
        container = box
    return paths[pick(label, names, key=key, index=index, container=container, **widget)]


def paged_table(frame: pd.DataFrame, *, key: str, rows: int = ROWS, what: str = "rows", container=st,
                **options) -> None:
    """``st.dataframe`` of one page of ``frame`` (:data:`ROWS` rows; a page number above it when
    there are more): a table is never sent whole to the browser. ``frame`` comes sorted the way
    that matters (the caption says so); sorting a column sorts the page shown."""
    page = 1
    if len(frame) > rows:
        pages = -(-len(frame) // rows)
        left, right = container.columns([1, 3])
        page = int(left.number_input("Page", min_value=1, max_value=pages, value=1, step=1, key=f"{key}_page"))
        right.caption(f"{what} {(page - 1) * rows + 1:,}–{min(page * rows, len(frame)):,} of {len(frame):,} "
                      f"(page {page} of {pages:,})")
    container.dataframe(frame.iloc[(page - 1) * rows: page * rows], hide_index=True, key=key, **options)


def pick_run(label: str, runs: Sequence[RunResult], *, key: str, index: int = 0, container=st) -> RunResult:
    """One of ``runs`` by name."""
    by_name = {r.name: r for r in runs}
    return by_name[pick(label, list(by_name), key=key, index=index, container=container)]


def needs_runs(ctx: PageContext, minimum: int = 1) -> bool:
    """True when at least ``minimum`` runs are selected; otherwise says how to select them."""
    if len(ctx.runs) >= minimum:
        return True
    st.info(f"Select at least {minimum} run(s) under 'Runs to compare' in the sidebar.")
    return False


@contextmanager
def shows_problems() -> Iterator[None]:
    """Run a block that reads a run's files; a missing or damaged file becomes an error message
    naming it (the rest of the page keeps rendering)."""
    try:
        yield
    except HsevalError as exc:
        st.error(str(exc), icon="⚠️")


def agreement_table(runs: Sequence[RunResult], *, key: str) -> None:
    """The table of the trees recovered from the class vectors of ``runs`` (:func:`tables.tree_agreement`),
    after a line for each run whose tree could not be recovered, with the reason its evaluation recorded."""
    for run in runs:
        skipped = ((run.metrics.get("geometry") or {}).get("tree_agreement") or {}).get("skipped")
        if skipped:
            st.info(f"{markdown(run.name)}: no tree recovered from its class vectors — {markdown(skipped)}.")
    agreement = tables.tree_agreement({r.name: r.metrics for r in runs})
    if not agreement.empty:
        st.dataframe(agreement, hide_index=True, key=key, column_config=table_config(agreement))
