"""Choosing settings without the test set: ``hseval select`` picks, for each method, the setting of
its sweep (a seed group: :func:`~hseval.reporting.significance.seed_groups`) that is best on a
validation evaluation by one metric (:mod:`hseval.reporting.ranking`); ``hseval report TEST_EVAL
--selection FILE`` then reports only the chosen runs, on the test split, with how they were chosen.

A choice reads only the validation evaluation it is given: a test evaluation is refused as its
input, and a report of the choice is refused on the split it was made on."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from hseval.core.errors import ConfigError
from hseval.io.results import Evaluation, RunResult
from hseval.io.selection_format import Candidate, Choice, Selection
from hseval.reporting.sample_metrics import chosen_metrics, entry_parts, entry_value
from hseval.reporting.significance import seed_groups
from hseval.reporting.summary import setting_names

__all__ = ["select", "selected_runs", "selection_table", "selection_notes"]


def _run_path(run: RunResult) -> str:
    """Where the run was trained (its folder), or the prediction file it was evaluated from."""
    return str(run.metrics.get("run_path") or (run.metrics.get("source") or {}).get("path") or run.name)


def select(evaluation: Evaluation, metric: str, *, per: str = "head") -> Selection:
    """For each head (``per="head"``) or over all runs (``"all"``), the seed group of ``evaluation``
    best by ``metric`` (its value pooled over the group's seeds)."""
    runs, split = evaluation.runs, evaluation.split
    if not split.startswith("validation"):
        raise ConfigError(f"{evaluation.root}: holds an evaluation of the {split} split; choose on a validation "
                          "evaluation ('hseval evaluate RUNS --split val --out DIR'): a setting chosen on the test "
                          "split makes its test numbers look better than they are")
    if len(evaluation.datasets) > 1:
        raise ConfigError(f"{evaluation.root}: holds runs of {len(evaluation.datasets)} datasets "
                          f"({', '.join(evaluation.datasets)}); choose among the runs of one dataset")
    if per not in ("head", "all"):
        raise ConfigError(f"--per must be head or all, got {per!r}")
    (scored,) = chosen_metrics([metric], runs)
    groups = seed_groups(runs)
    names = setting_names([g.runs for g in groups], within="head")
    candidates = [(g.runs[0].head if per == "head" else "all",
                   Candidate(group=g.name, setting=name, runs=[r.name for r in g.runs],
                             run_paths=[_run_path(r) for r in g.runs], value=_finite(entry_value(g.runs, scored))))
                  for g, name in zip(groups, names)]
    choices = []
    for method in dict.fromkeys(m for m, _ in candidates):
        mine = [c for m, c in candidates if m == method]
        valued = sorted((c for c in mine if c.value is not None), key=lambda c: c.value, reverse=not scored.lower)
        if not valued:
            lacking = any(entry_parts(g.runs, scored) is None for g in groups if g.name in {c.group for c in mine})
            why = (f"the runs of {method} do not have it (ECE and cross-entropy need scores that are probabilities, "
                   "own-score levels a head that has them)" if lacking else
                   f"it is undefined for every run of {method} (mistake severity without a mistake)")
            raise ConfigError(f"metric {metric!r}: {why}; choose another --metric")
        best = valued[0]
        tied = [c.group for c in valued[1:] if c.value == best.value]
        margin = abs(best.value - valued[1].value) if len(valued) > 1 else None
        choices.append(Choice(method=method, chosen=best, margin=margin, tied_with=tied, candidates=mine))
    return Selection(metric=scored.name, lower_is_better=scored.lower, per=per, evaluation=str(evaluation.root),
                     dataset=evaluation.datasets[0], split=split, samples=len(runs[0].targets), choices=choices)


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def selected_runs(evaluation: Evaluation, selection: Selection, *, where: str | Path) -> list[RunResult]:
    """The runs of ``evaluation`` (a test evaluation) that ``selection`` chose, matched by where
    they were trained; refused in one line when the evaluation is of the split the choice was made
    on, of another dataset, or lacks a chosen run."""
    split = evaluation.split
    if split == selection.split:
        raise ConfigError(f"--selection {where}: it was chosen on this evaluation's split ({split}); report the "
                          "chosen runs on the test split (an evaluation folder of the test split)")
    if evaluation.datasets != [selection.dataset]:
        raise ConfigError(f"--selection {where}: it chose runs of {selection.dataset}, and {evaluation.root} holds "
                          f"runs of {', '.join(evaluation.datasets)}")
    by_path = {_run_path(r): r for r in evaluation.runs}
    wanted = [p for choice in selection.choices for p in choice.chosen.run_paths]
    missing = [p for p in wanted if p not in by_path]
    if missing:
        raise ConfigError(f"--selection {where}: {len(missing)} chosen run(s) are not evaluated in {evaluation.root} "
                          f"({', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}); evaluate them there "
                          "with 'hseval evaluate RUNS --out DIR'")
    return [by_path[p] for p in wanted]


def selection_table(selection: Selection) -> pd.DataFrame:
    """One row per method: the chosen setting, its validation value, the margin, ties, candidates."""
    digits = 4
    return pd.DataFrame([{
        "method": c.method, "chosen": c.chosen.group, "setting": c.chosen.setting or "(its only setting)",
        f"validation {selection.metric}": f"{c.chosen.value:.{digits}f}",
        "margin": "–" if c.margin is None else f"{c.margin:.{digits}f}",
        "tied with": ", ".join(c.tied_with) or "–",
        "candidates": "; ".join(f"{k.group} {'n/a' if k.value is None else f'{k.value:.{digits}f}'}"
                                for k in c.candidates)} for c in selection.choices])


def selection_notes(selection: Selection, runs: list[RunResult]) -> dict[str, str]:
    """summary.csv's ``selection`` cell of each chosen run: how it was chosen."""
    by_path = {p: c for c in selection.choices for p in c.chosen.run_paths}
    return {r.name: (f"chosen for {c.method} by {selection.metric} on {selection.split} "
                     f"({c.chosen.value:.6g}; {len(c.candidates)} candidate(s)"
                     + (f", margin {c.margin:.6g}" if c.margin is not None else "")
                     + (f", tied with {', '.join(c.tied_with)}" if c.tied_with else "") + ")")
            for r in runs if (c := by_path.get(_run_path(r))) is not None}
