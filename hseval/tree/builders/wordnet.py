"""WordNet 3.0 trees for classes named by WordNet noun ids (ImageNet's ``n02124075``).

The paper's two rules (Appendix C.3): where a synset has several hypernyms, keep the first in
sorted order; merge a node that has one child with that child. "Sorted" is by synset name
(``dog.n.01``), the order in which NLTK up to 3.8 returned hypernyms and in which NBDT built its
WordNet trees; NLTK 3.9+ returns them in set order, which changes between runs, so the order is
fixed here. Hypernyms come before instance hypernyms, as in NLTK's ``hypernym_paths()``. For
Tiny-ImageNet this reproduces NBDT's tree edge for edge, root (``physical_entity``) included.

Making Better Mistakes (Bertinetto et al., CVPR 2020) keeps instead each class's longest path up
to ``physical_entity``, the root the authors fixed (``path="longest"``; a class with no path
there, such as ``traffic_light``, keeps its longest path to the top, where the authors rewired
three edges by hand): where a synset has several hypernyms, the one with the longest such path
above it, the first in sorted order among those of equal length (the authors chose those by
hand). The path above a node is then the same for every class below it, so the paths make a
tree; then the same merging.

WordNet is read offline through nltk's ``WordNetCorpusReader`` from the first of: the folder
given, ``$WNSEARCHDIR`` (WordNet's own variable), nltk's data (``nltk.download('wordnet')``),
Debian's ``wordnet-base`` (``/usr/share/wordnet``). Debian's folder lacks nltk's ``lexnames``
file (WordNet's 45 fixed lexicographer file names); the reader below supplies it from memory.
"""

from __future__ import annotations

import io
import os
import re
import warnings
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from hseval.core.errors import ConfigError, DataError, HierarchyError
from hseval.core.extras import installed, require
from hseval.tree.hierarchy import Hierarchy
from hseval.tree.transforms import merge_single_child_chains

__all__ = ["DEBIAN_WORDNET", "PATHS", "find_wordnet", "open_wordnet", "wordnet_hierarchy", "wnid"]

DEBIAN_WORDNET = Path("/usr/share/wordnet")
_LEXNAMES = ("adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute noun.body "
             "noun.cognition noun.communication noun.event noun.feeling noun.food noun.group noun.location "
             "noun.motive noun.object noun.person noun.phenomenon noun.plant noun.possession noun.process "
             "noun.quantity noun.relation noun.shape noun.state noun.substance noun.time verb.body verb.change "
             "verb.cognition verb.communication verb.competition verb.consumption verb.contact verb.creation "
             "verb.emotion verb.motion verb.perception verb.possession verb.social verb.stative verb.weather "
             "adj.ppl").split()
_POS_NUMBER = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}
_PURPOSE = "reading WordNet (the tiny-imagenet and imagenet trees)"
_HOW_TO_INSTALL = ("install WordNet 3.0 (apt install wordnet-base, or python -m nltk.downloader wordnet) "
                   "or pass --wordnet DIR, a folder holding data.noun and index.noun")


def _is_wordnet_dir(folder: Path) -> bool:
    return (folder / "data.noun").is_file() and (folder / "index.noun").is_file()


def find_wordnet(folder: str | Path | None = None) -> Any:
    """The WordNet location to read: a folder (Path) or an nltk path pointer; None if none found.

    An explicit ``folder`` that is not a WordNet folder is an error, not a fall-through."""
    if folder is not None:
        folder = Path(folder).expanduser()
        if not _is_wordnet_dir(folder):
            raise DataError(f"{folder}: not a WordNet folder (no data.noun/index.noun); {_HOW_TO_INSTALL}")
        return folder
    env = os.environ.get("WNSEARCHDIR")
    if env and _is_wordnet_dir(Path(env).expanduser()):
        return Path(env).expanduser()
    if installed("nltk"):
        try:
            return require("nltk", _PURPOSE).data.find("corpora/wordnet")
        except LookupError:
            pass
    return DEBIAN_WORDNET if _is_wordnet_dir(DEBIAN_WORDNET) else None


@lru_cache(maxsize=4)
def _reader(location: Any) -> Any:
    nltk = require("nltk", _PURPOSE)  # optional (the wordnet extra), slow to import: only where WordNet is read
    WordNetCorpusReader = require("nltk.corpus.reader.wordnet", _PURPOSE).WordNetCorpusReader

    class Reader(WordNetCorpusReader):
        def open(self, file: str) -> Any:
            if file == "lexnames" and isinstance(location, Path) and not (location / file).exists():
                lines = [f"{i:02d}\t{name}\t{_POS_NUMBER[name.split('.')[0]]}\n" for i, name in enumerate(_LEXNAMES)]
                return io.StringIO("".join(lines))
            return super().open(file)

        def map_wn(self, version: str = "wordnet") -> None:
            # only for the multilingual add-ons, which need nltk's own data; not used here
            return None

    if isinstance(location, Path):
        # nltk >= 3.9 reads only below the folders on nltk.data.path; this is how it authorises one
        root = str(location.resolve())
        if root not in nltk.data.path:
            nltk.data.path.append(root)
        location = Path(root)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "multilingual functions are not available": expected
        return Reader(str(location) if isinstance(location, Path) else location, None)


