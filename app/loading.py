"""The one module that reads files and caches them: thin cached wrappers around :mod:`hseval.io.results`.

A folder is re-read when any of its files changes (a fingerprint of sizes and modification times
is part of the cache key), so re-running ``hseval evaluate`` while the dashboard is open shows the
new numbers on the next interaction. Every file is checked by :mod:`hseval.io.evaluation_format` when the
folder is read; a run with a damaged file is listed in ``Evaluation.problems`` (shown on the
Overview) and left out of the pages, which only ever see checked data. Nothing here unpickles or
computes more than counts over predictions.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from hseval.app.selection import data_location
from hseval.core.dataset_names import LOADABLE
from hseval.core.errors import HsevalError, first_line
from hseval.io import evaluation_format as eval_format
from hseval.io import folders
from hseval.io.results import Evaluation, RunResult, load_evaluation
from hseval.metrics.confusion import confusion_matrix, most_confused
from hseval.reporting import ranking, sample_metrics
from hseval.reporting.decisions import matched_operating_points
from hseval.tree.hierarchy import Hierarchy

__all__ = ["fingerprint", "evaluation", "confusion", "confused_pairs", "paired", "operating_points", "leaderboard",
           "node_vectors", "dataset"]


def fingerprint(root: str | Path) -> tuple:
    """(name, size, mtime) of every file one level below the run folders of ``root``: cheap
    (a stat per file) and changes whenever an evaluation is rewritten or a file is edited."""
    root = Path(root)
    stamps = []
    try:
        for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
            for path in sorted(folder.iterdir()):
                stat = path.stat()
                stamps.append((folder.name, path.name, stat.st_size, stat.st_mtime_ns))
    except OSError:
        return ()
    return tuple(stamps)


@st.cache_resource(show_spinner=False, max_entries=4)
def _evaluation(root: str, stamp: tuple) -> Evaluation:
    # A resource, not data: the frames of each run are read lazily and kept on the (shared,
    # read-only) objects; copying them on every rerun, as cache_data would, buys nothing.
    return load_evaluation(root)


def evaluation(root: str | Path) -> Evaluation:
    """Every evaluated run under ``root``; damaged runs are listed in ``problems``.

    Raises :class:`RunFormatError` when ``root`` is not an evaluation folder or holds none."""
    resolved = str(Path(root).expanduser().resolve())
    return _evaluation(resolved, fingerprint(resolved))


def _stamp(path: Path, *more) -> tuple:
    """A cache key of the file ``path``: it changes whenever the file is rewritten."""
    try:
        stat = path.stat()
        return str(path), stat.st_size, stat.st_mtime_ns, *more
    except OSError:
        return str(path), None


def _run_key(run: RunResult) -> tuple:
    return _stamp(run.path / eval_format.PREDICTIONS, run.hierarchy.num_nodes)


@st.cache_data(show_spinner=False, max_entries=256, hash_funcs={RunResult: _run_key})
def paired(a: RunResult, b: RunResult) -> pd.DataFrame:
    """:func:`hseval.reporting.ranking.compare_all` of ``a`` against ``b`` (every level: difference,
    bootstrap interval, McNemar p; the other metrics by the bootstrap), computed
    once per pair of files."""
    return ranking.compare_all(a, b)


@st.cache_data(show_spinner="Resampling the operating curves…", max_entries=16,
               hash_funcs={RunResult: _run_key})
def operating_points(runs: list[RunResult], base: RunResult) -> pd.DataFrame:
    """:func:`hseval.reporting.decisions.matched_operating_points` of ``runs`` against ``base``,
    computed once per set of files."""
    return matched_operating_points(runs, base)


@st.cache_data(show_spinner="Resampling the mistakes…", max_entries=16, hash_funcs={RunResult: _run_key})
def mistake_intervals(runs: list[RunResult]) -> pd.DataFrame:
    """Each run's top-1 error and mistake severity with their bootstrap intervals (kept: resampled once)."""
    return ranking.mistake_intervals(runs)


@st.cache_data(show_spinner="Resampling every metric…", max_entries=16, hash_funcs={RunResult: _run_key})
def leaderboard(entries: list[tuple[str, list[RunResult]]], metrics: tuple[str, ...] | None = None
                ) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, str]]:
    """:func:`hseval.reporting.ranking.leaderboard` of ``entries`` on ``metrics`` (None: the
    default ones): (its numbers, the table as shown, the entries left out), resampled once."""
    chosen = sample_metrics.chosen_metrics(metrics, [r for _, runs in entries for r in runs])
    frame, left_out = ranking.leaderboard(entries, chosen)
    entry = "seed group" if any(len(runs) > 1 for _, runs in entries) else "run"
    return frame, ranking.leaderboard_table(frame, chosen, entries[0][1][0].hierarchy, entry=entry), left_out


@st.cache_data(show_spinner=False, max_entries=64, hash_funcs={RunResult: _run_key})
def confusion(run: RunResult, depth: int | None = None, within: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The run's confusion matrix in tree order (:func:`hseval.metrics.confusion.confusion_matrix`)
    at the leaves (``depth=None``) or at one super-class level, or of the classes under super-class
    ``within``, counted from predictions.npz. Dense: callers ask only for matrices of at most
    :data:`hseval.reporting.charts.HEATMAP_MAX` labels."""
    return confusion_matrix(run.topk[:, 0], run.targets, run.hierarchy, depth, within=within)


@st.cache_data(show_spinner=False, max_entries=64, hash_funcs={RunResult: _run_key})
def confused_pairs(run: RunResult, depth: int | None = None, under: int | None = None) -> pd.DataFrame:
    """The run's most-confused pairs (:func:`hseval.metrics.confusion.most_confused`), at any size."""
    return most_confused(run.topk[:, 0], run.targets, run.hierarchy, depth=depth, under=under)


@st.cache_data(show_spinner=False, max_entries=16,
               hash_funcs={RunResult: lambda run: _stamp(run.path / eval_format.EMBEDDINGS)})
def node_vectors(run: RunResult) -> np.ndarray:
    """The run's node vectors (num_nodes, d) from embeddings.npz; (0, 0) when its head has none."""
    return run.embeddings()["node_vectors"]


@st.cache_resource(show_spinner="Loading the dataset's images…", max_entries=2)
def _dataset(name: str, root: str | None, hierarchy: str):
    # A resource: a split's images are shared read-only, never copied per rerun. A reason (str)
    # is returned rather than raised, so that a missing dataset is not looked for on every rerun.
    if name not in LOADABLE:  # known without torch: a prediction file's pages never import it
        return f"'{name}' is not a dataset hseval can load"
    from hseval.data import load_with_tree  # torch: only for pages with images
    from hseval.data.base import check_classes  # torch: only for pages with images

    tree = Hierarchy.from_dict(json.loads(hierarchy))
    try:
        data = load_with_tree(name, root, tree)
    except (HsevalError, OSError) as exc:
        return f"{name} is not at hand ({first_line(exc)})"
    try:
        check_classes(data, tree)
    except HsevalError as exc:
        return first_line(exc)
    return data


def dataset(run: RunResult) -> tuple[object, str, str | None]:
    """(dataset, split, None): the run's :class:`hseval.data.LoadedDataset`, loaded once from where
    it was evaluated (never downloaded), and the evaluated split; (None, split, why) when it is not
    at hand."""
    marker = folders.read_marker(run.path)
    name, root, split = data_location(run.metrics, None if marker is None else marker.model_dump(mode="json"))
    data = _dataset(name, root, json.dumps(run.hierarchy.to_dict()))
    return (None, split, data) if isinstance(data, str) else (data, split, None)
