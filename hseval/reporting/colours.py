"""Colours that mean the same everywhere: a run's colour, a function of its name among the runs of
its folder (:func:`run_colours`: the same on every page, in every chart and in the report, whichever
runs could be read); and in the projection scatter (:func:`hseval.reporting.charts.projection_scatter`)
correct/wrong always the same two colours, a class or super-class the colour of its place in the
tree, samples of a shallower class grey; and the per-point fading of a highlight."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from hseval.tree.hierarchy import Hierarchy

__all__ = ["PALETTE", "run_colours", "OUTCOME_COLOURS", "SHALLOWER_COLOUR", "shallower_label", "category_colours",
           "by_name", "categories",
           "under_node", "fade_unmarked", "legend_title"]

PALETTE = px.colors.qualitative.D3 + px.colors.qualitative.Dark2 + px.colors.qualitative.Set1
"""Colours of runs: ten well-told-apart ones (D3) first, then Dark2 and Set1 (:func:`run_colours`)."""
_BLOCKS = (10, 8, 9)  # PALETTE's three palettes, filled in this order


def _slot(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:4], "big")


def run_colours(names: Iterable[str], *, known: Iterable[str] = ()) -> dict[str, str]:
    """One colour per run of ``names``, a function of its name among ``known`` (every run of the
    folder, readable or not): each name, in sorted order, takes the colour its SHA-256 points to
    in the first palette (D3), or the next one free there, then in the next palette once the first
    is full. A run keeps its colour whichever runs are selected or could be read, so the colours
    agree on every page, chart and in the report (two runs share a colour only past 27 runs)."""
    names = list(names)
    taken: dict[str, str] = {}
    used: set[int] = set()
    for name in sorted(set(names) | set(known)):
        slot, start = _slot(name), 0
        for size in _BLOCKS:
            free = [start + (slot + k) % size for k in range(size) if start + (slot + k) % size not in used]
            if free:
                used.add(free[0])
                taken[name] = PALETTE[free[0]]
                break
            start += size
        else:
            taken[name] = PALETTE[slot % len(PALETTE)]
    return {name: taken[name] for name in names}


OUTCOME_COLOURS = {"correct": "#1f77b4", "wrong": "#d62728"}
"""Correct/wrong in every run and chart: blue and red (told apart with red-green colour blindness)."""
SHALLOWER_COLOUR = "#c7c7c7"
FADED = "#e0e0e0"


def shallower_label(column: str) -> str:
    """The category of samples whose class has no ancestor at the level of ``column`` (``level2``)."""
    return f"(no level-{column.removeprefix('level')} ancestor: shallower class)"


def _palette(count: int) -> list[str]:
    return px.colors.qualitative.Plotly if count <= 10 else px.colors.qualitative.Alphabet


def category_colours(tree: Hierarchy, column: str) -> dict[str, str]:
    """Category -> colour for colouring by ``column``, fixed by the tree alone (so a class has one
    colour in every run of that tree): classes (``label``) or the nodes of depth k (``levelk``)
    take the palette in tree order (depth-first); the shallower category is grey; ``correct``
    gives :data:`OUTCOME_COLOURS`."""
    if column == "correct":
        return dict(OUTCOME_COLOURS)
    order = tree.preorder().tolist()
    if column.startswith("level"):
        nodes = [n for n in order if tree.depth[n] == int(column.removeprefix("level"))]
    else:
        nodes = [n for n in order if n < tree.num_leaves]
    palette = _palette(len(nodes))
    colours = {tree.node_names[n]: palette[k % len(palette)] for k, n in enumerate(nodes)}
    if column.startswith("level"):
        colours[shallower_label(column)] = SHALLOWER_COLOUR
    return colours


def by_name(categories: pd.Series, column: str) -> dict[str, str]:
    """Without a tree: the categories in name order (still the same colour for the same set)."""
    if column == "correct":
        return dict(OUTCOME_COLOURS)
    shallow = shallower_label(column)
    names = sorted(set(categories) - {shallow})
    palette = _palette(len(names))
    return {**{name: palette[k % len(palette)] for k, name in enumerate(names)}, shallow: SHALLOWER_COLOUR}


def categories(points: pd.DataFrame, column: str) -> pd.Series:
    """The category each row is coloured by: "correct"/"wrong" for ``correct``, else the name in
    ``column``, with :func:`shallower_label` where a level column is empty (a shallower class)."""
    values = points[column]
    if column == "correct":
        return values.map({True: "correct", False: "wrong", "True": "correct", "False": "wrong"})
    empty = values.isna() | (values.astype(str) == "")
    return values.astype(str).where(~empty, shallower_label(column) if column.startswith("level") else "")


def under_node(points: pd.DataFrame, name: str) -> np.ndarray:
    """Which rows lie under the node called ``name`` (their class is it or descends from it)."""
    columns = ["label"] + [c for c in points.columns if c.startswith("level")]
    return (points[columns] == name).any(axis=1).to_numpy()


def fade_unmarked(fig: go.Figure, marked: np.ndarray) -> None:
    """Per point of every sample trace: its colour, larger and opaque when marked; grey and faint
    otherwise (no point is dropped, so the picture keeps its shape)."""
    for trace in fig.data:
        if trace.customdata is None:
            continue
        hit = marked[np.asarray(trace.customdata)[:, 0].astype(int)]
        trace.marker.color = np.where(hit, trace.marker.color, FADED).tolist()
        trace.marker.size = np.where(hit, 8, 3).tolist()
        trace.marker.opacity = np.where(hit, 0.95, 0.35).tolist()


def legend_title(column: str) -> str:
    if column == "correct":
        return "prediction"
    return "class" if column == "label" else f"super-class, level {column.removeprefix('level')}"
