"""The class tree: :class:`Hierarchy`, one module per file format (reader and writer together),
builders of the paper's datasets' trees and transforms (random trees, merged chains)."""
