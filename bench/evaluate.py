"""Evaluation costs, as ratios measured in the same run.

    python bench/evaluate.py [--samples 10000] [--tsne-points 10000] [--skip-umap]
                             [--runs 8 --projections pca,tsne,umap --device auto] [--readme]

1. Metrics + geometry against embedding extraction, for ``--samples`` test images of
   Fashion-MNIST through a small CNN with the ``riemann`` head (goal: ≤ 0.1×): the metric pass
   (the accumulator over the logits, per-node accuracy) and the geometry (parent/child table,
   pair angles, tree agreement) are timed separately from the forward pass that produces the
   embeddings.
2. t-SNE of ``--tsne-points`` (10,000) × 128 points: openTSNE against scikit-learn (same perplexity 30, 2 threads).
3. UMAP (umap-learn) of 5,000 × 128 points: the first call (which compiles numba code) and a
   second call in the same process.
4. With ``--runs N``: ``hseval evaluate`` of N runs (trained for one short epoch here) against one
   run plus N − 1 embedding passes, each command in its own process (so each pays UMAP's numba
   compilation once). Goal: ≤ 1.5×, reached by computing the projections of finished runs in
   worker threads while the next run is embedded (``--workers``, default a quarter of the cores).

``--readme`` writes 1–3 into README.md's ``bench-evaluate`` block, with the machine and the date.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hseval.metrics import (
    HierarchicalMetrics,  # noqa: E402
    geometry,  # noqa: E402
)
from hseval.nn.heads import create_head  # noqa: E402
from hseval.tree.builders.fashion_mnist import fashion_mnist_hierarchy  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cpu_model, require_quiet, stamp, write_block  # noqa: E402


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def bench_metrics(samples: int) -> dict[str, float]:
    from hseval.data import load_dataset
    from hseval.nn.backbones import create_backbone

    data = load_dataset("fashion-mnist")
    tree = fashion_mnist_hierarchy()
    backbone = create_backbone("small-cnn", in_channels=1, image_size=28).eval()
    head = create_head("riemann", tree, backbone.out_features, radius=8.0).eval()
    images = data.test.images[:samples]
    labels = torch.as_tensor(data.test.labels[:samples])

    def extract():
        out = []
        with torch.inference_mode():
            for start in range(0, len(images), 1000):
                x = data.test.preprocess(images[start:start + 1000], train=False)
                z = backbone(x)
                out.append((z, head(z), head.level_logits(z)))
        return out

    batches, t_embed = timed(extract)

    def metrics():
        acc = HierarchicalMetrics(tree, topk=(1, 5, 20))
        for (_, logits, levels), y in zip(batches, labels.split(1000)):
            acc.update(logits, y, levels)
        result = acc.compute()
        acc.per_node()
        return result

    def geom():
        vectors, _ = geometry.node_vectors(head)
        table = geometry.parent_child_table(tree, vectors, head.radii().numpy())
        pairs, _ = geometry.pair_angles(tree, vectors)
        geometry.tree_agreement(tree, vectors[: tree.num_leaves])
        return table, pairs

    _, t_metrics = timed(metrics)
    _, t_geom = timed(geom)
    print(f"1. {samples} samples: embedding extraction {t_embed:.2f} s; metrics {t_metrics:.3f} s "
          f"({t_metrics / t_embed:.3f}×), geometry {t_geom:.3f} s ({t_geom / t_embed:.3f}×), "
          f"together {(t_metrics + t_geom) / t_embed:.3f}× (goal ≤ 0.1×)")
    return {"samples": samples, "embed_s": t_embed, "ratio": (t_metrics + t_geom) / t_embed}


def bench_tsne(points: int) -> dict[str, float]:
    from openTSNE import TSNE as OpenTSNE
    from sklearn.manifold import TSNE as SkTSNE

    rng = np.random.default_rng(0)
    centres = rng.normal(0, 4, (10, 128))
    x = (centres[rng.integers(0, 10, points)] + rng.normal(size=(points, 128))).astype(np.float32)
    _, t_open = timed(lambda: OpenTSNE(perplexity=30, n_jobs=2, random_state=0, verbose=False).fit(x))
    _, t_sk = timed(lambda: SkTSNE(perplexity=30, n_jobs=2, random_state=0, init="pca").fit_transform(x))
    print(f"2. t-SNE {points:,}×128: openTSNE {t_open:.1f} s, scikit-learn {t_sk:.1f} s; "
          f"scikit-learn / openTSNE = {t_sk / t_open:.2f}")
    return {"opentsne_s": t_open, "sklearn_s": t_sk, "points": points}


def bench_umap() -> dict[str, float]:
    import umap

    rng = np.random.default_rng(0)
    x = rng.normal(size=(5_000, 128)).astype(np.float32)
    _, first = timed(lambda: umap.UMAP(random_state=0).fit_transform(x))
    _, second = timed(lambda: umap.UMAP(random_state=0).fit_transform(x))
    print(f"3. UMAP 5,000×128: first call {first:.1f} s (numba compilation included), second {second:.1f} s")
    return {"first_s": first, "second_s": second}


def readme_text(metrics: dict[str, float], tsne: dict[str, float], umap: dict[str, float] | None) -> str:
    """README's sentence on evaluation costs, from this run's measurements."""
    text = (f"Evaluation: metrics and geometry take {metrics['ratio']:.3f}× the time of embedding extraction for "
            f"{metrics['samples']:,} images; t-SNE of {tsne['points']:,}×128 points takes {tsne['opentsne_s']:.1f} s "
            f"with openTSNE against {tsne['sklearn_s']:.1f} s with scikit-learn "
            f"({tsne['sklearn_s'] / tsne['opentsne_s']:.1f}×)")
    if umap:
        text += (f"; UMAP of 5,000 points takes {umap['first_s']:.0f} s in a new process (numba compilation) and "
                 f"{umap['second_s']:.1f} s after")
    return text + f" ({stamp('python bench/evaluate.py --readme', threads=torch.get_num_threads())})."


def bench_many_runs(n: int, projections: str, device: str, data_root: str | None) -> None:
    import subprocess
    import tempfile

    from hseval.nn.heads import list_heads

    root = Path(tempfile.mkdtemp(prefix="hseval-bench-"))
    heads = (list_heads() * n)[:n]
    names = [f"{h}-{i}" for i, h in enumerate(heads)]
    for name, head in zip(names, heads):  # one short epoch each: evaluation does not care how good they are
        subprocess.run([sys.executable, "-m", "hseval", "train", "--head", head, "--set", "optim.epochs=1",
                        "--set", "data.train_subset=1000", "--set", f"engine.device={device}", "--quiet",
                        *(["--data-root", data_root] if data_root else []), "--out", str(root / "runs" / name)],
                       check=True, capture_output=True)
    runs = [str(root / "runs" / name) for name in names]

    def command(out: str, targets: list[str], methods: str) -> float:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "hseval", "evaluate", *targets, "--out", str(root / out),
                        "--projections", methods, "--device", device, "--quiet"], check=True, capture_output=True)
        return time.perf_counter() - start

    embed = command("embed", runs[:1], "none")
    one = command("one", runs[:1], projections)
    every = command("all", runs, projections)
    budget = one + (n - 1) * embed
    print(f"4. evaluate {n} runs ({projections}, {device}): {every:.1f} s; one run {one:.1f} s, one embedding pass "
          f"(no projection) {embed:.1f} s; ratio {every / budget:.2f}× of one run plus {n - 1} embedding passes "
          "(goal ≤ 1.5×)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--tsne-points", type=int, default=10_000, help="points of the t-SNE comparison")
    parser.add_argument("--skip-umap", action="store_true")
    parser.add_argument("--runs", type=int, default=0, help="also time 'hseval evaluate' of this many runs")
    parser.add_argument("--projections", default="pca,tsne,umap", help="of the --runs comparison")
    parser.add_argument("--device", default="auto", help="of the --runs comparison")
    parser.add_argument("--only-runs", action="store_true", help="only the --runs comparison")
    parser.add_argument("--data-root", help="Fashion-MNIST folder of the --runs comparison (default: usual places)")
    parser.add_argument("--readme", action="store_true", help="write 1–3 into README.md (its bench-evaluate block)")
    args = parser.parse_args()
    if args.readme:
        require_quiet("python bench/evaluate.py --readme")  # a README figure: only on a quiet machine
    if args.readme and args.only_runs:
        parser.error("--readme writes 1–3, which --only-runs skips")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {cpu_model()}")
    if not args.only_runs:
        metrics = bench_metrics(args.samples)
        tsne = bench_tsne(args.tsne_points)
        umap = None if args.skip_umap else bench_umap()
        if args.readme:
            write_block("bench-evaluate", readme_text(metrics, tsne, umap))
    if args.runs:
        bench_many_runs(args.runs, args.projections, args.device, args.data_root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
