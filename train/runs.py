"""Many runs into one folder of runs (``hseval train-all``, ``hseval demo``): every folder and
setting checked before the first run trains, each dataset loaded once for the runs whose data
settings it serves, finished runs kept."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path

from hseval.core.errors import ConfigError
from hseval.data import LoadedDataset
from hseval.io.output import OutputFolder
from hseval.train import distributed
from hseval.train.checks import check_before_training
from hseval.train.config import TrainConfig
from hseval.train.engine import data_settings, load_data, train
from hseval.train.run_folder import check_run_folder, existing_run

__all__ = ["train_runs", "Datasets"]


class Datasets:
    """The datasets of several configurations, each loaded once per distinct data setting
    (:func:`~hseval.train.engine.data_settings`): a run never trains on data loaded for another's."""

    def __init__(self) -> None:
        self._loaded: dict[tuple, LoadedDataset] = {}

    def __call__(self, config: TrainConfig) -> LoadedDataset:
        key = data_settings(config)
        if key not in self._loaded:
            self._loaded[key] = load_data(config)
        return self._loaded[key]


def train_runs(configs: list[tuple[TrainConfig, str]], root: Path, *, resume: bool, force: bool,
               datasets: Datasets | None = None, replace_stale: bool = False,
               log: Callable[[str], None] = print) -> dict[str, float]:
    """Train the runs of ``configs`` (config, folder name) in the folder of runs ``root``.

    With ``resume``, a finished run trained with these settings is kept and an interrupted one
    continued. A finished run that does not serve (other settings, or a run.json that does not
    verify) is refused, naming what differs, unless ``force`` or ``replace_stale`` (``hseval
    demo``, which owns its folder) trains it again; with ``force``, every finished run is.
    ``datasets``: the caller's, when it has loaded some already. Returns the training seconds of each
    run in plan order, read from ``run.json`` for the kept ones."""
    writer = distributed.setup().rank == 0  # under torchrun every rank trains, rank 0 writes
    with OutputFolder(root, "runs") if writer else contextlib.nullcontext() as runs:
        todo, seconds = [], {}
        for config, name in configs:
            out = root / name
            state, meta, why = existing_run(out, config)
            seconds[name] = float(meta.get("train_seconds") or 0.0)
            if resume and state == "finished" and not force:
                log(f"{out} is finished with these settings; reusing it")
                continue
            if resume and state == "stale" and not force:
                if not replace_stale:
                    raise ConfigError(f"{out}: a finished run that --resume cannot reuse: {why}; train it again with "
                                      "--force, or choose another --out")
                log(f"{out}: cannot reuse it ({why}); training it again")
            again = resume and state == "unfinished"
            replace = force or (resume and state == "stale")
            folder = check_run_folder(out, resume=again, force=replace, parent=runs) if writer else None
            todo.append((config, out, again, replace, folder))
        datasets = datasets or Datasets()
        for config, *_ in todo:
            check_before_training(config, datasets(config))
        for k, (config, out, again, replace, folder) in enumerate(todo, start=1):
            log(f"[{k}/{len(todo)}] {'continuing' if again else 'training'} {out.name}")
            start = time.perf_counter()
            train(config, out, resume=again, force=replace, data=datasets(config), folder=folder)
            seconds[out.name] = time.perf_counter() - start
    return seconds
