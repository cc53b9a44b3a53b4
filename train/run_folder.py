"""The run folder of a training: what it holds, whether a training may write there, and the
state a training resumes from.

:func:`check_run_folder` is the output transaction of one training (:class:`OutputFolder` of kind
"run"), checked once, before any work; :func:`existing_run` tells what a folder holds for a
configuration (``train-all --resume`` keeps what serves); :func:`resume_state` reads the training
state back, checked to be hseval's and of the same configuration.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hseval.core.errors import ConfigError, HsevalError, first_line
from hseval.io import run_format as checkpoint
from hseval.io.output import OutputFolder
from hseval.io.run_settings import result_settings
from hseval.train.config import TrainConfig, flatten_settings

__all__ = ["resumes", "check_run_folder", "existing_run", "resume_state", "comparable_config"]


def resumes(out: Path, *, resume: bool, force: bool) -> bool:
    """Whether a training into ``out`` continues from its state. ``--resume`` continues an
    unfinished run; ``--force`` trains anew over what is there; both: continue the run if it is
    unfinished, else train it anew (a finished run is trained again)."""
    return resume and (not force or checkpoint.run_folder_state(out) == "unfinished")


def check_run_folder(out: Path, *, resume: bool, force: bool, parent: OutputFolder | None = None) -> OutputFolder:
    """The output of a training into ``out``, checked without writing anything: new, empty or a
    run folder hseval wrote (``parent``: the folder of runs of this command it lies in), whose
    state fits --resume/--force. A run trained anew where one was is staged: the previous run
    stays whole until the new one is complete."""
    folder = OutputFolder(out, "run", replace=not resume, parent=parent, writes=checkpoint.RUN_ENTRIES)
    state = checkpoint.run_folder_state(out)
    if resume:
        if state == "finished":
            raise ConfigError(f"{out}: the run is already finished; nothing to resume (use --force to retrain)")
        if state == "new":
            raise ConfigError(f"{out}: no training state to resume (no {checkpoint.STATE_FILE})")
        return folder
    if state != "new" and not force:
        what = "a finished run" if state == "finished" else "an unfinished run (continue it with --resume)"
        raise ConfigError(f"{out}: already holds {what}; pass --force to overwrite it")
    return folder


def existing_run(out: Path, config: TrainConfig) -> tuple[str, dict[str, Any], str]:
    """What ``out`` holds for ``config``: its state, its ``run.json`` when finished, and why a
    finished run does not serve. States: "new" (nothing), "unfinished" (a training state, no
    run.json), "finished" (trained with these settings, epochs included) or "stale" (other
    settings, or a run.json that does not verify)."""
    state = checkpoint.run_folder_state(out)
    if state != "finished":
        return state, {}, ""
    try:
        meta = checkpoint.verify_run(out).meta
    except HsevalError as exc:
        return "stale", {}, f"it does not verify ({first_line(exc)})"
    saved = meta.get("training") or {}
    if not saved:
        return "stale", meta, "its run.json records no training settings"
    ours = dict(flatten_settings(comparable_config(config.to_dict())))
    theirs = dict(flatten_settings(comparable_config(saved)))
    differ = [f"{k}={theirs.get(k)!r} here, {ours.get(k)!r} asked"
              for k in sorted(ours.keys() | theirs.keys()) if ours.get(k) != theirs.get(k)]
    if differ:
        return "stale", meta, "it was trained with other settings: " + ", ".join(differ[:3]) + \
            (" …" if len(differ) > 3 else "")
    epochs = (saved.get("optim") or {}).get("epochs")
    if epochs != config.optim.epochs:
        return "stale", meta, f"it was trained for {epochs} epochs, {config.optim.epochs} asked"
    return "finished", meta, ""


def resume_state(out: Path, config: TrainConfig) -> dict[str, Any]:
    """The training state to continue from, checked to be hseval's and of the same configuration."""
    state = checkpoint.load_train_state(out)
    if comparable_config(state["config"]) != comparable_config(config.to_dict()):
        raise ConfigError(f"{out}: the configuration differs from the one the run was started with; resume with "
                          "the same recipe and --set options (only optim.epochs may grow)")
    return state


def comparable_config(config: dict[str, Any]) -> dict[str, Any]:
    """The parts of a config that must not change on resume (epochs may grow, display may change)."""
    return result_settings(config, drop=("optim.epochs",))
