"""Subcommands of the ``hseval`` CLI: one module per group, each with ``register(commands)``
that adds its parsers to the ``hseval`` sub-parser and sets ``func`` (``args -> exit code``); a
group's part that stands on its own sits beside it (:mod:`hseval.cli.train_plan`, the runs that
``train-all`` plans). Here, the parsing of option values they share. Heavy imports happen inside
the command functions, so ``hseval --help`` stays fast."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import Any

from hseval.core.arguments import SIZE_MAX as INT_MAX
from hseval.core.arguments import Seed, Size, bounds, number_type
from hseval.core.errors import ConfigError


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:20] + "..." + text[-8:])


def _number(text: str) -> str:
    """A number as typed, shortened when long (a 5,000-digit integer)."""
    text = text.strip()
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} characters)"


def count_int(minimum: int = 1, maximum: int = INT_MAX):
    """argparse type: a count (of GPUs, cores, minutes...) from ``minimum`` to ``maximum``."""
    what = {0: "a non-negative integer", 1: "a positive integer"}.get(minimum, f"an integer of at least {minimum}")

    def parse(text: str) -> int:
        number = _number(text)
        try:
            value = int(text)
        except ValueError:  # a float, nan, text; or more digits than Python converts
            if not text.strip().lstrip("+-").isdecimal():
                raise argparse.ArgumentTypeError(f"expected {what}, got {_shown(text)}") from None
            value = minimum - 1 if number.startswith("-") else maximum + 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {what}, got {number}")
        if value > maximum:
            raise argparse.ArgumentTypeError(f"expected {what} of at most {maximum}, got {number}")
        return value

    parse.bounds = (minimum, maximum)  # type: ignore[attr-defined]  # the tests read them
    return parse


def positive_number(what: str, *, minimum: float, maximum: float):
    """argparse type: a finite number from ``minimum`` (> 0) to ``maximum`` (``what``, e.g. "GB");
    nan and infinity are refused, as every number of a recipe is."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number of {what}, got {_shown(text)}") from None
        if not minimum <= value <= maximum:  # nan compares false
            raise argparse.ArgumentTypeError(f"expected a number of {what} from {minimum:.12g} to {maximum:.12g}, got "
                                             f"{_number(text)}")
        return value

    parse.bounds = (minimum, maximum)  # type: ignore[attr-defined]
    return parse


def bounded(annotation: Any, *, what: str = ""):
    """argparse type of an option whose value is stored or checked as ``annotation`` (a record's
    field type, a checked function's argument type): its bounds are that type's, read from it
    (:func:`hseval.core.arguments.bounds`), so that nothing the command line takes is refused when
    written or passed on. An int type: :func:`count_int`; a float type: :func:`positive_number` of ``what``."""
    low, high = bounds(annotation)
    if number_type(annotation) is int:
        return count_int(int(low), int(high))
    return positive_number(what, minimum=low, maximum=high)


positive_int = bounded(Size)
non_negative_int = bounded(Seed)


def comma_list(text: str, what: str) -> list[str]:
    """The items of a comma-separated option value (``--heads plain,riemann``), stripped, empty ones
    dropped; ``what`` names the option in the error for a value of no item."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise ConfigError(f"{what} is empty")
    return items


def refuse_unused(args: argparse.Namespace, options: Iterable[str], *, why: str) -> None:
    """Refuse, in one line, the first of ``options`` (argparse dests) given on the command line,
    saying ``why`` the mode of the command chosen does not use it: an option ignored in silence is a
    value the user believes was used. Such options default to None (a flag to False), so that one
    given is told apart from one left out."""
    for dest in options:
        if getattr(args, dest) not in (None, False, []):
            raise ConfigError(f"--{dest.replace('_', '-')} {why}")
