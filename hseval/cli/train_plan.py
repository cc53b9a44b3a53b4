"""The runs ``hseval train-all`` plans, and each run's config (``hseval train``'s one too).

The plan is the grid heads × sweep values × seeds (:func:`plan_runs`), one folder name per run; a
run's config is the recipe with every setting the command line gives, each given once
(:func:`run_config`), and every value of a sweep of a head option is checked before any run
starts (:func:`planned_configs`). Where the runs then train is :mod:`hseval.cli.train`'s.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import warnings
from pathlib import Path
from typing import Any

from hseval.cli import comma_list
from hseval.core.errors import ConfigError, HsevalWarning
from hseval.train.budgets import BUDGETS

__all__ = ["PROBE_SETTINGS", "plan_runs", "planned_configs", "planned_head_options", "run_config", "warn"]

PROBE_SETTINGS = ["model.freeze_backbone=true", "data.augment=false"]
"""What a probe is: a frozen backbone, no augmentation (its features are computed once)."""
_SEPARATORS = re.compile(r"[/\\]")  # in a sweep value that is a path (data.hierarchy=trees/a.txt): no nested folder


def run_config(args: argparse.Namespace, head: str | None, extra: list[str]):
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
    given += [("--budget", item) for item in (BUDGETS.get(args.budget).settings if args.budget else ())]
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


def _sweeps(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    """(key, values) of every ``--sweep KEY=V1,V2,...``."""
    sweeps = []
    for item in args.sweep:
        key, sep, values = item.partition("=")
        if not sep:
            raise ConfigError(f"--sweep expects KEY=V1,V2,..., got {item!r}")
        sweeps.append((key.strip(), comma_list(values, f"--sweep {key}")))
    return sweeps


def warn(text: str) -> None:
    """The plan's default ``note``: a warning."""
    warnings.warn(text, HsevalWarning, stacklevel=2)  # the CLI prints it: hseval: warning: ...


def plan_runs(args: argparse.Namespace, *, note=warn) -> list[tuple[str, list[str], str]]:
    """(head, overrides, folder name) for every run of the grid heads × sweeps × seeds.

    A sweep of a head option (``model.head_options.X``) applies to the heads that take X; the
    others are trained once (``note`` says so: a warning). Two runs with one folder name are refused."""
    from hseval.nn.heads import GROUPS, HEADS, list_heads  # torch: only the commands that train

    heads = [head for item in comma_list(args.heads, "--heads")
             for head in (list_heads(item) if item in (*GROUPS, "all") else [item])]
    for head in heads:
        HEADS.get(head)
    seeds = [None] if args.seeds is None else comma_list(args.seeds, "--seeds")
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


def planned_configs(args: argparse.Namespace, extra: list[str] | None = None, *, note=warn
                    ) -> list[tuple[Any, str]]:
    """(config, folder name) of every run of ``train-all``'s grid (heads × sweeps × seeds), every
    value of every sweep checked first (:func:`_check_head_sweeps`); ``note`` as :func:`plan_runs`'."""
    plan = plan_runs(args, note=note)
    _check_head_sweeps(args, [head for head, _, _ in plan])
    configs = [(run_config(args, head, [*overrides, *(extra or [])]), name) for head, overrides, name in plan]
    return planned_head_options(args, configs, note)


def planned_head_options(args: argparse.Namespace, configs: list[tuple[Any, str]], note) -> list[tuple[Any, str]]:
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
                check_head_options(run_config(args, head, [f"{key}={value}"]), where=f"given by --sweep {key}")
