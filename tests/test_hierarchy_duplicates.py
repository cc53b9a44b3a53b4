"""A node listed twice in a hierarchy file is refused, in every format: one line naming the file
and the node, never one of the two entries dropped in silence (an NBDT node listed twice with two
labels used to read, one label lost). The mutation: a file written by hseval, one entry of its
node list (a node, a link, a line, a class path, a name) repeated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hseval.core.errors import HierarchyError
from hseval.tree import FORMATS, read_hierarchy, write_hierarchy
from hseval.tree.formats.pairs import names_sidecar
from tests.helpers import examples, trees

PROPERTY = settings(max_examples=examples(40), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _body(path: Path) -> tuple[list[str], list[str]]:
    """(header comments, the other lines) of a text file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.startswith("#")], [line for line in lines if not line.startswith("#")]


def _repeat_line(path: Path, pick: int) -> str:
    """Repeat one line of ``path`` at its end; returns the line."""
    header, lines = _body(path)
    line = lines[pick % len(lines)]
    path.write_text("\n".join([*header, *lines, line]) + "\n", encoding="utf-8")
    return line


def _pairs(path: Path, pick: int) -> list[str]:
    header, lines = _body(path)
    line = lines[1 + pick % (len(lines) - 1)]
    lines = [str(len(lines)), *lines[1:], line]  # the count line follows: only the repeat is wrong
    path.write_text("\n".join([*header, *lines]) + "\n", encoding="utf-8")
    return [f"node {line.split()[0]} is listed twice"]


def _pairs_names(path: Path, pick: int) -> list[str]:
    sidecar = names_sidecar(path)
    header, lines = _body(sidecar)
    index = lines[pick % len(lines)].split("\t")[0]
    sidecar.write_text("\n".join([*header, *lines, f"{index}\tanother name"]) + "\n", encoding="utf-8")
    return [str(sidecar), f"index {index} is named twice"]


def _edges(path: Path, pick: int, *, child_first: bool) -> list[str]:
    line = _repeat_line(path, pick)
    child, parent = line.split() if child_first else line.split()[::-1]
    return [f"node {child!r} is listed twice under {parent!r}"]


def _nbdt_node(path: Path, pick: int) -> list[str]:
    data = json.loads(path.read_text(encoding="utf-8"))
    node = data["nodes"][pick % len(data["nodes"])]
    data["nodes"].append({**node, "label": "another label"})
    path.write_text(json.dumps(data), encoding="utf-8")
    return [f"the id {node['id']!r} of nodes["]


def _nbdt_link(path: Path, pick: int) -> list[str]:
    data = json.loads(path.read_text(encoding="utf-8"))
    link = data["links"][pick % len(data["links"])]
    data["links"].append(dict(link))
    path.write_text(json.dumps(data), encoding="utf-8")
    return [f"node {link['target']!r} is listed twice under {link['source']!r}"]


def _paths(path: Path, pick: int) -> list[str]:
    return [f"the path {_repeat_line(path, pick)!r} is given twice"]


# format -> its node lists, each mutated by repeating one entry; returns what the message must name
REPEATS = {
    "pairs": {"pairs": _pairs, "names": _pairs_names},
    "isa": {"lines": lambda p, k: _edges(p, k, child_first=False)},
    "child-parent": {"lines": lambda p, k: _edges(p, k, child_first=True)},
    "nbdt": {"nodes": _nbdt_node, "links": _nbdt_link},
    "paths": {"paths": _paths},
}
CASES = [(fmt, part) for fmt, parts in REPEATS.items() for part in parts]


def test_every_format_has_its_node_lists_mutated():
    assert sorted(REPEATS) == sorted(FORMATS.names())


@pytest.mark.parametrize(("fmt", "part"), CASES)
@PROPERTY
@given(tree=trees(max_leaves=12), pick=st.integers(0, 10**6))
def test_a_node_listed_twice_is_refused_naming_the_file_and_the_node(tmp_path_factory, fmt, part, tree, pick):
    path = tmp_path_factory.mktemp(fmt) / ("tree.json" if fmt == "nbdt" else "tree.txt")
    write_hierarchy(tree, path, format=fmt)
    fragments = REPEATS[fmt][part](path, pick)
    with pytest.raises(HierarchyError) as caught:
        read_hierarchy(path, format=fmt)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(path if part != "names" else names_sidecar(path)))
    assert all(fragment in message for fragment in fragments), (fragments, message)
