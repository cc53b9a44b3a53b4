"""Training throughput, as ratios measured in the same run.

    python bench/train_step.py [--steps 30] [--batch 64] [--device auto|cpu|cuda] [--skip-engine] [--compile]
                               [--readme]

1. Every head against ``plain``: images/s of a full training step (forward, the head's loss,
   backward, optimiser step) with the same backbone and batch — the small CNN on 28×28 images on
   the CPU, and ResNet-18 on 32×32 images on CUDA when a GPU is there.
2. On CUDA only: the engine (bf16 autocast, channels_last, the dataset on the GPU with GPU-side
   augmentation) against a bare torchvision-style loop (a DataLoader with workers, pinned memory,
   CPU-side transforms, float32), both training ResNet-18 with the ``riemann`` head on
   CIFAR-sized images. Goal: engine ≥ 1.0× the bare loop.
Heads are measured round-robin over several rounds; the median ratio is printed.

``--readme`` writes 1 on the CPU into README.md's ``bench-train-step`` block, with the machine and the date.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hseval.nn.heads import create_head, list_heads  # noqa: E402
from hseval.nn.heads.delta import DeltaHead  # noqa: E402
from hseval.nn.model import build_model  # noqa: E402
from hseval.train.config import OptimConfig  # noqa: E402
from hseval.train.optim import build_optimizers  # noqa: E402
from hseval.tree.builders.fashion_mnist import fashion_mnist_hierarchy  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import require_quiet, stamp, write_block  # noqa: E402


def amp_loss(step, device: torch.device):
    """(x, y) -> loss of ``step`` (returning loss, logits), under bf16 autocast on CUDA as the engine trains."""
    def loss_of(x, y):
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            return step(x, y)[0]
    return loss_of


def step_rate(loss_of, optimizers, x, y, steps: int, device) -> float:
    """Images/s of ``steps`` optimiser steps on the loss ``loss_of(x, y)`` (after 3 warm-up steps)."""
    def one():
        loss = loss_of(x, y)
        optimizers.zero_grad()
        loss.backward()
        optimizers.step()

    for _ in range(3):
        one()
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        one()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return steps * len(y) / (time.perf_counter() - start)


def heads_vs_plain(device: torch.device, steps: int, batch: int, rounds: int = 5) -> dict[str, float]:
    """1. Median images/s of each head ÷ plain's, and README's sentence on it."""
    tree = fashion_mnist_hierarchy()
    backbone, size, channels = ("small-cnn", 28, 1) if device.type == "cpu" else ("resnet18", 32, 3)
    models = {}
    for head in list_heads():
        torch.manual_seed(0)
        spec = {"backbone": {"name": backbone, "config": {"in_channels": channels, "image_size": size}},
                "head": {"name": head, "config": {}}}
        model = build_model(spec, tree).to(device)
        models[head] = (model, build_optimizers(model, OptimConfig(lr=0.01)))
    x = torch.randn(batch, channels, size, size, device=device)
    y = torch.randint(0, tree.num_leaves, (batch,), device=device)
    ratios: dict[str, list[float]] = {h: [] for h in models}
    plain_rate = []
    for _ in range(rounds):
        rates = {h: step_rate(amp_loss(lambda a, b, m=m: m.head.loss(m.embed(a), b), device), o, x, y, steps, device)
                 for h, (m, o) in models.items()}
        plain_rate.append(rates["plain"])
        for h, r in rates.items():
            ratios[h].append(r / rates["plain"])
    print(f"1. {backbone} on {size}×{size}, batch {batch}, {device}: plain {statistics.median(plain_rate):.0f} img/s")
    median = {h: statistics.median(values) for h, values in ratios.items()}
    for h, value in median.items():
        print(f"   {h:28s} {value:.3f}× plain's images/s")
    return median


def readme_text(ratios: dict[str, float], batch: int) -> str:
    """README's sentence on the heads in a CPU training step, from this run's ratios."""
    tree = fashion_mnist_hierarchy()
    delta = [r for h, r in ratios.items() if isinstance(create_head(h, tree, 8), DeltaHead)]
    others = ", ".join(f"`{h}` {r:.2f}×" for h, r in ratios.items()
                       if h != "plain" and not isinstance(create_head(h, tree, 8), DeltaHead))
    where = stamp("python bench/train_step.py --device cpu --skip-engine --readme", threads=torch.get_num_threads())
    return (f"with the small CNN on 28×28 images (batch {batch}) every Δ-head trains at "
            f"{min(delta):.2f}–{max(delta):.2f}× plain's images/s ({others}; "
            f"{where})")


def compile_vs_eager(device: torch.device, steps: int, batch: int, heads=("plain", "riemann")) -> None:
    """3. images/s of a full step under engine.compile (and, on CUDA, engine.cuda_graphs) against eager."""
    from hseval.train.config import EngineConfig
    from hseval.train.step import TrainStep, compiled

    tree = fashion_mnist_hierarchy()
    backbone, size, channels = ("small-cnn", 28, 1) if device.type == "cpu" else ("resnet18", 32, 3)
    x = torch.randn(batch, channels, size, size, device=device)
    y = torch.randint(0, tree.num_leaves, (batch,), device=device)
    modes = {"eager": EngineConfig(), "compile": EngineConfig(compile=True)}
    if device.type == "cuda":
        modes["compile + CUDA graphs"] = EngineConfig(compile=True, cuda_graphs=True)
    for head in heads:
        rates = {}
        for label, engine in modes.items():
            torch.manual_seed(0)
            spec = {"backbone": {"name": backbone, "config": {"in_channels": channels, "image_size": size}},
                    "head": {"name": head, "config": {}}}
            model = build_model(spec, tree).to(device)
            optimizers = build_optimizers(model, OptimConfig(lr=0.01))
            step = compiled(TrainStep(model), engine)
            rates[label] = step_rate(amp_loss(step, device), optimizers, x, y, steps, device)
        text = ", ".join(f"{label} {rate:.0f} img/s ({rate / rates['eager']:.2f}×)" for label, rate in rates.items())
        print(f"3. {backbone} + {head}, batch {batch}, {device}: {text}")


def engine_vs_bare(steps: int) -> None:
    from torch.utils.data import DataLoader, TensorDataset
    from torchvision.transforms import v2

    from hseval.data import TensorImages, TensorPreprocess
    from hseval.train.engine import train_one_epoch
    from hseval.train.loader import train_batches
    from hseval.train.step import Context, TrainStep

    device = torch.device("cuda")
    tree = fashion_mnist_hierarchy()
    n, batch = steps * 256, 256
    images = torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8)
    labels = np.random.default_rng(0).integers(0, tree.num_leaves, n)
    spec = {"backbone": {"name": "resnet18", "config": {"in_channels": 3, "image_size": 32}},
            "head": {"name": "riemann", "config": {}}}
    mean, std = (0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762)

    torch.manual_seed(0)
    model = build_model(spec, tree).to(device).to(memory_format=torch.channels_last)
    optimizers = build_optimizers(model, OptimConfig(lr=0.01))
    split = TensorImages(images, labels, TensorPreprocess(mean, std, crop_padding=4, flip=True), train=True)
    ctx = Context(device=device, amp=True, channels_last=True)
    on_gpu = images.to(device)
    run = lambda: train_one_epoch(TrainStep(model), optimizers,  # noqa: E731
                                  train_batches(split, np.arange(n), batch_size=batch, seed=0, epoch=0,
                                                device=device, device_images=on_gpu), ctx,
                                  total=n, desc="engine", progress=False)
    run()
    engine = run()["images_per_s"]

    torch.manual_seed(0)
    bare_model = build_model(spec, tree).to(device)
    bare_opt = build_optimizers(bare_model, OptimConfig(lr=0.01))
    transform = v2.Compose([v2.RandomCrop(32, padding=4), v2.RandomHorizontalFlip(),
                            v2.ToDtype(torch.float32, scale=True), v2.Normalize(mean, std)])

    class Transformed(TensorDataset):
        def __getitem__(self, i):
            x, y = super().__getitem__(i)
            return transform(x), y

    loader = DataLoader(Transformed(images, torch.as_tensor(labels)), batch_size=batch, shuffle=True,
                        num_workers=8, pin_memory=True, drop_last=True, persistent_workers=True)

    def bare() -> float:
        start, seen = time.perf_counter(), 0
        for x, y in loader:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            loss, _ = bare_model.head.loss(bare_model.embed(x), y)
            bare_opt.zero_grad()
            loss.backward()
            bare_opt.step()
            seen += len(y)
        torch.cuda.synchronize()
        return seen / (time.perf_counter() - start)

    bare()
    bare_rate = bare()
    print(f"2. ResNet-18 + riemann, CIFAR-sized, batch {batch}: engine {engine:.0f} img/s, bare torchvision-style "
          f"loop {bare_rate:.0f} img/s; engine / bare = {engine / bare_rate:.2f}× (goal ≥ 1.0×)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--device", default="auto",
                        help="auto (the CPU at --batch, then CUDA at 256 where there is one), cpu or cuda")
    parser.add_argument("--skip-engine", action="store_true", help="no engine-vs-bare-loop comparison")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the head comparison (median ratio)")
    parser.add_argument("--compile", action="store_true", help="also plain and riemann under engine.compile "
                        "(and CUDA graphs on a GPU) against eager; compiling takes tens of seconds per model")
    parser.add_argument("--readme", action="store_true",
                        help="write 1 on the CPU into README.md (its bench-train-step block)")
    args = parser.parse_args()
    if args.readme:
        require_quiet("python bench/train_step.py --readme")  # a README figure: only on a quiet machine
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads, "
          f"CUDA: {torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'none'}")
    if args.device == "auto":
        runs = [("cpu", args.batch)] + ([("cuda", 256)] if torch.cuda.is_available() else [])
    else:
        runs = [(args.device, args.batch)]
    for device, batch in runs:
        ratios = heads_vs_plain(torch.device(device), args.steps, batch, rounds=args.rounds)
        if args.readme and device == "cpu":
            write_block("bench-train-step", readme_text(ratios, batch))
        if args.compile:
            compile_vs_eager(torch.device(device), args.steps, batch)
    if args.skip_engine:
        return 0
    if any(device == "cuda" for device, _ in runs):
        engine_vs_bare(args.steps)
    else:
        print("2. skipped: no CUDA device (the engine-vs-bare-loop comparison needs a GPU)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
