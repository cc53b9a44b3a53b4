"""Charts over the tree's nodes: accuracy per node (sunburst or treemap), the largest per-node
differences, and the confusion matrix in tree order with each super-class a block."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from hseval.reporting.charts.common import TEMPLATE, _empty, _text, fit
from hseval.reporting.columns import level_names
from hseval.tree.hierarchy import Hierarchy

__all__ = ["node_sunburst", "sunburst_levels", "node_deltas", "confusion_heatmap", "shallower_samples",
           "confusion_guide", "HEATMAP_MAX", "SECTORS_MAX"]

HEATMAP_MAX = 100
"""The most rows (and columns) a confusion heatmap is drawn with (CIFAR-100's classes): past it the
cells and their names are too small to read at a screen's width, and the figure too large to send;
larger matrices are shown in parts."""
SECTORS_MAX = 600
"""The most sectors a sunburst or treemap sends at once: past a few hundred per ring they are slivers
(and 10,000 take a browser half a minute to draw). Deeper levels open on a click."""
LEVELS_MAX = 3

_BLOCK_LINES = {1: dict(color="#222", width=2.5), 2: dict(color="#555", width=1.2)}
_DEEPER_LINE = dict(color="#777", width=0.8, dash="dot")


def _line(depth: int) -> dict:
    """The line between two blocks of level ``depth``: thicker for shallower levels."""
    return _BLOCK_LINES.get(depth, _DEEPER_LINE)


def sunburst_levels(hierarchy: Hierarchy, top: int | None = None, *,
                    max_sectors: int | None = None) -> tuple[np.ndarray, int, int]:
    """What :func:`node_sunburst` sends and draws of the subtree under ``top`` (None: the whole tree):
    (nodes sent, levels drawn at first, levels below ``top``). The whole subtree is sent when it has
    at most ``max_sectors`` nodes (a click then opens any level in the browser) and up to
    :data:`LEVELS_MAX` levels are drawn; a larger subtree sends only the levels that fit in
    ``max_sectors`` (default :data:`SECTORS_MAX`; at least one level), which are then all drawn."""
    max_sectors = SECTORS_MAX if max_sectors is None else max_sectors
    base = 0 if top is None else int(hierarchy.depth[top])
    nodes = (np.flatnonzero(hierarchy.depth > 0) if top is None
             else np.flatnonzero(hierarchy.ancestor_table[:, base - 1] == top))  # top and its descendants
    below = hierarchy.depth[nodes] - base  # 0 for top itself
    deepest = int(below.max()) if len(nodes) else 0
    if len(nodes) <= max_sectors:
        return nodes, min(LEVELS_MAX, deepest), deepest
    per_level = np.cumsum(np.bincount(below, minlength=deepest + 1))
    levels = max(1, min(LEVELS_MAX, int(np.searchsorted(per_level, max_sectors, side="right")) - 1))
    return nodes[below <= levels], levels, deepest


def node_sunburst(hierarchy: Hierarchy, per_node: pd.DataFrame, *, value: str = "accuracy",
                  title: str = "Accuracy per node", diverging: bool = False, kind: str = "sunburst",
                  top: int | None = None, max_sectors: int | None = None) -> go.Figure:
    """The tree as a sunburst (or ``kind="treemap"``): sector size = support (samples), colour =
    ``value`` per node. An accuracy is coloured on the fixed scale 0–1, so one accuracy has one
    colour in every run, page and the report; a difference (``diverging``) on a scale centred on 0.

    A large tree is shown, not all of it: the subtree under ``top`` (None: the whole tree), at most
    3 levels at first (plotly's ``maxdepth``; a click on a sector opens it) and never more than
    ``max_sectors`` sectors sent (:func:`sunburst_levels`).

    ``per_node`` has the columns node (canonical index), support and ``value``; each sector's
    ``customdata`` is its node index, so a click can be mapped back to the tree."""
    if kind not in ("sunburst", "treemap"):
        raise ValueError(f"kind must be 'sunburst' or 'treemap', got {kind!r}")
    if per_node.empty or not {"node", "support", value} <= set(per_node.columns):
        return _empty(title, f"no per-node {value} to show")
    nodes, levels, _ = sunburst_levels(hierarchy, top, max_sectors=max_sectors)
    all_names = hierarchy.node_names
    names = [all_names[n] for n in nodes.tolist()]
    parents = ["" if n == top or (p := int(hierarchy.parents[n])) < 0 else all_names[p] for n in nodes.tolist()]
    frame = per_node.set_index("node").reindex(nodes)
    support = frame["support"].fillna(0).to_numpy(dtype=float)
    colour = frame[value].to_numpy(dtype=float)
    hover = [f"{_text(' / '.join(hierarchy.path_names(i)))}<br>{value}: "
             + (f"{c:.3f}" if c == c else "n/a — no samples")
             + f"<br>samples: {int(s):,}" for i, c, s in zip(nodes.tolist(), colour, support)]
    finite = np.isfinite(colour)
    if diverging:
        limit = float(np.abs(colour[finite]).max()) if finite.any() else 0.0
        limit = limit or 1.0
        marker = dict(colors=colour, colorscale="RdBu", cmid=0, cmin=-limit, cmax=limit, colorbar=dict(title=value))
    else:
        marker = dict(colors=colour, colorscale="Viridis", cmin=0.0, cmax=1.0, colorbar=dict(title=value))
    trace = go.Sunburst if kind == "sunburst" else go.Treemap
    fig = go.Figure(trace(ids=names, labels=[_text(n) for n in names], parents=parents, values=np.maximum(support, 0),
                          branchvalues="total", marker=dict(**marker, showscale=True), hovertext=hover,
                          hoverinfo="text", customdata=nodes, maxdepth=levels + (top is not None)))
    fig.update_layout(title=_text(title), template=TEMPLATE, margin=dict(l=0, r=0))
    return fit(fig, row_height=480, bottom=10)


def node_deltas(deltas: pd.DataFrame, *, title: str = "Per-node accuracy difference", top: int = 30) -> go.Figure:
    """Horizontal bars of the per-node difference (columns path, delta), the ``top`` largest in
    absolute value, red below zero and blue above (the diverging scale of the sunburst)."""
    data = deltas.dropna(subset=["delta"]) if "delta" in deltas else pd.DataFrame()
    if data.empty:
        return _empty(title, "no nodes to compare")
    data = data.reindex(data["delta"].abs().sort_values(ascending=False).index).head(top).iloc[::-1]
    limit = float(data["delta"].abs().max()) or 1.0
    fig = go.Figure(go.Bar(x=data["delta"], y=data["path"].map(_text), orientation="h",
                           marker=dict(color=data["delta"], colorscale="RdBu", cmin=-limit, cmax=limit, cmid=0),
                           hovertemplate="%{y}<br>Δ %{x:+.3f}<extra></extra>"))
    fig.update_layout(title=_text(title), template=TEMPLATE, xaxis_title="accuracy difference", yaxis_title=None)
    return fit(fig, row_height=max(240, 22 * len(data)))


def shallower_samples(targets: np.ndarray, hierarchy: Hierarchy, depth: int | None) -> dict[str, int]:
    """The classes shallower than level ``depth`` (no node there) and their evaluated samples, which a
    confusion matrix at that level leaves out; {} at the leaves."""
    if depth is None:
        return {}
    counts = np.bincount(np.asarray(targets, dtype=np.int64), minlength=hierarchy.num_leaves)
    return {hierarchy.node_names[c]: int(counts[c]) for c in range(hierarchy.num_leaves) if hierarchy.depth[c] < depth}


def _blocks(nodes: list[int], hierarchy: Hierarchy, below: int) -> list[tuple[int, int]]:
    """(position k, depth d): where the super-class at depth d < ``below`` changes between the
    labels k − 1 and k, at the shallowest such d (a label at depth <= d has no super-class
    there: two such neighbours are one block, not two)."""
    out: dict[int, int] = {}
    for d in range(1, below):
        owners = [int(hierarchy.ancestor_at_depth([n], d)[0]) if n >= 0 and hierarchy.depth[n] > d else -1
                  for n in nodes]
        for k in range(1, len(nodes)):
            if owners[k] != owners[k - 1] and max(owners[k], owners[k - 1]) >= 0:
                out.setdefault(k, d)
    return sorted(out.items())


def confusion_guide(hierarchy: Hierarchy, depth: int | None) -> str:
    """What the lines of :func:`confusion_heatmap` separate at this level (none at level 1)."""
    level = hierarchy.max_depth if depth is None else depth
    if level <= 1:
        return ("Level 1 is the top of the tree: there are no blocks; the diagonal is the level-1 accuracy. "
                "Hover a cell for its count.")
    parts = [f"{'thick' if d == 1 else 'thin' if d == 2 else 'dotted'} lines the level-{d} super-classes "
             f"({level_names(hierarchy, d)})" for d in range(1, level)]
    return ("Mistakes inside a block stay within the super-class, the mild kind; mass outside the blocks crosses "
            f"super-classes. Separated by {'; '.join(parts)}. Hover a cell for its count.")


def confusion_heatmap(matrix: np.ndarray, nodes: np.ndarray, hierarchy: Hierarchy, *,
                      title: str = "Confusion matrix (tree order)", normalize: bool = True,
                      left_out: dict[str, int] | None = None, outside: str | None = None) -> go.Figure:
    """Rows = true class, columns = prediction, in tree order (``nodes``: the node of each row and
    column, -1 for the classes shallower than this level), labelled by name; lines separate the
    super-classes of every level above (thicker for shallower levels); hover gives the count, the
    row's share and both classes' super-class. Rows without samples are left out; ``left_out``
    (:func:`shallower_samples`) names the classes with no node at this level and their samples,
    which the subtitle says are not counted. ``normalize`` colours by the row's share. ``outside``
    names the label -1 instead when it stands for the predictions outside a super-class
    (:func:`hseval.metrics.confusion_matrix` with ``within``)."""
    counts = np.asarray(matrix, dtype=float)
    if counts.size == 0:
        return _empty(title, "no samples")
    nodes = np.asarray(nodes, dtype=np.int64)
    left_out = left_out or {}
    depth = int(hierarchy.depth[nodes[nodes >= 0]].max()) if (nodes >= 0).any() else 0
    shallow = outside or f"{', '.join(left_out) or 'shallower class'} (no level-{depth} node)"
    names = [_text(hierarchy.node_names[n] if n >= 0 else shallow) for n in nodes.tolist()]
    sums = counts.sum(axis=1, keepdims=True)
    share = np.divide(counts, sums, out=np.zeros_like(counts), where=sums > 0)
    rows = np.flatnonzero(sums[:, 0] > 0)
    empty = [names[i] for i in range(len(names)) if i not in set(rows.tolist()) and nodes[i] >= 0]
    parent = [_text(hierarchy.node_names[p]) if n >= 0 and (p := int(hierarchy.parents[n])) >= 0 else "–"
              for n in nodes.tolist()]
    row_names = [names[i] for i in rows]
    hover = np.array([[f"true {row_names[r]} (in {parent[i]})<br>predicted {names[j]} (in {parent[j]})<br>"
                       f"{int(counts[i, j]):,} of {int(sums[i, 0]):,} ({share[i, j]:.1%})"
                       for j in range(len(names))] for r, i in enumerate(rows)])
    z = share[rows] if normalize else counts[rows]
    fig = go.Figure(go.Heatmap(z=z, x=names, y=row_names, colorscale="Blues", zmin=0, text=hover,
                               hovertemplate="%{text}<extra></extra>",
                               colorbar=dict(title="share of row" if normalize else "samples")))
    shapes = [dict(type="line", x0=k - 0.5, x1=k - 0.5, y0=0, y1=1, yref="paper", line=_line(d))
              for k, d in _blocks(nodes.tolist(), hierarchy, depth)]
    shapes += [dict(type="line", y0=k - 0.5, y1=k - 0.5, x0=0, x1=1, xref="paper", line=_line(d))
               for k, d in _blocks(nodes[rows].tolist(), hierarchy, depth)]
    notes = []
    if left_out:
        kept = int(counts.sum())
        samples = sum(left_out.values())
        whose = "its" if len(left_out) == 1 else "their"
        notes.append(f"{', '.join(left_out)} {'has' if len(left_out) == 1 else 'have'} no level-{depth} super-class: "
                     f"{whose} {samples:,} samples are left out ({kept:,} counted)")
    if empty:
        notes.append(f"no samples: {', '.join(empty)}")
    subtitle = "".join(f"<br><sup>{_text(note)}</sup>" for note in notes)
    side = max(360, 26 * len(names))
    fig.update_layout(title=_text(title) + subtitle, template=TEMPLATE, yaxis_autorange="reversed", shapes=shapes,
                      xaxis_title="predicted", yaxis_title="true", xaxis_tickangle=-45)
    return fit(fig, row_height=side, bottom=40 + int(7 * max(len(n) for n in names)))
