"""Node names: what a name may hold, and the natural sort order of names ('n2' < 'n10')."""

from __future__ import annotations

import re
import unicodedata

from hseval.core.errors import HierarchyError

__all__ = ["check_names", "natural_key"]

_FORBIDDEN = re.compile(r"[\n\r\t]")  # what a name may not hold
_NUMBER = re.compile(r"(\d+)")
_TEXT_NUMBER = re.compile(r"(\D*)([0-9]+)")


def natural_key(name: str) -> tuple:
    """Sort key that orders embedded integers numerically ('n2' < 'n10', '9' < '10'), in any
    script's decimal digits and at any length (compared as digit strings, never converted)."""
    simple = _TEXT_NUMBER.fullmatch(name)  # the common 'n01440764', 'c12', '42', quickly
    if simple is not None:
        text, digits = simple.groups()
        digits = digits.lstrip("0")
        return ((1, 0, text), (0, len(digits), digits)) if text else ((0, len(digits), digits),)
    key = []
    for k, tok in enumerate(_NUMBER.split(name)):
        if not tok:
            continue
        if k % 2:  # a run of decimal digits
            if not tok.isascii():
                tok = "".join(str(unicodedata.decimal(ch)) for ch in tok)
            digits = tok.lstrip("0")
            key.append((0, len(digits), digits))
        else:
            key.append((1, 0, tok))
    return tuple(key)


def check_names(names: list[str]) -> None:
    """Refuse an empty name, a name with a tab or line break, or a name given twice."""
    if "" not in names and not _FORBIDDEN.search("".join(names)) and len(set(names)) == len(names):
        return  # the common case, checked in C; the loop below finds which name is wrong
    seen: set[str] = set()
    for name in names:
        if not name or _FORBIDDEN.search(name):
            raise HierarchyError(f"node name {name!r} is empty or holds a tab or line break; rename it")
        if name in seen:
            raise HierarchyError(f"two nodes are called {name!r}; node names must be unique")
        seen.add(name)
