"""Pure helpers of the Embeddings page's selection: which samples a plotly selection event picked,
the table that lists them, and where the run's images are (testable without Streamlit)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from hseval.reporting.charts import with_predictions
from hseval.tree.hierarchy import Hierarchy

__all__ = ["selected_rows", "sample_table", "data_location"]


def selected_rows(selection: Mapping[str, Any] | None, points: pd.DataFrame) -> pd.DataFrame:
    """The sample rows of ``points`` that a selection event (``st.plotly_chart(on_select=...)``'s
    ``event.selection``) names, in the order first selected, each once.

    :func:`hseval.reporting.charts.projection_scatter` puts each sample's row position in ``points`` into
    ``customdata[0]``; points without it (the class vectors) are ignored."""
    rows: list[int] = []
    for point in (selection or {}).get("points") or []:
        custom = point.get("customdata") if isinstance(point, Mapping) else None
        if isinstance(custom, (list, tuple)) and custom:
            custom = custom[0]
        if isinstance(custom, (int, float, np.integer, np.floating)) and not isinstance(custom, bool) \
                and float(custom).is_integer() and 0 <= int(custom) < len(points):
            rows.append(int(custom))
    picked = points.iloc[list(dict.fromkeys(rows))]
    return picked[picked["kind"] == "sample"] if "kind" in picked else picked


def sample_table(rows: pd.DataFrame, tree: Hierarchy, topk: np.ndarray) -> pd.DataFrame:
    """One line per selected sample: index in the split, true class, predicted class (from the
    run's top-1 predictions) and whether it is correct."""
    index = rows["index"].to_numpy(dtype=float)
    known = ~np.isnan(index) & (index < len(topk))
    predicted = with_predictions(rows, tree, topk)["predicted"].replace("", None).to_numpy(dtype=object)
    return pd.DataFrame({"index": pd.array([int(i) if k else pd.NA for i, k in zip(index, known)], dtype="Int64"),
                         "class": rows["label"].to_numpy(dtype=object), "predicted": predicted,
                         "correct": rows["correct"].to_numpy(dtype=object) if "correct" in rows else None})


def data_location(metrics: Mapping[str, Any], marker: Mapping[str, Any] | None) -> tuple[str, str | None, str]:
    """(dataset name, root, split) of the data a run was evaluated on: the ``--data-root`` that
    ``hseval evaluate`` was given (its marker's ``inputs``), else the root the run was trained
    with (``metrics.json``'s ``training.data.root``), else None (the dataset's usual places)."""
    inputs = (marker or {}).get("inputs") or {}
    data = ((metrics.get("training") or {}).get("data") or {})
    root = next((r for r in (inputs.get("data_root"), data.get("root")) if isinstance(r, str) and r), None)
    return str(metrics.get("dataset")), root, str(metrics.get("split") or "test")
