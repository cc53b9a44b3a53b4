"""Forward+backward time of every registered head, relative to ``plain``, and its peak memory.

    python bench/heads.py [--sizes 100,1000,20000,100000] [--heads all|paper|peers|NAME,...] [--repeats N]
                          [--malloc both|default|tuned] [--device cpu|cuda] [--dtype float32|bf16] [--readme]

For each number of classes |L| a random tree is built deterministically (about 1.5·|L| nodes
counting the leaves, depth <= 4). Every head then runs one training step's worth of work on a
batch of 256 features of size d = 512: forward, cross-entropy (``head.loss``) on random targets,
backward into the parameters *and* the input (as in training), grads reset to None before each
step (``zero_grad``'s default).

Heads are timed round-robin (one measurement of each head per round, several rounds) and each
head's time is divided by ``plain``'s time from the same round; the table shows the median of
those ratios, so slow drifts of the machine (other jobs, frequency scaling) cancel out.

``--malloc``: :func:`hseval.core.perf.tune_malloc` changes how glibc serves big tensors, which
changes ``plain``'s time too, so each setting runs in a fresh process and both are reported
(CPU only).

Peak memory of a step (its parameters' gradients, activations and temporaries, above the
parameters, input and targets): on the CPU each head and size in a fresh process, whose peak
resident memory (``VmHWM``, reset through ``/proc/self/clear_refs``) is read around its second
step, with glibc returning every block of 64 KiB or more to the system when freed, so that resident
memory is live memory; on a GPU from ``torch.cuda.max_memory_allocated``.

``--device cuda``: the same on a GPU, timed between ``torch.cuda.synchronize()`` calls. ``--dtype
bf16``: the step under ``torch.autocast(dtype=bfloat16)``, as the engine trains on a GPU.

``--readme`` (CPU): writes the table with ``tune_malloc`` (as hseval trains) into README.md's
``bench-heads-cpu`` block, with the machine and the date.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hseval.nn.heads import GROUPS, create_head, list_heads  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cpu_model, random_tree, require_quiet, stamp, write_block  # noqa: E402

BATCH, DIM = 256, 512


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(size: int, rounds: int, heads: list[str], device: torch.device, dtype: str) -> dict:
    """Median time ratio to plain per head (and plain's median ms) for one tree size; on CUDA also
    each head's peak extra memory of one step."""
    torch.manual_seed(0)
    tree = random_tree(size, seed=size)
    models = {name: create_head(name, tree, DIM).to(device) for name in heads}
    x = torch.randn(BATCH, DIM, device=device, requires_grad=True)
    target = torch.randint(0, size, (BATCH,), device=device)

    def step(head):
        head.zero_grad(set_to_none=True)
        x.grad = None
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=dtype == "bf16"):
            loss, _ = head.loss(x, target)
        loss.backward()

    def timed(head, iters):
        sync(device)
        start = time.perf_counter()
        for _ in range(iters):
            step(head)
        sync(device)
        return (time.perf_counter() - start) / iters

    memory: dict[str, float] = {}
    if device.type == "cuda":
        for name, head in models.items():
            step(head)  # the gradients of the parameters exist from now on, as in training
            head.zero_grad(set_to_none=True)
            sync(device)
            torch.cuda.reset_peak_memory_stats(device)
            before = torch.cuda.memory_allocated(device)
            step(head)
            sync(device)
            memory[name] = (torch.cuda.max_memory_allocated(device) - before) / 2**20

    for head in models.values():  # warm-up: first calls allocate, pick kernels, fault pages in
        for _ in range(3):
            step(head)
    # iterations per measurement: about 20 ms of plain work, so that timer and loop costs vanish
    iters = max(1, round(0.02 / timed(models["plain"], 5)))
    times: dict[str, list[float]] = {name: [] for name in heads}
    for r in range(rounds):
        order = heads if r % 2 == 0 else heads[::-1]  # alternate so no head always follows the same one
        for name in order:
            times[name].append(timed(models[name], iters))
    ratios = {name: statistics.median(t / p for t, p in zip(times[name], times["plain"])) for name in heads}
    return {"size": size, "nodes": tree.num_nodes, "iters": iters, "plain_ms": 1e3 * statistics.median(times["plain"]),
            "ratios": ratios, "memory_mb": memory}


