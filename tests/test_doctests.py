"""The examples in the docs run: every ``>>>`` example in hseval's and train's modules is
collected (found by reading the sources, so a new one cannot be missed) and run with doctest."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
MODULES = sorted(".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
                 for package in ("hseval", "train") for path in (ROOT / package).rglob("*.py")
                 if ">>> " in path.read_text(encoding="utf-8") and path.name != "__main__.py")


def test_the_examples_are_found():
    assert {"hseval.registry", "hseval.heads", "hseval.hierarchy", "hseval.metrics.streaming"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_module_examples_run(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.attempted > 0 and result.failed == 0, f"{name}: {result.failed} of {result.attempted} failed"
