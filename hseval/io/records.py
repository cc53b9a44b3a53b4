"""Typed records of hseval's JSON files: one pydantic model per file, validated on every read, and
one way to turn a validation failure into the one-line error a user sees.

A model says what a file holds (names, types, ranges); :func:`read_record` parses a file into it
and names the file, the field, what was expected and what was found when it does not fit.
:func:`write_record` writes a record atomically as the strict JSON it reads back from. The pieces
that several files share live here too: the value types (:data:`Unit`, :data:`Levels` ...), the
tree as a record (:class:`TreeRecord`) and one epoch of training (:class:`HistoryEntry`, in
``run.json`` and again in ``metrics.json``). ``scripts/json_schemas.py`` writes each file's JSON
Schema from its model into ``docs/schemas/``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, TypeVar

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, StringConstraints, ValidationError, model_validator

from hseval.core import fileio
from hseval.core.errors import HsevalError, RunFormatError, problem_text
from hseval.tree.hierarchy import Hierarchy

__all__ = ["Record", "read_record", "parse_record", "parse_json", "write_record", "validation_line", "Unit",
           "NonNegative", "Count", "Level", "Levels", "Sha256", "keys_like", "TreeRecord", "TestScores", "HistoryEntry",
           "level_keys"]


class Record(BaseModel):
    """A file's record: no unknown keys, no coercion ("1" is not 1), no NaN or infinity."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)


R = TypeVar("R", bound=BaseModel)
Unit = Annotated[float, Field(ge=0, le=1)]
"""A fraction: an accuracy, a probability."""
NonNegative = Annotated[float, Field(ge=0)]
Count = Annotated[int, Field(ge=0)]
Level = Annotated[str, StringConstraints(pattern=r"^[1-9][0-9]{0,3}$")]
"""A depth of the tree as a JSON key: "1" is the level of the root's children."""
Levels = dict[Level, Unit | None]
"""One fraction per super-class level: {"1": 0.9, "2": 0.8}; null where it could not be computed."""
Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


def keys_like(pattern: str) -> ConfigDict:
    """The config of a record that takes further keys named like ``pattern`` (typed by its
    ``__pydantic_extra__`` annotation), and says so in its JSON Schema."""
    def schema(out: dict[str, Any]) -> None:
        out["patternProperties"] = {pattern: out.pop("additionalProperties")}
        out["additionalProperties"] = False

    return ConfigDict(extra="allow", json_schema_extra=schema)


def level_keys(where: str, levels: dict[str, Any] | None, tree: Hierarchy) -> None:
    """Refuse a key of ``levels`` that is not a super-class level of ``tree`` (1..depth-1)."""
    extra = [d for d in levels or {} if not 1 <= int(d) < tree.max_depth]
    if extra:
        raise ValueError(f"'{where}.{extra[0]}' is not a super-class level of the run's tree (1..{tree.max_depth - 1})")


class TreeRecord(Record):
    """A hierarchy as ``Hierarchy.to_dict`` writes it; :attr:`tree` is the checked tree."""

    root: str
    num_leaves: int
    names: list[str]
    parents: list[int]
    labels: dict[str, str] | None = None  # display labels (NBDT's), only where a node has one
    _tree: Hierarchy = PrivateAttr()

    @model_validator(mode="after")
    def _build(self) -> TreeRecord:
        self._tree = Hierarchy.from_dict(self.model_dump())  # a HierarchyError is a ValueError: one line
        return self

    @property
    def tree(self) -> Hierarchy:
        return self._tree


class TestScores(Record):
    """The split a training tests on at the end of an epoch (``run.json``'s final ``metrics``):
    the validation split where the run has one (``val_*``), else the test split (``test_*``); and
    the mean norm of its features."""

    val_loss: NonNegative | None = None
    val_acc: Unit | None = None
    val_samples: Count | None = None
    val_superclass_acc: Levels | None = None
    test_loss: NonNegative | None = None
    test_acc: Unit | None = None
    test_samples: Count | None = None
    test_superclass_acc: Levels | None = None
    feature_norm: NonNegative | None = None