def open_wordnet(folder: str | Path | None = None) -> Any:
    """An nltk WordNet reader (cached), or a :class:`DataError` saying how to install WordNet."""
    location = find_wordnet(folder)
    if location is None:
        raise DataError(f"no WordNet data found (looked in $WNSEARCHDIR, nltk's data path, {DEBIAN_WORDNET}); "
                        f"{_HOW_TO_INSTALL}")
    try:
        return _reader(location)
    except (OSError, ValueError, LookupError) as exc:
        raise DataError(f"{location}: cannot read WordNet ({exc.__class__.__name__}: {exc}); "
                        f"{_HOW_TO_INSTALL}") from None


def wnid(synset: Any) -> str:
    """``n02124075`` for a noun synset."""
    return f"{synset.pos()}{synset.offset():08d}"


def _synset(wordnet: Any, name: str) -> Any:
    if not re.fullmatch(r"n\d{8}", name):
        raise HierarchyError(f"class {name!r} is not a WordNet noun id (like n02124075)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nltk warns and returns None for an unknown offset
        try:
            synset = wordnet.synset_from_pos_and_offset("n", int(name[1:]))
        except Exception:  # older nltk raises WordNetError (or fails to parse) at a bad offset
            synset = None
    if synset is None:
        raise HierarchyError(f"class {name!r} is not a WordNet 3.0 noun synset; check the wnid")
    return synset


def _first_hypernym(synset: Any) -> Any | None:
    candidates = sorted(synset.hypernyms(), key=lambda s: s.name())
    candidates += sorted(synset.instance_hypernyms(), key=lambda s: s.name())
    return candidates[0] if candidates else None


def _longest_hypernym(synset: Any, heights: dict[str, tuple[bool, int]]) -> Any | None:
    candidates = [*synset.hypernyms(), *synset.instance_hypernyms()]
    if not candidates:
        return None
    tallest = max(_height(c, heights) for c in candidates)
    return min((c for c in candidates if heights[c.name()] == tallest), key=lambda s: s.name())


def _height(synset: Any, heights: dict[str, tuple[bool, int]]) -> tuple[bool, int]:
    """(whether it passes ``physical_entity``, edges) of the path from ``synset`` to the top of
    WordNet that Making Better Mistakes keeps: through ``physical_entity`` where one is, the
    longest (memoised in ``heights``)."""
    name = synset.name()
    if name not in heights:
        above = [_height(h, heights) for h in (*synset.hypernyms(), *synset.instance_hypernyms())]
        physical, edges = max(above, default=(False, -1))
        heights[name] = (physical or name == PHYSICAL_ENTITY, edges + 1)
    return heights[name]


PHYSICAL_ENTITY = "physical_entity.n.01"
PATHS = ("first", "longest")
"""The rule that picks a synset's parent among its hypernyms: the paper's, or Making Better Mistakes'."""


def wordnet_hierarchy(wnids: Sequence[str], *, wordnet: str | Path | None = None, path: str = "first") -> Hierarchy:
    """The WordNet tree of ``wnids`` by the paper's two rules, or with Making Better Mistakes'
    longest paths (see the module docstring).

    Parameters
    ----------
    wnids : sequence of str, length |L|
        Class WordNet ids in class order; every node of the tree is named by its wnid.
    wordnet : path, optional
        WordNet folder (default: looked up as described in the module docstring).
    path : {"first", "longest"}
        Which hypernym is a synset's parent: the first in sorted order (the paper's rule, NBDT's
        trees), or the one on the longest path to the top (Making Better Mistakes').

    Returns
    -------
    Hierarchy
        Leaves = ``wnids``; the root is the deepest synset common to all paths that has more than
        one child (``physical_entity`` for Tiny-ImageNet).
    """
    if path not in PATHS:
        raise ConfigError(f"path={path!r}: choose 'first' (the paper's rule) or 'longest' (Making Better Mistakes')")
    reader = open_wordnet(wordnet)
    heights: dict[str, tuple[bool, int]] = {}
    hypernym_of = _first_hypernym if path == "first" else lambda synset: _longest_hypernym(synset, heights)
    parent_of: dict[str, str] = {}
    for name in wnids:
        synset, seen = _synset(reader, name), {name}
        while (hypernym := hypernym_of(synset)) is not None and wnid(synset) not in parent_of:
            parent_of[wnid(synset)] = wnid(hypernym)
            if wnid(hypernym) in seen:
                raise HierarchyError(f"WordNet hypernyms of {name!r} form a cycle; is this WordNet 3.0?")
            synset = hypernym
            seen.add(wnid(synset))
    children: dict[str, list[str]] = {}
    for child, parent in parent_of.items():
        children.setdefault(parent, []).append(child)
    roots = [node for node in children if node not in parent_of]
    if len(roots) != 1:
        raise HierarchyError(f"the classes' WordNet paths end in {len(roots)} roots; they must share one")
    # drop the chain of single children at the top so that the root is named as NBDT names it
    root, classes = roots[0], set(wnids)
    while len(children[root]) == 1 and children[root][0] not in classes:
        root = children[root][0]
    edges = [(parent, child) for child, parent in parent_of.items()
             if child != root and _below(child, root, parent_of)]
    tree = Hierarchy.from_edges(edges, classes=list(wnids), source="WordNet")
    return merge_single_child_chains(tree)


def _below(node: str, root: str, parent_of: dict[str, str]) -> bool:
    while node != root:
        if node not in parent_of:
            return False
        node = parent_of[node]
    return True
