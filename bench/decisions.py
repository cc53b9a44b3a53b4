"""What the decisions cost: ``hseval evaluate`` with every rule, metric and both operating curves,
against the same evaluation without them (``--rules none``), in the same run.

    python bench/decisions.py [--sizes 10000x20000,100000x2000] [--repeat N] [--keep DIR] [--readme]

The inputs are ``bench/scale.py``'s (a random 3-level tree, a prediction file of float32 logits of
about 55 % top-1, 64-d embeddings and class weights); each command runs in its own process, timed
with its CPU seconds and its own peak resident memory (``bench/scale.py``'s ``measured``). A row
gives both evaluations, the ratio of their times, how much more memory the decisions take, and the
size of the two files they add per run (decisions.csv, operating_curve.csv). Each size is measured
``--repeat`` times (2 with ``--readme``) and the fastest of each kind kept; ``--readme`` writes the
table into README.md's ``bench-decisions`` block, on a quiet machine only.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import require_quiet, stamp, write_block  # noqa: E402
from scale import hseval, measured, write_inputs  # noqa: E402

GB = 1024 ** 3
SIZES = "10000x20000,100000x2000"


def evaluate(tree: Path, predictions: Path, out: Path, *rules: str) -> dict[str, float]:
    seconds, cpu, peak = measured(hseval("evaluate", "--predictions", str(predictions), "--hierarchy", str(tree),
                                         "--projections", "pca", "--out", str(out), *rules))
    files = sum((out / predictions.stem / name).stat().st_size for name in ("decisions.csv", "operating_curve.csv"))
    return {"seconds": seconds, "cpu": cpu, "peak": peak, "files": files}


def measure(classes: int, samples: int, root: Path, repeat: int) -> dict[str, float]:
    folder = root / f"{classes}x{samples}"
    folder.mkdir(parents=True, exist_ok=True)
    tree, file = write_inputs(folder, classes, samples)
    without = min((evaluate(tree, file, folder / "without", "--rules", "none") for _ in range(repeat)),
                  key=lambda r: r["seconds"])
    with_all = min((evaluate(tree, file, folder / "with") for _ in range(repeat)), key=lambda r: r["seconds"])
    row = {"classes": classes, "samples": samples, "without": without, "with": with_all}
    print(line(row), flush=True)
    return row


def line(r: dict) -> str:
    a, b = r["without"], r["with"]
    return (f"| {r['classes']:,} × {r['samples']:,} | {a['seconds']:.1f} s (CPU {a['cpu']:.1f} s), "
            f"{a['peak'] / GB:.2f} GB | {b['seconds']:.1f} s (CPU {b['cpu']:.1f} s), {b['peak'] / GB:.2f} GB | "
            f"{b['seconds'] / a['seconds']:.2f}× | {(b['peak'] - a['peak']) / GB:+.2f} GB | "
            f"{b['files'] / 1e6:.1f} MB |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=SIZES, help=f"comma-separated CLASSESxSAMPLES (default {SIZES})")
    parser.add_argument("--repeat", type=int, default=None, help="measurements of each kind and size (the fastest "
                        "is kept; default 2 with --readme, else 1)")
    parser.add_argument("--keep", type=Path, help="write the inputs and outputs here and keep them")
    parser.add_argument("--readme", action="store_true", help="write the table into README.md (bench-decisions)")
    args = parser.parse_args()
    repeat = args.repeat or (2 if args.readme else 1)
    sizes = [tuple(int(n) for n in size.split("x")) for size in args.sizes.split(",")]
    if args.readme:
        require_quiet("python bench/decisions.py --readme")
    header = ("| classes × samples | evaluate, `--rules none` | evaluate, every rule and both curves | time ratio | "
              "memory added | decisions.csv + operating_curve.csv |\n|---|---|---|---|---|---|")
    print(header)
    with tempfile.TemporaryDirectory(prefix="hseval-decisions-") as scratch:
        rows = [measure(c, n, args.keep or Path(scratch), repeat) for c, n in sizes]
    table = header + "\n" + "\n".join(line(r) for r in rows)
    if args.readme:
        write_block("bench-decisions", table + f"\n\n({stamp('python bench/decisions.py --readme')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
