"""Named training budgets (``hseval train-all --budget quick|small|paper``): how much of the
training split a run sees and for how many epochs, applied over any recipe (and beside a
validation split: a budget leaves the split a training tests on after each epoch as it is). Each is a list of
settings, as ``--set`` gives them; a setting given by a budget and again by ``--set`` is refused,
as any setting given twice."""

from __future__ import annotations

from dataclasses import dataclass

from hseval.core.registry import Registry

__all__ = ["Budget", "BUDGETS"]


@dataclass(frozen=True)
class Budget:
    """What a budget is for, and the settings it gives."""

    help: str
    settings: tuple[str, ...]


BUDGETS: Registry[Budget] = Registry("budget")
BUDGETS.add("quick", Budget("a smoke test: one epoch on 2,000 training images",
                            ("data.train_subset=2000", "optim.epochs=1", "optim.milestones=[1]")))
BUDGETS.add("small", Budget("three epochs on 8,000 training images (lr ÷ 10 for the last): hseval demo's",
                            ("data.train_subset=8000", "optim.epochs=3", "optim.milestones=[2]")))
BUDGETS.add("paper", Budget("the recipe as it is: for the paper's datasets, 300 epochs on the whole training split "
                            "(lr ÷ 10 at 150 and 225)", ()))
