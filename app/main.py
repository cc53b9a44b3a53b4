"""Entry point of the hseval dashboard: ``streamlit run app/main.py -- DIR`` (``hseval dashboard DIR``).

Reads the evaluation folder (argv after ``--``, or ``$HSEVAL_EVAL_DIR``), draws the sidebar that
chooses the runs, and hands over to the page chosen in the navigation. The pages only present what
``hseval evaluate`` wrote; see ``app/loading.py`` for how files are read and cached.
"""

from __future__ import annotations

import os

import streamlit as st

from hseval.app import ENV_VAR, SHOWN_VAR, loading, state
from hseval.app.views import common
from hseval.core.errors import HsevalError, first_line, write_crash_log

PAGES = [
    ("views/overview.py", "Overview", ":material/table_chart:"),
    ("views/hierarchy.py", "Hierarchy", ":material/account_tree:"),
    ("views/geometry.py", "Geometry", ":material/architecture:"),
    ("views/embeddings.py", "Embeddings", ":material/scatter_plot:"),
    ("views/confusion.py", "Confusion", ":material/grid_on:"),
    ("views/compare.py", "Compare", ":material/compare_arrows:"),
    ("views/decisions.py", "Decisions", ":material/call_split:"),
]


def main() -> None:
    st.set_page_config(page_title="hseval dashboard", page_icon=":material/account_tree:", layout="wide")
    root = state.eval_dir()
    if not root:
        st.title("hseval dashboard")
        st.error("No evaluation folder given: start the dashboard with 'hseval dashboard DIR' "
                 f"(or set ${ENV_VAR}).")
        st.stop()
    try:
        evaluation = loading.evaluation(root)
    except HsevalError as exc:
        st.title("hseval dashboard")
        st.error(str(exc))
        st.stop()
    if not evaluation.runs:
        st.title("hseval dashboard")
        st.error(f"{root}: none of its runs could be read; re-run 'hseval evaluate'.")
        for problem in evaluation.problems:
            st.error(problem)
        st.stop()
    state.set_context(common.sidebar(evaluation, os.environ.get(SHOWN_VAR) or root))
    pages = [st.Page(path, title=title, icon=icon, default=i == 0) for i, (path, title, icon) in enumerate(PAGES)]
    try:
        st.navigation(pages).run()
    except HsevalError as exc:
        st.error(str(exc), icon="⚠️")
    except Exception as exc:  # a bug: one line on the page, the traceback in a log file
        log = write_crash_log(exc, ["dashboard", str(root)])
        where = f"the traceback is in {log}" if log else "the traceback could not be written to a log file"
        first = first_line(exc, limit=300)
        st.error(f"Internal error ({type(exc).__name__}: {first}); this is a bug in hseval, {where}.", icon="🐞")


main()
