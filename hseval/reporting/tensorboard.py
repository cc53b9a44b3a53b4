"""``hseval export EVAL_DIR --to tensorboard OUT``: an evaluation folder as files that other tools read.

The one module that knows the export formats (:data:`FORMATS`); for now TensorBoard's Embedding
Projector. ``OUT`` then holds:

- ``projector_config.pbtxt``: a ``ProjectorConfig`` in protobuf text format, one ``embeddings``
  block per exported run (``tensor_name`` the run's name, ``tensor_path`` and ``metadata_path``
  relative to ``OUT``);
- per run a sub-folder named after the run with ``tensors.tsv`` (one row per sampled embedding of
  ``embeddings.npz``, tab-separated float32 values written with 9 significant digits so that they
  read back exactly, then one row per non-root node's class vector when the head has class
  vectors of the embeddings' dimension) and ``metadata.tsv`` (a header row ``kind  class  level 1
  ...  level K  correct``, then one row per row of ``tensors.tsv``: ``kind`` is ``sample`` or
  ``class_vector``; ``class`` the sample's class or the vector's node; ``level k`` the ancestor (or
  the node itself) at depth k, k = 1 .. the tree's depth - 1 (its super-class levels, as in
  ``projections.csv``), empty where the class or node is shallower; ``correct`` True/False for a
  sample, empty for a class vector).

TSV cells go through :func:`tsv_cell` and the config's strings through :func:`pbtxt_string`.

``OUT`` is an output folder of kind ``export`` (:mod:`hseval.io.output`): everything is checked and
read before anything is written; the files are written into a hidden sibling folder that is
renamed into place when complete, so no reader ever sees a half-written export, and its marker
records every file written. A non-empty ``OUT`` that is not an export hseval wrote is refused; an
earlier export there is replaced, unless it holds a file the marker does not record (one the user
added): that is refused, never deleted. Writing needs neither TensorBoard nor protobuf.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hseval.core import fileio
from hseval.core.errors import ConfigError, HsevalWarning, RunFormatError
from hseval.io.output import OutputFolder
from hseval.io.results import load_evaluation
from hseval.tree.hierarchy import Hierarchy

__all__ = ["FORMATS", "KIND", "CONFIG_FILE", "TENSORS_FILE", "METADATA_FILE", "Exported", "export_evaluation",
           "tensorboard_files", "metadata_rows", "tsv_cell", "pbtxt_string"]

FORMATS = {"tensorboard": "TensorBoard's Embedding Projector (projector_config.pbtxt, TSV tensors and metadata)"}
KIND = "export"
"""The ownership kind of an export folder (:data:`hseval.io.folders.KINDS`)."""
CONFIG_FILE, TENSORS_FILE, METADATA_FILE = "projector_config.pbtxt", "tensors.tsv", "metadata.tsv"


@dataclass
class Exported:
    """What :func:`export_evaluation` wrote: the folder, and per exported run its number of rows
    (samples, class vectors); the runs left out, each with its reason."""

    out: Path
    runs: dict[str, tuple[int, int]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)


# ====================================================================== cells and strings
def tsv_cell(text: str) -> str:
    """``text`` as one cell of a TSV file that TensorBoard reads (no quoting there): each tab, line
    feed and carriage return becomes a space."""
    return text.replace("\t", " ").replace("\n", " ").replace("\r", " ")


_PB_ESCAPES = {ord("\\"): "\\\\", ord('"'): '\\"', ord("'"): "\\'", ord("\n"): "\\n", ord("\r"): "\\r",
               ord("\t"): "\\t"}


def pbtxt_string(text: str) -> str:
    """``text`` as a double-quoted string of protobuf's text format, ASCII only: quotes, backslashes
    and control characters escaped, every byte of a non-ASCII character as an octal escape (the
    parser joins them back into UTF-8)."""
    out = []
    for byte in text.encode("utf-8"):
        if byte in _PB_ESCAPES:
            out.append(_PB_ESCAPES[byte])
        elif 0x20 <= byte < 0x7F:
            out.append(chr(byte))
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


# ====================================================================== tables
def _levels(tree: Hierarchy, nodes: np.ndarray) -> list[list[str]]:
    """Per node, the names of its ancestors-or-self at depths 1 .. max_depth - 1 ('' where shallower)."""
    names = np.asarray([*tree.node_names, ""], dtype=object)  # index -1: no ancestor at that depth
    return names[tree.ancestor_table[np.asarray(nodes, dtype=np.int64)][:, : tree.max_depth - 1]].tolist()


def metadata_rows(tree: Hierarchy, labels: np.ndarray, predictions: np.ndarray,
                  vector_nodes: int) -> list[list[str]]:
    """The rows of ``metadata.tsv``, the header first: one per sample (class ``labels[i]``, correct
    when ``predictions[i]`` equals it), then one per class vector (nodes ``0..vector_nodes-1``)."""
    header = ["kind", "class", *(f"level {d}" for d in range(1, tree.max_depth)), "correct"]
    names = tree.node_names
    labels = np.asarray(labels, dtype=np.int64)
    correct = (np.asarray(predictions, dtype=np.int64) == labels).tolist()
    rows = [header]
    rows += [["sample", names[c], *levels, str(ok)]
             for c, levels, ok in zip(labels.tolist(), _levels(tree, labels), correct)]
    nodes = np.arange(vector_nodes)
    rows += [["class_vector", names[n], *levels, ""] for n, levels in zip(nodes.tolist(), _levels(tree, nodes))]
    return rows


def _tsv(rows: list[list[str]]) -> str:
    return "".join("\t".join(tsv_cell(cell) for cell in row) + "\n" for row in rows)


def _points(arrays: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray | None, str | None]:
    """(embeddings as float32, the class vectors to add or None, why a run has nothing to export)."""
    emb = np.asarray(arrays["embeddings"])
    if emb.ndim != 2 or emb.shape[0] == 0:
        return emb, None, "it holds no sampled embeddings (0 samples)"
    if emb.shape[1] == 0:
        return emb, None, "its embeddings have dimension 0"
    vectors = np.asarray(arrays["node_vectors"])
    keep = vectors.ndim == 2 and vectors.shape[0] > 0 and vectors.shape[1] == emb.shape[1]
    return emb.astype(np.float32), vectors.astype(np.float32) if keep else None, None


def tensorboard_files(runs: list[tuple[str, Hierarchy, dict[str, np.ndarray]]]) -> dict[str, str]:
    """The files of a TensorBoard export (path relative to ``OUT`` -> text) of ``runs``: (name,
    tree, the arrays of ``embeddings.npz``) each, every one with embeddings to show."""
    files: dict[str, str] = {}
    blocks = []
    for name, tree, arrays in runs:
        emb, vectors, _ = _points(arrays)
        points = emb if vectors is None else np.concatenate([emb, vectors])
        tensors = io.StringIO()
        np.savetxt(tensors, points, fmt="%.9g", delimiter="\t")  # float32 in 9 digits: read back bit for bit
        files[f"{name}/{TENSORS_FILE}"] = tensors.getvalue()
        files[f"{name}/{METADATA_FILE}"] = _tsv(metadata_rows(tree, arrays["labels"], arrays["predictions"],
                                                              0 if vectors is None else len(vectors)))
        blocks.append("embeddings {\n"
                      f"  tensor_name: {pbtxt_string(name)}\n"
                      f"  tensor_path: {pbtxt_string(f'{name}/{TENSORS_FILE}')}\n"
                      f"  metadata_path: {pbtxt_string(f'{name}/{METADATA_FILE}')}\n"
                      "}\n")
    files[CONFIG_FILE] = "".join(blocks)
    return files


# ====================================================================== the command
def export_evaluation(eval_dir: str | Path, out: str | Path, *, to: str = "tensorboard") -> Exported:
    """Export the evaluation folder ``eval_dir`` into ``out`` in the format ``to``.

    Runs that cannot be read (:attr:`~hseval.io.results.Evaluation.problems`) and runs without
    embeddings are left out, each with an :class:`~hseval.core.errors.HsevalWarning` naming it and why;
    when no run is left, nothing is written and one :class:`~hseval.core.errors.RunFormatError`
    gives every reason (no warning repeats it)."""
    if to not in FORMATS:
        raise ConfigError(f"--to {to!r}: unknown export format; choose from {', '.join(FORMATS)}")
    eval_dir, out = Path(eval_dir), Path(out)
    folder = OutputFolder(out, KIND, option="OUT", replace=True, staged=True, reads=[eval_dir],
                          source=str(eval_dir.resolve()), format=to)
    evaluation = load_evaluation(eval_dir)
    result = Exported(out=out)
    runs, left_out = [], [f"left out of the export: {problem}" for problem in evaluation.problems]
    for run in evaluation.runs:
        arrays = run.embeddings()
        _, vectors, why = _points(arrays)
        if why is not None:
            result.skipped[run.name] = why
            left_out.append(f"{run.path}: left out of the export: {why}")
            continue
        runs.append((run.name, run.hierarchy, arrays))
        result.runs[run.name] = (len(arrays["embeddings"]), 0 if vectors is None else len(vectors))
    if not runs:
        reasons = "; ".join([*(f"{name}: {why}" for name, why in result.skipped.items()), *evaluation.problems])
        raise RunFormatError(f"{eval_dir}: no evaluated run has embeddings to export ({reasons})")
    for line in left_out:
        warnings.warn(line, HsevalWarning, stacklevel=2)
    files = tensorboard_files(runs)
    folder.details["runs"] = sorted(result.runs)
    with folder:
        for rel, text in files.items():
            fileio.write_text(folder.target / rel, text)
    return result
