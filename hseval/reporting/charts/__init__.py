"""Figures as pure functions: tables in, ``plotly.graph_objects.Figure`` out.

The offline HTML report and the Streamlit dashboard draw the same figures from these functions;
none of them reads a file or computes a metric. ``from hseval.reporting import charts`` gives them
all: accuracy over runs (:mod:`.accuracy`), over the tree's nodes (:mod:`.nodes`), geometry
(:mod:`.geometry`), embeddings (:mod:`.embeddings`). Every figure is sized for its content by
:func:`.common.fit`, and runs take the colours of :func:`hseval.reporting.colours.run_colours`.
"""

from hseval.reporting.charts.accuracy import (
    accuracy_by_level,
    difference_intervals,
    error_and_severity,
    history_curves,
    reliability_diagram,
)
from hseval.reporting.charts.common import TEMPLATE, fit
from hseval.reporting.charts.decisions import operating_curves, stop_depths
from hseval.reporting.charts.embeddings import METHOD_NAMES, VECTORS_MAX, projection_scatter, with_predictions
from hseval.reporting.charts.geometry import (
    ROOT_NOTE,
    angle_to_parent,
    child_angles,
    delta_vs_radius,
    sibling_angles,
    step_by_depth,
)
from hseval.reporting.charts.nodes import (
    HEATMAP_MAX,
    SECTORS_MAX,
    confusion_guide,
    confusion_heatmap,
    node_deltas,
    node_sunburst,
    shallower_samples,
    sunburst_levels,
)

__all__ = ["accuracy_by_level", "error_and_severity",
           "node_sunburst", "angle_to_parent", "sibling_angles", "delta_vs_radius",
           "step_by_depth", "projection_scatter", "with_predictions", "confusion_heatmap", "confusion_guide",
           "shallower_samples", "history_curves", "reliability_diagram", "child_angles", "node_deltas",
           "difference_intervals", "fit", "TEMPLATE", "ROOT_NOTE", "METHOD_NAMES", "sunburst_levels", "HEATMAP_MAX",
           "VECTORS_MAX", "SECTORS_MAX", "operating_curves", "stop_depths"]
