"""``hseval demo``: the whole product on the embedded default, in minutes on a CPU.

Trains every registered head (the paper's and the peers') on Fashion-MNIST with the CPU recipe
(the same seed and data order for all), evaluates them, writes the report and prints a table of
leaf and super-class accuracy per head and the command that opens the dashboard. On a CPU of two
cores or more the runs train in parallel, one process per core (``train-all --devices cpu,cpu``).
Finished runs and up-to-date evaluations in ``--out`` are reused (an interrupted demo continues
where it stopped); ``--force`` does it all again.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import time
from pathlib import Path
from typing import Literal

from pydantic import Field

from hseval.cli.train import RunsFailed
from hseval.cli.train_plan import planned_configs
from hseval.core.errors import ConfigError
from hseval.core.perf import available_cores, cpu_model
from hseval.io.output import OutputFolder
from hseval.io.records import NonNegative, Positive, Record, write_record
from hseval.train.budgets import BUDGETS

TEST_SUBSET = 2000  # the test images of training's tests after each epoch (and of the quick demo's evaluation)
SAMPLE = 1000  # the embeddings projected per run (PCA, and t-SNE but in the quick demo)
DEMO_FILE = "demo.json"


class Machine(Record):
    cpu: str
    threads: Positive
    gpu: str | None
    torch: str
    python: str


class DemoRecord(Record):
    """``demo.json``: what ``hseval demo`` ran, where and how long (read by scripts/readme_demo.py)."""

    seconds: NonNegative
    budget: Literal["quick", "small", "paper"]
    heads: list[str]
    train_seconds: dict[str, NonNegative]
    stages: dict[str, NonNegative]  # where the time went: training (every head), evaluation, report
    date: str = Field(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
    machine: Machine


def _table(rows: list[dict], levels: list[str]) -> str:
    header = ["head", "leaf acc", *[f"L{d} from leaf" for d in levels], *[f"L{d} own scores" for d in levels],
              "train s"]
    lines = [header, *([r["head"], f"{r['top1']:.4f}", *[r["leaf"].get(d, "") for d in levels],
                        *[r["own"].get(d, "—") for d in levels], f"{r['seconds']:.0f}"] for r in rows)]
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(header))]
    out = ["  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(line, widths)))
           for line in lines]
    return "\n".join([out[0], "  ".join("-" * w for w in widths), *out[1:]])


def cmd_demo(args: argparse.Namespace) -> int:
    from hseval.evaluation.runs import evaluate_runs  # torch: for this command only
    from hseval.evaluation.writer import evaluated_sources, evaluation_folder, evaluation_names  # torch: here only
    from hseval.io.evaluation_format import REPORT_FILES  # pydantic records: for this command only
    from hseval.io.results import read_run  # pandas: for this command only
    from hseval.reporting.report import write_report  # plotly: for this command only
    from hseval.train.runs import Datasets, train_runs  # torch: for this command only

    start = time.perf_counter()
    out = Path(args.out)
    runs, eval_dir = out / "runs", out / "eval"
    if args.quick and args.budget not in (None, "quick"):
        raise ConfigError(f"--quick is --budget quick; give one of --quick and --budget {args.budget}")
    budget = "quick" if args.quick else args.budget or "small"
    plan = argparse.Namespace(  # train-all's plan: every head, the CPU recipe, one seed
        dataset=None, recipe="fashion-mnist", backbone=None, data_root=args.data_root, device=args.device,
        quiet=args.quiet, set=[f"data.test_subset={TEST_SUBSET}"], budget=budget, heads="all", seeds=None, sweep=[],
        hierarchy=None, init=None, prefix=None, map=[], ignore=[])
    configs = planned_configs(plan)
    folder = OutputFolder(out, "demo", writes=[DEMO_FILE])  # and the runs and the evaluation, in folders of their own
    # every output checked before the first run trains: the runs' folders by train_runs, the evaluation of
    # each run and the report here (a file of the user's in the last one refused now, not after training)
    evaluated = [(runs / name).resolve() for _, name in configs]
    evaluation_folder(eval_dir, inputs=[runs], names=evaluation_names(evaluated, evaluated_sources(eval_dir)),
                      writes=REPORT_FILES)
    datasets = Datasets()
    data = datasets(configs[0][0])  # every head trains on it: the plan varies no data setting
    with folder:
        print(f"hseval demo: {len(configs)} heads on Fashion-MNIST ({data.root}), "
              f"budget {budget}; output in {out}")
        outcomes = train_runs(configs, runs, resume=not args.force, force=args.force, datasets=datasets,
                              replace_stale=True, launcher=_cpu_workers(args.device, len(configs)))
        failed = {name: outcome.error for name, outcome in outcomes.items() if outcome.state == "failed"}
        if failed:
            each = "; ".join(f"{name}: {error}" for name, error in failed.items())
            raise RunsFailed(f"{len(failed)} of {len(outcomes)} runs failed ({each}); the demo continues them when "
                             "run again")
        seconds = {name: outcome.seconds for name, outcome in outcomes.items()}
        stages = {"training": time.perf_counter() - start}
        print("evaluating")
        projections = ["pca"] if budget == "quick" else ["pca", "tsne"]
        entries = evaluate_runs([str(runs / name) for _, name in configs], eval_dir, projections=projections,
                                subset=TEST_SUBSET if budget == "quick" else None,
                                max_points=SAMPLE, device=args.device or "auto",
                                progress=not args.quiet, data_root=args.data_root, reuse=not args.force,
                                log=(lambda _: None) if args.quiet else print)  # each run's stages and their times
        stages["evaluation"] = time.perf_counter() - start - stages["training"]
        for path in write_report(eval_dir):
            if path.suffix == ".html":
                print(f"report: {path}")
        rows, levels = [], []
        for entry in entries:
            metrics = read_run(eval_dir / entry["run"]).metrics
            levels = sorted(metrics.get("superclass_acc") or {}, key=int)
            leaf, own = metrics.get("superclass_acc") or {}, metrics.get("superclass_acc_from_levels") or {}
            rows.append({"head": entry["head"], "top1": metrics["top1"],
                         "leaf": {d: f"{v:.4f}" for d, v in leaf.items() if v is not None},
                         "own": {d: f"{v:.4f}" for d, v in own.items() if v is not None},
                         "seconds": seconds.get(entry["head"], 0.0)})
        print()
        print(_table(rows, levels))
        print("\n'own scores': super-class accuracy from the head's own super-class scores (parent δ columns for the "
              "Δ-heads, the level heads for multitask, the path probabilities of each level's nodes for nbdt); '—': "
              "the head has none.")
        total = time.perf_counter() - start
        stages["report"] = total - stages["training"] - stages["evaluation"]
        _record(out, total, seconds, stages, budget=budget)
    spent = ", ".join(f"{stage} {value:.0f} s" for stage, value in stages.items())
    print(f"\ndone in {total:.0f} s ({spent}). Open the dashboard with:\n  hseval dashboard {eval_dir}")
    return 0


def _cpu_workers(device: str | None, runs: int):
    """On a CPU of two cores or more, a launcher that trains the runs one process per core (each with
    the cores' share of threads); None (one after another, in this process) on a GPU or one core."""
    from hseval.core.device import resolve_device  # torch: for this command only
    from hseval.train.launch import on_devices  # torch: for this command only

    workers = min(available_cores(), runs)  # the CPUs this process may use (taskset, a Slurm allocation)
    if resolve_device(device or "auto").type != "cpu" or workers < 2:
        return None
    return lambda planned: on_devices(planned, ["cpu"] * workers)


def _record(out: Path, total: float, seconds: dict[str, float], stages: dict[str, float], *, budget: str) -> None:
    """Write ``demo.json`` (:class:`DemoRecord`)."""
    import torch  # for this command only (hseval --help stays light)

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    write_record(out / DEMO_FILE, DemoRecord(
        seconds=total, budget=budget, heads=list(seconds), train_seconds=seconds, stages=stages,
        date=datetime.date.today().isoformat(),
        machine=Machine(cpu=cpu_model(), threads=torch.get_num_threads(), gpu=gpu, torch=torch.__version__,
                        python=platform.python_version())))


def register(commands: argparse._SubParsersAction) -> None:
    demo = commands.add_parser("demo", help="train, evaluate and report every head, the paper's and the peers', on "
                               "Fashion-MNIST (CPU, minutes)")
    demo.add_argument("--out", default="hseval-demo", help="output folder (default: ./hseval-demo)")
    demo.add_argument("--quick", action="store_true", help="--budget quick: a smoke test, one epoch on 2,000 "
                      "training images, tested on 2,000, PCA only")
    demo.add_argument("--budget", choices=list(BUDGETS), help="how much each head trains (default: small, three epochs "
                      "on 8,000 images; paper: the Fashion-MNIST recipe's three epochs on 20,000); see train-all")
    demo.add_argument("--data-root", help="folder with Fashion-MNIST's IDX files (default: the usual places)")
    demo.add_argument("--device", help="auto, cpu, cuda (default: auto)")
    demo.add_argument("--force", action="store_true", help="train again even where a finished run exists")
    demo.add_argument("--quiet", action="store_true", help="no progress bars")
    demo.set_defaults(func=cmd_demo)
