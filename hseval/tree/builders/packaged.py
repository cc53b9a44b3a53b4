"""The small tables shipped in ``hseval/tree/builders/data/``: official class lists and class → group
maps, so that the paper's trees can be built without the images.

Every file starts with a ``SOURCE:`` line naming where it comes from (kept verbatim from the
project's reference copies); lines starting with ``#`` are column headers.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

__all__ = ["read_table"]


@cache
def read_table(name: str, *, sep: str | None = "\t", columns: int = 2) -> tuple[tuple[str, ...], ...]:
    """Rows of the packaged file ``name``, each split into ``columns`` fields on ``sep``
    (whitespace when None); the SOURCE line and ``#`` lines are skipped."""
    text = (resources.files("hseval.tree.builders") / "data" / name).read_text(encoding="utf-8")
    return tuple(tuple(field.strip() for field in line.split(sep, columns - 1)) for line in text.splitlines()
                 if line.strip() and not line.startswith(("SOURCE:", "#")))
