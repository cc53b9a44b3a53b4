"""Where the runs of a plan train when not one after another in this process: one process per
device (``train-all --devices cuda:0,cuda:1``) or one Slurm job per run through submitit
(``--launcher slurm``; ``local`` runs the same jobs on this machine, :mod:`hseval.train.slurm`).

``train-all`` plans as always (every folder checked, kept runs kept, the folder of runs locked);
what is left to train becomes :class:`PlannedRun`s, plain data that a process or a job trains with
:func:`train_planned`: the run's own folder checked again and locked, the dataset loaded, the
training as in this process. So a run trained anywhere is the run trained here, bit for bit on the
CPU. A failed run is reported (:class:`RunOutcome`) and the others go on.
"""

from __future__ import annotations

import multiprocessing
import os
import time
import traceback
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from hseval.core.errors import ConfigError, HsevalError, first_line
from hseval.train import loader
from hseval.train.config import TrainConfig
from hseval.train.engine import load_data, train
from hseval.train.probe import read_features
from hseval.train.run_folder import check_run_folder, reuse

__all__ = ["RunOutcome", "PlannedRun", "train_planned", "train_reporting", "on_devices"]


@dataclass
class RunOutcome:
    """How a run of the plan went: ``state`` trained, kept (finished before), failed or submitted."""

    seconds: float
    device: str | None = None
    state: str = "trained"
    error: str | None = None


@dataclass
class PlannedRun:
    """A run of the plan, as another process or a job trains it."""

    name: str
    config: TrainConfig
    out: Path
    resume: bool  # continue an unfinished run
    force: bool  # replace a finished one that does not serve
    features: str | None = None  # a probe's features file

    def on(self, device: str | None) -> TrainConfig:
        """The run's configuration on ``device`` (None: its own), without progress bars (lines only)."""
        engine = {"progress": False, **({"device": device} if device else {})}
        return self.config.model_copy(update={"engine": self.config.engine.model_copy(update=engine)})


def train_planned(run: PlannedRun, device: str | None = None, *, requeued: bool = False) -> RunOutcome:
    """Train ``run`` in this process on ``device`` (None: its configuration's). ``requeued``: a job
    that a time limit or a preemption stopped, continued from its last epoch where it has one."""
    resume, force = run.resume, run.force
    config, data = run.on(device), None
    if requeued:  # what its stopped attempt left: continued (an extension too), or kept when it finished
        data = load_data(config)
        found = reuse(run.out, config, lambda: loader.run_data(data, config))
        if found.action == "keep":
            return RunOutcome(0.0, device, state="kept")
        if found.action == "stale":
            raise ConfigError(found.refusal(run.out))
        resume, force = found.action == "continue", False
    folder = check_run_folder(run.out, resume=resume, force=force)
    features = read_features(run.features) if run.features else None
    start = time.perf_counter()
    train(config, run.out, resume=resume, force=force, folder=folder, features=features, data=data,
          log=lambda line: print(f"[{device or config.engine.device}] {run.name}: {line}", flush=True))
    return RunOutcome(time.perf_counter() - start, device or config.engine.device)


def train_reporting(run: PlannedRun, device: str | None = None, *, requeued: bool = False) -> RunOutcome:
    """:func:`train_planned` in a worker process or a job: a failure becomes the run's outcome (one
    line; the traceback of a bug on stderr), so that the other runs go on."""
    start = time.perf_counter()
    try:
        return train_planned(run, device, requeued=requeued)
    except HsevalError as exc:
        error = first_line(exc)
    except Exception as exc:  # a bug: its traceback where the user sees the worker's output
        traceback.print_exc()
        error = f"internal error ({type(exc).__name__}: {first_line(exc, limit=300)})"
    return RunOutcome(time.perf_counter() - start, device or run.config.engine.device, state="failed", error=error)


def on_devices(runs: list[PlannedRun], devices: list[str], *, log: Callable[[str], None] = print
               ) -> dict[str, RunOutcome]:
    """Train ``runs`` with one process per entry of ``devices``, each taking the next run of the plan
    when it is free; returns each run's outcome. Processes are spawned (CUDA cannot be forked).

    A device may be listed more than once: ``cpu,cpu`` is two processes on the CPU, which share its
    cores (each run's ``engine.threads``, unless it sets its own: the cores divided by the CPU
    processes). On two cores, two one-thread processes trained the small CNN 1.44x faster than one
    process with two threads: its batches are too small to share well between threads."""
    context = multiprocessing.get_context("spawn")
    pools = [ProcessPoolExecutor(1, mp_context=context) for _ in devices]
    cpu_workers = sum(torch.device(d).type == "cpu" for d in devices)
    threads = max(1, (os.cpu_count() or 1) // cpu_workers) if cpu_workers > 1 else None
    pending, running, outcomes = list(runs), {}, {}
    started = {}
    try:
        while pending or running:
            for slot, device in enumerate(devices):
                if pending and slot not in running.values():
                    run = pending.pop(0)
                    log(f"[{len(runs) - len(pending)}/{len(runs)}] {'continuing' if run.resume else 'training'} "
                        f"{run.name} on {device}")
                    if threads and torch.device(device).type == "cpu" and run.config.engine.threads is None:
                        run = replace(run, config=run.config.model_copy(update={
                            "engine": run.config.engine.model_copy(update={"threads": threads})}))
                    future: Future = pools[slot].submit(train_reporting, run, device)
                    running[future], started[future] = slot, (run, time.perf_counter())
            done, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for future in done:
                slot = running.pop(future)
                run, start = started.pop(future)
                try:
                    outcomes[run.name] = future.result()
                except BrokenProcessPool:  # the process died (killed, out of memory): a fresh one takes the next
                    pools[slot].shutdown(wait=False)
                    pools[slot] = ProcessPoolExecutor(1, mp_context=context)
                    outcomes[run.name] = RunOutcome(time.perf_counter() - start, devices[slot], state="failed",
                                                    error="its process ended without a result (killed or out of "
                                                          "memory?)")
                if outcomes[run.name].state == "failed":
                    log(f"{run.name} failed on {devices[slot]}: {outcomes[run.name].error}")
    finally:
        for pool in pools:
            pool.shutdown(wait=True, cancel_futures=True)
    return outcomes
