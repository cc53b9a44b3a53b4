"""Optimiser wiring: parameters on a manifold go to geoopt's RiemannianSGD, the rest to SGD with
weight decay; both follow the same step schedule (lr ÷ 10 at the milestones)."""

from __future__ import annotations

from typing import Any

import torch

from hseval.nn.manifolds import geoopt
from hseval.train.config import OptimConfig

__all__ = ["Optimizers", "build_optimizers"]


class Optimizers:
    """Several optimisers (and their schedulers) driven as one."""

    def __init__(self, optimizers: dict[str, torch.optim.Optimizer], config: OptimConfig) -> None:
        self.optimizers = optimizers
        self.schedulers = {
            name: torch.optim.lr_scheduler.MultiStepLR(opt, milestones=list(config.milestones), gamma=config.lr_decay)
            for name, opt in optimizers.items()
        }

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
