"""One registry for every pluggable kind: heads, backbones, datasets, hierarchy builders and
projections.

A module adds a thing with a decorator; the rest of hseval asks the registry for names, for the
thing, and for its options (the keyword-only parameters of the function, or of the class's
``__init__``, with their annotated types). Unknown names and unknown options are refused with the
same one-line :class:`~hseval.core.errors.ConfigError` everywhere.

>>> from hseval.core.registry import Registry
>>> colours = Registry("colour")
>>> @colours.register("red")
... def red(*, shade: float = 1.0) -> str:
...     return f"red at {shade}"
>>> colours.names(), colours.options("red")
(['red'], {'shade': <class 'float'>})
>>> colours.get("blue")
Traceback (most recent call last):
    ...
hseval.core.errors.ConfigError: unknown colour 'blue'; choose one of red
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

from hseval.core.errors import ConfigError

__all__ = ["Registry", "keyword_options", "refuse_unknown_options"]

T = TypeVar("T")


def keyword_options(target: Callable) -> dict[str, Any]:
    """{name: annotated type (``Any`` when none)} of the keyword-only parameters of ``target`` (a
    function, or a class: its ``__init__``)."""
    function = target.__init__ if inspect.isclass(target) else target
    try:
        hints = typing.get_type_hints(function, include_extras=True)
    except (NameError, TypeError):  # an annotation that does not resolve: names only
        hints = {}
    return {p.name: hints.get(p.name, Any) for p in inspect.signature(function).parameters.values()
            if p.kind is inspect.Parameter.KEYWORD_ONLY}


def refuse_unknown_options(what: str, given: Iterable[str], accepted: Iterable[str]) -> None:
    """A ConfigError naming the first option of ``given`` that ``what`` does not take, and the
    options it does take."""
    accepted = list(accepted)
    unknown = sorted(set(given) - set(accepted))
    if unknown:
        raise ConfigError(f"{what} has no option {unknown[0]!r}; its options are: {', '.join(accepted) or '(none)'}")


class Registry(Generic[T]):
    """Named things of one kind, in registration order."""

    def __init__(self, kind: str, *, unknown: str | None = None) -> None:
        self.kind = kind
        self._unknown = unknown or f"unknown {kind} {{name!r}}"
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: add the decorated function or class under ``name`` (twice is a bug)."""
        return functools.partial(self.add, name)

    def add(self, name: str, thing: T) -> T:
        if name in self._items:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._items[name] = thing
        return thing

    def names(self) -> list[str]:
        return list(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def get(self, name: str) -> T:
        """The thing registered as ``name``; a one-line ConfigError listing the names otherwise."""
        try:
            return self._items[name]
        except (KeyError, TypeError):
            message = self._unknown.format(name=name)
            raise ConfigError(f"{message}; choose one of {', '.join(self._items)}") from None

    def options(self, name: str) -> dict[str, Any]:
        """{option: its annotated type} that ``name`` takes (its keyword-only parameters)."""
        return keyword_options(self.get(name))
