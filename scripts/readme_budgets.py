"""Regenerate README's table of training budgets (``--budget``) with their times, from real demos.

    python scripts/readme_budgets.py [--out DIR]

On a quiet machine only (``scripts/readme_blocks.require_quiet``): runs ``hseval demo --budget B
--force`` for each budget of ``hseval.train.budgets.BUDGETS`` (twelve heads on Fashion-MNIST, two
one-thread processes on two cores) and writes what each sets and how long its training and the
whole demo took into README.md's ``budgets-table`` block.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hseval.cli.demo import DEMO_FILE, DemoRecord  # noqa: E402
from hseval.io.records import read_record  # noqa: E402
from hseval.train.budgets import BUDGETS  # noqa: E402
from scripts.readme_blocks import require_quiet, stamp, write_block  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="/tmp/hseval-budgets", help="where the demos go (one folder per budget)")
    args = parser.parse_args()
    require_quiet("python scripts/readme_budgets.py")
    rows, machine = [], None
    for name in BUDGETS:
        out = Path(args.out) / name
        subprocess.run([sys.executable, "-m", "hseval", "demo", "--budget", name, "--force", "--quiet", "--out",
                        str(out)], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        info = read_record(DemoRecord, out / DEMO_FILE, what=DEMO_FILE)
        machine = info.machine
        settings = ", ".join(f"`{s}`" for s in BUDGETS.get(name).settings) or "the recipe's own"
        rows.append(f"| `{name}` | {BUDGETS.get(name).help} | {settings} | {info.stages['training'] / 60:.1f} min "
                    f"| {info.seconds / 60:.1f} min |")
        print(f"{name}: {info.seconds:.0f} s")
    header = ("| budget | what it is | settings | training, 12 heads | `hseval demo --budget` in all |\n"
              "|---|---|---|---|---|")
    note = ("Fashion-MNIST's recipe (the small CNN; `paper` there is its three epochs on 20,000 images; the demo tests "
            "on 2,000 test images after each epoch), twelve heads in two one-thread processes on 2 CPU cores, no GPU; "
            f"{stamp('python scripts/readme_budgets.py', threads=machine.threads, versions={'torch': machine.torch})}.")
    write_block("budgets-table", f"{header}\n" + "\n".join(rows) + f"\n\n{note}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
