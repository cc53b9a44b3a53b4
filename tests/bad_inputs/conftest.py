"""The good inputs that the catalogue damages: a run trained for one epoch on the small
Fashion-MNIST-like set (small CNN, riemann head) and its evaluation folder."""

from __future__ import annotations

import pytest

from tests.bad_inputs.builders import Good


@pytest.fixture(scope="session")
def good(tmp_path_factory, fashion_like) -> Good:
    from hseval.cli.main import main

    root = tmp_path_factory.mktemp("good")
    run, evaluation = root / "run", root / "eval"
    assert main(["train", "--head", "riemann", "--data-root", str(fashion_like), "--quiet", "--set", "optim.epochs=1",
                 "--set", "data.train_subset=100", "--set", "engine.threads=1", "--set", "optim.lr=0.02",
                 "--out", str(run)]) == 0  # lr 0.1 blows this run up (the radius guard says so)
    # the control: the command the run rows break succeeds on the intact run
    assert main(["evaluate", str(run), "--out", str(evaluation), "--data-root", str(fashion_like), "--projections",
                 "none", "--quiet"]) == 0
    return Good(fashion=fashion_like, run=run, evaluation=evaluation)
