"""The arrays of an evaluated run: ``predictions.npz`` (every sample's targets, best classes, own
level predictions, decisions, depth front, confidence and -log p(target)) and ``embeddings.npz``
(a sample of embeddings and the node vectors), their members (:data:`ARRAYS`) and
:func:`read_arrays`, which checks them; written by :func:`hseval.io.evaluation_format.write_run`.
Nothing here unpickles: ``np.load(allow_pickle=False)``.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np

from hseval.core.errors import RunFormatError
from hseval.io.records import INT_MAX
from hseval.io.tables import RERUN
from hseval.tree.hierarchy import Hierarchy

__all__ = ["EMBEDDINGS", "PREDICTIONS", "ARRAYS", "read_arrays"]

EMBEDDINGS, PREDICTIONS = "embeddings.npz", "predictions.npz"

ARRAYS: dict[str, dict[str, tuple[str, int]]] = {
    EMBEDDINGS: {"embeddings": ("f", 2), "labels": ("iu", 1), "predictions": ("iu", 1), "indices": ("iu", 1),
                 "node_vectors": ("f", 2)},
    PREDICTIONS: {"targets": ("iu", 1), "topk": ("iu", 2), "levels": ("i", 2), "indices": ("iu", 1),
                  "decisions": ("i", 2), "depth_front": ("f", 2), "depth_front_nodes": ("i", 2),
                  "confidence": ("f", 1), "nll": ("f", 1)},
}
"""Members of each .npz file: (dtype kinds, number of dimensions). predictions.npz's ``levels``
(N, depth - 1) is the node each sample is predicted at each super-class level by the head's own
scores (-1 in every row of a level the head does not score); its ``indices`` (N,) the position of
each sample in the split the evaluation read (``--split``; ``0..N-1`` for the whole split, the
drawn ones in their order for ``--subset``, the rows of a prediction file), so that a row joins
the user's own data; its ``confidence`` and ``nll`` (N,) the top-1 probability and -log p(target)
of each sample, empty without scores (what the ECE and the cross-entropy sum, kept to bootstrap
them). embeddings.npz's ``indices`` are the sample's rows of predictions.npz."""


def read_arrays(path: Path, data: bytes, tree: Hierarchy, samples: int) -> dict[str, np.ndarray]:
    """An .npz of :data:`ARRAYS`, checked: members, types, shapes, and class indices in range."""
    spec = ARRAYS[path.name]
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            missing = next((m for m in spec if m not in archive.files), None)
            if missing is not None:
                raise RunFormatError(f"{path}: no array '{missing}'; {RERUN}")
            arrays = {m: archive[m] for m in spec}
    except RunFormatError:
        raise
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        raise RunFormatError(f"{path}: not a readable .npz archive ({type(exc).__name__}); {RERUN}") from None
    for member, (kinds, ndim) in spec.items():
        array = arrays[member]
        if not isinstance(array, np.ndarray) or array.dtype.kind not in kinds or array.ndim != ndim:
            raise RunFormatError(f"{path}: '{member}' must be a {ndim}-d array of "
                                 f"{'floats' if kinds == 'f' else 'integers'}; {RERUN}")
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            raise RunFormatError(f"{path}: '{member}' holds NaN or infinite values; {RERUN}")
    for member in (m for m in ("labels", "predictions", "targets", "topk") if m in arrays):
        values = arrays[member]
        if values.size and (values.min() < 0 or values.max() >= tree.num_leaves):
            raise RunFormatError(f"{path}: '{member}' holds class indices outside 0..{tree.num_leaves - 1}; {RERUN}")
    first = arrays[next(iter(spec))]
    lengths = {m: len(arrays[m]) for m in spec if m not in _SCORED}
    if len(set(lengths.values())) > 1:
        raise RunFormatError(f"{path}: arrays of different lengths ({lengths}); {RERUN}")
    if path.name == PREDICTIONS:
        if len(first) != samples:
            raise RunFormatError(f"{path}: {len(first)} samples but metrics.json says {samples}; {RERUN}")
        _check_level_predictions(path, arrays["levels"], len(first), tree)
        _check_decisions(path, arrays, len(first), tree)
        _check_calibration(path, arrays["confidence"], arrays["nll"], len(first))
        positions = arrays["indices"]
        if len(positions) and (positions.min() < 0 or positions.max() > INT_MAX or (np.diff(positions) <= 0).any()):
            raise RunFormatError(f"{path}: 'indices' must be increasing positions in the split (0 or more); {RERUN}")
    else:
        vectors = arrays["node_vectors"]
        if vectors.size and (vectors.shape[0] != tree.num_nodes or vectors.shape[1] != arrays["embeddings"].shape[1]):
            raise RunFormatError(f"{path}: 'node_vectors' has shape {vectors.shape}, expected ({tree.num_nodes}, "
                                 f"{arrays['embeddings'].shape[1]}); {RERUN}")
        if len(arrays["indices"]) and (arrays["indices"].min() < 0 or arrays["indices"].max() >= samples):
            raise RunFormatError(f"{path}: 'indices' outside 0..{samples - 1}; {RERUN}")
    return arrays


_SCORED = ("node_vectors", "depth_front", "depth_front_nodes", "confidence", "nll")
"""Members that may be empty: no node vectors, or no scores."""


def _check_calibration(path: Path, confidence: np.ndarray, nll: np.ndarray, n: int) -> None:
    if len(confidence) != len(nll) or len(confidence) not in (0, n):
        raise RunFormatError(f"{path}: 'confidence' and 'nll' must both hold {n} values, or none; {RERUN}")
    if len(confidence) and ((confidence < 0).any() or (confidence > 1).any() or (nll < 0).any()):
        raise RunFormatError(f"{path}: 'confidence' must hold probabilities and 'nll' values of 0 or more; {RERUN}")


def _check_level_predictions(path: Path, levels: np.ndarray, n: int, tree: Hierarchy) -> None:
    if levels.shape != (n, max(tree.max_depth - 1, 0)):
        raise RunFormatError(f"{path}: 'levels' has shape {levels.shape}, expected ({n}, {tree.max_depth - 1}): one "
                             f"column per super-class level; {RERUN}")
    for depth in range(1, tree.max_depth):
        column = levels[:, depth - 1]
        if (column == -1).all():
            continue  # the head does not score this level
        inside = (column >= 0) & (column < tree.num_nodes)
        if not inside.all() or (tree.depth[column] != depth).any():
            raise RunFormatError(f"{path}: 'levels' column {depth - 1} holds values that are not nodes of depth "
                                 f"{depth}; {RERUN}")


def _check_decisions(path: Path, arrays: dict[str, np.ndarray], n: int, tree: Hierarchy) -> None:
    decisions, best, nodes = arrays["decisions"], arrays["depth_front"], arrays["depth_front_nodes"]
    if decisions.size and (decisions.min() < -1 or decisions.max() >= tree.num_nodes):
        raise RunFormatError(f"{path}: 'decisions' holds values that are not nodes of the tree (-1: the root); {RERUN}")
    width = tree.max_depth + 1
    if best.shape != nodes.shape or best.shape[0] not in (0, n) or best.shape[1] != width:
        raise RunFormatError(f"{path}: 'depth_front' and 'depth_front_nodes' must be ({n} or 0, {width}); {RERUN}")
    depth = np.r_[tree.depth, 0]
    if best.size and ((best < 0).any() or (best > 1).any() or (nodes < -1).any() or (nodes >= tree.num_nodes).any()
                      or (depth[nodes] != np.arange(width)).any()):
        raise RunFormatError(f"{path}: 'depth_front' must hold probabilities and 'depth_front_nodes' a node of each "
                             f"depth from the root's (-1) down; {RERUN}")
