"""The samples selected on the Embeddings page's scatter: their images in a grid (when the run's
dataset is at hand) and a table of index, class and prediction. Not a page: the Embeddings page
calls :func:`show_samples`."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from hseval.app import loading
from hseval.app.selection import sample_table
from hseval.core.errors import HsevalError
from hseval.io.results import RunResult

__all__ = ["show_samples", "MAX_IMAGES", "COLUMNS"]

MAX_IMAGES = 24
COLUMNS = 8


def show_samples(run: RunResult, rows: pd.DataFrame) -> None:
    """Images (up to :data:`MAX_IMAGES`, captioned "true → predicted") and the table of the
    selected sample ``rows`` of projections.csv."""
    listed = sample_table(rows, run.hierarchy, run.topk)
    st.subheader(f"Selected samples ({len(listed):,})")
    data, split, reason = loading.dataset(run)
    if data is None:
        st.caption(f"No images: {reason}.")
    else:
        _grid(data, split, listed.head(MAX_IMAGES))
        if len(listed) > MAX_IMAGES:
            st.caption(f"The first {MAX_IMAGES} of {len(listed):,} selected samples.")
    st.dataframe(listed, hide_index=True)


def _grid(data, split: str, listed: pd.DataFrame) -> None:
    from hseval.data.display import sample_image  # torch: only once images are shown

    columns = st.columns(COLUMNS)
    for k, (index, true, predicted) in enumerate(zip(listed["index"], listed["class"], listed["predicted"])):
        try:
            image = sample_image(data, split, int(index))
        except (HsevalError, OSError, ValueError) as exc:  # a file deleted or damaged since the evaluation
            columns[k % COLUMNS].caption(f"#{int(index)}: unreadable ({type(exc).__name__})")
            continue
        columns[k % COLUMNS].image(image, caption=f"{true} → {predicted}", width="stretch")
