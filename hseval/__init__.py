"""hseval: train, evaluate and inspect hierarchical classifiers built with the hierarchical-spheres
last layer W = Δ·D·H (Scieur & Kim, "Connecting Sphere Manifolds Hierarchically for
Regularization", ICML 2021)."""

from hseval.core import __version__
from hseval.core.errors import ConfigError, DataError, HierarchyError, HsevalError, RunFormatError
from hseval.tree.hierarchy import Hierarchy

__all__ = ["Hierarchy", "HsevalError", "HierarchyError", "RunFormatError", "ConfigError", "DataError",
           "__version__"]
