"""Hierarchy files: one module per format, its reader and its writer together, and
:mod:`~hseval.tree.formats.common` for what they share (lines, the header, detection, reading and
writing through :data:`FORMATS`).

- ``pairs`` (:mod:`~hseval.tree.formats.pairs`): the paper's ``child parent`` index pairs, names in
  a ``<file>.names.tsv`` sidecar;
- ``nbdt`` (:mod:`~hseval.tree.formats.nbdt`): NBDT's networkx node-link JSON;
- ``paths`` (:mod:`~hseval.tree.formats.paths`): one label path per class, ``animal/dog/husky``;
- ``isa`` (:mod:`~hseval.tree.formats.isa`): ``parent child`` name pairs (Making Better Mistakes,
  cvjena);
- ``child-parent`` (:mod:`~hseval.tree.formats.isa`): ``child parent`` name pairs (cvjena's NAB).

:func:`read_hierarchy` detects the format: each module says which files its format claims
(:attr:`Format.claims`), and the formats are asked in this order, the order of their registration
below, the first claim winning. :func:`write_hierarchy` writes a file that reads back, format
detected, as the tree it was written from, or refuses naming the node it cannot hold.
"""

from pathlib import Path

from hseval.tree.formats import isa, nbdt, pairs, paths
from hseval.tree.formats.common import FORMATS, Format, HierarchyFile, detect_format, read_hierarchy, write_hierarchy

__all__ = ["FORMATS", "Format", "HierarchyFile", "detect_format", "read_hierarchy", "write_hierarchy", "companions"]

# --format's choices, and the order in which detection asks the formats: a claim may leave out what
# an earlier one claims (paths claims a line with a '/' before isa asks for two names a line)
for _format in (pairs.FORMAT, nbdt.FORMAT, paths.FORMAT, isa.FORMAT, isa.CHILD_PARENT):
    FORMATS.add(_format.name, _format)


def companions(path: str | Path) -> list[Path]:
    """The files that go with the hierarchy file ``path`` in some format (a pairs file's names):
    read with it, written beside it; what a command plans before it reads or writes ``path``."""
    return [pairs.names_sidecar(path)]
