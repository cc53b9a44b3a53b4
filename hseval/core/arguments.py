"""The arguments of hseval's public functions, checked where they are called, as the command line
checks its options: :func:`checked` is :func:`pydantic.validate_call` against the function's
annotations (strict: a float is no integer, a bool or a string no number; numbers finite), whose
errors it gives as one line naming the function, the argument, what it must be and what it got: a
wrong type a ``TypeError``, a wrong value a ``ValueError``::

    @checked
    def topk_accuracy(scores: Array, target: Array, k: Positive = 1) -> float: ...

Arrays (:data:`Array`) are checked by the functions that use them (their shapes depend on each other).
"""

from __future__ import annotations

import functools
import inspect
import math
import reprlib
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import numpy as np
from pydantic import BeforeValidator, ConfigDict, Field, SkipValidation, ValidationError, validate_call

from hseval.core.errors import problem_text

__all__ = ["checked", "shown", "bounds", "number_type", "Array", "Positive", "Count", "Size", "Threads", "Seed",
           "CONFIG"]

F = TypeVar("F", bound=Callable[..., Any])
Array = SkipValidation[np.ndarray]
"""An array, or what ``numpy.asarray`` takes (a torch tensor, a list): checked by the function."""
Positive = Annotated[int, BeforeValidator(lambda value: _plain(value)), Field(ge=1)]
"""An integer >= 1 (a numpy integer too, as a key or an item)."""
Count = Annotated[int, BeforeValidator(lambda value: _plain(value)), Field(ge=0)]
SIZE_MAX = 2**31 - 1
THREADS_MAX = 1024
Size = Annotated[int, BeforeValidator(lambda value: _plain(value)), Field(ge=1, le=SIZE_MAX)]
"""A size or count as torch's C ints (and Slurm's) take it: a batch, channels, an image's side, a depth."""
Threads = Annotated[int, BeforeValidator(lambda value: _plain(value)), Field(ge=1, le=THREADS_MAX)]
"""Threads or loader processes: far more crash torch (100,000 threads: SIGSEGV)."""
Seed = Annotated[int, BeforeValidator(lambda value: _plain(value)), Field(ge=0, le=2**32 - 1)]
"""A random seed: numpy's are 32-bit."""
FLOAT32_MAX = 3.4028234663852886e38
"""The largest finite float32: heads and optimisers compute in float32, so no setting or option is
larger in size (one threshold for every number that enters a model)."""


def within_float32(value: Any) -> Any:
    """``value`` when it is not a number or a number within float32's range; a ValueError else."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and not abs(value) <= FLOAT32_MAX:
        raise ValueError(f"must be a finite number of at most {FLOAT32_MAX:.3g} in size")
    return value


Share = Annotated[float, Field(gt=0, lt=1)]
"""A share of a set strictly between none and all of it (``data.val_fraction``)."""

CONFIG = ConfigDict(strict=True, arbitrary_types_allowed=True, allow_inf_nan=False)
_CALL = {"missing_argument": "missing argument", "missing_keyword_only_argument": "missing argument",
         "missing_positional_only_argument": "missing argument", "unexpected_keyword_argument": "no argument",
         "unexpected_positional_argument": "too many positional arguments", "multiple_argument_values":
         "two values for argument"}
_repr = reprlib.Repr()
_repr.maxstring, _repr.maxother, _repr.maxlist = 40, 40, 4


def bounds(annotation: Any) -> tuple[float, float]:
    """(lowest, highest) value of a number type's ``Field`` constraints (``X | None``: of X), the
    one place an option's bounds are read from: an exclusive bound as the nearest value inside it
    for an int, as itself for a float; an open side infinite.

    >>> bounds(Size), bounds(Annotated[float, Field(gt=0, le=1)] | None)
    ((1, 2147483647), (0, 1))
    """
    number = _number(annotation)
    low, high = -math.inf, math.inf
    step = 1 if number_type(annotation) is int else 0
    for item in typing.get_args(number)[1:]:
        for limit in getattr(item, "metadata", ()):
            low = max(low, getattr(limit, "ge", -math.inf), getattr(limit, "gt", -math.inf) + step)
            high = min(high, getattr(limit, "le", math.inf), getattr(limit, "lt", math.inf) - step)
    return low, high


def number_type(annotation: Any) -> type:
    """``int`` or ``float``: what a number type (``X | None``: X) holds."""
    number = _number(annotation)
    return (typing.get_args(number) or (number,))[0]


def _number(annotation: Any) -> Any:
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    return next(a for a in typing.get_args(annotation) if a is not type(None)) if union else annotation


def shown(value: Any) -> str:
    """A value as an error message shows it: its type and a short repr."""
    return f"{type(value).__name__} {_repr.repr(value)}"


def checked(function: F) -> F:
    """Check the annotated arguments of ``function`` each time it is called; an error starts with
    the function's name (a class's for ``__init__``). A numpy scalar counts as the number it holds.
    The annotations are read on the first call (a method may name its class, which is then defined)."""
    validated = functools.cache(lambda: validate_call(config=CONFIG)(function))
    owner = function.__qualname__.removesuffix(".__init__")
    names = list(inspect.signature(function).parameters)

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return validated()(*map(_plain, args), **{key: _plain(value) for key, value in kwargs.items()})
        except ValidationError as exc:
            if exc.title != function.__qualname__:  # raised inside the function: not about its arguments
                raise
            raise _one_line(exc, owner, names) from None

    return call  # type: ignore[return-value]


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _one_line(exc: ValidationError, owner: str, names: list[str]) -> TypeError | ValueError:
    problems = [{**p, "loc": (names[p["loc"][0]], *p["loc"][1:]) if isinstance(p["loc"][0], int) else p["loc"]}
                for p in exc.errors(include_url=False)]  # an argument given by position: its name
    first, kind = problems[0], problems[0]["type"]
    if kind in _CALL:
        return TypeError(f"{owner}(): {_CALL[kind]} {first['loc'][-1]!r}")
    field, must = problem_text(first)
    if len(problems) > 1 and all(len(p["loc"]) == 2 and isinstance(p["loc"][1], str) for p in problems):
        field, must = str(first["loc"][0]), " or ".join(problem_text(p)[1] for p in problems)
        must = must.replace(" or must be", " or")  # a union: what each of its members takes
    wrong_type = kind.endswith("_type") or kind in ("is_instance_of", "sequence_str")
    hint = (first.get("ctx") or {}).get("hint")
    got = shown(first["input"]) if wrong_type else repr(first["input"])
    return (TypeError if wrong_type else ValueError)(f"{owner}(): {field} {must}, got {got}"
                                                     + (f"; {hint}" if hint else ""))
