"""Shared fixtures (the helpers they use, and that tests import, are in ``tests/helpers.py``)."""

from __future__ import annotations

import importlib.abc
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import settings

from hseval.tree.hierarchy import Hierarchy
from tests import helpers
from tests.helpers import appendix_a, built_once, fashion_tree, prediction_file, unbalanced, write_fashion_like


class _InstalledNamesOnly(importlib.abc.MetaPathFinder):
    """The repository's ``train/`` and ``app/`` install as ``hseval.train`` and ``hseval.app``; the
    tests run from the repository root, where a top-level ``import train`` would also work and hide
    code that breaks once installed (or that runs a user's own ``train.py``). Refuse it."""

    def find_spec(self, name, path=None, target=None):
        if name in ("train", "app"):
            raise ImportError(f"top-level {name!r} imported; hseval installs it as 'hseval.{name}'")
        return None


sys.meta_path.insert(0, _InstalledNamesOnly())


TRAINED = {"fashion_like", "evaluated", "large_evaluated"}
"""Fixtures that mean a test trains or evaluates real runs: such a test is ``slow``, and
``pytest -m "not slow"`` is the fast lane of units and contracts."""


def pytest_configure(config):
    """The fast lane (``-m "not slow"``) runs the property tests on fewer examples (see
    :func:`tests.helpers.examples`; Hypothesis's default of 100 becomes 10)."""
    if (config.getoption("markexpr") or "").replace(" ", "") == "notslow":
        helpers.FAST_LANE = True
        settings.register_profile("fast-lane", max_examples=10)
        settings.load_profile("fast-lane")


def pytest_collection_modifyitems(items):
    for item in items:
        if TRAINED & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _fast_lane_trains_nothing(request, monkeypatch):
    """In the fast lane, a test that trains an epoch or embeds a split with a run fails, naming the
    rule: whatever fixture or command it goes through, such a test is ``slow``."""
    if not helpers.FAST_LANE or request.node.get_closest_marker("slow"):
        return

    def refuse(what: str):
        def refused(*args, **kwargs):
            raise AssertionError(f"this test {what}: mark it @pytest.mark.slow (the fast lane holds no test that "
                                 "trains or evaluates a run)")
        return refused

    import hseval.evaluation.runs
    import hseval.train.engine

    monkeypatch.setattr(hseval.train.engine, "_epoch", refuse("trains a run"))
    monkeypatch.setattr(hseval.evaluation.runs, "_forward", refuse("evaluates a run"))


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    np.random.seed(0)


@pytest.fixture(autouse=True)
def _main_module():
    """Puts back ``sys.modules["__main__"]`` after each test: Streamlit's AppTest runs the dashboard
    script as ``__main__`` and leaves it there, and a process spawned later in the same worker (the
    launcher's, ``--devices``) would run the dashboard script again while it starts."""
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main


@pytest.fixture(params=["appendix_a", "fashion", "unbalanced"])
def small_tree(request) -> Hierarchy:
    return {"appendix_a": appendix_a, "fashion": fashion_tree, "unbalanced": unbalanced}[request.param]()


@pytest.fixture(scope="session")
def fashion_like(tmp_path_factory) -> Path:
    return built_once(tmp_path_factory, "fashion-like", write_fashion_like)


EVALUATED = ("plain", "multitask", "riemann", "hxe", "soft-labels", "barz-denzler", "nbdt")
"""The heads of :func:`evaluated`: plain, multitask and a sphere head of the paper, and the peers."""
EVALUATED_RUNS = sorted(EVALUATED)
"""Their runs' names in the evaluation, in its (alphabetical) order."""
BESIDE_PLAIN = [name for name in EVALUATED_RUNS if name != "plain"]
"""The runs compared with plain, the default baseline."""


@pytest.fixture(scope="session")
def evaluated(tmp_path_factory, fashion_like) -> Path:
    """An evaluation folder written by the real pipeline: the heads of :data:`EVALUATED` (three of the
    paper's, every peer) trained for two epochs on the small Fashion-MNIST-like set, then ``hseval
    evaluate`` with PCA; built once per test run (see :func:`~tests.helpers.built_once`), its runs
    beside it in ``../runs``."""
    from hseval.cli.main import main

    def build(root: Path) -> None:
        runs, out = root / "runs", root / "eval"
        assert main(["train-all", "--data-root", str(fashion_like), "--heads", ",".join(EVALUATED), "--quiet",
                     "--set", "optim.epochs=2", "--set", "data.train_subset=300", "--set", "data.batch_size=32",
                     "--out", str(runs)]) == 0
        assert main(["evaluate", str(runs), "--data-root", str(fashion_like), "--projections", "pca", "--quiet",
                     "--out", str(out)]) == 0

    return built_once(tmp_path_factory, "evaluated", build) / "eval"




LARGE = (5000, 3000)
"""Classes × samples of :func:`large_evaluated`."""


@pytest.fixture(scope="session")
def large_evaluated(tmp_path_factory) -> Path:
    """An evaluation folder of a 5,000-class, 4-level tree (:func:`tests.helpers.prediction_file`,
    about 60 % top-1) written by ``hseval evaluate --predictions`` with PCA: what the dashboard
    shows in parts. Built once per test run."""
    from hseval.cli.main import main

    def build(root: Path) -> None:
        root.mkdir(parents=True)
        prediction_file(root / "large", *LARGE)
        assert main(["evaluate", "--predictions", str(root / "large.npz"), "--hierarchy", str(root / "large.txt"),
                     "--projections", "pca", "--max-points", "1500", "--out", str(root / "eval")]) == 0

    return built_once(tmp_path_factory, "large-evaluated", build) / "eval"
