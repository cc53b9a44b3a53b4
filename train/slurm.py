"""The runs of a plan as one Slurm job array through submitit (``train-all --launcher slurm``), or
the same jobs run on this machine by submitit's local executor (``--launcher local``).

Each job trains one :class:`~hseval.train.launch.PlannedRun` with
:func:`~hseval.train.launch.train_planned`: the same folders, locks and resume rules as a run
trained here. A job stopped by its time limit or a preemption is requeued by submitit and continues
from its last finished epoch (:class:`RunJob`).
"""

from __future__ import annotations

import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import submitit
from submitit.slurm.slurm import _make_sbatch_string

from hseval.core.errors import ConfigError, first_line
from hseval.train.launch import PlannedRun, RunOutcome, fit_runs, train_reporting, warn

__all__ = ["SlurmSettings", "RunJob", "check_cluster", "submit", "run_local", "sbatch_script", "JOBS"]

JOBS = "jobs"
"""The folder of a folder of runs where submitit keeps its scripts, pickles and logs."""


@dataclass
class SlurmSettings:
    """What each job asks Slurm for (``--slurm-*``)."""

    partition: str | None = None
    gpus_per_run: int = 1
    cpus_per_run: int | None = None
    time_min: int = 24 * 60
    mem_gb: float | None = None
    parallel: int | None = None  # at most this many runs at once (the array's %N)

    def sbatch(self) -> dict[str, Any]:
        """The parameters of submitit's ``SlurmExecutor`` (sbatch's, in submitit's names)."""
        params = {"job_name": "hseval", "partition": self.partition, "time": self.time_min,
                  "gpus_per_node": self.gpus_per_run or None, "cpus_per_task": self.cpus_per_run,
                  "mem": self.mem() if self.mem_gb else None, "array_parallelism": self.parallel}
        return {k: v for k, v in params.items() if v is not None}

    def mem(self) -> str:
        """``mem_gb`` as sbatch's ``--mem`` takes it: a whole number of GB, else of MB (Slurm reads
        no fraction, nor an exponent that ``:g`` would write for 10**6)."""
        gb = float(self.mem_gb or 0)
        return f"{int(gb)}GB" if gb.is_integer() else f"{max(1, round(gb * 1024))}MB"


class RunJob(submitit.helpers.Checkpointable):
    """One run as a submitit job; on a time limit or a preemption, requeued to continue."""

    def __init__(self, run: PlannedRun, *, requeued: bool = False) -> None:
        self.run, self.requeued = run, requeued

    def __call__(self) -> RunOutcome:
        return train_reporting(self.run, requeued=self.requeued)

    def checkpoint(self, *args: Any, **kwargs: Any) -> submitit.helpers.DelayedSubmission:
        return submitit.helpers.DelayedSubmission(RunJob(self.run, requeued=True))


def sbatch_script(runs: int, settings: SlurmSettings, folder: Path) -> str:
    """The sbatch script submitit writes for an array of ``runs`` jobs (a dry run prints it)."""
    command = " ".join([shlex.quote(sys.executable), "-u -m submitit.core._submit", shlex.quote(str(folder))])
    array = {"map_count": runs} if runs > 1 else {}
    return _make_sbatch_string(command=command, folder=folder, **array, **settings.sbatch())


def check_cluster(cluster: str) -> None:
    """Refuse ``--launcher slurm`` where Slurm is not (before any work, writing nothing)."""
    if cluster == "slurm" and submitit.SlurmExecutor.affinity() <= 0:
        raise ConfigError("--launcher slurm: Slurm's srun is not on this machine's PATH; submit from a Slurm login "
                          "node, or try the plan here with --launcher local")


def submit(runs: list[PlannedRun], root: Path, *, cluster: str, settings: SlurmSettings,
           log: Callable[[str], None] = print, note: Callable[[str], None] | None = None) -> dict[str, RunOutcome]:
    """Submit ``runs`` as one job array (``cluster`` "slurm": sbatch with ``settings``, left to run;
    submitit's scripts, pickles and logs in ``root/jobs``, where the nodes read them), or run them as
    jobs on this machine ("local": :func:`run_local`); ``cluster`` checked by :func:`check_cluster`."""
    if not runs:
        return {}
    if cluster != "slurm":
        return run_local(runs, settings, log=log, note=note or warn)
    executor = submitit.SlurmExecutor(folder=root.absolute() / JOBS / "%j")
    executor.update_parameters(**settings.sbatch())
    with executor.batch():
        jobs = [executor.submit(RunJob(run)) for run in runs]
    log(f"submitted {len(jobs)} job(s) ({jobs[0].job_id.split('_')[0]}); logs in {root / JOBS}")
    return {run.name: RunOutcome(0.0, f"slurm job {job.job_id}", state="submitted") for run, job in zip(runs, jobs)}


def run_local(runs: list[PlannedRun], settings: SlurmSettings, *, log: Callable[[str], None] = print,
              note: Callable[[str], None] = warn) -> dict[str, RunOutcome]:
    """Run ``runs`` as submitit jobs on this machine, all at once (their loader processes share the
    CPUs: :func:`~hseval.train.launch.fit_runs`), and wait for them; each job's lines are relayed
    to ``log`` when it ends. submitit's working files (pickles, logs) stay in a temporary folder,
    removed when the jobs end, so that no pickle is left in the user's folder; it is kept, and
    named, only when a job died without a result (its log says why)."""
    work = Path(tempfile.mkdtemp(prefix="hseval-jobs-"))
    executor = submitit.LocalExecutor(folder=work / "%j")
    executor.update_parameters(timeout_min=settings.time_min, gpus_per_node=0)
    runs = fit_runs(runs, len(runs), note=note)
    died, jobs = False, []
    try:
        with executor.batch():
            jobs = [executor.submit(RunJob(run)) for run in runs]
        log(f"running {len(jobs)} job(s) at once on this machine (submitit's local executor)")
        outcomes = {}
        for run, job in zip(runs, jobs):
            try:
                outcomes[run.name] = job.result()
            except submitit.core.utils.UncompletedJobError as exc:  # the job died without a result
                died = True
                outcomes[run.name] = RunOutcome(0.0, f"job {job.job_id}", state="failed",
                                                error=f"{first_line(exc, limit=200)} (its log: {job.paths.stderr})")
            for line in (job.stdout() or "").splitlines():
                if not line.startswith("submitit "):  # the run's lines, not the executor's
                    log(line)
            if outcomes[run.name].state == "failed":
                log(f"{run.name} failed in job {job.job_id}: {outcomes[run.name].error}")
        return outcomes
    except BaseException:  # interrupted: the jobs stop with this command
        for job in jobs:
            job.cancel(check=False)
        raise
    finally:
        if not died:
            shutil.rmtree(work, ignore_errors=True)
