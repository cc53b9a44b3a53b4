"""iNaturalist's trees, from the taxonomy its competitions give each species (kingdom, phylum,
class, order, family, genus), the species the leaves, under a root above the kingdoms.

Taxon names repeat across ranks and kingdoms (genus *Morus* is a mulberry and a gannet), so a node
is a taxon with its whole lineage, named ``"<rank> <Name>"`` (``"genus Acer"``); where nodes of
one rank share a name, each is also named after its parent, ``"genus Morus (family Moraceae)"``
and ``"genus Morus (family Sulidae)"`` (the parent's own name, itself disambiguated so where it
needs to be). The leaves keep the species' names.

Two rules (``tree``):

- ``"taxonomy"`` (default): every node with one child merged with that child, as for hseval's
  other trees (:func:`~hseval.tree.transforms.merge_single_child_chains`);
- ``"mbm"``: Making Better Mistakes' rule (Bertinetto et al., CVPR 2020, their
  ``compute_inaturalist19_hierarchy.py``): the seven ranks kept, nothing merged, every leaf at
  depth 7. From the 2019 JSON this is their iNat-19 tree (1,010 species; 3, 4, 9, 34, 57 and 72
  nodes at depths 1 to 6), edge for edge, up to their names: ``nat0000`` for category 0, and
  ``node_`` with the taxon's name as their copy of the JSON gave it (six letters: the first
  release obfuscated the names).

hseval ships no iNaturalist class list: the taxonomy is read from the competition's JSON
(:mod:`hseval.data.inaturalist`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from hseval.core.errors import ConfigError, DataError, HierarchyError
from hseval.tree.hierarchy import Hierarchy
from hseval.tree.transforms import merge_single_child_chains

__all__ = ["RANKS", "TREE_RULES", "YEARS", "check_options", "inaturalist_hierarchy"]

RANKS = ("kingdom", "phylum", "class", "order", "family", "genus")
"""The taxonomic fields of every category, from the top; the species (``name``) is below them."""
TREE_RULES = ("taxonomy", "mbm")
YEARS = ("2018", "2019", "2021", "2021-mini")
"""The competitions hseval reads (2021-mini: 2021 with its mini training set)."""


def check_options(*, year: str | None = None, tree: str = "taxonomy") -> None:
    """Refuse a ``year`` that is not one of :data:`YEARS` (None: the one the files say) and a
    ``tree`` that is not one of :data:`TREE_RULES`."""
    if year is not None and year not in YEARS:
        raise ConfigError(f"year={year!r} is not an iNaturalist competition hseval reads; choose one of "
                          f"{', '.join(map(repr, YEARS))}")
    if tree not in TREE_RULES:
        raise ConfigError(f"tree={tree!r}: choose taxonomy (single-child chains merged) or mbm (the seven ranks "
                          "kept, Making Better Mistakes' rule)")


def _node_names(lineages: list[tuple[str, ...]]) -> dict[tuple[str, ...], str]:
    """{a taxon's lineage from its kingdom: its node name}, by the module's naming rule."""
    nodes = list(dict.fromkeys(lineage[:depth] for lineage in lineages for depth in range(1, len(RANKS) + 1)))
    shared = Counter((len(node), node[-1]) for node in nodes)
    names: dict[tuple[str, ...], str] = {}
    for node in nodes:  # a lineage's prefixes come before it, so a parent is named first
        name = f"{RANKS[len(node) - 1]} {node[-1]}"
        names[node] = name if shared[len(node), node[-1]] == 1 else f"{name} ({names[node[:-1]]})"
    return names


def inaturalist_hierarchy(class_names: Sequence[str] | None = None,
                          lineages: Sequence[Sequence[str]] | None = None, *, tree: str = "taxonomy",
                          year: str | None = None) -> Hierarchy:
    """The taxonomy tree of the species ``class_names`` by the rule ``tree`` (see the module).

    Parameters
    ----------
    class_names : sequence of str, length |L|
        The species in class order (the categories' ``name``, by ``id``).
    lineages : sequence of sequences of str, shape (|L|, 6)
        Each species' kingdom, phylum, class, order, family and genus (:data:`RANKS`).
    tree : {"taxonomy", "mbm"}
        Single-child chains merged (default), or the seven ranks kept (Making Better Mistakes).
    year : str, optional
        The competition the taxonomy comes from (named in the error when none is given).

    Returns
    -------
    Hierarchy
        Leaves = ``class_names``; the root, ``root``, is above the kingdoms.
    """
    check_options(year=year, tree=tree)
    if class_names is None or lineages is None:
        raise DataError(f"the iNaturalist{' ' + year if year else ''} tree is built from the taxonomy in the "
                        "competition's JSON, which hseval does not ship; pass --data-root DIR, the folder holding "
                        "it (from github.com/visipedia/inat_comp)")
    names, lineages = [str(name) for name in class_names], [tuple(lineage) for lineage in lineages]
    if len(lineages) != len(names):
        raise HierarchyError(f"{len(names)} species but {len(lineages)} lineages; give one per species")
    bad = next((k for k, lineage in enumerate(lineages) if len(lineage) != len(RANKS)
                or not all(isinstance(taxon, str) and taxon for taxon in lineage)), None)
    if bad is not None:
        raise HierarchyError(f"species {names[bad]!r} has the lineage {lineages[bad]!r}; give its "
                             f"{', '.join(RANKS)} (six names)")
    node = _node_names(lineages)
    edges = dict.fromkeys(("root", node[lineage[:1]]) for lineage in lineages)
    edges.update(dict.fromkeys((node[lineage[:depth - 1]], node[lineage[:depth]])
                               for lineage in lineages for depth in range(2, len(RANKS) + 1)))
    edges.update(dict.fromkeys((node[lineage], name) for lineage, name in zip(lineages, names)))
    hierarchy = Hierarchy.from_edges(list(edges), classes=names, source="iNaturalist taxonomy")
    return merge_single_child_chains(hierarchy) if tree == "taxonomy" else hierarchy
