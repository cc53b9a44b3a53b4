"""What a training checks: everything about its configuration that can fail, before anything is
written or trained (:func:`check_before_training`), and the radius guard's readings of a sphere
head's logit scale, before the first step, after the first epoch and after training."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from hseval.core import sampling
from hseval.core.device import resolve_device
from hseval.core.errors import ConfigError, HsevalWarning
from hseval.data import LoadedDataset
from hseval.nn import radius_guard
from hseval.nn.backbones import create_backbone
from hseval.nn.heads import HEADS, list_heads
from hseval.nn.heads.base import checked_options
from hseval.nn.model import HierarchicalClassifier
from hseval.train import loader
from hseval.train.config import TrainConfig, load_config
from hseval.train.pretrained import read_init
from hseval.train.step import Context, model_spec

__all__ = ["check_before_training", "head_options_for", "refuse_options_not_taken", "plan_head_options",
           "check_head_options", "check_recipe_backbone", "initial_logit_scale",
           "guard_before_training", "guard_after_epoch"]


def check_before_training(config: TrainConfig, data: LoadedDataset, *, world: int = 1) -> np.ndarray:
    """Everything about ``config`` that can fail, checked before anything is written or trained:
    the device, the head and its options (types and values), the backbone's ``model.init`` file,
    the training subset and that an epoch has at least one full batch. Returns the indices of the
    training images."""
    device = resolve_device(config.engine.device, option="engine.device")
    if config.engine.cuda_graphs and device.type != "cuda":
        raise ConfigError("engine.cuda_graphs=true needs a CUDA device; keep engine.compile=true alone on the CPU")
    HEADS.get(config.model.head).check_tree(data.hierarchy)  # a tree the head cannot use: before any work
    spec = model_spec(config, data)
    with torch.device("meta"):  # the backbone's name and options, without allocating its weights
        backbone = create_backbone(spec["backbone"]["name"], **spec["backbone"]["config"])
    if config.model.init:  # every tensor of the file checked against the backbone's shapes
        read_init(config.model, backbone)
    check_head_options(config)
    indices = sampling.stratified_subset(data.train.labels, config.data.train_subset, seed=config.engine.seed,
                                         setting="data.train_subset")
    if loader.num_train_batches(len(indices), config.data.batch_size, world) == 0:
        per_rank = -(-len(indices) // world)
        who = "each process has" if world > 1 else "there are"
        raise ConfigError(f"data.batch_size={config.data.batch_size} but {who} only {per_rank} training "
                          "images: an epoch would train no step (the last incomplete batch is dropped)"
                          f"; lower data.batch_size to at most {per_rank}")
    if len(data.test) == 0:
        raise ConfigError(f"{data.root}: the test split of {data.name!r} is empty; there is nothing to evaluate on")
    return indices


def head_options_for(config: TrainConfig) -> tuple[TrainConfig, list[str]]:
    """``config`` with the options its head takes and no other (what the head is built with, and so
    what run.json records), and the names of those left out (a recipe sets options for every head;
    the command line says which it gave and whether that is an error). An option that no head takes
    is a one-line error."""
    options = config.model.head_options
    unknown = sorted(set(options) - set().union(*(HEADS.options(h) for h in list_heads())))
    if unknown:
        raise ConfigError(f"model.head_options.{unknown[0]} is not an option of any head")
    accepted = HEADS.options(config.model.head)
    left = sorted(set(options) - set(accepted))
    if not left:
        return config, []
    kept = {k: v for k, v in options.items() if k in accepted}
    return config.model_copy(update={"model": config.model.model_copy(update={"head_options": kept})}), left


def refuse_options_not_taken(heads: list[str], option: str) -> None:
    """One line for ``option``, given on the command line, which none of ``heads`` takes."""
    if len(heads) == 1:
        takes = ", ".join(sorted(HEADS.options(heads[0]))) or "none"
        raise ConfigError(f"model.head_options.{option}: head {heads[0]!r} has no option {option!r} (its options: "
                          f"{takes}); drop it, or train a head that takes it")
    takers = ", ".join(h for h in list_heads() if option in HEADS.options(h))
    raise ConfigError(f"model.head_options.{option}: none of the heads trained here ({', '.join(heads)}) takes it "
                      f"({takers} {'does' if ',' not in takers else 'do'}); drop it, or add a head that takes it")


def plan_head_options(configs: list[tuple[TrainConfig, str]], given: set[str], note: Callable[[str], Any]
                      ) -> list[tuple[TrainConfig, str]]:
    """Each run's config with the options its head takes (:func:`head_options_for`). An option of
    ``given`` (on the command line) that a single head does not take is refused; across several
    heads it is kept for those that take it, ``note`` saying once which ignore it, and refused
    when none does. A recipe's options for other heads go without a word."""
    out, ignored = [], {}
    for config, name in configs:
        config, left = head_options_for(config)
        for option in given.intersection(left):
            ignored.setdefault(option, []).append(config.model.head)
        out.append((config, name))
    heads = list(dict.fromkeys(config.model.head for config, _ in out))
    for option, by in ignored.items():
        by = list(dict.fromkeys(by))
        if len(by) == len(heads):
            refuse_options_not_taken(heads, option)
        verb = "takes no such option and trains" if len(by) == 1 else "take no such option and train"
        note(f"model.head_options.{option} applies to {', '.join(h for h in heads if h not in by)}; "
             f"{', '.join(by)} {verb} without it")
    return out


