"""``hseval train`` and ``hseval train-all`` (also ``python -m hseval.train``, e.g. under torchrun).

The parsers and the grid of runs live here; :mod:`hseval.train` (torch) is imported inside the
commands, so that ``hseval --help`` stays light.

``train-all`` trains one run per (head, seed, sweep value) with the same data order and backbone
initialisation for every head of a seed, so the heads compare fairly; the dataset is loaded once.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path
from typing import Any

from hseval.core.errors import ConfigError

__all__ = ["add_train_arguments", "cmd_train", "cmd_train_all", "plan_runs", "planned_configs"]


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
    from hseval.train.config import default_recipe, load_config  # yaml: only the training commands read recipes

    init = str(Path(args.init).expanduser().absolute()) if args.init else None  # the run may train elsewhere
    given = {"data.dataset": args.dataset, "data.root": args.data_root, "model.backbone": args.backbone,
             "engine.device": args.device, "engine.progress": "false" if args.quiet else None,  # None: the recipe's
             "model.init": json.dumps(init), "model.init_prefix": json.dumps(args.prefix),
             "model.init_map": json.dumps(args.map), "model.init_ignore": json.dumps(args.ignore)}
    overrides = [f"{key}={value}" for key, value in given.items() if value not in (None, "null", "[]")] + \
        [f"model.head={head}", *args.set, *extra]
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
    from hseval.nn.heads import head_class, head_options, list_heads  # torch: only the training commands plan runs

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
    from hseval.train.engine import train  # torch: only for the commands that train

    config = _config(args, args.head, [])
    start = time.perf_counter()
    out = train(config, args.out, resume=args.resume, force=args.force, hierarchy_file=args.hierarchy)
    print(f"wrote {out} ({time.perf_counter() - start:.0f} s); evaluate it with: hseval evaluate {out} --out EVAL_DIR")
    return 0


def planned_configs(args: argparse.Namespace) -> list[tuple[Any, str]]:
    """(config, folder name) of every run of ``train-all``'s grid (heads × sweeps × seeds)."""
    return [(_config(args, head, overrides), name) for head, overrides, name in plan_runs(args)]


def cmd_train_all(args: argparse.Namespace) -> int:
    from hseval.train.runs import train_runs  # torch: only for the commands that train

    configs = planned_configs(args)
    root = Path(args.out)
    seconds = train_runs(configs, root, resume=args.resume, force=args.force, hierarchy=args.hierarchy)
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
