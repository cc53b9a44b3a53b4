"""Plan (or run) the ``hseval train-all`` commands of one of the paper's Tables 1–2, with the GPU
time each would take where a throughput has been measured.

    python scripts/reproduce_paper.py 1|2|all --data-root DATA [--dry-run] [--throughput resnet18@32=14000]

One command per dataset × backbone row (the five heads of the table's columns, the row's shipped
recipe: 300 epochs, batch 64). The estimate is epochs × training images / images per second, from
:data:`MEASURED` (backbone, input side) figures; a row without one says "not measured" instead of
guessing (measure with ``bash bench/gpu.sh`` and pass ``--throughput``). Then ``hseval evaluate``
and ``hseval report`` put the paper's numbers beside the runs (``paper_tables.md``).
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from dataclasses import dataclass

TABLES = {"1": ("cub200", "stanford-cars", "stanford-dogs"), "2": ("cifar100", "tiny-imagenet")}
BACKBONES = ("resnet18", "resnet50", "densenet121", "densenet161")
HEADS = "plain,multitask,hierarchy,manifold,riemann"
EPOCHS = 300
TRAIN_IMAGES = {"cifar100": 50_000, "tiny-imagenet": 100_000, "cub200": 5_994, "stanford-cars": 8_144,
                "stanford-dogs": 12_000}
SIDE = {"cifar100": 32}  # the paper feeds every other dataset at 224 × 224 (Tiny-ImageNet resized from 64)
MEASURED = {("resnet18", 32): 14_000}
"""Training images per second in the engine, batch 128, one H200 (2026-11-26)."""


@dataclass
class Step:
    dataset: str
    backbone: str
    command: list[str]
    seconds_per_run: float | None

    def estimate(self, heads: int) -> str:
        if self.seconds_per_run is None:
            return f"not measured for {self.backbone} at {SIDE.get(self.dataset, 224)} px (bench/gpu.sh)"
        return f"{heads} runs × {self.seconds_per_run / 60:.0f} min = {heads * self.seconds_per_run / 3600:.1f} GPU-h"


def plan(table: str, data_root: str, throughput: dict[tuple[str, int], float] | None = None) -> list[Step]:
    """The steps of a table ("1", "2" or "all")."""
    speeds = {**MEASURED, **(throughput or {})}
    datasets = [d for t in (TABLES if table == "all" else {table: TABLES[table]}).values() for d in t]
    steps = []
    for dataset in datasets:
        for backbone in BACKBONES:
            speed = speeds.get((backbone, SIDE.get(dataset, 224)))
            command = ["hseval", "train-all", "--recipe", f"{dataset}-{backbone}", "--data-root",
                       f"{data_root}/{dataset}", "--heads", HEADS, "--out", f"runs/{dataset}-{backbone}"]
            steps.append(Step(dataset, backbone, command, EPOCHS * TRAIN_IMAGES[dataset] / speed if speed else None))
    return steps


def _throughput(text: str) -> tuple[tuple[str, int], float]:
    try:
        key, value = text.split("=")
        backbone, side = key.split("@")
        return (backbone, int(side)), float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected BACKBONE@SIDE=IMAGES_PER_S, e.g. resnet18@32=14000; got {text!r}") \
            from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", choices=[*TABLES, "all"])
    parser.add_argument("--data-root", default="data", help="holds one folder per dataset")
    parser.add_argument("--dry-run", action="store_true", help="print the commands and estimates only")
    parser.add_argument("--throughput", type=_throughput, action="append", default=[],
                        help="a measured BACKBONE@SIDE=IMAGES_PER_S (repeatable)")
    args = parser.parse_args(argv)
    steps = plan(args.table, args.data_root, dict(args.throughput))
    heads = len(HEADS.split(","))
    known = [s.seconds_per_run for s in steps if s.seconds_per_run is not None]
    for step in steps:
        print(f"# {step.dataset} / {step.backbone}: {step.estimate(heads)}")
        print(shlex.join(step.command))
    print(f"# then: hseval evaluate runs --out eval && hseval report eval  (paper_tables.md)\n"
          f"# measured rows: {len(known)} of {len(steps)}, {heads * sum(known) / 3600:.1f} GPU-h")
    if args.dry_run:
        return 0
    for step in steps:
        subprocess.run(step.command, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
