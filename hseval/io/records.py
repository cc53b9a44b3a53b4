"""Typed records of hseval's JSON files: one pydantic model per file, validated on every read, and
one way to turn a validation failure into the one-line error a user sees.

A model says what a file holds (names, types, ranges); :func:`read_record` parses a file into it
and names the file, the field, what was expected and what was found when it does not fit.
:func:`write_record` writes a record atomically as the strict JSON it reads back from.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from hseval.core import fileio
from hseval.core.errors import HsevalError, RunFormatError

__all__ = ["Record", "read_record", "parse_record", "write_record", "validation_line"]


class Record(BaseModel):
    """A file's record: no unknown keys, no coercion ("1" is not 1), no NaN or infinity."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)


R = TypeVar("R", bound=BaseModel)


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value, allow_nan=True, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def validation_line(exc: ValidationError, where: str | Path) -> str:
    """The first problem of ``exc`` as ``WHERE: 'field.sub': message, got VALUE``."""
    problem = exc.errors(include_url=False)[0]
    field = ".".join(str(part) for part in problem["loc"])
    if problem["type"] == "json_invalid":
        return f"{where}: not valid JSON ({problem['msg'].removeprefix('Invalid JSON: ')})"
    if problem["type"] == "missing":
        return f"{where}: no '{field}'"
    if problem["type"] == "extra_forbidden":
        return f"{where}: unknown key '{field}'"
    got = "" if problem["type"].startswith("value_error") and "input" not in problem else \
        f", got {_shown(problem.get('input'))}"
    message = problem["msg"].removeprefix("Value error, ").replace("Input should be", "must be")
    return f"{where}: '{field}' {message[:1].lower() + message[1:]}{got}" if field else f"{where}: {message}{got}"


def parse_record(model: type[R], data: Any, *, where: str | Path, error: type[HsevalError] = RunFormatError,
                 hint: str = "") -> R:
    """``data`` (bytes or str of JSON, or already parsed) as a ``model``, or one line ``error``
    naming ``where``, the field and what was wrong (``hint`` ends it: how to fix it)."""
    try:
        if isinstance(data, (bytes, str)):
            return model.model_validate_json(data)
        return model.model_validate(data)
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
