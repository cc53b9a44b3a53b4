"""The class tree: :class:`Hierarchy`, its files (:mod:`hseval.tree.formats`: one module per format,
reader and writer together), builders of the paper's datasets' trees, transforms (random trees,
merged chains) and trees induced from class vectors."""

from hseval.tree.formats import FORMATS, read_hierarchy, write_hierarchy
from hseval.tree.hierarchy import Hierarchy

__all__ = ["Hierarchy", "read_hierarchy", "write_hierarchy", "FORMATS"]
