"""Settings as YAML: the one reader of recipes and of ``KEY=VALUE`` overrides (``--set``, ``--sweep``).

PyYAML reads YAML 1.1, where a float needs a dot and a signed exponent: ``5e-2`` and ``1e6`` are
text there, and a setting written as people write numbers was refused as "not a number". The
reader here also takes YAML 1.2's and Python's float forms (``5e-2``, ``1E6``, ``-2.5e+3``,
``1_000.5``); what YAML 1.1 already read is read as before (``.inf`` and ``.nan`` are floats that
the settings' finite checks refuse, ``nan`` and ``inf`` stay text)."""

from __future__ import annotations

import re
from typing import Any

import yaml

from hseval.core.errors import ConfigError

__all__ = ["SettingsLoader", "load_yaml", "parse_override"]

_DIGITS = r"[0-9](?:_?[0-9])*"  # Python's digits: an underscore only between two of them
FLOAT = re.compile(rf"^[-+]?(?:{_DIGITS}(?:\.(?:{_DIGITS})?)?|\.{_DIGITS})(?:[eE][-+]?{_DIGITS})?$")
"""A float as Python's ``float()`` and YAML 1.2 read it (its ints are matched first, as ints)."""


class SettingsLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` (no Python objects) with YAML 1.2's and Python's floats."""


SettingsLoader.add_implicit_resolver("tag:yaml.org,2002:float", FLOAT, list("-+0123456789."))


def load_yaml(text: str) -> Any:
    """The document of ``text`` read by :class:`SettingsLoader`; ``yaml.YAMLError`` where it is no YAML.

    >>> load_yaml("lr: 5e-2\\nalpha: 1E6\\nsteps: 1_000\\nname: 1e6x")
    {'lr': 0.05, 'alpha': 1000000.0, 'steps': 1000, 'name': '1e6x'}
    """
    loader = SettingsLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def parse_override(item: str, *, option: str = "--set", form: str = "key=value") -> tuple[str, Any]:
    """``(key, value)`` of one ``KEY=VALUE`` string: the key stripped, the value a YAML scalar
    (``0.5``, ``5e-2``, ``true``, ``[1, 2]``; text that is not YAML stays text; nothing is None).
    Without ``=`` or a key: a one-line error naming ``option`` and the ``form`` it expects.

    >>> parse_override("optim.lr=5e-2"), parse_override("head.name=: x"), parse_override("seed=")
    (('optim.lr', 0.05), ('head.name', ': x'), ('seed', None))
    """
    key, sep, text = item.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"{option} expects {form}, got {item!r}")
    try:
        return key.strip(), load_yaml(text) if text.strip() else None
    except (yaml.YAMLError, RecursionError):  # not a YAML scalar (or nested too deeply): the text itself
        return key.strip(), text
