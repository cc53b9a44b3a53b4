"""``hseval predict``: a torchvision or timm classifier, with its weights, run on a dataset's split
into a prediction file (:mod:`hseval.evaluation.zoo`); ``hseval evaluate --model`` uses the same
options to predict and evaluate several models at once."""

from __future__ import annotations

import argparse
from typing import Any

from hseval.cli import bounded, positive_int
from hseval.cli.data import CLI_HELP, CLI_OPTIONS, _options
from hseval.core import fileio
from hseval.core.arguments import Threads
from hseval.core.errors import ConfigError

MODEL_HELP = ("torchvision:NAME (torchvision.models.list_models()) or timm:NAME (timm.list_models(), with a tag: "
              "timm:convnext_tiny.fb_in1k)")
WEIGHTS_HELP = ("the model's state dict, a local .safetensors or .pt/.pth (read with weights_only=True); hseval "
                "downloads nothing: README shows the one-liner that saves a hub's weights")


def dataset_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of ``args.dataset``'s loader given on the command line (``--wordnet``...), each
    checked against what the dataset takes."""
    from hseval.data import DATASETS  # torch: only where a dataset is loaded

    return _options(args, DATASETS.options(args.dataset))


def read_classes(path: str | None) -> list[str] | None:
    """``--classes``: the model's class names, one per line (blank lines skipped)."""
    if path is None:
        return None
    names = [line.strip() for line in fileio.read_text(path, what="class list", error=ConfigError).splitlines()
             if line.strip()]
    if not names:
        raise ConfigError(f"{path}: lists no class names; give one per line, in the model's output order")
    return names


def cmd_predict(args: argparse.Namespace) -> int:
    from hseval.core.device import resolve_device  # torch, the datasets and the models: for this command only
    from hseval.data import load_dataset  # torch: for this command only
    from hseval.evaluation.pretrained import load_model  # torchvision, timm: for this command only
    from hseval.evaluation.zoo import predict  # torch: for this command only

    device = resolve_device(args.device)
    model = load_model(args.model, args.weights, recipe=args.recipe)
    data = load_dataset(args.dataset, args.data_root, **dataset_options(args))
    out = predict(model, data, args.out, split=args.split, classes=read_classes(args.classes),
                  batch_size=args.batch_size, workers=args.loader_workers, device=device, amp=args.amp is not False,
                  progress=not args.quiet)
    print(f"wrote {out}; next: hseval evaluate --predictions {out} --hierarchy TREE --dataset {data.name} "
          f"--out EVAL_DIR (or hseval evaluate --model ... to do both)")
    return 0


def add_data_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup, *, hierarchy: bool = True) -> None:
    """The dataset options of ``predict`` and ``evaluate --model``: the loader's options that the
    command line exposes (:data:`hseval.cli.data.CLI_OPTIONS`)."""
    for option, metavar in CLI_OPTIONS.items():
        if option != "hierarchy" or hierarchy:
            parser.add_argument(f"--{option}", metavar=metavar, help=CLI_HELP[option])


def add_run_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup, *, batch: bool = True) -> None:
    """How the models run: batch (``batch``: not where the command has its own), loader processes, precision."""
    if batch:
        parser.add_argument("--batch-size", type=positive_int, default=64, help="images per batch (default: 64)")
    parser.add_argument("--loader-workers", dest="loader_workers", type=bounded(Threads),
                        help="processes decoding images (default: the cores, at most 8)")
    parser.add_argument("--amp", action=argparse.BooleanOptionalAction, default=None,
                        help="bf16 autocast and channels-last on a GPU (default: on; no effect on the CPU)")


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "predict", help="run a torchvision or timm classifier on a dataset's split into a prediction file",
        description="Run a pretrained classifier (torchvision:NAME or timm:NAME, its weights a local file) on a "
                    "dataset's split with the model's own preprocessing, and write hseval's prediction file: "
                    "targets, logits, embeddings (the input of its last layer) and class_weights (that layer's rows). "
                    "An interrupted prediction continues where it stopped.")
    parser.add_argument("--model", required=True, help=MODEL_HELP)
    parser.add_argument("--weights", required=True, metavar="FILE", help=WEIGHTS_HELP)
    parser.add_argument("--recipe", help="torchvision: the weights enum member whose preprocessing runs, e.g. "
                                         "IMAGENET1K_V2 (default: DEFAULT)")
    parser.add_argument("--classes", metavar="NAMES", help="the model's class names, one per line in its output "
                        "order, when it has other outputs than the dataset's classes (default: a 1,000-way model on "
                        "WordNet ids is ImageNet-1k's)")
    parser.add_argument("--dataset", required=True, help="a dataset name (hseval data list)")
    parser.add_argument("--data-root", metavar="DIR", help="dataset folder (default: $HSEVAL_DATA, then the usual "
                                                           "places)")
    parser.add_argument("--split", default="test", choices=("train", "val", "test"),
                        help="the split to predict (default: test; ImageNet's and iNaturalist's test split is their "
                             "official validation set)")
    add_data_arguments(parser)
    parser.add_argument("--out", required=True, metavar="FILE.npz", help="the prediction file to write")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N (default: auto)")
    add_run_arguments(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=cmd_predict, memory_advice="use a smaller --batch-size")
