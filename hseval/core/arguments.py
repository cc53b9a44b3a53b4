"""The arguments of hseval's public functions, checked where they are called, as the command line
checks its options: a wrong type is a ``TypeError``, a wrong value a ``ValueError``, and each names
the function, the argument, what it must be and what it got, in one line.

:func:`checked` declares the check of each argument beside the function::

    @checked(hierarchy=instance(Hierarchy), k=integer(minimum=1))
    def topk_accuracy(scores, target, k=1): ...

A rule takes the argument's name and value and returns the value to use (``integer`` gives an
``int`` for a numpy integer), or raises. Arrays are checked by the functions that use them
(their shapes depend on each other); the rules here are for everything else.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import os
import reprlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import numpy as np

__all__ = ["Rule", "checked", "instance", "integer", "number", "choice", "flag", "text", "path", "optional", "integers",
           "sequence", "shown"]

Rule = Callable[[str, Any], Any]
"""(the argument's name, its value) -> the value to use; raises TypeError or ValueError naming it."""
F = TypeVar("F", bound=Callable[..., Any])

_repr = reprlib.Repr()
_repr.maxstring, _repr.maxother, _repr.maxlist = 40, 40, 4


def shown(value: Any) -> str:
    """A value as an error message shows it: its type and a short repr."""
    return f"{type(value).__name__} {_repr.repr(value)}"


def checked(**rules: Rule) -> Callable[[F], F]:
    """Check the arguments named in ``rules`` each time the decorated function is called; an error
    starts with the function's name (a class's for ``__init__``)."""
    def decorate(function: F) -> F:
        signature = inspect.signature(function)
        unknown = set(rules) - set(signature.parameters)
        if unknown:
            raise TypeError(f"checked: {function.__qualname__} has no argument {sorted(unknown)[0]!r}")
        owner = function.__qualname__.removesuffix(".__init__")

        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError as exc:
                raise TypeError(f"{owner}(): {exc}") from None
            for name, rule in rules.items():
                if name in bound.arguments:
                    try:
                        bound.arguments[name] = rule(name, bound.arguments[name])
                    except (TypeError, ValueError) as exc:
                        raise type(exc)(f"{owner}(): {exc}") from None
            return function(*bound.args, **bound.kwargs)

        return call  # type: ignore[return-value]

    return decorate


def instance(kind: type | tuple[type, ...], *, what: str | None = None,
             hint: Callable[[Any], str] | None = None) -> Rule:
    """An instance of ``kind`` (``what`` names it; ``hint(value)`` says how to get one from what came)."""
    described = what or (kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind))

    def rule(name: str, value: Any) -> Any:
        if not isinstance(value, kind):
            extra = hint(value) if hint else ""
            raise TypeError(f"{name} must be a {described}, got {shown(value)}" + (f"; {extra}" if extra else ""))
        return value
    return rule


def _bounds(name: str, value: float, minimum: float | None, maximum: float | None) -> None:
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be at least {minimum:g}, got {value:g}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be at most {maximum:g}, got {value:g}")


def integer(*, minimum: int | None = None, maximum: int | None = None) -> Rule:
    """A whole number (a Python or numpy integer, not a bool nor a float) within the bounds."""
    def rule(name: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{name} must be an integer, got {shown(value)}")
        _bounds(name, int(value), minimum, maximum)
        return int(value)
    return rule


def number(*, minimum: float | None = None, maximum: float | None = None, above: float | None = None) -> Rule:
    """A finite real number (not a bool) within the bounds (``above``: strictly greater)."""
    def rule(name: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{name} must be a number, got {shown(value)}")
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {value}")
        if above is not None and value <= above:
            raise ValueError(f"{name} must be greater than {above:g}, got {value:g}")
        _bounds(name, value, minimum, maximum)
        return value
    return rule


def choice(*options: str) -> Rule:
    """One of ``options``."""
    listed = ", ".join(repr(o) for o in options)

    def rule(name: str, value: Any) -> str:
        if not isinstance(value, str):
            raise TypeError(f"{name} must be one of {listed}, got {shown(value)}")
        if value not in options:
            raise ValueError(f"{name} must be one of {listed}, got {value!r}")
        return value
    return rule


def flag(name: str, value: Any) -> bool:
    """True or False (a numpy bool too)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {shown(value)}")
    return bool(value)


def text(name: str, value: Any) -> str:
    """A string."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {shown(value)}")
    return value


def path(name: str, value: Any) -> Any:
    """A file system path: a string or an ``os.PathLike`` (``pathlib.Path``)."""
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or pathlib.Path), got {shown(value)}")
    return value


def optional(inner: Rule) -> Rule:
    """None, or what ``inner`` accepts."""
    def rule(name: str, value: Any) -> Any:
        return None if value is None else inner(name, value)
    return rule


def sequence(item: Rule | None = None, *, what: str = "a sequence") -> Rule:
    """A list, tuple or other iterable collection that is not a string or a mapping (one string
    would be read as its characters), each item checked by ``item``; returned as a list."""
    def rule(name: str, value: Any) -> list:
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
            raise TypeError(f"{name} must be {what}, got {shown(value)}")
        items = list(value)
        return items if item is None else [item(f"{name}[{k}]", v) for k, v in enumerate(items)]
    return rule


def integers(*, minimum: int | None = None) -> Rule:
    """A collection of integers (each at least ``minimum``), as a tuple."""
    each = integer(minimum=minimum)
    inner = sequence(each, what="a sequence of integers")

    def rule(name: str, value: Any) -> tuple[int, ...]:
        return tuple(inner(name, value))
    return rule
