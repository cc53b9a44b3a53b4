"""hseval.tree is the lowest layer above hseval.core: its modules import, of hseval, only
hseval.core and hseval.tree, and no import cycle joins them. Read from the sources with ast, so
an import inside a function counts as much as one at the top."""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TREE = ROOT / "hseval" / "tree"


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def imported(path: Path, known: set[str]) -> set[str]:
    """The hseval modules (or packages) that ``path`` imports anywhere: for ``from a import b``,
    ``a.b`` where that is a module of ``known``, else ``a``."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module
            if node.level:  # relative: from the package, up level - 1
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, node.module] if node.module else parts)
            names.update(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names)
    return {name for name in names if name == "hseval" or name.startswith("hseval.")}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    paths = sorted(TREE.rglob("*.py"))
    known = {module_name(p) for p in paths}
    return {module_name(p): imported(p, known) for p in paths}


def test_the_graph_is_read(graph):
    """Imports at the top and inside functions are both found (or the tests below prove nothing)."""
    assert "hseval.tree.formats.common" in graph["hseval.tree.formats.pairs"]
    assert {"hseval.core.errors", "hseval.tree.hierarchy"} <= graph["hseval.tree.formats.pairs"]


def test_tree_imports_only_core_and_itself(graph):
    above = {module: sorted(n for n in names if not n.startswith(("hseval.core", "hseval.tree")))
             for module, names in graph.items()}
    assert not {module: names for module, names in above.items() if names}


def test_tree_has_no_import_cycle(graph):
    inside = {module: {n for n in names if n in graph} for module, names in graph.items()}
    graphlib.TopologicalSorter(inside).prepare()  # raises CycleError naming the cycle
