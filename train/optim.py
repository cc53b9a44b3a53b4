"""Optimiser wiring: parameters on a manifold go to geoopt's RiemannianSGD, the rest to SGD with
weight decay; both follow the same schedule (:func:`scheduler`: the step schedule, lr ÷ 10 at the
milestones). :func:`learning_rates` tells the rate of each epoch, which says whether a finished run
can be extended to more epochs (the epochs it trained keep theirs)."""

from __future__ import annotations

from typing import Any

import torch

from hseval.nn.manifolds import geoopt
from hseval.train.config import OptimConfig

__all__ = ["Optimizers", "build_optimizers", "scheduler", "learning_rates"]


def scheduler(optimizer: torch.optim.Optimizer, config: OptimConfig) -> torch.optim.lr_scheduler.LRScheduler:
    """The learning-rate schedule of ``config``, stepped once per epoch: lr × ``lr_decay`` at each
    of ``milestones`` (it does not depend on ``epochs``, so a run can be trained on past its end)."""
    return torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=list(config.milestones), gamma=config.lr_decay)


def learning_rates(config: OptimConfig, epochs: int) -> list[float]:
    """The learning rate of each of the first ``epochs`` epochs of a training under ``config``."""
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=config.lr)
    schedule, rates = scheduler(optimizer, config), []
    for _ in range(epochs):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()  # before the scheduler's step, as training does
        schedule.step()
    return rates


class Optimizers:
    """Several optimisers (and their schedulers) driven as one."""

    def __init__(self, optimizers: dict[str, torch.optim.Optimizer], config: OptimConfig) -> None:
        self.optimizers = optimizers
        self.schedulers = {name: scheduler(opt, config) for name, opt in optimizers.items()}

    def zero_grad(self) -> None:
        for opt in self.optimizers.values():
            opt.zero_grad(set_to_none=True)

    def step(self) -> None:
        for opt in self.optimizers.values():
            opt.step()

    def epoch_end(self) -> None:
        for scheduler in self.schedulers.values():
            scheduler.step()

    @property
    def lr(self) -> float:
        return next(iter(self.optimizers.values())).param_groups[0]["lr"]

    def state_dict(self) -> dict[str, Any]:
        return {"optimizers": {k: o.state_dict() for k, o in self.optimizers.items()},
                "schedulers": {k: s.state_dict() for k, s in self.schedulers.items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for key, opt in self.optimizers.items():
            opt.load_state_dict(state["optimizers"][key])
        for key, scheduler in self.schedulers.items():
            scheduler.load_state_dict(state["schedulers"][key])


def build_optimizers(model: torch.nn.Module, config: OptimConfig) -> Optimizers:
    """SGD (momentum, weight decay) for Euclidean parameters; RiemannianSGD (same lr and momentum)
    for ``geoopt.ManifoldParameter``s. geoopt would add weight decay before projecting onto the
    tangent space, where it vanishes on a sphere, so it gets none."""
    manifold, euclidean = [], []
    for param in model.parameters():
        if param.requires_grad:
            (manifold if isinstance(param, geoopt.ManifoldParameter) else euclidean).append(param)
    optimizers: dict[str, torch.optim.Optimizer] = {}
    if euclidean:
        optimizers["sgd"] = torch.optim.SGD(euclidean, lr=config.lr, momentum=config.momentum,
                                            weight_decay=config.weight_decay)
    if manifold:
        optimizers["riemannian_sgd"] = geoopt.optim.RiemannianSGD(manifold, lr=config.lr, momentum=config.momentum)
    return Optimizers(optimizers, config)
