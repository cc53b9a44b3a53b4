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
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from hseval.core.device import resolve_device
from hseval.core.errors import ConfigError, HsevalError, HsevalWarning, first_line, warnings_as_lines
from hseval.core.perf import available_cores
from hseval.train import loader
from hseval.train.config import TrainConfig
from hseval.train.engine import load_data, train
from hseval.train.probe import read_features
from hseval.train.run_folder import check_run_folder, reuse

__all__ = ["RunOutcome", "PlannedRun", "train_planned", "train_reporting", "on_devices", "processes",
           "describe_processes", "fit_runs", "warn"]


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
    config, lowered = loader.fit_workers(run.on(device))  # the CPUs given to this process (a Slurm job's: its node's)
    if lowered:
        warn(lowered)
    data = None
    if requeued:  # what its stopped attempt left: continued (an extension too), or kept when it finished
        data = load_data(config)
        found = reuse(run.out, config, lambda: loader.run_data(data, config))
        if found.action == "keep":
            return RunOutcome(0.0, device, state="kept")
        if found.action == "stale":
            raise ConfigError(found.refusal(run.out))
        resume, force = found.action == "continue", False
    where = str(resolve_device(config.engine.device))  # the device, not "auto"
    folder = check_run_folder(run.out, resume=resume, force=force)
    features = read_features(run.features) if run.features else None
    start = time.perf_counter()
    train(config, run.out, resume=resume, force=force, folder=folder, features=features, data=data,
          log=lambda line: print(f"[{where}] {run.name}: {line}", flush=True))
    return RunOutcome(time.perf_counter() - start, where)


def train_reporting(run: PlannedRun, device: str | None = None, *, requeued: bool = False) -> RunOutcome:
    """:func:`train_planned` in a worker process or a job: a failure becomes the run's outcome (one
    line; the traceback of a bug on stderr), so that the other runs go on. It is the front door of
    its process: warnings are shown as the command line shows them (:func:`warnings_as_lines`)."""
    start = time.perf_counter()
    try:
        with warnings_as_lines():
            return train_planned(run, device, requeued=requeued)
    except HsevalError as exc:
        error = first_line(exc)
    except Exception as exc:  # a bug: its traceback where the user sees the worker's output
        traceback.print_exc()
        error = f"internal error ({type(exc).__name__}: {first_line(exc, limit=300)})"
    return RunOutcome(time.perf_counter() - start, device or run.config.engine.device, state="failed", error=error)


def processes(devices: list[str], runs: int) -> tuple[list[str], int | None]:
    """The devices whose processes train ``runs`` runs (one per entry of ``devices``, a device
    listed twice is two processes, and no more processes than runs), and the torch threads of each
    CPU process: the cores this process may use, divided among them (None for one: torch's own)."""
    active = devices[:max(1, runs)]
    cpus = sum(torch.device(d).type == "cpu" for d in active)
    return active, (max(1, available_cores() // cpus) if cpus > 1 else None)


def describe_processes(devices: list[str], runs: int) -> str:
    """What :func:`on_devices` does with ``devices`` for ``runs`` runs, for the command's lines:
    ``4 processes (cpu x4, 8 threads each of the 32 cores)``."""
    active, threads = processes(devices, runs)
    listed = ", ".join(f"{d} x{n}" if n > 1 else d for d, n in Counter(active).items())
    shared = f", {threads} thread{'s' if threads > 1 else ''} each of the {available_cores()} cores" if threads else ""
    return f"{len(active)} process{'es' if len(active) > 1 else ''} ({listed}{shared})"


def fit_runs(runs: list[PlannedRun], processes: int, *, note: Callable[[str], None]) -> list[PlannedRun]:
    """``runs`` with their loader processes fitted to their share of the CPUs when ``processes``
    train at once (:func:`~hseval.train.loader.fit_workers`); ``note`` hears each lowering once."""
    fitted, said = [], set()
    for run in runs:
        config, why = loader.fit_workers(run.config, processes=processes)
        if why and why not in said:
            said.add(why)
            note(why)
        fitted.append(replace(run, config=config))
    return fitted


def warn(text: str) -> None:
    """Say ``text`` as an :class:`HsevalWarning` (the command line prints it as one line, once)."""
    warnings.warn(text, HsevalWarning, stacklevel=2)


def on_devices(runs: list[PlannedRun], devices: list[str], *, log: Callable[[str], None] = print,
               note: Callable[[str], None] = warn) -> dict[str, RunOutcome]:
    """Train ``runs`` with one process per entry of ``devices``, each taking the next run of the plan
    when it is free; returns each run's outcome. Processes are spawned (CUDA cannot be forked).

    A device may be listed more than once: ``cpu,cpu`` is two processes on the CPU, which share its
    cores (each run's ``engine.threads``, unless it sets its own: the cores divided by the CPU
    processes; its loader processes too). On two cores, two one-thread processes train the small
    CNN faster than one process with two threads: its batches are too small to share well
    between threads. ``log`` hears what happens (first, :func:`describe_processes`); ``note`` (a
    warning by default) that a run's loader processes were lowered."""
    log(f"training {len(runs)} run(s) in {describe_processes(devices, len(runs))}")
    devices, threads = processes(devices, len(runs))
    runs = fit_runs(runs, len(devices), note=note)
    context = multiprocessing.get_context("spawn")
    pools = [ProcessPoolExecutor(1, mp_context=context) for _ in devices]
    pending, running, outcomes = list(runs), {}, {}  # running: future -> (slot, run, start)
    try:
        while pending or running:
            for slot, device in enumerate(devices):
                if pending and slot not in (busy for busy, _, _ in running.values()):
                    run = pending.pop(0)
                    log(f"[{len(runs) - len(pending)}/{len(runs)}] {'continuing' if run.resume else 'training'} "
                        f"{run.name} on {device}")
                    if threads and torch.device(device).type == "cpu" and run.config.engine.threads is None:
                        run = replace(run, config=run.config.model_copy(update={
                            "engine": run.config.engine.model_copy(update={"threads": threads})}))
                    future: Future = pools[slot].submit(train_reporting, run, device)
                    running[future] = slot, run, time.perf_counter()
            done, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for future in done:
                slot, run, start = running.pop(future)
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
