"""The run folder of a training: whether a training may write there (:func:`check_run_folder`, the
output transaction of one training, checked before any work), and whether what it holds can be
reused (:func:`reuse`, the one decision for ``train --resume`` and ``train-all --resume`` alike).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hseval.core import fileio
from hseval.core.errors import ConfigError, HsevalError, first_line
from hseval.data import LoadedDataset
from hseval.io import run_format
from hseval.io.output import OutputFolder
from hseval.io.run_settings import DATASET, INIT_FILE, TREE, changed_inputs, run_inputs
from hseval.train.checks import head_options_for
from hseval.train.config import TrainConfig
from hseval.train.optim import learning_rates
from hseval.train.pretrained import init_file

__all__ = ["resumes", "check_run_folder", "Reuse", "reuse", "training_inputs", "MISSING"]

MISSING = "(missing)"
"""The init file's identity when the file is gone."""


def resumes(out: Path, *, resume: bool, force: bool) -> bool:
    """Whether a training into ``out`` continues from its state. ``--resume`` continues an
    unfinished run (or extends a finished one: :func:`reuse` decides); ``--force`` trains anew over
    what is there; both: continue the run if it is unfinished, else train it anew."""
    return resume and (not force or run_format.run_folder_state(out) == "unfinished")


def check_run_folder(out: Path, *, resume: bool, force: bool, parent: OutputFolder | None = None) -> OutputFolder:
    """The output of a training into ``out``, checked without writing anything: new, empty or a
    run folder hseval wrote (``parent``: the folder of runs of this command it lies in), whose
    state fits --resume/--force. A run trained anew where one was is staged: the previous run
    stays whole until the new one is complete."""
    folder = OutputFolder(out, "run", replace=not resume, parent=parent, writes=run_format.RUN_ENTRIES)
    state = run_format.run_folder_state(out)
    if resume:
        if state == "new":
            raise ConfigError(f"{out}: no training state to resume (no {run_format.STATE_FILE})")
        return folder  # finished: reuse() tells whether it can be extended
    if state != "new" and not force:
        what = "a finished run" if state == "finished" else "an unfinished run (continue it with --resume)"
        raise ConfigError(f"{out}: already holds {what}; pass --force to overwrite it")
    return folder


@dataclass(frozen=True)
class Reuse:
    """What a run folder holds for a training, and what the training may do with it.

    ``action``: "new" (nothing there), "keep" (a finished run of these inputs and epochs),
    "continue" (an unfinished run of these inputs, or a finished one to extend: ``state`` is the
    training state to continue from) or "stale" (``why`` says what differs; ``restore`` names the
    files that would make it serve again)."""

    action: str
    finished: bool = False
    why: str = ""
    restore: str = ""
    meta: dict[str, Any] = field(default_factory=dict, repr=False)
    state: dict[str, Any] | None = field(default=None, repr=False)
    segments: list[int] = field(default_factory=list)  # the epoch counts the run finished at before

    def refusal(self, out: Path, *, again: str = "train it again with --force") -> str:
        """The one-line error of a stale run that ``--resume`` cannot use."""
        what = "a finished run that --resume cannot reuse" if self.finished else \
            "an unfinished run that --resume cannot continue"
        fix = f"restore {self.restore}, {again}" if self.restore else again
        return f"{out}: {what}: {self.why}; {fix}, or choose another --out"


def training_inputs(config: TrainConfig, data: LoadedDataset) -> dict[str, Any]:
    """The inputs (:func:`run_inputs`) of a training of ``config`` on ``data`` (the run's data:
    ``loader.run_data``), the epochs left out: what a recorded run is compared with. The head's options
    are those it takes (:func:`~hseval.train.checks.head_options_for`), as the run recorded them."""
    config, _ = head_options_for(config)
    init = None
    if config.model.init:
        path, _ = init_file(config.model.init)
        init = {"sha256": fileio.sha256(path, error=ConfigError) if path.is_file() else MISSING}
    record = {"training": config.model_dump(), "hierarchy": fileio.json_ready(data.hierarchy.to_dict()),
              "initialised_from": init, "dataset": fileio.json_ready(data.describe())}
    return run_inputs(record, drop=("optim.epochs",))


