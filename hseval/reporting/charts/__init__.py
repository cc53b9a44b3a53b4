"""Figures as pure functions: tables in, ``plotly.graph_objects.Figure`` out.

The offline HTML report and the Streamlit dashboard draw the same figures from these functions;
none of them reads a file or computes a metric. ``from hseval.reporting import charts`` gives them
all: accuracy (:mod:`.accuracy`), geometry (:mod:`.geometry`), embeddings (:mod:`.embeddings`), on
the template and run colours of :mod:`.common`.
"""

from hseval.reporting.charts.accuracy import (
    accuracy_by_level,
    confusion_heatmap,
    difference_intervals,
    history_curves,
    node_deltas,
    node_sunburst,
    reliability_diagram,
)
from hseval.reporting.charts.common import PALETTE, TEMPLATE, run_colours
from hseval.reporting.charts.embeddings import projection_scatter
from hseval.reporting.charts.geometry import (
    ROOT_NOTE,
    angle_to_parent,
    child_angles,
    delta_vs_radius,
    sibling_angles,
    step_by_depth,
)

__all__ = ["accuracy_by_level", "node_sunburst", "angle_to_parent", "sibling_angles", "delta_vs_radius",
           "step_by_depth", "projection_scatter", "confusion_heatmap", "history_curves", "reliability_diagram",
           "child_angles", "node_deltas", "run_colours", "difference_intervals", "PALETTE", "TEMPLATE", "ROOT_NOTE"]
