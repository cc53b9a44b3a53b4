"""The examples in the docs run: every ``>>>`` example in hseval's and train's modules is
collected (found by reading the sources, so a new one cannot be missed) and run with doctest."""

from __future__ import annotations

import doctest
import importlib
import inspect
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
INSTALLED_AS = {"hseval": "hseval", "train": "hseval.train", "app": "hseval.app"}  # folder -> package
MODULES = sorted(".".join((INSTALLED_AS[package], *path.relative_to(ROOT / package).with_suffix("").parts))
                 .removesuffix(".__init__")
                 for package in INSTALLED_AS for path in (ROOT / package).rglob("*.py")
                 if ">>> " in path.read_text(encoding="utf-8") and path.name != "__main__.py")


def test_the_examples_are_found():
    assert {"hseval.core.registry", "hseval.nn.heads", "hseval.tree.hierarchy", "hseval.tree.formats.common",
            "hseval.metrics.streaming"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_module_examples_run(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.attempted > 0 and result.failed == 0, f"{name}: {result.failed} of {result.attempted} failed"


def _entry_points() -> dict[str, object]:
    """The public entry points whose docstrings must be numpydoc, by dotted name."""
    import hseval.metrics
    from hseval.io.run_format import load_run
    from hseval.nn.heads import create_head
    from hseval.train.engine import train
    from hseval.tree import read_hierarchy, write_hierarchy

    points: dict[str, object] = {f"hseval.metrics.{name}": getattr(hseval.metrics, name)
                                 for name in hseval.metrics.__all__}
    points.update({"hseval.nn.heads.create_head": create_head, "hseval.train.engine.train": train,
                   "hseval.io.run_format.load_run": load_run, "hseval.tree.read_hierarchy": read_hierarchy,
                   "hseval.tree.write_hierarchy": write_hierarchy})
    return points


def _missing_sections(name: str, obj: object, *, examples: bool) -> list[str]:
    """What the docstring of ``obj`` lacks: Parameters where it takes arguments, Returns where it
    returns something, and a run example where ``examples``."""
    doc = inspect.getdoc(obj) or ""
    wanted = []
    if inspect.isclass(obj):
        wanted.append("Parameters\n----------")
    else:
        signature = inspect.signature(obj)
        if [p for p in signature.parameters if p not in ("self", "cls")]:
            wanted.append("Parameters\n----------")
        if signature.return_annotation not in (None, "None"):
            wanted.append("Returns\n-------")
    if examples:
        wanted.append("Examples\n--------")
    missing = [f"{name}: no {section.splitlines()[0]!r} section" for section in wanted if section not in doc]
    if examples and ">>>" not in doc.partition("Examples\n--------")[2]:
        missing.append(f"{name}: no '>>>' example under 'Examples'")
    return missing


def test_public_entry_points_have_numpydoc():
    """The metric functions, create_head and the main entry points say, in numpydoc sections, what
    they take and return; the metrics and create_head show it with an example (run above)."""
    points = _entry_points()
    assert len(points) > 20
    problems = []
    for name, obj in points.items():
        examples = name.startswith("hseval.metrics.") or name == "hseval.nn.heads.create_head"
        problems += _missing_sections(name, obj, examples=examples)
        if inspect.isclass(obj):
            for method_name, method in vars(obj).items():
                if not method_name.startswith("_") and inspect.isfunction(method):
                    problems += _missing_sections(f"{name}.{method_name}", method, examples=False)
    assert not problems, "\n".join(problems)
