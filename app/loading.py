"""The one module that reads files and caches them: thin cached wrappers around :mod:`hseval.results`.

A folder is re-read when any of its files changes (a fingerprint of sizes and modification times
is part of the cache key), so re-running ``hseval evaluate`` while the dashboard is open shows the
new numbers on the next interaction. Errors (:class:`~hseval.errors.RunFormatError`, one line
naming the file) are raised, never cached, so the page that needs the file shows them and the
others keep working. Nothing here unpickles or computes more than counts over predictions.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from hseval.errors import HsevalError, RunFormatError
from hseval.results import Evaluation, RunResult, load_evaluation

__all__ = ["fingerprint", "evaluation", "table", "confusion"]

COLUMNS = {
    "per_node.csv": ("node", "name", "depth", "support", "correct", "accuracy"),
    "geometry.csv": ("node", "name", "depth", "parent", "angle_to_parent", "delta_norm", "radius"),
    "pair_angles.csv": ("depth", "kind", "node_a", "node_b", "angle"),
    "projections.csv": ("method", "kind", "x", "y", "label"),
}
"""Columns each table must have for the pages to draw it; a file without them was not written by
this version of ``hseval evaluate`` (or was cut short)."""

_ATTRIBUTE = {"per_node.csv": "per_node", "geometry.csv": "geometry", "pair_angles.csv": "pair_angles",
              "projections.csv": "projections"}
_MAY_BE_EMPTY = {"geometry.csv", "pair_angles.csv", "projections.csv"}  # heads without vectors, --projections none


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


def table(run: RunResult, name: str) -> pd.DataFrame:
    """One of the run's CSV tables (``per_node.csv``, ``geometry.csv``, ``pair_angles.csv``,
    ``projections.csv``), checked for the columns the pages need."""
    frame = getattr(run, _ATTRIBUTE[name])
    path = run.path / name
    if frame.empty:
        if name in _MAY_BE_EMPTY:
            return frame
        raise RunFormatError(f"{path}: empty; re-run 'hseval evaluate'")
    missing = [c for c in COLUMNS[name] if c not in frame.columns]
    if missing:
        raise RunFormatError(f"{path}: lacks the column(s) {', '.join(missing)}; re-run 'hseval evaluate'")
    return frame


def _run_key(run: RunResult) -> tuple:
    path = run.path / "predictions.npz"
    try:
        stat = path.stat()
        return str(path), stat.st_size, stat.st_mtime_ns, run.hierarchy.num_nodes
    except OSError:
        return str(path), None


@st.cache_data(show_spinner=False, max_entries=64, hash_funcs={RunResult: _run_key})
def confusion(run: RunResult, depth: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The run's confusion matrix in tree order (:func:`hseval.metrics.confusion.confusion_matrix`)
    at the leaves (``depth=None``) or at one super-class level, counted from predictions.npz."""
    from hseval.metrics.confusion import confusion_matrix

    path = run.path / "predictions.npz"
    try:
        targets, topk = run.predictions()
    except (zipfile.BadZipFile, EOFError) as exc:  # a truncated archive; results.py lets these through
        raise RunFormatError(f"{path}: not a readable predictions file ({exc.__class__.__name__})") from None
    if topk.ndim != 2 or topk.shape[1] == 0 or len(topk) != len(targets):
        raise RunFormatError(f"{path}: 'topk' has shape {topk.shape}, expected (N, k) with N = {len(targets)}")
    try:
        return confusion_matrix(topk[:, 0], targets, run.hierarchy, depth)
    except (ValueError, HsevalError) as exc:
        raise RunFormatError(f"{path}: {exc}") from None
