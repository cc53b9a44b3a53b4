"""Subcommands of the ``hseval`` CLI: one module per group, each with ``register(commands)``
that adds its parsers to the ``hseval`` sub-parser and sets ``func`` (``args -> exit code``).
Heavy imports happen inside the command functions, so ``hseval --help`` stays fast."""

from __future__ import annotations

import argparse
from collections.abc import Iterable

from hseval.core.errors import ConfigError


def _int_at_least(minimum: int, what: str):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {what}, got {value}")
        return value

    return parse


positive_int = _int_at_least(1, "a positive integer")
"""argparse type: an integer >= 1."""
non_negative_int = _int_at_least(0, "a non-negative integer")
"""argparse type: an integer >= 0 (seeds)."""


def refuse_unused(args: argparse.Namespace, options: Iterable[str], *, why: str) -> None:
    """Refuse, in one line, the first of ``options`` (argparse dests) given on the command line,
    saying ``why`` the mode of the command chosen does not use it: an option ignored in silence is a
    value the user believes was used. Such options default to None (a flag to False), so that one
    given is told apart from one left out."""
    for dest in options:
        if getattr(args, dest) not in (None, False, []):
            raise ConfigError(f"--{dest.replace('_', '-')} {why}")
