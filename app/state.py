"""Where the dashboard's shared state lives: the evaluation folder and the runs being compared.

The entry script (``app/main.py``) builds one :class:`PageContext` per script run from the sidebar
widgets and stores it here; every page reads it with :func:`context`. Widget keys used across
pages are named once, below, so a test can drive them by ``key=``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st

from hseval.app import ENV_VAR
from hseval.io.results import Evaluation, RunResult

__all__ = ["KEY_RUNS", "KEY_DATASET", "KEY_BASELINE", "KEY_GROUPS", "PageContext", "eval_dir", "set_context",
           "context"]

KEY_RUNS = "runs"
KEY_DATASET = "dataset"
KEY_BASELINE = "baseline"
KEY_GROUPS = "group_seeds"
_CONTEXT = "_hseval_context"


@dataclass
class PageContext:
    """What every page needs: the loaded folder, the runs of the chosen dataset (``available``)
    and, among them, the runs the user selected to compare (``runs``)."""

    root: Path
    evaluation: Evaluation
    dataset: str
    available: list[RunResult] = field(default_factory=list)
    runs: list[RunResult] = field(default_factory=list)
    folder: str = ""
    """The evaluation folder as the user gave it (shown on the pages; ``root`` is resolved)."""
    baseline: RunResult | None = None
    """The run others are compared with ("vs baseline" columns), chosen in the sidebar."""
    group_seeds: bool = False
    """Draw runs that differ only by seed as one group (mean ± std over seeds)."""
    colours: dict[str, str] = field(default_factory=dict)
    """One colour per run (and per seed group): a function of its name among all runs of the folder,
    readable or not (:func:`hseval.reporting.colours.run_colours`)."""


def eval_dir(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> str | None:
    """The evaluation folder: ``$HSEVAL_EVAL_DIR`` if set, else the first argument after ``--``
    (``streamlit run app/main.py -- DIR`` leaves ``sys.argv == [script, DIR]``)."""
    environ = os.environ if environ is None else environ
    argv = sys.argv if argv is None else argv
    if environ.get(ENV_VAR):
        return environ[ENV_VAR]
    return argv[1] if len(argv) > 1 else None


def set_context(ctx: PageContext) -> None:
    st.session_state[_CONTEXT] = ctx


def context() -> PageContext:
    """The context of the current script run (set by ``app/main.py`` before the page runs)."""
    return st.session_state[_CONTEXT]
