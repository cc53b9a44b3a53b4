"""Node names: what a name may hold, the natural sort order of names ('n2' < 'n10'), and names
generated beside given ones (:func:`fresh_names`)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType

from hseval.core.errors import HierarchyError

__all__ = ["check_names", "natural_key", "fresh_names", "checked_labels"]

_NO_LABELS: Mapping[str, str] = MappingProxyType({})
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


def fresh_names(wanted: Iterable[str], taken: Iterable[str]) -> dict[str, str]:
    """Generated names that collide with none of the given (``taken``) ones: each wanted name
    maps to itself, or, where it is taken, to itself with the first suffix ``_1``, ``_2``... that
    neither a taken nor another wanted name uses. So a builder's super-classes never rename, nor
    clash with, the classes it groups (a class called ``g1.1`` beside an induced group ``g1.1``)."""
    wanted, taken = list(dict.fromkeys(wanted)), set(taken)
    used = taken.union(wanted)
    out = {}
    for name in wanted:
        new, k = name, 0
        while new in taken or (new != name and new in used):
            k += 1
            new = f"{name}_{k}"
        used.add(new)
        out[name] = new
    return out


def checked_labels(labels: Mapping[str, str] | None, names: Sequence[str], root_name: str) -> Mapping[str, str]:
    """A tree's display labels (:attr:`Hierarchy.labels <hseval.tree.hierarchy.Hierarchy.labels>`):
    ``labels`` without those equal to their node's name, read-only, in node order (the root last).
    Refuses a label for a name that is not a node (``names``, ``root_name``) or one that is not a
    non-empty string."""
    if not labels:
        return _NO_LABELS
    if not isinstance(labels, Mapping):
        raise HierarchyError(f"labels must map node names to labels, got {type(labels).__name__}")
    nodes = {*names, root_name}
    for name, label in labels.items():
        if name not in nodes:
            raise HierarchyError(f"a label is given for {name!r}, which is not a node of the tree")
        if not isinstance(label, str) or not label:
            raise HierarchyError(f"the label of node {name!r} is {label!r}; a label is a non-empty string")
    return MappingProxyType({name: labels[name] for name in (*names, root_name)
                             if name in labels and labels[name] != name})