def _resident(field: str) -> int:
    """This process's ``VmRSS`` or ``VmHWM`` in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/self/status has no {field}")


def cpu_step_memory(size: int, name: str) -> float:
    """Peak MiB of one CPU step of head ``name`` above its parameters, input and targets (run in a
    process of its own: :func:`main` with ``--memory-of``)."""
    torch.manual_seed(0)
    head = create_head(name, random_tree(size, seed=size), DIM)
    x = torch.randn(BATCH, DIM, requires_grad=True)
    target = torch.randint(0, size, (BATCH,))

    def step():
        head.zero_grad(set_to_none=True)
        x.grad = None
        loss, _ = head.loss(x, target)
        loss.backward()

    step()  # lazily built buffers and the allocator's first blocks
    head.zero_grad(set_to_none=True)
    x.grad = None
    Path("/proc/self/clear_refs").write_text("5")  # the peak starts again from what is resident now
    before = _resident("VmRSS")
    step()
    return (_resident("VmHWM") - before) / 2**20


def cpu_memory(sizes: list[int], heads: list[str]) -> dict[int, dict[str, float]]:
    """:func:`cpu_step_memory` of every head and size, each in a fresh process."""
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_TRIM_THRESHOLD_": "0"}
    out: dict[int, dict[str, float]] = {}
    for size in sizes:
        for name in heads:
            cmd = [sys.executable, __file__, "--memory-of", name, "--sizes", str(size)]
            out.setdefault(size, {})[name] = float(subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True,
                                                                  env=env).stdout.strip().splitlines()[-1])
    return out


def default_rounds(size: int, repeats: int | None) -> int:
    if repeats is not None:
        return repeats
    return 21 if size <= 1000 else 9 if size <= 5000 else 5


def chosen_heads(text: str) -> list[str]:
    """``--heads``: groups or names, plain always first (every ratio is to it)."""
    heads = [h for item in text.split(",") for h in (list_heads(item) if item in (*GROUPS, "all") else [item])]
    return ["plain"] + [h for h in dict.fromkeys(heads) if h != "plain"]


def run(sizes: list[int], repeats: int | None, tuned: bool, device: torch.device, dtype: str,
        heads: list[str]) -> list[dict]:
    if tuned:
        from hseval.core.perf import tune_malloc

        tune_malloc()
    return [measure(size, default_rounds(size, repeats), heads, device, dtype) for size in sizes]


def table(results: list[dict], title: str) -> str:
    heads = list(results[0]["ratios"])
    name_w = max(len(h) for h in heads) + 2
    cols = [f"|L|={r['size']:,}" for r in results]
    col_w = max(12, *(len(c) + 2 for c in cols))
    lines = [title, "head".ljust(name_w) + "".join(c.rjust(col_w) for c in cols)]
    lines.append("-" * len(lines[-1]))
    for h in heads:
        lines.append(h.ljust(name_w) + "".join(f"{r['ratios'][h]:.2f}".rjust(col_w) for r in results))
    lines.append("-" * len(lines[1]))
    lines.append("plain (ms)".ljust(name_w) + "".join(f"{r['plain_ms']:.2f}".rjust(col_w) for r in results))
    lines.append("nodes |P|".ljust(name_w) + "".join(f"{r['nodes']:,}".rjust(col_w) for r in results))
    lines.append("steps x rounds".ljust(name_w)
                 + "".join(f"{r['iters']}x{r['rounds']}".rjust(col_w) for r in results))
    if results[0].get("memory_mb"):
        lines += ["", "peak memory of one step above the parameters and input, ÷ plain's (plain in MiB)",
                  "head".ljust(name_w) + "".join(c.rjust(col_w) for c in cols), "-" * len(lines[1])]
        for h in heads:
            lines.append(h.ljust(name_w) + "".join(
                f"{r['memory_mb'][h] / max(r['memory_mb']['plain'], 1e-9):.2f}".rjust(col_w) for r in results))
        lines.append("plain (MiB)".ljust(name_w) + "".join(f"{r['memory_mb']['plain']:.1f}".rjust(col_w)
                                                         for r in results))
    return "\n".join(lines)


GOAL = 1.10  # head ÷ plain that the Δ-heads aim at


def markdown(results: list[dict], command: str) -> str:
    """README's table: each head ÷ plain per size, plain's own time, which heads reach the goal, and
    where and when it was measured."""
    heads = [h for h in results[0]["ratios"] if h != "plain"]
    last = results[-1]
    memory = f"peak MiB at {last['size']:,}"
    lines = ["| head | " + " | ".join(f"{r['size']:,}" for r in results) + f" | {memory} |",
             "|---|" + "---|" * (len(results) + 1)]
    lines += [f"| `{h}` | " + " | ".join(f"{r['ratios'][h]:.2f}" for r in results)
              + f" | {last['memory_mb'][h]:,.0f} |" for h in heads]
    lines.append("| `plain` itself (ms; MiB) | " + " | ".join(f"{r['plain_ms']:.3g}" for r in results)
                 + f" | {last['memory_mb']['plain']:,.0f} |")
    reached = []
    for r in results:
        names = [f"`{h}`" for h in heads if r["ratios"][h] <= GOAL]
        reached.append(f"{', '.join(names) or 'no head'} at {r['size']:,} classes")
    rounds = "/".join(str(r["rounds"]) for r in results)
    where = stamp(command, threads=torch.get_num_threads(), versions={"torch": torch.__version__})
    return ("\n".join(lines) + f"\n\nHead ÷ plain, forward + backward at batch {BATCH}, d = {DIM}, median of "
            f"{rounds} rounds, with `tune_malloc`; the last column is the peak memory of one step above the "
            f"parameters and input (gradients, activations, temporaries; each head in a process of its own). Within "
            f"{GOAL:.2f}× of plain: {'; '.join(reached)} ({where}).\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,20000,100000", help="comma-separated numbers of classes")
    parser.add_argument("--heads", default="all", help="heads or groups (paper, peers, all), comma-separated; plain "
                        "is always measured (default: all)")
    parser.add_argument("--repeats", type=int, default=None, help="rounds per size (default: 21, 9 or 5 by size)")
    parser.add_argument("--malloc", choices=["both", "default", "tuned"], default="both",
                        help="glibc malloc as it comes, tuned by hseval.core.perf.tune_malloc, or both (default)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    parser.add_argument("--dtype", choices=["float32", "bf16"], default="float32",
                        help="float32, or bf16 autocast as the engine trains on a GPU (default: float32)")
    parser.add_argument("--readme", action="store_true",
                        help="write the tune_malloc table into README.md (its bench-heads-cpu block; CPU only)")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # child-process mode
    parser.add_argument("--memory-of", help=argparse.SUPPRESS)  # child-process mode: one head's step memory
    args = parser.parse_args(argv)
    if args.memory_of:
        print(cpu_step_memory(int(args.sizes), args.memory_of))
        return
    if args.readme:
        require_quiet("python bench/heads.py --readme")  # a README figure: only on a quiet machine
    if args.readme and (args.device != "cpu" or args.malloc == "default"):
        parser.error("--readme writes the CPU table with tune_malloc: use --device cpu with --malloc tuned or both")
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    device = torch.device(args.device)

    heads = chosen_heads(args.heads)
    if args.json:  # one setting, in this process; results as JSON on stdout
        results = run(sizes, args.repeats, args.malloc == "tuned", device, args.dtype, heads)
        for r, size in zip(results, sizes):
            r["rounds"] = default_rounds(size, args.repeats)
        print(json.dumps(results))
        return

    machine = torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_model()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {machine}, {args.dtype}")
    print(f"batch {BATCH}, d {DIM}; forward + cross-entropy + backward (input and parameters), "
          "median over rounds of time / plain's time in the same round\n")
    settings = ["default", "tuned"] if args.malloc == "both" and device.type == "cpu" else \
        [args.malloc if args.malloc != "both" else "default"]
    memory = cpu_memory(sizes, heads) if device.type == "cpu" else None
    for setting in settings:
        cmd = [sys.executable, __file__, "--json", "--malloc", setting, "--sizes", args.sizes, "--device",
               args.device, "--dtype", args.dtype, "--heads", ",".join(heads)]
        if args.repeats is not None:
            cmd += ["--repeats", str(args.repeats)]
        out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, env=os.environ.copy()).stdout
        results = json.loads(out.strip().splitlines()[-1])
        if memory is not None:
            for r in results:
                r["memory_mb"] = memory[r["size"]]
        title = (f"{args.device}, {args.dtype}" if device.type != "cpu" else "glibc malloc as it comes"
                 if setting == "default" else "with hseval.core.perf.tune_malloc() (big blocks reused, no page faults)")
        print(table(results, title) + "\n", flush=True)
        if args.readme and setting == "tuned":
            write_block("bench-heads-cpu", markdown(results, "python bench/heads.py --sizes "
                                                    f"{args.sizes} --readme"))


if __name__ == "__main__":
    main()
