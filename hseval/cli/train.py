"""``hseval train`` and ``hseval train-all`` (also ``python -m train``, e.g. under torchrun).

The parsers live here; the :mod:`train` package is imported inside the commands.

``train-all`` trains one run per (head, seed, sweep value) with the same data order and backbone
initialisation for every head of a seed, so the heads compare fairly; the dataset is loaded once.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import time
from pathlib import Path
from typing import Any

from hseval.core.errors import ConfigError

__all__ = ["add_train_arguments", "cmd_train", "cmd_train_all", "plan_runs"]


def add_train_arguments(parser: argparse.ArgumentParser, *, many: bool) -> None:
    parser.add_argument("--dataset", help="dataset name (default: the recipe's; fashion-mnist without --recipe)")
    parser.add_argument("--data-root", help="folder of the dataset (see 'hseval data info')")
    parser.add_argument("--backbone", help="backbone (default: the recipe's)")
    parser.add_argument("--recipe", help="a shipped recipe name or a YAML file (default: <dataset>-<backbone>)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a setting, e.g. --set optim.lr=0.05 (repeatable)")
    parser.add_argument("--hierarchy", help="a hierarchy file that replaces the dataset's tree")
    parser.add_argument("--device", help="auto, cpu, cuda or cuda:N (default: auto)")
    parser.add_argument("--force", action="store_true", help="overwrite a finished or unfinished run")
    parser.add_argument("--resume", action="store_true", help="continue an interrupted run")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--out", required=True, help="run folder" + (" root (one sub-folder per run)" if many else ""))
    if many:
        parser.add_argument("--heads", default="all", help="comma-separated heads, or 'all' (default)")
        parser.add_argument("--seeds", default=None, help="comma-separated seeds (default: the recipe's)")
        parser.add_argument("--sweep", action="append", default=[], metavar="KEY=V1,V2,...",
                            help="repeat the grid for each value, e.g. model.head_options.radius_decay=0.5,0.7,0.9")
    else:
        parser.add_argument("--head", default="plain", help="head (see the README's table)")


def _config(args: argparse.Namespace, head: str, extra: list[str]):
    from hseval.train.config import default_recipe, load_config

    overrides = [f"data.dataset={args.dataset}"] if args.dataset else []  # else the recipe's
    if args.data_root:
        overrides.append(f"data.root={args.data_root}")
    if args.backbone:
        overrides.append(f"model.backbone={args.backbone}")
    if args.device:
        overrides.append(f"engine.device={args.device}")
    if args.quiet:
        overrides.append("engine.progress=false")
    overrides += [f"model.head={head}", *args.set, *extra]
    recipe = args.recipe or default_recipe(args.dataset or "fashion-mnist", args.backbone)
    return load_config(recipe, overrides)


def _split(text: str, what: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise ConfigError(f"{what} is empty")
    return items


def plan_runs(args: argparse.Namespace, *, note=print) -> list[tuple[str, list[str], str]]:
    """(head, overrides, folder name) for every run of the grid heads × sweeps × seeds.

    A sweep of a head option (``model.head_options.X``) applies to the heads that take X; the
    others are trained once (``note`` says so). Two runs with one folder name are refused."""
    from hseval.nn.heads import head_class, head_options, list_heads

    heads = list_heads() if args.heads == "all" else _split(args.heads, "--heads")
    for head in heads:
        head_class(head)
    seeds = [None] if args.seeds is None else _split(args.seeds, "--seeds")
    for seed in seeds:
        if seed is not None and not seed.isdigit():
            raise ConfigError(f"--seeds takes non-negative integers, got {seed!r}")
    sweeps: list[tuple[str, list[str]]] = []
    for item in args.sweep:
        key, sep, values = item.partition("=")
        if not sep:
            raise ConfigError(f"--sweep expects KEY=V1,V2,..., got {item!r}")
        sweeps.append((key.strip(), _split(values, f"--sweep {key}")))
    plan, names = [], set()
    for head in heads:
        grid = []
        for key, values in sweeps:
            option = key.removeprefix("model.head_options.") if key.startswith("model.head_options.") else None
            if option is not None and option not in head_options(head):
                note(f"note: --sweep {key} does not apply to {head} (it has no option {option!r}); training it once")
                continue
            grid.append([(key, v) for v in values])
        for combo in itertools.product(*grid):
            for seed in seeds:
                overrides = [f"{k}={v}" for k, v in combo]
                name = head + "".join(f"-{k.split('.')[-1]}={v}" for k, v in combo)
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


def cmd_train(args: argparse.Namespace) -> int:
    from hseval.train.engine import train

    config = _config(args, args.head, [])
    start = time.perf_counter()
    out = train(config, args.out, resume=args.resume, force=args.force, hierarchy_file=args.hierarchy)
    print(f"wrote {out} ({time.perf_counter() - start:.0f} s); evaluate it with: hseval evaluate {out} --out EVAL_DIR")
    return 0


def planned_configs(args: argparse.Namespace) -> list[tuple[Any, str]]:
    """(config, folder name) of every run of ``train-all``'s grid (heads × sweeps × seeds)."""
    return [(_config(args, head, overrides), name) for head, overrides, name in plan_runs(args)]


