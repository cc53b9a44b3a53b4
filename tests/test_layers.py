"""The layer contract (docs/architecture.md): each package imports only from its own layer or the
layers below it, siblings of one layer stay independent, no module imports itself back through
others (no cycle), and an import inside a function is there to keep a heavy package out of a
command that does not need it, with the reason on its line.

The installed names are read off the sources with ``ast`` (``train/`` is ``hseval.train``,
``app/`` is ``hseval.app``), imports inside functions included and ``if TYPE_CHECKING:`` blocks
left out, so a new module or a lazy import cannot slip past."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INSTALLED_AS = {"hseval": "hseval", "train": "hseval.train", "app": "hseval.app"}
LAYERS = [  # lowest first; the packages of one entry are independent siblings
    ["hseval.core"],
    ["hseval.tree"],
    ["hseval.nn", "hseval.data", "hseval.metrics"],
    ["hseval.io"],
    ["hseval.evaluation"],
    ["hseval.reporting"],
    ["hseval.train", "hseval.app"],
    ["hseval.cli"],
]
HEAVY = ("torch", "torchvision", "geoopt", "streamlit", "umap", "openTSNE", "sklearn", "scipy", "plotly", "pandas",
         "safetensors", "nltk", "tensorboard", "numba", "PIL", "yaml")
"""Packages slow enough to import that a command which does not need them should not pay for them."""


def _modules() -> dict[str, Path]:
    found = {}
    for folder, package in INSTALLED_AS.items():
        for path in (ROOT / folder).rglob("*.py"):
            name = ".".join((package, *path.relative_to(ROOT / folder).with_suffix("").parts))
            found[name.removesuffix(".__init__")] = path
    return found


MODULES = _modules()


def _type_checking_blocks(tree: ast.AST) -> set[int]:
    return {id(node) for block in ast.walk(tree) if isinstance(block, ast.If)
            and "TYPE_CHECKING" in ast.unparse(block.test) for stmt in block.body for node in ast.walk(stmt)}


def _imports(name: str, path: Path) -> list[tuple[str, ast.stmt, bool]]:
    """(imported hseval module, statement, inside a function) of every import of ``name``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_blocks(tree)
    in_function = {id(node) for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                   for node in ast.walk(fn)}
    out = []
    for node in ast.walk(tree):
        if id(node) in skip or not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            assert node.level == 0, f"{path}:{node.lineno}: relative import"
            targets = [f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in MODULES else node.module
                       for alias in node.names]
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name:
                out.append((target, node, id(node) in in_function))
    return out


def _layer(module: str) -> tuple[int, str] | None:
    if module.endswith(".__main__"):  # an entry point (python -m hseval, python -m hseval.train)
        return len(LAYERS) - 1, "hseval.cli"
    for level, siblings in enumerate(LAYERS):
        for package in siblings:
            if module == package or module.startswith(package + "."):
                return level, package
    return None


def test_every_module_belongs_to_a_layer():
    assert not [m for m in MODULES if m != "hseval" and _layer(m) is None]


MAX_MODULE_LINES = 400


