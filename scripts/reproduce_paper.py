"""Plan (or run) the ``hseval`` commands behind one of the paper's result tables, with the GPU time
each would take where a throughput has been measured.

    python scripts/reproduce_paper.py 1|2|3|4|5|6|8|all --data-root DATA [--dry-run]
                                      [--throughput resnet18@224=2000]
                                      [--launcher slurm --slurm-partition gpu ...]

Every step is a ``train-all`` of the row's shipped recipe (300 epochs, batch 64, seed 0):
Tables 1–2 one step per dataset × backbone (the five heads of the columns); Table 3 +Riemann and the
hyperbolic head at the three learning rates, six seeds each; Table 4 the learnable-radius heads;
Table 5 the four hierarchy-aware columns on a random tree (``hseval hierarchy build`` then
``hseval hierarchy random`` write it first); with ``--launcher slurm`` every ``train-all`` submits its
runs as a Slurm job array (its ``--slurm-*`` options are passed on); Table 6 reads the super-class accuracy of Table 1's
ResNet-18 runs, so it trains nothing of its own; Table 8 riemann at the eleven radius decays. The
estimate is runs × epochs × training images / images per second, from :data:`MEASURED` (backbone,
input side) figures; a step without one says "not measured" instead of guessing (measure with
``bash bench/gpu.sh`` and pass ``--throughput``). Then ``hseval evaluate`` and ``hseval report``
put the paper's numbers beside the runs (``paper_tables.md``).
"""

from __future__ import annotations

import argparse
import math
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from typing import NoReturn

FINE, OBJECTS = ("cub200", "stanford-cars", "stanford-dogs"), ("cifar100", "tiny-imagenet")
BACKBONES = ("resnet18", "resnet50", "densenet121", "densenet161")
PAPER_HEADS = "plain,multitask,hierarchy,manifold,riemann"
EPOCHS = 300
SEEDS = "0,1,2,3,4,5"  # Table 3: "six runs with different random seeds"
DECAYS = ",".join(f"{0.5 + 0.05 * i:.2f}" for i in range(11))  # Table 8: 0.50 to 1.00
TRAIN_IMAGES = {"cifar100": 50_000, "tiny-imagenet": 100_000, "cub200": 5_994, "stanford-cars": 8_144,
                "stanford-dogs": 12_000}
SIDE = {"cifar100": 32}  # the paper feeds every other dataset at 224 × 224 (Tiny-ImageNet resized from 64)
MEASURED = {("resnet18", 32): 14_000}
"""Training images per second in the engine, batch 128, one H200 (2026-11-26)."""
TABLES = ("1", "2", "3", "4", "5", "6", "8")
PROG = "reproduce_paper.py"


@dataclass
class Step:
    table: str
    dataset: str
    backbone: str
    commands: list[list[str]]
    runs: int
    seconds_per_run: float | None
    note: str = field(default="")

    def estimate(self) -> str:
        if self.runs == 0:
            return self.note
        if self.seconds_per_run is None:
            return f"{self.runs} runs, not measured for {self.backbone} at {SIDE.get(self.dataset, 224)} px " \
                   "(bench/gpu.sh)"
        return f"{self.runs} runs × {self.seconds_per_run / 60:.0f} min = " \
               f"{self.runs * self.seconds_per_run / 3600:.1f} GPU-h"


def _train(dataset: str, backbone: str, data_root: str, out: str, heads: str, *extra: str) -> list[str]:
    return ["hseval", "train-all", "--recipe", f"{dataset}-{backbone}", "--data-root", f"{data_root}/{dataset}",
            "--heads", heads, *extra, "--out", out]


