"""The one writer of evaluations: each :class:`~hseval.evaluation.stages.EvaluationContent` into its own
folder of the evaluation folder (kind "evaluations"), staged and put in place whole through
:mod:`hseval.io.evaluation_format`; ``index.json`` rebuilt from the evaluations' own files; and the
folders' names, one per evaluated source, kept across evaluations.
"""

from __future__ import annotations

import os
import time
import warnings
from collections import Counter
from collections.abc import Collection
from pathlib import Path
from typing import Any

from hseval.core.errors import ConfigError, HsevalError, HsevalWarning, RunFormatError
from hseval.evaluation.stages import EvaluationContent
from hseval.io import evaluation_format as eval_format
from hseval.io.data_identity import evaluated_split
from hseval.io.folders import EvaluationMarker, listing, read_marker
from hseval.io.output import OutputFolder
from hseval.io.results import read_run

__all__ = ["evaluation_folder", "one_split", "write_evaluation", "index_entry", "Index", "evaluated_sources",
           "evaluation_names", "folder_name", "up_to_date"]


def evaluation_folder(out_dir: str | Path, *, inputs: list[str | Path], names: Collection[str],
                      writes: Collection[str] = ()) -> OutputFolder:
    """The evaluation folder ``out_dir`` as the output of a command that reads ``inputs`` (runs,
    prediction and tree files) and writes the evaluations ``names``, every one checked before any
    work (a folder of one that holds a file hseval did not write is refused before the first
    evaluation is written); the command writes its index (and ``writes``) in place."""
    root = OutputFolder(out_dir, "evaluations", writes=[eval_format.INDEX_FILE, *writes], reads=inputs)
    for name in names:
        root.plan(name, "evaluation", replace=True, staged=True)
    return root


def one_split(out_dir: str | Path, splits: Collection[str], *, option: str = "--out") -> str:
    """The one split (:func:`~hseval.io.data_identity.split_label`) of the evaluations a command
    writes into ``out_dir``, which must be the split of every evaluation already there: an
    evaluation folder holds one split, so that no table sets a validation number beside a test
    number. Refused in one line, naming both splits, before anything is written."""
    kinds = sorted(set(splits))
    if len(kinds) > 1:
        raise ConfigError(f"these evaluations are of {len(kinds)} splits ({'; '.join(kinds)}); an evaluation folder "
                          f"holds one split: evaluate each into its own {option}")
    split = kinds[0]
    for name, source in evaluated_sources(Path(out_dir)).items():
        metrics = _metrics_of(Path(out_dir) / name) if source is not None else None
        there = split if metrics is None else evaluated_split(metrics)  # unreadable: the report leaves it out
        if there != split:
            raise ConfigError(f"{option} {out_dir}: it holds evaluations of the {there} split ({name}), and this is of "
                              f"the {split} split; an evaluation folder holds one split: choose another {option} "
                              f"(e.g. {Path(out_dir).name}-{split.split()[0]})")
    return split


def write_evaluation(root: OutputFolder, evaluation: EvaluationContent) -> dict[str, Any]:
    """Write ``evaluation`` into ``root / evaluation.name`` (``root``: the evaluation folder this
    command holds, which planned that name) and return its index entry. It is staged, then put in
    place of the earlier evaluation of the same source, which is replaced only when it holds nothing
    but what hseval wrote; a reader never sees a partial one."""
    evaluation.metrics["eval_seconds"] = time.perf_counter() - evaluation.started
    folder = root.planned(evaluation.name)
    folder.details.update(source=evaluation.source, inputs=evaluation.inputs, schema_version=eval_format.SCHEMA_VERSION)
    with folder:
        eval_format.write_run(folder.target, metrics=evaluation.metrics, tables=evaluation.tables,
                              arrays=evaluation.arrays)
    return index_entry(evaluation.name, evaluation.metrics)


def index_entry(name: str, metrics: dict[str, Any]) -> dict[str, Any]:
    """The line of index.json for one evaluation."""
    return {"run": name, "path": metrics.get("run_path"), "head": metrics["head"], "dataset": metrics["dataset"],
            "backbone": metrics.get("backbone"), "seed": metrics.get("seed"), "split": metrics.get("split"),
            "leaf_top1": metrics["top1"]}


class Index:
    """``index.json`` of the evaluation folder ``out_dir``: one entry per evaluation it holds, each
    made from that evaluation's own ``metrics.json``. The folders are the truth and the file only
    lists them (nothing reads it back), so it is rebuilt whole each time, whatever it held: an index
    edited or damaged by hand, or listing a run that is gone, never leaves an entry with holes.

    The evaluations there are read once, when the command starts (``writing``: those it will
    write, whose entries it hands to :meth:`write`); one whose ``metrics.json`` does not read is
    left out of the index, with a warning naming why (the report leaves it out too)."""

    def __init__(self, out_dir: Path, *, writing: Collection[str] = ()) -> None:
        self.out_dir = out_dir
        self.entries = {name: _entry_of(out_dir / name, warn=name not in writing)
                        for name, source in evaluated_sources(out_dir).items() if source is not None}

    def write(self, made: dict[str, dict[str, Any]] | None = None) -> None:
        """Write the index, with the entries ``made`` by this command (name -> :func:`index_entry`)."""
        self.entries.update(made or {})
        rows = [self.entries[name] for name, source in evaluated_sources(self.out_dir).items()
                if source is not None and self.entries.get(name) is not None]
        eval_format.write_index(self.out_dir, rows)


