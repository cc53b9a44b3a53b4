"""``hseval export EVAL_DIR --to tensorboard OUT``: an evaluation folder in another tool's format
(the format itself is :mod:`hseval.reporting.tensorboard`'s)."""

from __future__ import annotations

import argparse


def cmd_export(args: argparse.Namespace) -> int:
    from hseval.reporting.tensorboard import export_evaluation  # pandas: for this command only

    result = export_evaluation(args.dir, args.out, to=args.to)
    runs = ", ".join(f"{name} ({samples} samples" + (f" + {vectors} class vectors)" if vectors else ")")
                     for name, (samples, vectors) in result.runs.items())
    print(f"exported {len(result.runs)} run(s) into {result.out}: {runs}; view them with "
          f"'tensorboard --logdir {result.out}' (the Projector tab)")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    export = commands.add_parser("export", help="export an evaluation folder (embeddings for TensorBoard's projector)")
    export.add_argument("dir", metavar="EVAL_DIR", help="a folder written by 'hseval evaluate'")
    export.add_argument("out", metavar="OUT", help="the folder to write (new, empty, or an earlier export)")
    export.add_argument("--to", required=True, metavar="FORMAT",
                        help="the format: tensorboard (TensorBoard's Embedding Projector); "
                             "hseval.reporting.tensorboard.FORMATS lists them")
    export.set_defaults(func=cmd_export)
