"""Subcommands of the ``hseval`` CLI: one module per group, each with ``register(commands)``
that adds its parsers to the ``hseval`` sub-parser and sets ``func`` (``args -> exit code``).
Heavy imports happen inside the command functions, so ``hseval --help`` stays fast."""

from __future__ import annotations

import argparse


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