def check_head_options(config: TrainConfig, *, where: str = "set head options with --set "
                       "model.head_options.NAME=VALUE") -> None:
    """The options of ``config``'s head (those it takes: a recipe sets options for all heads), their
    types and bounds, checked as :func:`create_head` checks them; ``where`` says where they are set."""
    accepted = HEADS.options(config.model.head)
    try:
        checked_options(config.model.head, {k: v for k, v in config.model.head_options.items() if k in accepted})
    except ConfigError as exc:  # the library names the option; the command says where it is set
        raise ConfigError(f"{exc} ({where})") from None


def check_recipe_backbone(config: TrainConfig) -> None:
    """Warn when a sphere head trains a backbone other than the one its recipe (and so its radius)
    was written for, with the radius left as the recipe set it."""
    if not config.recipe or not radius_guard.takes_radius(config.model.head):
        return
    written = load_config(config.recipe).model
    radius = written.head_options.get("radius")
    if written.backbone != config.model.backbone and config.model.head_options.get("radius") == radius:
        warnings.warn(f"recipe {config.recipe} is written for {written.backbone} (radius R0 = {radius}); with "
                      f"backbone {config.model.backbone} check the radius: README, Recipes, gives each backbone's "
                      f"R0 (--set model.head_options.radius=R0)", HsevalWarning, stacklevel=2)


def _class_norm(model: HierarchicalClassifier) -> float | None:
    weights = model.head.class_weights()  # (d, |L|)
    return None if weights is None else float(torch.linalg.vector_norm(weights.detach().float(), dim=0).mean())


def initial_logit_scale(model: HierarchicalClassifier, x: torch.Tensor, ctx: Context) -> dict[str, float]:
    """Mean feature and class-vector norms before the first step, the features as training sees
    them (train mode) on one batch; nothing of the model or the random streams is changed."""
    class_norm = _class_norm(model)
    if class_norm is None:
        return {}
    saved = {name: buffer.clone() for name, buffer in model.named_buffers()}  # batch-norm statistics
    with torch.no_grad(), ctx.fork_rng(), ctx.autocast():
        model.train()
        z = model.embed(ctx.prepare(x)).float()
    with torch.no_grad():
        for name, buffer in model.named_buffers():
            buffer.copy_(saved[name])
    return {"initial_feature_norm": float(torch.linalg.vector_norm(z, dim=1).mean()),
            "initial_class_norm": class_norm}


def _warn_on_scale(model: HierarchicalClassifier, head: str, *, feature_norm: float | None,
                   class_norm: float | None, when: str, at_start: bool, loss: float | None = None) -> None:
    """Warn (one line, the numbers and the fix) when the logit scale is far outside what the
    features allow, or (``loss``: the held-out loss) the run diverged."""
    if feature_norm is None or class_norm is None:
        return
    check = radius_guard.check_scale(head=head, feature_norm=feature_norm, class_norm=class_norm,
                                     classes=model.hierarchy.num_leaves, radius=model.head.config().get("radius"),
                                     at_start=at_start, loss=loss)
    if check is not None and check.verdict:
        warnings.warn(check.message(f"{head}, {when}"), HsevalWarning, stacklevel=2)


def guard_before_training(config: TrainConfig, model: HierarchicalClassifier, first: Callable[[], torch.Tensor],
                          ctx: Context) -> dict[str, Any]:
    """The radius guard's first reading (sphere heads), on ``first()``: the first training batch in
    the split's order whatever the subsets (images, or a probe's features), so that every run of a
    dataset, backbone, batch size and seed reads the same scale and proposes the same radius. A
    warning when the scale is off, and the norms it found, for the first epoch's record."""
    if not radius_guard.takes_radius(config.model.head):
        return {}
    check_recipe_backbone(config)
    with ctx.fork_rng():  # a DataLoader draws its seed from the global stream
        batch = first()
    initial = initial_logit_scale(model, batch, ctx)
    _warn_on_scale(model, config.model.head, feature_norm=initial.get("initial_feature_norm"),
                   class_norm=initial.get("initial_class_norm"), when="before training", at_start=True)
    return initial


def guard_after_epoch(model: HierarchicalClassifier, head: str, record: dict[str, Any], *, last: bool) -> None:
    """The radius guard's reading after an epoch (``last``: after training), from the held-out
    features' norm and loss in ``record``."""
    _warn_on_scale(model, head, feature_norm=record.get("feature_norm"), class_norm=_class_norm(model),
                   when=f"after training (epoch {record['epoch']})" if last else f"after epoch {record['epoch']}",
                   at_start=False, loss=radius_guard.held_loss(record))