class HistoryEntry(TestScores):
    """One epoch of training (``run.json``'s and ``metrics.json``'s ``history``, ``history.csv``'s
    lines): the test scores only for epochs that were tested, the initial scale only in the first."""

    epoch: int = Field(ge=1)
    lr: NonNegative | None = None
    initial_feature_norm: NonNegative | None = None
    initial_class_norm: NonNegative | None = None
    train_loss: NonNegative | None = None
    train_acc: Unit | None = None
    images_per_s: NonNegative | None = None
    seconds: NonNegative | None = None


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value, allow_nan=True, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def validation_line(exc: ValidationError, where: str | Path) -> str:
    """The first problem of ``exc`` as ``WHERE: 'field.sub' must be ..., got VALUE``."""
    problem = exc.errors(include_url=False)[0]
    kind, loc = problem["type"], problem["loc"]
    field, message = problem_text(problem)
    if kind == "missing":
        return f"{where}: no '{field}'"
    if kind == "extra_forbidden" or loc[-1:] == ("[key]",) or (kind == "string_pattern_mismatch" and
                                                                 loc[-1:] == (problem["input"],)):
        return f"{where}: unknown key '{field.removesuffix('.[key]')}'"
    if not field and kind in ("model_type", "dict_type"):
        return f"{where}: expected a JSON object, got {type(problem['input']).__name__}"
    if kind == "value_error":
        return f"{where}: '{field}': {message}" if field else f"{where}: {message}"
    return f"{where}: '{field}' {message}, got {_shown(problem['input'])}"


def parse_json(data: bytes | str, *, where: str | Path, error: type[HsevalError] = RunFormatError,
               hint: str = "") -> Any:
    """The JSON value of ``data`` (keys in the file's order), or one line ``error`` naming
    ``where`` and what is wrong (not UTF-8, not JSON, nested too deeply)."""
    end = f"; {hint}" if hint else ""
    try:
        return pydantic_core.from_json(_text(data, where=where, error=error, hint=hint))
    except ValueError as exc:
        raise error(f"{where}: not valid JSON ({exc}){end}") from None


def _text(data: bytes | str, *, where: str | Path, error: type[HsevalError], hint: str) -> str:
    if isinstance(data, str):
        return data
    try:
        return fileio.decode(data)
    except UnicodeDecodeError as exc:
        raise error(f"{where}: not UTF-8 text (byte {exc.start})" + (f"; {hint}" if hint else "")) from None


def parse_record(model: type[R], data: Any, *, where: str | Path, error: type[HsevalError] = RunFormatError,
                 hint: str = "") -> R:
    """``data`` (bytes or str of JSON, or already parsed) as a ``model``, or one line ``error``
    naming ``where``, the field and what was wrong (``hint`` ends it: how to fix it)."""
    validate = model.model_validate
    if isinstance(data, (bytes, str)):
        data = _text(data, where=where, error=error, hint=hint)
        parse_json(data, where=where, error=error, hint=hint)  # not UTF-8, not JSON: its own one line
        validate = model.model_validate_json  # JSON's types: a date is a string there, strictly typed
    try:
        return validate(data)
    except ValidationError as exc:
        raise error(validation_line(exc, where) + (f"; {hint}" if hint else "")) from None


def read_record(model: type[R], path: str | Path, *, what: str, error: type[HsevalError] = RunFormatError,
                hint: str = "") -> R:
    """The file ``path`` (``what`` names it for the user) parsed into ``model``."""
    data = fileio.read_bytes(path, what=what, error=error)
    return parse_record(model, data, where=path, error=error, hint=hint)


def write_record(path: str | Path, record: BaseModel) -> None:
    """``record`` as indented strict JSON, written atomically."""
    fileio.write_json(path, record.model_dump(mode="json"))
