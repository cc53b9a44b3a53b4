"""Linear probing on cached features: every head trained and tested on the frozen backbone's
features, as ``hseval train-all --probe`` does (goal: 8 heads on 50,000 cached 512-d features in
≤ 2 minutes on 2 CPU cores).

    python bench/probe.py [--train 50000 --test 10000 --epochs 10 --batch 1024] [--out DIR] [--readme]

The data: ``--train`` + ``--test`` small grey images (8 × 8, ten classes of Fashion-MNIST's tree,
each class its own brightness pattern), so that the features of a ResNet-18 (512-d) are extracted
in a minute or two; the extraction is timed apart from the probe (it is paid once per backbone).
Then the probe of every head: ``--epochs`` over the cached training features, the test features
scored after each epoch, every run written as a normal run folder. ``--readme`` writes the figure
into README.md's ``bench-probe`` block, with the machine, its load and the date.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import require_quiet, stamp, write_block  # noqa: E402

from hseval.data import LoadedDataset, TensorImages  # noqa: E402
from hseval.data.base import TensorPreprocess  # noqa: E402
from hseval.io.output import OutputFolder  # noqa: E402
from hseval.nn.heads import list_heads  # noqa: E402
from hseval.train.config import load_config  # noqa: E402
from hseval.train.probe import FEATURES  # noqa: E402
from hseval.train.runs import Datasets, probe_features, train_runs  # noqa: E402
from hseval.tree.builders.fashion_mnist import fashion_mnist_hierarchy  # noqa: E402


def dataset(n_train: int, n_test: int, side: int = 8, seed: int = 0) -> LoadedDataset:
    rng = np.random.default_rng(seed)
    tree = fashion_mnist_hierarchy()
    patterns = rng.integers(0, 256, (10, 1, side, side))
    preprocess = TensorPreprocess((0.5,), (0.25,))

    def split(n: int) -> TensorImages:
        labels = np.arange(n) % 10
        images = np.clip(patterns[labels] + rng.normal(0, 40, (n, 1, side, side)), 0, 255).astype(np.uint8)
        return TensorImages(torch.from_numpy(images), labels, preprocess, train=False)

    return LoadedDataset(name="bench-probe", root=Path("."), class_names=list(tree.leaf_names), hierarchy=tree,
                         train=split(n_train), test=split(n_test), image_size=side, channels=1, mean=(0.5,),
                         std=(0.25,))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=int, default=50_000)
    parser.add_argument("--test", type=int, default=10_000)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--threads", type=int, default=1, help="torch threads of each run (default 1: a linear "
                        "layer's batch is too small to share; 2 threads on a busy machine is ~50× slower)")
    parser.add_argument("--readme", action="store_true", help="write the figure into README.md")
    parser.add_argument("--out", help="the folder of runs, kept: a second call reuses its features (default: a "
                        "temporary folder, removed)")
    args = parser.parse_args()
    if args.readme:
        require_quiet("python bench/probe.py --readme")  # a README figure: only on a quiet machine
    data = dataset(args.train, args.test)
    root = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="hseval-probe-"))
    settings = ["model.backbone=resnet18", "model.freeze_backbone=true", "data.augment=false", "data.train_subset=null",
                f"data.batch_size={args.batch}", "data.eval_batch_size=1000", f"optim.epochs={args.epochs}",
                f"optim.milestones=[{max(1, args.epochs * 3 // 4)}]", "engine.progress=false", "engine.device=cpu",
                f"engine.threads={args.threads}"]
    heads = list_heads()
    configs = [(load_config("fashion-mnist", [*settings, f"model.head={h}"]), h) for h in heads]
    try:
        start = time.perf_counter()
        said: list[str] = []
        datasets = Datasets([(configs[0][0], data)])  # every head's data settings are the same
        with OutputFolder(root, "runs", writes=(FEATURES,)):  # the folder train-all --probe makes, features/ in it
            features = probe_features(configs[:1], datasets, root / FEATURES, log=said.append)[heads[0]]
        extraction = time.perf_counter() - start
        reused = any(line.startswith("reusing") for line in said)
        shape = tuple(features.tensors["train"].shape)
        extracted = "read from an earlier call" if reused else f"extracted in {extraction:.0f} s"
        print(f"{shape[0]} + {len(features.tensors['test'])} features of {shape[1]} dimensions with resnet18 "
              f"{extracted} ({torch.get_num_threads()} threads)")
        start = time.perf_counter()
        outcomes = train_runs(configs, root, resume=False, force=True, datasets=datasets, probe=True,
                              log=lambda _: None)
        total = time.perf_counter() - start
        for head, outcome in outcomes.items():
            print(f"  {head}: {outcome.seconds:.1f} s")
        text = (f"{len(heads)} heads × {args.epochs} epochs (batch {args.batch}) on {shape[0]:,} cached {shape[1]}-d "
                f"features, each tested on {len(features.tensors['test']):,} after every epoch: {total:.0f} s in all, "
                f"{min(o.seconds for o in outcomes.values()):.0f}–{max(o.seconds for o in outcomes.values()):.0f} s a "
                f"head (`hyperbolic` the slowest); the features of a ResNet-18 were {extracted}, once per backbone")
        print(text)
        if args.readme:  # dated only where the machine was quiet
            write_block("bench-probe", f"{text} ({stamp('python bench/probe.py --readme', threads=args.threads)})")
    finally:
        if not args.out:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
