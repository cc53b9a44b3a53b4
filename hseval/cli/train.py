"""``hseval train`` and ``hseval train-all`` (also ``python -m hseval.train``, e.g. under torchrun).

``train-all`` trains one run per (head, seed, sweep value) with the same data order and backbone
initialisation for every head of a seed, so the heads compare fairly; each dataset is loaded once
(per distinct data setting: a sweep may vary the tree, the folder or the dataset).
``--probe`` trains every head on the cached features of the frozen backbone; ``--devices`` spreads
the runs one per device, ``--launcher slurm`` one per Slurm job (submitit). The plan of the runs
and each one's config are :mod:`hseval.cli.train_plan`'s; here, the options, where the runs train
and what the commands print.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

from hseval.cli import comma_list, count_int, positive_number, refuse_unused
from hseval.cli.train_plan import PROBE_SETTINGS, plan_runs, planned_configs, planned_head_options, run_config, warn
from hseval.core.errors import ConfigError, HsevalError
from hseval.core.extras import check_installed
from hseval.train.budgets import BUDGETS

__all__ = ["add_train_arguments", "cmd_train", "cmd_train_all", "plan_runs", "planned_configs", "RunsFailed",
           "PROBE_SETTINGS"]


class RunsFailed(HsevalError):
    """Some runs of a plan failed (the others are finished)."""

MEMORY_ADVICE = "use smaller batches (--set data.batch_size=... and --set data.eval_batch_size=...)"


def add_train_arguments(parser: argparse.ArgumentParser, *, many: bool) -> None:
    parser.add_argument("--dataset", help="dataset name (default: the recipe's; fashion-mnist without --recipe)")
    parser.add_argument("--data-root", help="folder of the dataset (see 'hseval data info')")
    parser.add_argument("--backbone", help="backbone (default: the recipe's)")
    parser.add_argument("--recipe", help="a shipped recipe name or a YAML file (default: <dataset>-<backbone>)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a setting, e.g. --set optim.lr=0.05 (repeatable)")
    parser.add_argument("--budget", choices=list(BUDGETS), help="how much training, over the recipe: "
                        + "; ".join(f"{name}: {BUDGETS.get(name).help}" for name in BUDGETS))
    parser.add_argument("--hierarchy", help="a hierarchy file that replaces the dataset's tree")
    parser.add_argument("--init", metavar="FILE", help="start the backbone from this state dict (.safetensors, or "
                        ".pt/.pth read weights-only; torchvision's keys, timm's for timm:NAME), or from an hseval run "
                        "folder (its backbone; its own head dropped); the head starts fresh")
    parser.add_argument("--prefix", help="strip this prefix from the keys of the --init file")
    parser.add_argument("--map", action="append", default=[], metavar="BACKBONE_KEY=FILE_KEY",
                        help="take a backbone tensor from another key of the --init file (repeatable)")
    parser.add_argument("--ignore", action="append", default=[], metavar="FILE_KEY",
                        help="drop a tensor of the --init file the backbone does not use (repeatable)")
    parser.add_argument("--device", help="auto, cpu, cuda or cuda:N (default: auto)")
    parser.add_argument("--force", action="store_true", help="train anew over a finished or unfinished run")
    parser.add_argument("--resume", action="store_true",
                        help="continue an interrupted run" + (" and keep the finished ones" if many else "") +
                        "; with --force: continue an unfinished run, train a finished one again")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--out", required=True, help="run folder" + (" root (one sub-folder per run)" if many else ""))
    if many:
        parser.add_argument("--heads", default="all", help="comma-separated heads or groups of heads: 'paper' (the "
                            "paper's eight), 'peers' (HXE, soft labels, Barz & Denzler, NBDT), 'all' (both, default)")
        parser.add_argument("--seeds", default=None, help="comma-separated seeds (default: the recipe's)")
        parser.add_argument("--sweep", action="append", default=[], metavar="KEY=V1,V2,...",
                            help="repeat the grid for each value, e.g. model.head_options.radius_decay=0.5,0.7,0.9")
        parser.add_argument("--probe", action="store_true", help="linear probing: extract the frozen backbone's "
                            "features once (OUT/features/), train every head on them")
        parser.add_argument("--devices", metavar="DEV,DEV,...", help="one process per device, each taking the next "
                            "run, e.g. cuda:0,cuda:1,cuda:2,cuda:3")
        parser.add_argument("--launcher", choices=["slurm", "local"], help="one job per run through submitit: a "
                            "Slurm job array, or the same jobs on this machine (local)")
        parser.add_argument("--slurm-partition", help="Slurm partition of the jobs")
        parser.add_argument("--slurm-gpus-per-run", type=count_int(0), default=1,
                            help="GPUs of each job (default 1)")
        parser.add_argument("--slurm-cpus-per-run", type=count_int(1, 65535), help="CPU cores of each job")
        parser.add_argument("--slurm-time", type=count_int(), default=24 * 60, metavar="MINUTES",
                            help="time limit of each job (default 1440; a job stopped by it is requeued and resumes)")
        parser.add_argument("--slurm-mem", type=positive_number("GB", minimum=0.001, maximum=1e6), metavar="GB",
                            help="memory of each job (a fraction: whole MB)")
        parser.add_argument("--slurm-parallel", type=count_int(), help="at most this many jobs at once")
        parser.add_argument("--dry-run", action="store_true", help="with --launcher slurm: print the sbatch script "
                            "and the runs it would submit, submit nothing")
    else:
        parser.add_argument("--head", help="head (see the README's table; default: the recipe's, plain)")


class _Notes:
    """The plan's warnings (a sweep that leaves a head out, loader processes lowered), shown once
    the command starts working: a command refused after planning prints its one error line alone."""

    def __init__(self) -> None:
        self.pending: list[str] = []

    def add(self, text: str | None) -> None:
        if text:
            self.pending.append(text)

    def flush(self) -> None:
        for text in self.pending:
            warn(text)
        self.pending.clear()

    def log(self, line: str) -> None:
        self.flush()
        print(line, flush=True)


def cmd_train(args: argparse.Namespace) -> int:
    from hseval.train.engine import train  # torch: only for the commands that train
    from hseval.train.loader import fit_workers  # torch: for this command only

    notes = _Notes()
    config = planned_head_options(args, [(run_config(args, args.head, []), args.head)], notes)[0][0]
    config, lowered = fit_workers(config, processes=int(os.environ.get("LOCAL_WORLD_SIZE", 1)))
    notes.add(lowered)
    start = time.perf_counter()
    out = train(config, args.out, resume=args.resume, force=args.force, log=notes.log)
    notes.flush()
    print(f"wrote {out} ({time.perf_counter() - start:.0f} s); evaluate it with: hseval evaluate {out} --out EVAL_DIR")
    return 0


def _launcher(args: argparse.Namespace, root: Path, notes: _Notes):
    """Where ``train-all``'s runs train: None (here, one after another), one process per device of
    --devices, or submitit's jobs (--launcher); the options checked before any work. What they do
    goes to ``notes``' log, a lowered number of loader processes to its notes."""
    if args.launcher is None:
        refuse_unused(args, ("slurm_partition", "slurm_cpus_per_run", "slurm_mem", "slurm_parallel"),
                      why="applies to --launcher slurm")
    if args.dry_run and args.launcher != "slurm":
        raise ConfigError("--dry-run prints the sbatch script of --launcher slurm")
    if args.devices:
        from hseval.core.device import resolve_device  # torch: only the training commands check devices
        from hseval.train.launch import on_devices  # torch: only the training commands launch runs

        if args.launcher or args.device:
            raise ConfigError(f"--devices gives each run its device; it does not go with "
                              f"{'--launcher' if args.launcher else '--device'}")
        devices = comma_list(args.devices, "--devices")
        for device in devices:
            resolve_device(device, option="--devices")
        args.device = devices[0]  # where a probe extracts its features
        return lambda runs: on_devices(runs, devices, log=notes.log, note=notes.add)
    if args.launcher is None:
        return None
    if args.probe:
        raise ConfigError("--probe trains on cached features in seconds per run: run it without --launcher (on a GPU "
                          "node, for the extraction)")
    check_installed("submitit", purpose=f"--launcher {args.launcher}")
    from hseval.train.slurm import check_cluster, submit  # submitit: an extra, for --launcher only

    if args.dry_run:
        return None
    check_cluster(args.launcher)
    settings = _slurm_settings(args)
    return lambda runs: submit(runs, root, cluster=args.launcher, settings=settings, log=notes.log, note=notes.add)