def _steps(table: str, data_root: str) -> list[tuple[str, str, list[list[str]], int, str]]:
    """(dataset, backbone, commands, runs, note) of one table."""
    if table in ("1", "2"):
        return [(d, b, [_train(d, b, data_root, f"runs/{d}-{b}", PAPER_HEADS)], 5, "")
                for d in (FINE if table == "1" else OBJECTS) for b in BACKBONES]
    if table == "3":
        return [(d, "resnet18", [_train(d, "resnet18", data_root, f"runs/table3/{d}", "riemann", "--seeds", SEEDS),
                                 _train(d, "resnet18", data_root, f"runs/table3/{d}-hyperbolic", "hyperbolic",
                                        "--seeds", SEEDS, "--sweep", "optim.lr=0.01,0.001,0.0001")], 24, "")
                for d in (*FINE, *OBJECTS)]
    if table == "4":
        return [(d, "resnet18", [_train(d, "resnet18", data_root, f"runs/table4/{d}",
                                        "manifold-learnable-radius,riemann-learnable-radius")], 2, "")
                for d in FINE[:2]]
    if table == "5":
        return [(d, "resnet18", [["hseval", "hierarchy", "build", d, "--out", f"trees/{d}.txt"],
                                 ["hseval", "hierarchy", "random", f"trees/{d}.txt", "--seed", "0", "--out",
                                  f"trees/{d}-random.txt"],
                                 _train(d, "resnet18", data_root, f"runs/table5/{d}", "multitask,hierarchy,manifold,"
                                        "riemann", "--hierarchy", f"trees/{d}-random.txt")], 4, "")
                for d in FINE[:2]]
    if table == "6":
        return [(d, "resnet18", [], 0, f"no training: Table 1's runs/{d}-resnet18 (its super-class accuracy)")
                for d in FINE[:2]]
    return [(d, "resnet18", [_train(d, "resnet18", data_root, f"runs/table8/{d}", "riemann",
                                    "--sweep", f"model.head_options.radius_decay={DECAYS}")], 11, "")
            for d in (*FINE, *OBJECTS)]


def plan(table: str, data_root: str, throughput: dict[tuple[str, int], float] | None = None) -> list[Step]:
    """The steps of a table (one of :data:`TABLES`, or "all")."""
    speeds = {**MEASURED, **(throughput or {})}
    steps = []
    for name in TABLES if table == "all" else (table,):
        for dataset, backbone, commands, runs, note in _steps(name, data_root):
            speed = speeds.get((backbone, SIDE.get(dataset, 224)))
            seconds = EPOCHS * TRAIN_IMAGES[dataset] / speed if speed else None
            steps.append(Step(name, dataset, backbone, commands, runs, seconds, note))
    return steps


def _throughput(text: str) -> tuple[tuple[str, int], float]:
    try:
        key, value = text.split("=")
        backbone, side = key.split("@")
        measured = (backbone, int(side)), float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected BACKBONE@SIDE=IMAGES_PER_S, e.g. resnet18@32=14000; got {text!r}") \
            from None
    if not (measured[0][1] > 0 and 0 < measured[1] < math.inf):
        raise argparse.ArgumentTypeError(f"expected a positive image side and a positive, finite number of images per "
                                         f"second, e.g. resnet18@32=14000; got {text!r}")
    return measured


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, no usage dump
        self.exit(2, f"{self.prog}: error: {message}\n")


def _run(command: list[str]) -> tuple[int, str]:
    """Run one step: its exit code and, when it could not start, why (code 127, as a shell says)."""
    try:
        return subprocess.run(command).returncode, ""
    except OSError as exc:
        return 127, f" ({command[0]}: {exc.strerror or exc}; install hseval in this environment)"


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("table", choices=[*TABLES, "all"])
    parser.add_argument("--data-root", default="data", help="holds one folder per dataset")
    parser.add_argument("--dry-run", action="store_true", help="print the commands and estimates only")
    parser.add_argument("--throughput", type=_throughput, action="append", default=[],
                        help="a measured BACKBONE@SIDE=IMAGES_PER_S (repeatable)")
    parser.add_argument("--launcher", choices=["slurm", "local"],
                        help="each train-all submits one job per run through submitit (pass --slurm-* options on)")
    args, slurm = parser.parse_known_args(argv)
    if any(a.startswith("-") and not a.startswith("--slurm-") for a in slurm) or (slurm and not args.launcher):
        parser.error(f"unrecognized arguments: {' '.join(slurm)} (only --slurm-* options, with --launcher)")
    steps = plan(args.table, args.data_root, dict(args.throughput))
    for step in steps if args.launcher else []:
        for command in step.commands:
            if command[1] == "train-all":
                command[-2:-2] = ["--launcher", args.launcher, *slurm]
    training = [s for s in steps if s.runs]
    known = [s for s in training if s.seconds_per_run is not None]
    for step in steps:
        print(f"# Table {step.table}, {step.dataset} / {step.backbone}: {step.estimate()}")
        for command in step.commands:
            print(shlex.join(command))
    print(f"# then: hseval evaluate runs --out eval && hseval report eval  (paper_tables.md)\n"
          f"# measured steps: {len(known)} of {len(training)}, "
          f"{sum(s.runs * s.seconds_per_run for s in known) / 3600:.1f} GPU-h")
    if args.dry_run:
        return 0
    for step in steps:
        for command in step.commands:
            code, why = _run(command)
            if code:
                print(f"{PROG}: error: step of Table {step.table} ({step.dataset} / {step.backbone}) failed with exit "
                      f"code {code}{why}: {shlex.join(command)}", file=sys.stderr)
                return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
