"""Subcommands of the ``hseval`` CLI: one module per group, each with ``register(commands)``
that adds its parsers to the ``hseval`` sub-parser and sets ``func`` (``args -> exit code``).
Heavy imports happen inside the command functions, so ``hseval --help`` stays fast."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value
