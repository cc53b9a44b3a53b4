"""``selection.json``: which run (or seed group) of each method ``hseval select`` chose on a
validation evaluation, by which metric, among which candidates; ``hseval report --selection``
reads it to report only those runs on the test split. JSON only, read through :class:`Record`."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from hseval.core.errors import ConfigError
from hseval.io.records import Count, Finite, Record, read_record, write_record

__all__ = ["Candidate", "Choice", "Selection", "read_selection", "write_selection"]


class Candidate(Record):
    """One setting of a method (a seed group): its name, what tells it from the method's other
    settings, its runs (evaluation names) and their training folders, and its validation value."""

    group: str
    setting: str
    runs: list[str]
    run_paths: list[str]
    value: Finite | None


class Choice(Record):
    """The setting chosen for one method: the best candidate, how far ahead of the next it is
    (``margin``, None with one candidate), the candidates tied with it, and every candidate."""

    method: str
    chosen: Candidate
    margin: Finite | None
    tied_with: list[str]
    candidates: list[Candidate]


class Selection(Record):
    """What ``hseval select`` chose, and on what."""

    metric: str
    lower_is_better: bool
    per: Literal["head", "all"]
    evaluation: str
    dataset: str
    split: str
    samples: Count
    choices: list[Choice]


def read_selection(path: str | Path) -> Selection:
    return read_record(Selection, path, what="a selection file", error=ConfigError,
                       hint="write it with 'hseval select VAL_EVAL --metric METRIC --out FILE'")


def write_selection(path: str | Path, selection: Selection) -> None:
    write_record(path, selection)