def test_no_module_is_over_400_lines():
    """A module that outgrows one screenful of concepts is split by concept (issue 23)."""
    long = {name: n for name, path in MODULES.items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, f"split these modules (over {MAX_MODULE_LINES} lines): {long}"


def test_no_class_name_is_defined_twice():
    """A class's name says what it is, so no two classes share one (there were two ``Evaluation``s,
    ``Scores``, ``Context``s and ``Source``s, issue 37)."""
    where: dict[str, list[str]] = {}
    for path in MODULES.values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                where.setdefault(node.name, []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not {name: places for name, places in where.items() if len(places) > 1}


def test_imports_go_down_the_layers_and_siblings_stay_independent():
    wrong = []
    for name, path in MODULES.items():
        here = _layer(name)
        for target, node, _ in _imports(name, path):
            there = _layer(target)
            if here is not None and target == "hseval":
                wrong.append(f"{path.relative_to(ROOT)}:{node.lineno}: {here[1]} imports the package root (the "
                             "public surface, above every layer)")
            if here is None or there is None:
                continue  # the package's own __init__: the public surface
            if there[0] > here[0] or (there[0] == here[0] and there[1] != here[1]):
                wrong.append(f"{path.relative_to(ROOT)}:{node.lineno}: {here[1]} imports {target}")
    assert not wrong, "imports against the layer order:\n" + "\n".join(wrong)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def test_no_import_cycles():
    graph = {name: {target for target, _, _ in _imports(name, path)} for name, path in MODULES.items()}
    cycles = _cycles(graph)
    assert not cycles, "modules that import each other:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def _module_level_packages(path: Path) -> tuple[set[str], set[str]]:
    """(top-level packages outside hseval, hseval modules) that ``path`` imports when it is imported:
    its imports outside functions and ``if TYPE_CHECKING:`` blocks."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_blocks(tree) | {id(node) for fn in ast.walk(tree)
                                          if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                                          for node in ast.walk(fn)}
    packages = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                and id(node) not in skip for alias in node.names}
    packages |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                 and id(node) not in skip and node.module}
    name = next(n for n, p in MODULES.items() if p == path)
    lines = {node.lineno for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
             and id(node) not in skip}
    return packages - {"hseval", "train", "app"}, {t for t, node, _ in _imports(name, path) if node.lineno in lines}


def _heavy_modules() -> set[str]:
    """The hseval modules whose import pulls in a :data:`HEAVY` package, directly or through others."""
    direct = {name: _module_level_packages(path) for name, path in MODULES.items()}
    heavy = {name for name, (packages, _) in direct.items() if packages & set(HEAVY)}
    while True:
        more = {name for name, (_, modules) in direct.items() if name not in heavy and modules & heavy}
        if not more:
            return heavy
        heavy |= more


def test_imports_inside_functions_keep_heavy_packages_out_and_say_why():
    """An import inside a function is allowed only to delay a heavy package (or a module of hseval
    that pulls one in), and says so in a comment on its first line."""
    heavy_modules = _heavy_modules()
    wrong = []
    for name, path in MODULES.items():
        lines = path.read_text(encoding="utf-8").splitlines()
        tree = ast.parse("\n".join(lines))
        internal: dict[int, set[str]] = {}  # by line: _imports parses the file again
        for target, node, _ in _imports(name, path):
            internal.setdefault(node.lineno, set()).add(target)
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for stmt in ast.walk(node):
                if not isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    continue
                where = f"{path.relative_to(ROOT)}:{stmt.lineno}"
                if "#" not in lines[stmt.lineno - 1]:
                    wrong.append(f"{where}: no comment saying why the import is delayed")
                outside = [a.name for a in stmt.names] if isinstance(stmt, ast.Import) else [stmt.module or ""]
                delays_heavy = (internal.get(stmt.lineno, set()) & heavy_modules
                                or any(m.split(".")[0] in HEAVY for m in outside))
                if not delays_heavy:
                    wrong.append(f"{where}: delays {ast.unparse(stmt)!r}, which pulls in no heavy package "
                                 f"({', '.join(HEAVY)}): import it at the top")
    assert not wrong, "\n".join(wrong)


def test_process_wide_settings_are_applied_only_by_the_command_line():
    """A library call changes nothing process-wide: the allocator (``tune_malloc``) and the global
    warnings filters are the CLI's front door's alone (``hseval.cli``), never a library module's."""
    offenders = []
    for name, path in MODULES.items():
        if name.startswith(("hseval.cli", "hseval.core.perf")):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                called = ast.unparse(node.func)
                if called.endswith("tune_malloc") or called in ("warnings.filterwarnings", "warnings.simplefilter"):
                    inside_catch = any(isinstance(w, ast.With) and "catch_warnings" in ast.unparse(w)
                                       and node in ast.walk(w) for w in ast.walk(tree))
                    if not inside_catch:
                        offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {called}")
    assert not offenders, offenders