def _slurm_settings(args: argparse.Namespace):
    from hseval.train.slurm import SlurmSettings  # submitit: an extra, for --launcher only

    return SlurmSettings(partition=args.slurm_partition, gpus_per_run=args.slurm_gpus_per_run,
                         cpus_per_run=args.slurm_cpus_per_run, time_min=args.slurm_time, mem_gb=args.slurm_mem,
                         parallel=args.slurm_parallel)


def _dry_run(args: argparse.Namespace, configs: list[tuple[Any, str]], root: Path) -> int:
    from hseval.train.loader import run_data  # torch: only the training commands read runs
    from hseval.train.run_folder import reuse  # torch: for this command only
    from hseval.train.runs import Datasets  # torch: for this command only
    from hseval.train.slurm import JOBS, sbatch_script  # submitit: an extra, for --launcher only

    datasets = Datasets()
    todo = [name for config, name in configs
            if not (args.resume and reuse(root / name, config, lambda c=config: run_data(datasets(c), c)).action
                    == "keep")]
    print(sbatch_script(len(todo), _slurm_settings(args), root.absolute() / JOBS / "%j"))
    print(f"# {len(todo)} job(s), one per run: {', '.join(todo) or '(none: every run is finished)'}")
    return 0


def cmd_train_all(args: argparse.Namespace) -> int:
    from hseval.train.loader import fit_workers  # torch: for the commands that train
    from hseval.train.runs import train_runs  # torch: for this command only

    root, notes = Path(args.out), _Notes()
    launcher = _launcher(args, root, notes)
    configs = planned_configs(args, PROBE_SETTINGS if args.probe else [], note=notes.add)
    if args.dry_run:
        code = _dry_run(args, configs, root)
        notes.flush()
        return code
    if launcher is None:  # one after another here; a launcher fits each run to its share of the CPUs
        fitted = [fit_workers(config) for config, _ in configs]
        configs = [(config, name) for (config, _), (_, name) in zip(fitted, configs)]
        notes.add(next((lowered for _, lowered in fitted if lowered), None))
    outcomes = train_runs(configs, root, resume=args.resume, force=args.force, probe=args.probe, launcher=launcher,
                          log=notes.log)
    notes.flush()
    for name, outcome in outcomes.items():
        where = f" on {outcome.device}" if outcome.device else ""
        state = {"kept": " (kept)", "submitted": " (submitted)"}.get(outcome.state, "")
        print(f"  {name}: {'FAILED' if outcome.state == 'failed' else f'{outcome.seconds:.0f} s'}{where}{state}")
    failed = [name for name, outcome in outcomes.items() if outcome.state == "failed"]
    if failed:
        raise RunsFailed(f"{len(failed)} of {len(outcomes)} runs failed ({', '.join(failed)}; each one's error is "
                         f"above); fix the cause and run the same command with --resume to train them")
    if any(outcome.state == "submitted" for outcome in outcomes.values()):
        print(f"submitted the runs to Slurm (squeue shows them); when they end, evaluate them with: hseval evaluate "
              f"{root} --out EVAL_DIR (the same command with --resume trains any that did not finish)")
        return 0
    print(f"{_what_happened(args, outcomes)} under {root}; evaluate them with: hseval evaluate {root} --out EVAL_DIR")
    return 0


def _what_happened(args: argparse.Namespace, outcomes: dict) -> str:
    """``trained 4 runs in 4 processes (cpu x4, ...), kept 2 finished``: what the command did."""
    trained = sum(outcome.state == "trained" for outcome in outcomes.values())
    kept = len(outcomes) - trained
    where = ""
    if trained and args.devices:
        from hseval.train.launch import describe_processes  # torch: for the commands that train

        where = f" in {describe_processes(comma_list(args.devices, '--devices'), trained)}"
    elif trained and args.launcher == "local":
        where = " as jobs on this machine, all at once"
    return f"trained {trained} run{'s' if trained != 1 else ''}{where}" + (f", kept {kept} finished" if kept else "")


def register(commands: argparse._SubParsersAction) -> None:
    train = commands.add_parser("train", help="train one run (backbone + head) into a run folder")
    add_train_arguments(train, many=False)
    train.set_defaults(func=cmd_train, memory_advice=MEMORY_ADVICE)
    train_all = commands.add_parser("train-all", help="train one run per head (and seed, sweep value)")
    add_train_arguments(train_all, many=True)
    train_all.set_defaults(func=cmd_train_all, memory_advice=MEMORY_ADVICE)
