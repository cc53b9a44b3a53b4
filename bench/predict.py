"""``hseval predict`` against a bare torchvision loop: images per second of the same model, batch and
loader processes on the same image files (goal: hseval at ≥ 0.95× the bare loop).

    python bench/predict.py [--images 512 --model resnet18 --batch 64 --workers 2 --repeat 3] [--readme]

The images: ``--images`` random JPEGs of 500 × 375 pixels (ImageNet's typical size) in an
image-folder layout. The bare loop is what a user writes: ``torchvision.datasets.ImageFolder`` with
the weights' ``transforms()``, a ``DataLoader`` and the model under ``torch.inference_mode``, the
logits gathered on the CPU. hseval's is ``hseval.evaluation.zoo.predict``, which also captures the
embeddings, writes its chunks and assembles the prediction file. The two alternate, ``--repeat``
times each; the figure is the median of each. ``--readme`` writes it into README.md's
``bench-predict`` block, with the machine, its load and the date.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torchvision
from PIL import Image
from safetensors.torch import save_file
from torch.utils.data import DataLoader

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import require_quiet, stamp, write_block  # noqa: E402

from hseval.data import load_dataset  # noqa: E402
from hseval.evaluation import pretrained, zoo  # noqa: E402


def images(root: Path, count: int, classes: int = 8) -> None:
    rng = np.random.default_rng(0)
    for k in range(count):
        folder = root / "data" / "test" / f"c{k % classes}"
        folder.mkdir(parents=True, exist_ok=True)
        (root / "data" / "train" / f"c{k % classes}").mkdir(parents=True, exist_ok=True)
        base = rng.integers(0, 256, (1, 1, 3), dtype=np.uint8)
        noise = rng.integers(0, 64, (375, 500, 3), dtype=np.uint8)
        Image.fromarray(base + noise).save(folder / f"{k}.jpg", quality=90)
    for c in range(classes):
        (root / "data" / "train" / f"c{c}" / "0.jpg").write_bytes((root / "data" / "test" / f"c{c}" / f"{c}.jpg")
                                                                 .read_bytes())
    (root / "tree.txt").write_text("".join(f"all/g{c % 2}/c{c}\n" for c in range(classes)))


@torch.inference_mode()
def bare(model: torch.nn.Module, root: Path, transform, batch: int, workers: int) -> float:
    """Seconds of a bare loop over the test images."""
    start = time.perf_counter()
    dataset = torchvision.datasets.ImageFolder(str(root / "data" / "test"), transform=transform)
    out = [model(x).cpu() for x, _ in DataLoader(dataset, batch_size=batch, num_workers=workers)]
    torch.cat(out)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=512)
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--readme", action="store_true", help="write the figure into README.md")
    args = parser.parse_args()
    if args.readme:
        require_quiet("python bench/predict.py --readme")
    root = Path(tempfile.mkdtemp(prefix="hseval-predict-"))
    try:
        images(root, args.images)
        model = torchvision.models.get_model(args.model, weights=None, num_classes=8).eval()
        save_file(model.state_dict(), root / "w.safetensors")
        loaded = pretrained.load_model(f"torchvision:{args.model}", root / "w.safetensors")
        data = load_dataset("image-folder", root / "data", hierarchy=root / "tree.txt")
        transform = torchvision.models.get_model_weights(args.model).DEFAULT.transforms()
        bare(model, root, transform, args.batch, args.workers)  # warm: the files in the page cache, the kernels
        times: dict[str, list[float]] = {"bare": [], "hseval": []}
        for k in range(args.repeat):
            times["bare"].append(bare(model, root, transform, args.batch, args.workers))
            start = time.perf_counter()
            zoo.predict(loaded, data, root / f"p{k}.npz", batch_size=args.batch, workers=args.workers,
                        progress=False, log=lambda _: None)
            times["hseval"].append(time.perf_counter() - start)
        rate = {k: args.images / statistics.median(v) for k, v in times.items()}
        ratio = rate["hseval"] / rate["bare"]
        text = (f"`hseval predict` of torchvision's {args.model} on {args.images} JPEGs of 500 × 375 pixels (batch "
                f"{args.batch}, {args.workers} loader processes): {rate['hseval']:.1f} images/s against "
                f"{rate['bare']:.1f} for a bare torchvision loop, {ratio:.2f}× (median of {args.repeat}")
        print(text + ")")
        if args.readme:
            where = stamp("python bench/predict.py --readme", threads=torch.get_num_threads())
            write_block("bench-predict", f"{text}; {where})")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
