"""CIFAR-100's tree as given by its authors: 100 fine classes under 20 coarse classes
(|L| = 100, |P| = 120, depth 2).

The loader builds it from the dataset's own ``coarse_labels``; without the data, the official map
shipped in ``data/cifar100_fine_to_coarse.tsv`` gives the same tree.
"""

from __future__ import annotations

from collections.abc import Sequence

from hseval.core.errors import HierarchyError
from hseval.tree.builders.packaged import read_table
from hseval.tree.hierarchy import Hierarchy

__all__ = ["cifar100_official", "cifar100_hierarchy"]

TABLE = "cifar100_fine_to_coarse.tsv"


def cifar100_official() -> tuple[list[str], list[str], list[int]]:
    """The official fine names, coarse names (both in label order) and fine → coarse index map."""
    rows = read_table(TABLE, columns=4)
    fine = [name for _, name, _, _ in rows]
    fine_to_coarse = [int(coarse) for _, _, coarse, _ in rows]
    coarse_names = dict((int(coarse), name) for _, _, coarse, name in rows)
    return fine, [coarse_names[k] for k in range(len(coarse_names))], fine_to_coarse


def cifar100_hierarchy(fine_names: Sequence[str] | None = None, coarse_names: Sequence[str] | None = None,
                       fine_to_coarse: Sequence[int] | None = None) -> Hierarchy:
    """The two-level tree: coarse class ``fine_to_coarse[j]`` is the parent of fine class j.

    Parameters
    ----------
    fine_names : sequence of str, length |L|, optional
        Fine class names in label order (default: the official 100).
    coarse_names : sequence of str, length C, optional
        Coarse class names in label order (default: the official 20).
    fine_to_coarse : sequence of int, length |L|, optional
        Coarse label of each fine class (default: the official map).

    Returns
    -------
    Hierarchy
        Leaves = fine classes in label order, then the coarse classes in label order.
    """
    if fine_names is None and coarse_names is None and fine_to_coarse is None:
        fine_names, coarse_names, fine_to_coarse = cifar100_official()
    if fine_names is None or coarse_names is None or fine_to_coarse is None:
        raise HierarchyError("cifar100_hierarchy: give all of fine_names, coarse_names and fine_to_coarse, "
                             "or none of them for the official tree")
    fine_names, coarse_names = list(fine_names), list(coarse_names)
    fine_to_coarse = [int(c) for c in fine_to_coarse]
    if len(fine_to_coarse) != len(fine_names):
        raise HierarchyError(f"{len(fine_names)} fine classes but {len(fine_to_coarse)} coarse labels; give one "
                             "coarse label per fine class")
    bad = next((c for c in fine_to_coarse if not 0 <= c < len(coarse_names)), None)
    if bad is not None:
        raise HierarchyError(f"coarse label {bad} is outside 0..{len(coarse_names) - 1}")
    unused = sorted(set(range(len(coarse_names))) - set(fine_to_coarse))
    if unused:
        raise HierarchyError(f"coarse class {coarse_names[unused[0]]!r} has no fine class; every super-class "
                             "needs at least one")
    parents = [len(fine_names) + c for c in fine_to_coarse] + [-1] * len(coarse_names)
    return Hierarchy(fine_names + coarse_names, parents, len(fine_names))
