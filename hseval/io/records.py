"""Typed records of hseval's JSON files: one pydantic model per file, validated on every read, and
one way to turn a validation failure into the one-line error a user sees.

A model says what a file holds (names, types, ranges); :func:`read_record` parses a file into it
and names the file, the field, what was expected and what was found when it does not fit.
:func:`write_record` writes a record atomically as the strict JSON it reads back from. The pieces
that several files share live here too: the value types (:data:`Unit`, :data:`Levels` ...), the
tree as a record (:class:`TreeRecord`) and one epoch of training (:class:`HistoryEntry`, in
``run.json`` and again in ``metrics.json``). ``scripts/json_schemas.py`` writes each file's JSON
Schema from its model into ``docs/schemas/``.

Every number a record holds is bounded by its type, here: an integer is exact as a float64
(:data:`Integer`, :data:`Count`, :data:`Positive`: within :data:`INT_MAX`), a float is finite
(:data:`Finite`, :data:`NonNegative`, :data:`Unit`), and a free-form value (a config, a head's
options) is :data:`Json`, whose numbers are bounded alike; so no value a reader accepts overflows
numpy, pandas, a CSV or a chart downstream. A record's field takes one of these types, never a
bare ``int``, ``float`` or ``Any`` (``tests/test_records.py`` checks every record's JSON Schema for
it), and :func:`json_schema` says what the reader accepts.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any, TypeVar

import pydantic_core
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    PrivateAttr,
    StringConstraints,
    TypeAdapter,
    ValidationError,
    model_validator,
)
from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import PydanticCustomError
from typing_extensions import TypeAliasType

from hseval.core import fileio
from hseval.core.errors import HsevalError, RunFormatError, problem_text
from hseval.tree.hierarchy import Hierarchy

__all__ = ["Record", "read_record", "parse_record", "parse_json", "write_record", "validation_line", "Unit",
           "NonNegative", "Finite", "Integer", "Count", "Positive", "Json", "INT_MIN", "INT_MAX", "FLOAT_MAX", "Level",
           "Levels", "Sha256", "keys_like", "RecordSchema", "json_schema", "TreeRecord", "TestScores", "HistoryEntry",
           "level_keys"]


class Record(BaseModel):
    """A file's record: no unknown keys, no coercion ("1" is not 1), no NaN or infinity."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)


R = TypeVar("R", bound=BaseModel)
INT_MIN, INT_MAX = -(2**53 - 1), 2**53 - 1
"""The integers a file may hold: those a float64 holds exactly, as a CSV cell is read
(:func:`hseval.io.tables.parse_column`) and as the dashboard's charts (JavaScript) hold numbers;
well inside numpy's and pandas' int64."""
FLOAT_MAX = 1.7976931348623157e308
"""The largest finite float: a JSON number beyond it (``1e400``, ``10**400``) is no float."""
Integer = Annotated[int, Field(ge=INT_MIN, le=INT_MAX)]
Count = Annotated[int, Field(ge=0, le=INT_MAX)]
"""A number of things (samples, images, pairs), or an index or a seed: never below 0."""
Positive = Annotated[int, Field(ge=1, le=INT_MAX)]
"""An epoch, a number of processes or threads: at least 1."""
Finite = Annotated[float, Field(ge=-FLOAT_MAX, le=FLOAT_MAX)]
"""Any finite number (NaN and infinities are refused by :class:`Record`'s config too)."""
Unit = Annotated[float, Field(ge=0, le=1)]
"""A fraction: an accuracy, a probability."""
NonNegative = Annotated[float, Field(ge=0, le=FLOAT_MAX)]
_JsonValue = TypeAliasType("JsonValue", None | bool | Integer | Finite | str | list["_JsonValue"]
                           | dict[str, "_JsonValue"])