def train_planned(configs: list[tuple[Any, str]], root: Path, *, resume: bool, force: bool, hierarchy: str | None,
                  data=None, replace_stale: bool = False, log=print) -> dict[str, float]:
    """Train the runs of ``configs`` in the folder of runs ``root``: every folder and setting
    checked before the first run trains, the dataset loaded once.

    With ``resume``, a finished run trained with these settings is kept and an interrupted one
    continued. A finished run that does not serve (other settings, or a run.json that does not
    verify) is refused, naming what differs, unless ``force`` or ``replace_stale`` (``hseval
    demo``, which owns its folder) trains it again. ``data``: the dataset when the caller has
    loaded it. Returns the training seconds of each run in plan order, read from ``run.json`` for
    the kept ones."""
    from hseval.io.output import OutputFolder
    from hseval.train import distributed
    from hseval.train.engine import check_before_training, load_data, train
    from hseval.train.run_folder import check_run_folder, existing_run

    writer = distributed.setup().rank == 0  # under torchrun every rank trains, rank 0 writes
    with OutputFolder(root, "runs") if writer else contextlib.nullcontext() as runs:
        todo, seconds = [], {}
        for config, name in configs:
            out = root / name
            state, meta, why = existing_run(out, config)
            seconds[name] = float(meta.get("train_seconds") or 0.0)
            if resume and state == "finished":
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
        data = data or load_data(configs[0][0], hierarchy)
        for config, *_ in todo:
            check_before_training(config, data)
        for k, (config, out, again, replace, folder) in enumerate(todo, start=1):
            log(f"[{k}/{len(todo)}] {'continuing' if again else 'training'} {out.name}")
            start = time.perf_counter()
            train(config, out, resume=again, force=replace, data=data, folder=folder)
            seconds[out.name] = time.perf_counter() - start
    return seconds


def cmd_train_all(args: argparse.Namespace) -> int:
    configs = planned_configs(args)
    root = Path(args.out)
    seconds = train_planned(configs, root, resume=args.resume, force=args.force, hierarchy=args.hierarchy)
    for name, value in seconds.items():
        print(f"  {name}: {value:.0f} s")
    print(f"wrote {len(configs)} runs under {root}; evaluate them with: hseval evaluate {root} --out EVAL_DIR")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    train = commands.add_parser("train", help="train one run (backbone + head) into a run folder")
    add_train_arguments(train, many=False)
    train.set_defaults(func=cmd_train)
    train_all = commands.add_parser("train-all", help="train one run per head (and seed, sweep value)")
    add_train_arguments(train_all, many=True)
    train_all.set_defaults(func=cmd_train_all)
