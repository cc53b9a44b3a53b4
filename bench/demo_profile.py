"""Where the demo's time goes: ``hseval demo`` run under :mod:`cProfile`, then seconds per stage.

    python bench/demo_profile.py [--quick] [--out DIR]

Runs ``hseval demo --force --quiet`` in this process under the standard library's profiler and
prints one row per stage: each head's training (its epochs, and inside them the test-set
evaluation that training runs after each epoch), loading the data, the evaluation's forward pass
(the class scores' metrics are updated inside it), the metrics' compute, the geometry, each
projection, writing the evaluation, and the report. Times are inclusive (a stage's row holds the
stages it calls), taken from the profile's cumulative time of the function that does the stage;
the profiler adds its own cost to Python-heavy code, so the total is also given beside the
demo's own wall time (``demo.json``).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hseval.cli.demo import DEMO_FILE, DemoRecord  # noqa: E402
from hseval.cli.main import main as hseval  # noqa: E402
from hseval.io.records import read_record  # noqa: E402

STAGES = [  # (stage, module file's tail, function): the function whose cumulative time is the stage
    ("load the data", "train/engine.py", "load_data"),
    ("training: epochs", "train/engine.py", "train_one_epoch"),
    ("training: test-set evaluation per epoch", "train/engine.py", "evaluate"),
    ("evaluation: forward pass (+ metric updates)", "hseval/evaluation/runs.py", "_forward"),
    ("evaluation: metrics' compute", "hseval/evaluation/stages.py", "scores_stage"),
    ("evaluation: geometry", "hseval/evaluation/stages.py", "geometry_stage"),
    ("evaluation: PCA", "hseval/evaluation/projections.py", "_pca"),
    ("evaluation: t-SNE", "hseval/evaluation/projections.py", "_tsne"),
    ("evaluation: UMAP", "hseval/evaluation/projections.py", "_umap"),
    ("evaluation: writing the files", "hseval/evaluation/writer.py", "write_evaluation"),
    ("report", "hseval/reporting/report.py", "write_report"),
]


def stage_seconds(stats: pstats.Stats) -> dict[str, float]:
    """Cumulative seconds of each stage's function (0 for a stage that did not run)."""
    seconds = dict.fromkeys([stage for stage, _, _ in STAGES], 0.0)
    for (filename, _, function), (_, _, _, cumulative, _) in stats.stats.items():
        for stage, tail, name in STAGES:
            if function == name and filename.replace("\\", "/").endswith(tail):
                seconds[stage] += cumulative
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="profile `hseval demo --quick`")
    parser.add_argument("--out", help="the demo's folder (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(args.out or scratch) / "demo"
        argv = ["demo", "--force", "--quiet", "--out", str(out), *(["--quick"] if args.quick else [])]
        profile = cProfile.Profile()
        start = time.perf_counter()
        code = profile.runcall(hseval, argv)
        total = time.perf_counter() - start
        if code:
            return code
        demo = read_record(DemoRecord, out / DEMO_FILE, what=DEMO_FILE)
    stats = pstats.Stats(profile)
    rows = [(f"training: {head}", seconds) for head, seconds in demo.train_seconds.items()]
    rows += [(stage, seconds) for stage, seconds in stage_seconds(stats).items() if seconds]
    width = max(len(stage) for stage, _ in rows)
    print(f"{'stage':<{width}}  seconds  share")
    for stage, seconds in rows:
        print(f"{stage:<{width}}  {seconds:7.1f}  {seconds / total:5.0%}")
    print(f"{'total (profiled)':<{width}}  {total:7.1f}\n{'the demo itself (demo.json)':<{width}}  "
          f"{demo.seconds:7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
