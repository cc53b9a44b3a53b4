"""Colours of the projection scatter (:func:`hseval.reporting.charts.projection_scatter`) that mean the same
in every run: correct/wrong always the same two colours, a class or super-class the colour of its
place in the tree, samples of a shallower class grey; and the per-point fading of a highlight."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from hseval.tree.hierarchy import Hierarchy

__all__ = ["OUTCOME_COLOURS", "SHALLOWER_COLOUR", "shallower_label", "category_colours", "by_name", "categories",
           "under_node", "fade_unmarked", "legend_title"]

OUTCOME_COLOURS = {"correct": "#1f77b4", "wrong": "#d62728"}
"""Correct/wrong in every run and chart: blue and red (told apart with red-green colour blindness)."""
SHALLOWER_COLOUR = "#c7c7c7"
_FADED = "#e0e0e0"


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
        trace.marker.color = np.where(hit, trace.marker.color, _FADED).tolist()
        trace.marker.size = np.where(hit, 8, 3).tolist()
        trace.marker.opacity = np.where(hit, 0.95, 0.35).tolist()


def legend_title(column: str) -> str:
    if column == "correct":
        return "prediction"
    return "class" if column == "label" else f"super-class, level {column.removeprefix('level')}"
