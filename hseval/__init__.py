"""hseval: train, evaluate and inspect hierarchical classifiers built with the hierarchical-spheres
last layer W = Δ·D·H (Scieur & Kim, "Connecting Sphere Manifolds Hierarchically for
Regularization", ICML 2021).

The public surface: :class:`Hierarchy`, :func:`read_hierarchy`, :func:`write_hierarchy` and
:func:`load_run` here, ``hseval.nn.create_head`` (the heads) and ``hseval.metrics`` (the metrics,
functional and streaming ``HierarchicalMetrics``).
"""

from typing import Any

from hseval.core import __version__
from hseval.core.errors import ConfigError, DataError, HierarchyError, HsevalError, RunFormatError
from hseval.tree import Hierarchy, read_hierarchy, write_hierarchy

__all__ = ["Hierarchy", "read_hierarchy", "write_hierarchy", "load_run", "HsevalError", "HierarchyError",
           "RunFormatError", "ConfigError", "DataError", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "load_run":
        from hseval.io.run_format import load_run  # on first use: keeps torch out of 'import hseval'

        return load_run
    raise AttributeError(f"module 'hseval' has no attribute {name!r}")
