"""hseval: train, evaluate and inspect hierarchical classifiers built with the hierarchical-spheres
last layer W = Δ·D·H (Scieur & Kim, "Connecting Sphere Manifolds Hierarchically for
Regularization", ICML 2021)."""

from hseval.core.errors import ConfigError, DataError, HierarchyError, HsevalError, RunFormatError
from hseval.tree import Hierarchy, read_hierarchy, write_hierarchy

__version__ = "0.1.0"

__all__ = ["Hierarchy", "read_hierarchy", "write_hierarchy", "HsevalError", "HierarchyError", "RunFormatError",
           "ConfigError", "DataError", "__version__"]
