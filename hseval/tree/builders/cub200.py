"""CUB-200-2011's tree by the paper's rule (Appendix C.3): species grouped by the last word of
their name (``001.Black_footed_Albatross`` → Albatross).

Groups of one species are kept as their own super-class, which is what gives the paper's
|P| = 270 (200 species + 70 groups, 33 of them with one species).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hseval.core.errors import HierarchyError
from hseval.tree.builders.packaged import read_table
from hseval.tree.hierarchy import Hierarchy

__all__ = ["cub200_classes", "cub200_group", "cub200_hierarchy"]


def cub200_classes() -> list[str]:
    """The 200 official class names (``classes.txt``) in label order."""
    return [name for _, name in read_table("cub200_classes.txt", sep=None)]


def cub200_group(class_name: str) -> str:
    """The group of a species: the last ``_``-separated word of its name, without the ``NNN.``
    number (``001.Black_footed_Albatross`` → ``Albatross``)."""
    name = re.sub(r"^\d+\.", "", class_name.strip())
    group = name.split("_")[-1] if name else ""
    if not group:
        raise HierarchyError(f"CUB class name {class_name!r} has no last word to group it by")
    return group


def cub200_hierarchy(class_names: Sequence[str] | None = None) -> Hierarchy:
    """Species (leaves, in the given order) under their name groups (in order of first appearance).

    Parameters
    ----------
    class_names : sequence of str, length |L|, optional
        Class names as in ``classes.txt`` (default: the official 200).
    """
    names = cub200_classes() if class_names is None else list(class_names)
    return Hierarchy.from_groups(names, [(cub200_group(name),) for name in names], source="CUB-200 class names")
