"""The training settings that do not change what a run learns, in one list: resuming a run,
reusing the demo's runs and grouping runs as seeds of one configuration all read it."""

from __future__ import annotations

from typing import Any

__all__ = ["RESULT_NEUTRAL", "result_settings"]

RESULT_NEUTRAL = {"engine": ("progress", "tensorboard", "eval_every", "device", "threads", "compile", "cuda_graphs"),
                  "data": ("root", "workers")}
"""Display, logging, where and how fast a run ran, where its data lies."""


def result_settings(training: dict[str, Any], *, drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """``training`` (a config as a dict) without :data:`RESULT_NEUTRAL` and the dotted keys of
    ``drop`` (e.g. ``engine.seed`` to group seeds, ``optim.epochs`` to resume for longer)."""
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in training.items()}
    neutral = [f"{section}.{key}" for section, keys in RESULT_NEUTRAL.items() for key in keys]
    for dotted in (*neutral, *drop):
        section, key = dotted.split(".")
        if isinstance(out.get(section), dict):
            out[section].pop(key, None)
    return out

