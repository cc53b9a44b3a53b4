"""Copy the paper's Tables 1–2 (test accuracy per dataset × backbone × head) from its LaTeX source
into ``hseval/paper_numbers.json``, each number with the table and cell it comes from.

    python scripts/paper_numbers.py [PAPER.tex]

Run once (the package ships the JSON; nothing reads ../shared at run time). Refuses, naming the
line, a row it cannot read, so a changed source cannot slip a wrong number in.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT.parent / "shared" / "paper" / "connecting-sphere-manifolds-hierarchically.tex"
TABLES = {"tab:small_datasets": "Table 1", "tab:large_datasets": "Table 2"}
DATASETS = {"CUB200": "cub200", "Cars": "stanford-cars", "Dogs": "stanford-dogs", "CIFAR100": "cifar100",
            "Tiny-ImNet": "tiny-imagenet"}
BACKBONES = {"ResNet-18": "resnet18", "ResNet-50": "resnet50", "DenseNet-121": "densenet121",
             "DenseNet-161": "densenet161"}
HEADS = ["plain", "multitask", "hierarchy", "manifold", "riemann"]  # the columns, left to right
RADIUS_DECAY = {"tiny-imagenet": 0.9}  # the captions: 0.5 everywhere else


def parse(tex: str) -> list[dict]:
    cells = []
    for label, table in TABLES.items():
        body = tex[tex.index(f"\\label{{{label}}}"):]
        body = body[: body.index("\\end{tabular}")]
        dataset = shown = None
        for number, line in enumerate(body.splitlines(), start=1):
            parts = [p.strip() for p in line.split("&")]
            if len(parts) != 7:
                continue
            first = re.sub(r"\\multirow\{\d+\}\{\*\}\{([^}]*)\}", r"\1", parts[0]).strip()
            if first == "Dataset":
                continue
            if first:
                shown, dataset = first, DATASETS.get(first)
            backbone = BACKBONES.get(parts[1])
            if dataset is None or backbone is None:
                raise SystemExit(f"{label}, row {number}: cannot read {line.strip()!r}")
            for head, cell in zip(HEADS, parts[2:]):
                value = re.sub(r"\\textbf\{([^}]*)\}|\\\\", r"\1", cell).strip()
                cells.append({"table": table, "label": label, "dataset": dataset, "backbone": backbone, "head": head,
                              "percent": float(value), "radius_decay": RADIUS_DECAY.get(dataset, 0.5),
                              "cell": f"{table}, {shown} / {parts[1]} / {head}"})
    return cells


def main() -> int:
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    cells = parse(source.read_text())
    out = ROOT / "hseval" / "paper_numbers.json"
    out.write_text(json.dumps({"source": "Scieur & Kim, ICML 2021, Tables 1-2 (test accuracy, seed 0)",
                               "recipe": {"epochs": 300, "batch_size": 64, "lr": 0.1},
                               "cells": cells}, indent=1) + "\n")
    print(f"wrote {out}: {len(cells)} cells")
    return 0


if __name__ == "__main__":
    sys.exit(main())
