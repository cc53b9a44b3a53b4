"""``hseval train`` and ``hseval train-all`` (also ``python -m hseval.train``, e.g. under torchrun).

``train-all`` trains one run per (head, seed, sweep value) with the same data order and backbone
initialisation for every head of a seed, so the heads compare fairly; each dataset is loaded once
(per distinct data setting: a sweep may vary the tree, the folder or the dataset).
``--probe`` trains every head on the cached features of the frozen backbone; ``--devices`` spreads
the runs one per device, ``--launcher slurm`` one per Slurm job (submitit).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import time
import warnings
from pathlib import Path
from typing import Any

from hseval.cli import count_int, positive_number, refuse_unused
from hseval.core.errors import ConfigError, HsevalError, HsevalWarning
from hseval.core.extras import check_installed

__all__ = ["add_train_arguments", "cmd_train", "cmd_train_all", "plan_runs", "planned_configs", "RunsFailed",
           "PROBE_SETTINGS"]

PROBE_SETTINGS = ["model.freeze_backbone=true", "data.augment=false"]
"""What a probe is: a frozen backbone, no augmentation (its features are computed once)."""


class RunsFailed(HsevalError):
    """Some runs of a plan failed (the others are finished)."""

MEMORY_ADVICE = "use smaller batches (--set data.batch_size=... and --set data.eval_batch_size=...)"
_SEPARATORS = re.compile(r"[/\\]")  # in a sweep value that is a path (data.hierarchy=trees/a.txt): no nested folder


def add_train_arguments(parser: argparse.ArgumentParser, *, many: bool) -> None:
    parser.add_argument("--dataset", help="dataset name (default: the recipe's; fashion-mnist without --recipe)")
    parser.add_argument("--data-root", help="folder of the dataset (see 'hseval data info')")
    parser.add_argument("--backbone", help="backbone (default: the recipe's)")
    parser.add_argument("--recipe", help="a shipped recipe name or a YAML file (default: <dataset>-<backbone>)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a setting, e.g. --set optim.lr=0.05 (repeatable)")
    parser.add_argument("--hierarchy", help="a hierarchy file that replaces the dataset's tree")
    parser.add_argument("--init", metavar="FILE", help="start the backbone from this state dict (.safetensors, or "
                        ".pt/.pth read weights-only; torchvision's keys, timm's for timm:NAME); the head starts fresh")
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


def _config(args: argparse.Namespace, head: str | None, extra: list[str]):
    """The recipe with every setting the command line gives: its flags, ``--set``, and the grid's
    ``extra`` (a run's sweep values and seed). A setting given twice is refused: one of the two would
    be recorded or believed, and not used."""
    from hseval.core.overrides import parse_override  # yaml: only the training commands read settings
    from hseval.train.config import default_recipe, load_config  # yaml: only the training commands read recipes

    init = str(Path(args.init).expanduser().absolute()) if args.init else None  # the run may train elsewhere
    flags = {"--dataset": ("data.dataset", args.dataset), "--data-root": ("data.root", args.data_root),
             "--hierarchy": ("data.hierarchy", args.hierarchy), "--backbone": ("model.backbone", args.backbone),
             "--device": ("engine.device", args.device),
             "--quiet": ("engine.progress", "false" if args.quiet else None),
             "--init": ("model.init", json.dumps(init) if init else None),
             "--prefix": ("model.init_prefix", json.dumps(args.prefix) if args.prefix else None),
             "--map": ("model.init_map", json.dumps(args.map) if args.map else None),
             "--ignore": ("model.init_ignore", json.dumps(args.ignore) if args.ignore else None),
             "--heads" if hasattr(args, "heads") else "--head": ("model.head", head)}
    given = [(flag, f"{key}={value}") for flag, (key, value) in flags.items() if value is not None]
    given += [("--set", item) for item in args.set]
    seeds = getattr(args, "seeds", None) is not None  # plan_runs refuses --seeds with a sweep of engine.seed
    given += [("--probe" if item in PROBE_SETTINGS else "--seeds" if seeds and item.startswith("engine.seed=")
               else "--sweep", item) for item in extra]
    _refuse_repeated(given)
    recipe = args.recipe or default_recipe(args.dataset or "fashion-mnist", args.backbone)
    return load_config(recipe, [item for _, item in given],
                       given_by={parse_override(item)[0]: option for option, item in given})


def _refuse_repeated(given: list[tuple[str, str]]) -> None:
    """One line when two of ``given`` (option, KEY=VALUE) set one setting, or one inside the other."""
    from hseval.core.overrides import parse_override  # yaml: only the training commands read settings

    seen: list[tuple[str, str]] = []
    for option, item in given:
        key = parse_override(item)[0]
        for other, earlier in seen:
            if key == earlier or key.startswith(earlier + ".") or earlier.startswith(key + "."):
                both = f"{other} gives it twice" if other == option else f"{other} and {option} both set it"
                raise ConfigError(f"{key}: {both}; give each setting once")
        seen.append((option, key))


def _split(text: str, what: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise ConfigError(f"{what} is empty")
    return items


def _sweeps(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    """(key, values) of every ``--sweep KEY=V1,V2,...``."""
    sweeps = []
    for item in args.sweep:
        key, sep, values = item.partition("=")
        if not sep:
            raise ConfigError(f"--sweep expects KEY=V1,V2,..., got {item!r}")
        sweeps.append((key.strip(), _split(values, f"--sweep {key}")))
    return sweeps


def _warn(text: str) -> None:
    warnings.warn(text, HsevalWarning, stacklevel=2)  # the CLI prints it: hseval: warning: ...


def plan_runs(args: argparse.Namespace, *, note=_warn) -> list[tuple[str, list[str], str]]:
    """(head, overrides, folder name) for every run of the grid heads × sweeps × seeds.

    A sweep of a head option (``model.head_options.X``) applies to the heads that take X; the
    others are trained once (``note`` says so: a warning). Two runs with one folder name are refused."""
    from hseval.nn.heads import GROUPS, HEADS, list_heads  # torch: only the commands that train

    heads = [head for item in _split(args.heads, "--heads")
             for head in (list_heads(item) if item in (*GROUPS, "all") else [item])]
    for head in heads:
        HEADS.get(head)
    seeds = [None] if args.seeds is None else _split(args.seeds, "--seeds")
    for seed in seeds:
        if seed is not None and not seed.isdigit():
            raise ConfigError(f"--seeds takes non-negative integers, got {seed!r}")
    sweeps = _sweeps(args)
    if seeds != [None] and "engine.seed" in dict(sweeps):
        raise ConfigError("engine.seed: --seeds and --sweep both set it; give each setting once")
    plan, names = [], set()
    for head in heads:
        grid = []
        for key, values in sweeps:
            option = key.removeprefix("model.head_options.") if key.startswith("model.head_options.") else None
            if option is not None and option not in HEADS.options(head):
                note(f"--sweep {key} does not apply to {head} (it has no option {option!r}); training it once")
                continue
            grid.append([(key, v) for v in values])
        for combo in itertools.product(*grid):
            for seed in seeds:
                overrides = [f"{k}={v}" for k, v in combo]
                name = head + "".join(f"-{k.split('.')[-1]}={_SEPARATORS.sub('_', v)}" for k, v in combo)
                if seed is not None:
                    overrides.append(f"engine.seed={seed}")
                    if len(seeds) > 1:
                        name += f"-seed{seed}"
                if name in names:
                    raise ConfigError(f"two runs would be written to {name!r}; a head, seed or sweep value is "
                                      "listed twice")
                names.add(name)
                plan.append((head, overrides, name))
    return plan


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
            _warn(text)
        self.pending.clear()

    def log(self, line: str) -> None:
        self.flush()
        print(line, flush=True)


def cmd_train(args: argparse.Namespace) -> int:
    from hseval.train.engine import train  # torch: only for the commands that train
    from hseval.train.loader import fit_workers  # torch: for this command only

    notes = _Notes()
    config = _head_options(args, [(_config(args, args.head, []), args.head)], notes)[0][0]
    config, lowered = fit_workers(config, processes=int(os.environ.get("LOCAL_WORLD_SIZE", 1)))
    notes.add(lowered)
    start = time.perf_counter()
    out = train(config, args.out, resume=args.resume, force=args.force, log=notes.log)
    notes.flush()
    print(f"wrote {out} ({time.perf_counter() - start:.0f} s); evaluate it with: hseval evaluate {out} --out EVAL_DIR")
    return 0


def planned_configs(args: argparse.Namespace, extra: list[str] | None = None, *, note=_warn
                    ) -> list[tuple[Any, str]]:
    """(config, folder name) of every run of ``train-all``'s grid (heads × sweeps × seeds), every
    value of every sweep checked first (:func:`_check_head_sweeps`); ``note`` as :func:`plan_runs`'."""
    plan = plan_runs(args, note=note)
    _check_head_sweeps(args, [head for head, _, _ in plan])
    configs = [(_config(args, head, [*overrides, *(extra or [])]), name) for head, overrides, name in plan]
    return _head_options(args, configs, note)


def _head_options(args: argparse.Namespace, configs: list[tuple[Any, str]], note) -> list[tuple[Any, str]]:
    """:func:`~hseval.train.checks.plan_head_options` of the head options given with --set."""
    from hseval.core.overrides import parse_override  # yaml: only the training commands read settings
    from hseval.train.checks import plan_head_options  # torch: the training commands

    given = {key.removeprefix("model.head_options.") for key, _ in map(parse_override, args.set)
             if key.startswith("model.head_options.")}
    return plan_head_options(configs, given, note)


def _check_head_sweeps(args: argparse.Namespace, heads: list[str]) -> None:
    """Every value of a sweep of a head option checked as ``--set`` checks it (type, range, the
    head's own rules), each error naming --sweep: on the heads of the plan that take the option, or
    on every head that does when none of the plan's does (a value is checked whatever the heads). A
    sweep of another setting is checked with every run, which it applies to."""
    from hseval.nn.heads import HEADS, list_heads  # torch: only the commands that train
    from hseval.train.checks import check_head_options  # torch: for this command only

    for key, values in _sweeps(args):
        if not key.startswith("model.head_options."):
            continue
        option = key.removeprefix("model.head_options.")
        takers = [h for h in dict.fromkeys(heads) if option in HEADS.options(h)] or \
            [h for h in list_heads() if option in HEADS.options(h)]
        if not takers:
            raise ConfigError(f"--sweep {key}: {option!r} is not an option of any head")
        for head in takers:
            for value in values:
                check_head_options(_config(args, head, [f"{key}={value}"]), where=f"given by --sweep {key}")


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
        devices = _split(args.devices, "--devices")
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

        where = f" in {describe_processes(_split(args.devices, '--devices'), trained)}"
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
