"""The ``nbdt`` format: networkx node-link JSON as written by NBDT.

``nodes`` with ``id`` (and ``label``); ``links`` or ``edges`` with ``source`` -> ``target`` from
parent to child. Leaves are in the order of ``nodes``. A node is named by its ``id``, which is how
NBDT finds it (``Tree.load_hierarchy`` looks the classes of its wnids file up by id), and its
``label`` is kept as its display label (:attr:`Hierarchy.labels`); the writer writes both back, a
node without a label getting its id. Only a class list that names the classes by their labels
(and not by their ids) names every node by its label; the ids are then not kept. Other node
attributes (NBDT's ``contraction``) are not kept either. Names are JSON strings, so the format
holds any text; it takes no header (the order of the links keeps the super-classes').
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from itertools import chain
from json.encoder import encode_basestring_ascii as _quote
from pathlib import Path

from hseval.core.errors import HierarchyError, first_line
from hseval.tree.formats.common import Files, Format, HierarchyFile
from hseval.tree.hierarchy import Hierarchy

__all__ = ["FORMAT"]


def read(source: HierarchyFile) -> Hierarchy:
    """The tree of a node-link JSON file."""
    path, classes = source.path, source.classes
    try:
        data = json.loads(source.text)
    except json.JSONDecodeError as exc:
        raise HierarchyError(f"{path}, line {exc.lineno}: not valid JSON ({exc.msg})") from None
    except (ValueError, RecursionError) as exc:  # a number too long to convert, nesting too deep
        raise HierarchyError(f"{path}: not valid JSON ({first_line(exc, clause=True)})") from None
    links = data.get("links", data.get("edges")) if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list) or not isinstance(links, list):
        raise HierarchyError(f"{path}: expected node-link JSON with 'nodes' and 'links' lists (NBDT format)")
    ids, labels = _nodes(path, data["nodes"])
    known = set(ids)
    try:  # the common case in C; the loop below names the first wrong link
        edges = [(link["source"], link["target"]) for link in links]
    except (TypeError, KeyError, IndexError):
        edges = []
    if len(edges) != len(links) or not all(type(p) is str and type(c) is str for p, c in edges) \
            or not known.issuperset(chain.from_iterable(edges)):
        edges = []
        for k, link in enumerate(links):
            if not isinstance(link, dict) or "source" not in link or "target" not in link:
                raise HierarchyError(f"{path}: links[{k}] needs 'source' and 'target'")
            parent, child = str(link["source"]), str(link["target"])
            if parent not in known or child not in known:
                end = parent if parent not in known else child
                raise HierarchyError(f"{path}: links[{k}] refers to {end!r}, which is not in 'nodes'")
            edges.append((parent, child))
    isolated = known - {p for p, _ in edges} - {c for _, c in edges}
    if isolated and len(known) > 1:
        raise HierarchyError(f"{path}: node {sorted(isolated)[0]!r} has no links; a tree is connected")
    if classes is None:  # NBDT lists the leaves in class order
        parents = {p for p, _ in edges}
        classes = [name for name in ids if name not in parents]
    elif not known.issuperset(classes) and all(labels) and len(set(labels)) == len(labels) \
            and set(labels).issuperset(classes):  # the dataset names its classes by the labels (WordNet words)
        rename = dict(zip(ids, labels))
        return Hierarchy.from_edges([(rename[p], rename[c]) for p, c in edges], classes=classes, source=str(path),
                                    merge_chains=source.merge_chains)
    return Hierarchy.from_edges(edges, classes=classes, source=str(path), merge_chains=source.merge_chains,
                                labels={i: label for i, label in zip(ids, labels) if label is not None})


def _nodes(path: Path, nodes: list) -> tuple[list[str], list[str | None]]:
    """The id of every node, and its label where it has one (a non-empty string or a number)."""
    ids = [node.get("id") if isinstance(node, dict) else None for node in nodes]
    if not all(type(node_id) is str for node_id in ids):
        bad = next((k for k, node_id in enumerate(ids) if not isinstance(node_id, (str, int))), None)
        if bad is not None:
            raise HierarchyError(f"{path}: nodes[{bad}] has no 'id'")
        ids = list(map(str, ids))
    if len(set(ids)) != len(ids):  # one would be dropped with its label, its links merged into the other's
        first: dict[str, int] = {}
        for k, node_id in enumerate(ids):
            if node_id in first:
                raise HierarchyError(f"{path}: nodes[{k}] has the id {node_id!r} of nodes[{first[node_id]}]; list "
                                     "each node once")
            first[node_id] = k
    labels = [(label or None) if isinstance(label, str) else str(label) if isinstance(label, int) else None
              for label in (node.get("label") for node in nodes)]
    return ids, labels


def renderings(tree: Hierarchy, path: Path) -> Iterator[Files]:
    """The links in node order; then the super-classes' links first, as a reader numbers the
    super-classes in order of appearance in the links."""
    names = (*tree.node_names, tree.root_name)
    quoted = [_quote(n) for n in names]
    labels = tree.labels
    nodes = ",\n".join(f'  {{\n   "id": {q},\n   "label": {_quote(labels[n]) if n in labels else q}\n  }}'
                       for n, q in zip(names, quoted))
    parents = tree.parents.tolist()
    yield [(path, _text(nodes, quoted, parents, range(len(parents))))]
    leaves = tree.num_leaves
    yield [(path, _text(nodes, quoted, parents, [*range(leaves, len(parents)), *range(leaves)]))]


def _text(nodes: str, quoted: list[str], parents: list[int], children: Sequence[int]) -> str:
    """What ``json.dumps(node_link_data, indent=1)`` writes, without its slow pure-Python encoder."""
    links = ",\n".join(f'  {{\n   "source": {quoted[parents[c]]},\n   "target": {quoted[c]}\n  }}' for c in children)
    return ('{\n "directed": true,\n "multigraph": false,\n "graph": {},\n "nodes": [\n' + nodes
            + '\n ],\n "links": [\n' + links + "\n ]\n}\n")


def claims(path: Path, lines: list[str]) -> bool:
    """Detection: a ``.json`` file (even one of comments only), or one whose first line starts with
    ``{`` (asked after pairs, which claims a ``.json`` file that starts with a count)."""
    return path.suffix.lower() == ".json" or (bool(lines) and lines[0].startswith("{"))


FORMAT = Format("nbdt", read, renderings, holds_labels=True, claims=claims)
