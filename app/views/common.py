"""Widgets and messages shared by the pages: the sidebar that chooses the runs, a run picker that
survives a changing selection, and the guard that turns a damaged file into a message."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import streamlit as st

from hseval.app.state import KEY_BASELINE, KEY_DATASET, KEY_GROUPS, KEY_RUNS, Context
from hseval.core.errors import HsevalError
from hseval.io.results import Evaluation, RunResult
from hseval.reporting import charts
from hseval.reporting.escape import markdown
from hseval.reporting.significance import seed_groups

__all__ = ["sidebar", "pick", "pick_run", "shows_problems", "needs_runs", "number", "PLOT"]

PLOT = {"displaylogo": False}
_RUNS_OF = "_hseval_runs_dataset"  # the dataset the remembered run selection belongs to
"""plotly config of every chart (no logo; the mode bar stays for zoom and PNG export)."""


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


def default_baseline(runs: Sequence[RunResult]) -> int:
    """The run others are compared with by default: the first plain head, else the first run."""
    return next((i for i, r in enumerate(runs) if r.head == "plain"), 0)


def sidebar(evaluation: Evaluation, folder: str | None = None) -> Context:
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
        baseline = pick("Baseline", names, key=KEY_BASELINE, index=default_baseline(available)) if names else None
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
    colours = charts.run_colours(names)
    colours.update({g.name: colours[g.runs[0].name] for g in groups if g.name not in colours})  # its first run's
    return Context(root=evaluation.root, evaluation=evaluation, dataset=dataset, available=available, runs=runs,
                   folder=folder or str(evaluation.root), baseline=evaluation.run(baseline) if baseline else None,
                   group_seeds=bool(grouped and repeated), colours=colours)


def pick(label: str, options: Sequence[str], *, key: str, index: int = 0, container=st) -> str:
    """A selectbox whose remembered value is dropped when it left ``options``."""
    _keep_valid(key, options)
    return container.selectbox(label, options, index=min(index, len(options) - 1), key=key)


def pick_run(label: str, runs: Sequence[RunResult], *, key: str, index: int = 0, container=st) -> RunResult:
    """One of ``runs`` by name."""
    by_name = {r.name: r for r in runs}
    return by_name[pick(label, list(by_name), key=key, index=index, container=container)]


def needs_runs(ctx: Context, minimum: int = 1) -> bool:
    """True when at least ``minimum`` runs are selected; otherwise says how to select them."""
    if len(ctx.runs) >= minimum:
        return True
    st.info(f"Select at least {minimum} run(s) under 'Runs to compare' in the sidebar.")
    return False


def number(value: float, *, signed: bool = False, digits: int = 4) -> str:
    """A metric value as text; "–" for a missing one (NaN: e.g. no super-class scores)."""
    if value != value:
        return "–"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


@contextmanager
def shows_problems() -> Iterator[None]:
    """Run a block that reads a run's files; a missing or damaged file becomes an error message
    naming it (the rest of the page keeps rendering)."""
    try:
        yield
    except HsevalError as exc:
        st.error(str(exc), icon="⚠️")