def _json_value(value: Any) -> Any:
    """``value`` if it is JSON whose every number is bounded as :data:`Integer` or :data:`Finite`,
    else the first value that is not, with where it is inside ``value`` (``.optim.lr``)."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        at, item = stack.pop()
        if isinstance(item, dict):
            bad = next((k for k in item if not isinstance(k, str)), None)
            if bad is not None:
                raise PydanticCustomError("json_value", "must have text keys", {"at": at, "value": bad})
            stack.extend((f"{at}.{k}", v) for k, v in reversed(item.items()))
        elif isinstance(item, (list, tuple)):
            stack.extend((f"{at}[{k}]", v) for k, v in reversed(list(enumerate(item))))
        elif isinstance(item, bool) or item is None or isinstance(item, str):
            continue
        elif isinstance(item, int) and not INT_MIN <= item <= INT_MAX:
            raise PydanticCustomError("json_value", f"must be an integer within ±{INT_MAX}", {"at": at, "value": item})
        elif isinstance(item, float) and not math.isfinite(item):
            raise PydanticCustomError("json_value", "must be a finite number", {"at": at, "value": item})
        elif not isinstance(item, (int, float)):
            raise PydanticCustomError("json_value", "must be a JSON value", {"at": at, "value": type(item).__name__})
    return value


Json = Annotated[Any, PlainValidator(_json_value, json_schema_input_type=_JsonValue)]
"""A free-form JSON value (a config, a head's options, an input's identity): any nesting of
objects, lists, text, booleans and null, its numbers bounded as the record's own."""
Level = Annotated[str, StringConstraints(pattern=r"^[1-9][0-9]{0,3}$")]
"""A depth of the tree as a JSON key: "1" is the level of the root's children."""
Levels = dict[Level, Unit | None]
"""One fraction per super-class level: {"1": 0.9, "2": 0.8}; null where it could not be computed."""
Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


def keys_like(pattern: str, *, narrower: dict[str, Any] | None = None) -> ConfigDict:
    """The config of a record that takes further keys named like ``pattern`` (typed by its
    ``__pydantic_extra__`` annotation), and says so in its JSON Schema; ``narrower``: {pattern of
    some of those keys: the type their values have} where a validator of the record narrows them."""
    def schema(out: dict[str, Any]) -> None:
        out["patternProperties"] = {pattern: out.pop("additionalProperties"),
                                    **{p: TypeAdapter(t).json_schema() for p, t in (narrower or {}).items()}}
        out["additionalProperties"] = False

    return ConfigDict(extra="allow", json_schema_extra=schema)


class RecordSchema(GenerateJsonSchema):
    """The JSON Schema of a record as its reader reads it: a mapping whose keys follow a pattern
    (:data:`Levels`) takes no other key (pydantic leaves ``additionalProperties`` open there)."""

    def dict_schema(self, schema: Any) -> dict[str, Any]:
        out = super().dict_schema(schema)
        if "patternProperties" in out:
            out.setdefault("additionalProperties", False)
        return out


def json_schema(record: type[BaseModel] | TypeAdapter) -> dict[str, Any]:
    """The JSON Schema of ``record`` (a model, or an adapter of a union of models): what its reader accepts."""
    generate = record.json_schema if isinstance(record, TypeAdapter) else record.model_json_schema
    return generate(schema_generator=RecordSchema)


def level_keys(where: str, levels: dict[str, Any] | None, tree: Hierarchy) -> None:
    """Refuse a key of ``levels`` that is not a super-class level of ``tree`` (1..depth-1)."""
    extra = [d for d in levels or {} if not 1 <= int(d) < tree.max_depth]
    if extra:
        raise ValueError(f"'{where}.{extra[0]}' is not a super-class level of the run's tree (1..{tree.max_depth - 1})")


class TreeRecord(Record):
    """A hierarchy as ``Hierarchy.to_dict`` writes it; :attr:`tree` is the checked tree."""

    root: str
    num_leaves: Positive
    names: list[str]
    parents: list[Annotated[int, Field(ge=-1, le=INT_MAX)]]  # -1: a child of the root
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

    epoch: Positive
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
        name = problem_text({**problem, "loc": loc[:-1]})[0] if loc[-1:] == ("[key]",) else field
        return f"{where}: unknown key '{name}'"
    if not field and kind in ("model_type", "dict_type"):
        return f"{where}: expected a JSON object, got {type(problem['input']).__name__}"
    if kind == "value_error":
        return f"{where}: '{field}': {message}" if field else f"{where}: {message}"
    if kind == "json_value":  # inside a free-form value: the key path down to the bad value
        inner = problem["ctx"]
        return f"{where}: '{field}{inner['at']}' {problem['msg']}, got {_shown(inner['value'])}"
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