def reuse(out: Path, config: TrainConfig, data: Callable[[], LoadedDataset]) -> Reuse:
    """What a training of ``config`` may do with the run folder ``out``: every input the run recorded
    (run.json of a finished run, the training state of an unfinished one) compared with
    :func:`training_inputs` (the settings, the ``--init`` file and the tree by content, the data by
    its identity, whose ``content_sha256`` covers the images), what changed said in one line.
    ``data`` gives the run's data (``loader.run_data``), loaded only when ``out`` holds a run. A
    training state that cannot be read is one line :class:`RunFormatError`."""
    state = run_format.run_folder_state(out)
    if state == "new":
        return Reuse("new")
    run = data()
    now = training_inputs(config, run)
    meta: dict[str, Any] = {}
    if state == "finished":
        try:
            meta = run_format.verify_run(out).meta
        except HsevalError as exc:
            return Reuse("stale", True, f"it does not verify ({first_line(exc)})")
        if not meta.get("training"):
            return Reuse("stale", True, "its run.json records no training settings", meta=meta)
        stale = _stale(meta, now, config, run, finished=True, meta=meta)
        if stale is not None:
            return stale
        epochs = (meta["training"].get("optim") or {}).get("epochs")
        if epochs == config.optim.epochs:
            return Reuse("keep", True, meta=meta)
        if not isinstance(epochs, int) or epochs > config.optim.epochs:
            return Reuse("stale", True, f"it was trained for {epochs} epochs, {config.optim.epochs} asked", meta=meta)
        if not (out / run_format.STATE_FILE).is_file():
            return Reuse("stale", True, f"it was trained for {epochs} epochs and its training state "
                         f"({run_format.STATE_FILE}) is gone, so it cannot be extended to {config.optim.epochs}",
                         meta=meta)
    train_state = run_format.load_train_state(out)
    recorded = {"training": train_state["config"], "hierarchy": train_state.get("hierarchy"),
                "initialised_from": (train_state.get("sources") or {}).get("initialised_from"),
                "dataset": train_state.get("dataset")}
    if train_state.get("hierarchy") is None:  # a state of an older hseval: the tree was not recorded
        recorded["hierarchy"] = fileio.json_ready(run.hierarchy.to_dict())
    stale = _stale(recorded, now, config, run, finished=state == "finished", meta=meta)
    return stale or _continued(train_state, config, finished=state == "finished", meta=meta)


def _stale(record: dict[str, Any], now: dict[str, Any], config: TrainConfig, data: LoadedDataset, *,
           finished: bool, meta: dict[str, Any]) -> Reuse | None:
    """A stale :class:`Reuse` naming what changed between the ``record`` of a run and ``now``, else None."""
    changes = changed_inputs(run_inputs(record, drop=("optim.epochs",)), now)
    if not changes:
        return None
    said = [_said(key, then, value, config, data) for key, then, value in changes]
    why = "; ".join(said[:3]) + (f"; and {len(said) - 3} more" if len(said) > 3 else "")
    restore = [what for key, what in ((INIT_FILE, "the file"), (TREE, "the tree file"), (DATASET, "the data"))
               if any(k.startswith(key) for k, *_ in changes)]
    return Reuse("stale", finished, why, " and ".join(restore), meta=meta)


def _said(key: str, then: Any, now: Any, config: TrainConfig, data: LoadedDataset) -> str:
    """One change, as a clause: what the run was made from, and what there is now."""
    if key == INIT_FILE and then and now:
        gone = "the file is gone" if now == MISSING else f"the file now has {now}…"
        return f"it was trained from {config.model.init} with SHA-256 {then}…, {gone}"
    if key == TREE:
        where = config.data.hierarchy or f"the dataset {data.name!r}"
        return f"it was trained on another tree than {where} gives now (SHA-256 {then}… then, {now}… now)"
    if key == f"{DATASET}content_sha256":
        return (f"it was trained on other images: the data under {data.root} had SHA-256 {str(then)[:12]}…, it now "
                f"has {str(now)[:12]}…")
    if key.startswith(DATASET):
        return f"it was trained on data whose {key.removeprefix(DATASET)} was {_short(then)}, now {_short(now)}"
    return f"it was trained with {key}={_short(then)}, {_short(now)} asked"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _continued(state: dict[str, Any], config: TrainConfig, *, finished: bool, meta: dict[str, Any]) -> Reuse:
    """Continue from ``state`` to ``config.optim.epochs``: refused (stale) when the state is past
    them, or when the schedule would give an epoch already trained another learning rate."""
    done, asked = int(state["epoch"]), config.optim.epochs
    planned = (state["config"].get("optim") or {}).get("epochs", done)
    if done > asked:
        return Reuse("stale", finished, f"its training state is at epoch {done}, past the {asked} epochs asked",
                     meta=meta)
    then = learning_rates(config.optim.model_copy(update={"epochs": planned}), done)
    now = learning_rates(config.optim, done)
    differ = next((i for i, (a, b) in enumerate(zip(then, now)) if a != b), None)
    if differ is not None:
        return Reuse("stale", finished, f"its learning-rate schedule depends on optim.epochs (epoch {differ + 1} "
                     f"trained at lr {then[differ]:g} would have {now[differ]:g} with {asked} epochs), so it cannot "
                     "be extended", meta=meta)
    segments = list(state.get("segments") or [])
    if finished and done == planned < asked:  # a finished training, extended
        segments.append(planned)
    return Reuse("continue", finished, meta=meta, state=state, segments=segments)
