"""Stanford Cars' tree: 196 models under 9 body types (Cab, Convertible, Coupe, Hatchback, Minivan,
Sedan, SUV, Van, Wagon), |P| = 205 as in the paper.

The paper classified the models by hand and did not publish its map; the one used here is the
published map of Chang et al. (CVPR 2021), shipped as ``data/stanford_cars_type_hierarchy_flamingo.tsv``
(its SOURCE line names the commit). It has the paper's nine groups and size.
"""

from __future__ import annotations

from collections.abc import Sequence

from hseval.core.errors import HierarchyError
from hseval.tree.builders.packaged import read_table
from hseval.tree.hierarchy import Hierarchy

__all__ = ["BODY_TYPES", "stanford_cars_classes", "stanford_cars_types", "stanford_cars_hierarchy"]

TABLE = "stanford_cars_type_hierarchy_flamingo.tsv"
BODY_TYPES = ("Cab", "Convertible", "Coupe", "Hatchback", "Minivan", "Sedan", "SUV", "Van", "Wagon")


def stanford_cars_classes() -> list[str]:
    """The 196 official class names (``cars_meta.mat``) in label order."""
    return [row[1] for row in read_table(TABLE, columns=4)]


def stanford_cars_types() -> dict[str, str]:
    """Body type of each official class name."""
    return {row[1]: row[3] for row in read_table(TABLE, columns=4)}


def stanford_cars_hierarchy(class_names: Sequence[str] | None = None) -> Hierarchy:
    """Models (leaves, in the given order) under their body types (in :data:`BODY_TYPES` order).

    Parameters
    ----------
    class_names : sequence of str, length |L|, optional
        Class names as in the devkit's ``cars_meta.mat`` (default: the official 196).
    """
    names = stanford_cars_classes() if class_names is None else [str(n).strip() for n in class_names]
    types = stanford_cars_types()
    unknown = [name for name in names if name not in types]
    if unknown:
        raise HierarchyError(f"Stanford Cars class {unknown[0]!r} is not in the model → body-type map "
                             f"hseval/tree/builders/data/{TABLE} ({len(unknown)} such classes); the class names "
                             "must be those of the official devkit's cars_meta.mat")
    used = [t for t in BODY_TYPES if t in {types[name] for name in names}]
    parents = [len(names) + used.index(types[name]) for name in names] + [-1] * len(used)
    return Hierarchy(names + used, parents, len(names))