def _entry_of(folder: Path, *, warn: bool) -> dict[str, Any] | None:
    """The index entry of the evaluation in ``folder``, from its checked ``metrics.json``; None
    when that does not read."""
    metrics = _metrics_of(folder, warn=warn)
    return None if metrics is None else index_entry(folder.name, metrics)


def _metrics_of(folder: Path, *, warn: bool = False) -> dict[str, Any] | None:
    """The checked ``metrics.json`` of the evaluation in ``folder``; None when it does not read."""
    try:
        data = eval_format.sealed(folder)(eval_format.METRICS)
        return eval_format.read_metrics(folder / eval_format.METRICS, data)[0]
    except HsevalError as exc:
        if warn:
            warnings.warn(f"left out of {folder.parent / eval_format.INDEX_FILE}: {exc}", HsevalWarning, stacklevel=4)
        return None


def evaluated_sources(out_dir: Path) -> dict[str, str | None]:
    """Name -> the source it evaluated, for every entry of ``out_dir``; None for an entry that is
    not an evaluation hseval wrote and for the folder's own files (those names are taken)."""
    out: dict[str, str | None] = dict.fromkeys(eval_format.FOLDER_FILES)  # the folder's own files' names
    for entry in [out_dir / name for name in listing(out_dir)] if out_dir.is_dir() else []:
        if entry.name.startswith("."):
            continue
        try:
            marker = read_marker(entry) if entry.is_dir() else None
        except HsevalError:
            marker = None
        out[entry.name] = marker.source if isinstance(marker, EvaluationMarker) else None
    return out


def up_to_date(folder: Path, source: str, inputs: dict[str, Any]) -> dict[str, Any] | None:
    """The index entry of ``folder`` when it is a readable evaluation of ``source`` with these
    ``inputs`` (so it can be kept instead of computed again), else None."""
    try:
        marker = read_marker(folder, error=RunFormatError)
        if not isinstance(marker, EvaluationMarker) or marker.source != source or marker.inputs != inputs:
            return None
        metrics = read_run(folder).metrics
    except HsevalError:
        return None
    return {**index_entry(folder.name, metrics), "path": source}


def evaluation_names(runs: list[Path], taken: dict[str, str | None] | None = None) -> list[str]:
    """Distinct folder names for ``runs`` (resolved paths): the folder name where it is unique, else
    more of the path (``a__x`` for ``a/x``), else a numbered name (``x-2``).

    ``taken`` maps the names already used in the output folder to the run each evaluated (None:
    not an evaluation, or of an unknown run): a run evaluated there before keeps its name, so
    re-evaluating replaces a run's evaluation, and a name is never reused for another run."""
    taken = dict(taken or {})
    paths = [str(r) for r in runs]
    before = {run: name for name, run in sorted(taken.items()) if run is not None}
    fixed = {before[p] for p in paths if p in before}
    parts = [[p for p in r.parts if p != r.anchor] or [r.name] for r in runs]
    common = Path(os.path.commonpath(paths)) if len(runs) > 1 else None
    # a name may take in the path below the runs' common folder, and at least the parent folder
    limit = [min(len(parts[i]), max(2, len(r.relative_to(common).parts) if common else 0))
             for i, r in enumerate(runs)]
    depth = [1] * len(runs)
    while True:
        names = ["__".join(parts[i][-depth[i]:]) for i in range(len(runs))]
        counts = Counter(names)
        clash = [i for i, n in enumerate(names) if counts[n] > 1 or taken.get(n, paths[i]) != paths[i]]
        grow = [i for i in clash if depth[i] < limit[i]]
        if not grow:
            break
        for i in grow:
            depth[i] += 1
    used = {n for n, run in taken.items() if run not in paths} | fixed
    out = []
    for i, n in enumerate(names):
        if paths[i] in before:
            out.append(before[paths[i]])
            continue
        candidate, k = n, 1
        while candidate in used or taken.get(candidate, paths[i]) != paths[i]:
            k += 1
            candidate = f"{n}-{k}"
        used.add(candidate)
        out.append(candidate)
    return out


def folder_name(name: str, out_dir: Path, source: str) -> str:
    """``name`` (``--name``) checked to name a folder of ``out_dir`` that is free or holds the
    evaluation of ``source`` already (evaluating it again replaces it)."""
    if not name or name.startswith(".") or "/" in name or "\\" in name or any(ord(c) < 32 for c in name) or \
            len(name) > 200:
        raise ConfigError(f"--name {name!r} cannot name a folder; use letters, digits, '-', '_' or '.' "
                          "(not first), e.g. --name resnet50-imagenet")
    if name in eval_format.FOLDER_FILES:
        raise ConfigError(f"--name {name!r} is the name of one of the evaluation folder's own files "
                          f"({', '.join(eval_format.FOLDER_FILES)}); choose another --name")
    owner = evaluated_sources(out_dir).get(name, source)
    if owner != source:
        raise ConfigError(f"{out_dir / name} already holds the evaluation of {owner or 'something else'}; "
                          "choose another --name")
    return name
