"""The model: heads (a registry, one module per head), backbones, the classifier that joins them,
and the radius guard that checks a sphere head's logit scale. The heads are the public part:
``from hseval.nn import create_head``.

The heads are imported on first use (PEP 562): the radius guard is arithmetic on numbers, and the
report that uses it should not load torch and geoopt (seconds) to get it."""

from __future__ import annotations

import importlib

__all__ = ["HEADS", "Head", "create_head", "list_heads"]


def __getattr__(name: str):
    if name in __all__:
        return getattr(importlib.import_module("hseval.nn.heads"), name)
    raise AttributeError(f"module 'hseval.nn' has no attribute {name!r}")
