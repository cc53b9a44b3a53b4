"""``KEY=VALUE`` overrides of the command line (``--set``): the value read as a YAML scalar."""

from __future__ import annotations

from typing import Any

import yaml

from hseval.core.errors import ConfigError

__all__ = ["parse_override"]


def parse_override(item: str, *, option: str = "--set", form: str = "key=value") -> tuple[str, Any]:
    """``(key, value)`` of one ``KEY=VALUE`` string: the key stripped, the value a YAML scalar
    (``0.5``, ``true``, ``[1, 2]``; text that is not YAML stays text; nothing is None). Without
    ``=`` or a key: a one-line error naming ``option`` and the ``form`` it expects.

    >>> parse_override("optim.lr=0.05"), parse_override("head.name=: x"), parse_override("seed=")
    (('optim.lr', 0.05), ('head.name', ': x'), ('seed', None))
    """
    key, sep, text = item.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"{option} expects {form}, got {item!r}")
    try:
        return key.strip(), yaml.safe_load(text) if text.strip() else None
    except (yaml.YAMLError, RecursionError):  # not a YAML scalar (or nested too deeply): the text itself
        return key.strip(), text
