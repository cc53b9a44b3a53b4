"""The scores of a prediction file, whichever reader reads them (the arrays' of
:mod:`hseval.io.prediction_format`, the CSV's of :mod:`hseval.io.prediction_csv`): what they are,
logits or probabilities (:data:`SCORE_KINDS`), is what the file says, never guessed from their
values but checked against them (:func:`check_kind`, with one tolerance,
:data:`~hseval.metrics._checks.PROBABILITY_TOLERANCE`); and their columns go from the model's
class order into the tree's (:func:`permuted`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hseval.core.errors import DataError
from hseval.io.tables import failure

__all__ = ["SCORE_KINDS", "check_kind", "permuted"]

SCORE_KINDS = ("logits", "probs")

_fail = failure(DataError, "")


def permuted(scores: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Columns from the model's class order into the tree's: column ``i`` goes to ``classes[i]``."""
    out = np.empty_like(scores)
    out[:, classes] = scores
    return out


def check_kind(path: Path, what: str, problem: tuple[int, str] | None, kind: str, hints: dict[str, str], *,
               csv: bool = False, first: int = 0) -> None:
    """Scores declared ``kind`` whose values say otherwise: probabilities that are not, or logits
    that are probabilities in every row. ``problem``: :func:`~hseval.metrics._checks.probability_problem`
    of the scores (of the block from row ``first``); ``what``: the array, or the CSV's columns
    (``csv``); ``hints``: how this format declares each kind."""
    if kind == "probs" and problem is not None:
        row, why = problem
        row += first
        if csv:
            raise _fail(path, f"{why}, so the {what} columns are not probabilities; {hints['logits']}", row + 2)
        raise _fail(path, f"{what} row {row} {why}, so these are not probabilities; {hints['logits']}")
    if kind == "logits" and problem is None:
        raise _fail(path, f"{f'the {what} columns' if csv else what} hold probabilities, not logits (every row in "
                          f"[0, 1] sums to 1); {hints['probs']}")
