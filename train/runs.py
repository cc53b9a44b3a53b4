"""Many runs into one folder of runs (``hseval train-all``, ``hseval demo``): every folder and
setting checked before the first run trains, each dataset loaded once for the runs whose data
settings it serves, finished runs kept; the runs left train here one after another, or through a
launcher (:mod:`hseval.train.launch`). A probe extracts each frozen backbone's features once and
trains every head on them."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from hseval.core.device import resolve_device
from hseval.core.errors import ConfigError
from hseval.data import LoadedDataset
from hseval.io.output import OutputFolder
from hseval.train import distributed, loader
from hseval.train.checks import check_before_training
from hseval.train.config import TrainConfig
from hseval.train.engine import data_settings, load_data, train
from hseval.train.launch import PlannedRun, RunOutcome
from hseval.train.probe import FEATURES, Features, extract_features, feature_identity
from hseval.train.run_folder import Reuse, check_run_folder, reuse
from hseval.train.session import initial_model
from hseval.train.step import Context

__all__ = ["train_runs", "probe_features", "Datasets", "Launcher"]

Launcher = Callable[[list[PlannedRun]], dict[str, RunOutcome]]
"""Trains the planned runs elsewhere (other processes, jobs) and says how each went."""


class Datasets:
    """The datasets of several configurations, each loaded once per distinct data setting
    (:func:`~hseval.train.engine.data_settings`): a run never trains on data loaded for another's.
    ``given``: (config, dataset) pairs already loaded, or made (a benchmark's synthetic data)."""

    def __init__(self, given: Iterable[tuple[TrainConfig, LoadedDataset]] = ()) -> None:
        self._loaded: dict[tuple, LoadedDataset] = {data_settings(config): data for config, data in given}

    def __call__(self, config: TrainConfig) -> LoadedDataset:
        key = data_settings(config)
        if key not in self._loaded:
            self._loaded[key] = load_data(config)
        return self._loaded[key]


def train_runs(configs: list[tuple[TrainConfig, str]], root: Path, *, resume: bool, force: bool,
               datasets: Datasets | None = None, replace_stale: bool = False,
               log: Callable[[str], None] = print, probe: bool = False, launcher: Launcher | None = None
               ) -> dict[str, RunOutcome]:
    """Train the runs of ``configs`` (config, folder name) in the folder of runs ``root``.

    With ``resume``, a finished run made from the same inputs is kept, an interrupted one continued
    and a finished one asked for more epochs extended (:func:`~hseval.train.run_folder.reuse`, which
    compares the settings, the init file, the tree and the data the run recorded). A run that does
    not serve (other inputs, or a run.json that does not verify) is refused before any training,
    naming what changed, unless ``force`` or ``replace_stale`` (``hseval demo``, which owns its
    folder) trains it again; with ``force``, every finished run is.
    ``datasets``: the caller's, when it has loaded some already. ``probe``: train on the cached
    features of each frozen backbone. ``launcher``: where the runs left train (default: here, one
    after another). Returns each run's outcome in plan order (seconds and device read from
    ``run.json`` for the kept ones)."""
    dist = distributed.setup()
    writer = dist.rank == 0  # under torchrun every rank trains, rank 0 writes
    if dist.world > 1 and (probe or launcher is not None):
        raise ConfigError("--probe, --devices and --launcher start their own processes; run them without torchrun")
    datasets = datasets or Datasets()
    runs = OutputFolder(root, "runs", writes=(FEATURES,) if probe else ()) if writer else None  # features/: planned
    todo, outcomes = [], {}  # the plan, made before the folder is locked: a refused command changes nothing
    for config, name in configs:
        out = root / name
        found = reuse(out, config, lambda c=config: loader.run_data(datasets(c), c)) if resume else Reuse("new")
        outcomes[name] = RunOutcome(float(found.meta.get("train_seconds") or 0.0), (found.meta.get("device") or {}
                                                                                    ).get("device"), state="kept")
        if found.action == "keep" and not force:
            log(f"{out} is finished with these settings; reusing it")
            continue
        if found.action == "stale" and not force:
            if not replace_stale:
                raise ConfigError(found.refusal(out))
            log(f"{out}: cannot reuse it ({found.why}); training it again")
        again = found.action == "continue" and not (force and found.finished)
        replace = force or found.action == "stale"
        folder = check_run_folder(out, resume=again, force=replace, parent=runs) if writer else None
        todo.append((config, out, again, replace, folder))
    for config, *_ in todo:
        check_before_training(config, loader.run_data(datasets(config), config))  # its validation split too
    with runs if writer else contextlib.nullcontext():
        features = probe_features([(c, out.name) for c, out, *_ in todo], datasets, root / FEATURES, log=log) \
            if probe else {}
        if launcher is not None and todo:
            outcomes.update(launcher([PlannedRun(out.name, config, out, again, replace, str(
                features[out.name].path) if probe else None) for config, out, again, replace, _ in todo]))
        for k, (config, out, again, replace, folder) in enumerate(todo if launcher is None else [], start=1):
            log(f"[{k}/{len(todo)}] {'continuing' if again else 'training'} {out.name}")
            start = time.perf_counter()
            train(config, out, resume=again, force=replace, data=datasets(config), folder=folder,
                  features=features.get(out.name))
            outcomes[out.name] = RunOutcome(time.perf_counter() - start, str(resolve_device(config.engine.device)))
    return {name: outcomes[name] for _, name in configs}


def probe_features(configs: list[tuple[TrainConfig, str]], datasets: Datasets, folder: Path, *,
                   log: Callable[[str], None] = print) -> dict[str, Features]:
    """The features file of each run's frozen backbone (:mod:`hseval.train.probe`) in ``folder``,
    extracted once per backbone and data (runs of one ``--init`` share it whatever their head and seed)."""
    found, out = {}, {}
    for config, name in configs:
        if not (config.model.freeze_backbone and not config.data.augment):
            raise ConfigError(f"{name}: a probe trains on cached features: it needs model.freeze_backbone=true and "
                              "data.augment=false")
        plain = loader.run_data(datasets(config), config)
        ctx = Context.create(config.engine, distributed.Dist())
        model = ctx.place(initial_model(config, plain)[0])
        key = feature_identity(model, plain, config, ctx).key
        if key not in found:
            found[key] = extract_features(model, plain, config, ctx, folder, log=log)
        out[name] = found[key]
    return out
