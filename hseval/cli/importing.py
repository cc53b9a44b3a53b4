"""``hseval import``: a checkpoint trained elsewhere becomes a run folder (see :mod:`hseval.io.checkpoint_import`)."""

from __future__ import annotations

import argparse

from hseval.cli import positive_int  # bounded(Size): create_backbone's checked in_channels, image_size, embedding_dim


def cmd_import(args: argparse.Namespace) -> int:
    from hseval.io.checkpoint_import import import_checkpoint  # torch: for this command only

    out = import_checkpoint(args.checkpoint, args.out, backbone=args.backbone, head=args.head,
                            hierarchy=args.hierarchy, dataset=args.dataset, data_root=args.data_root,
                            in_channels=args.in_channels, image_size=args.image_size, small_stem=args.small_stem,
                            embedding_dim=args.embedding_dim, head_options=args.set, mapping=args.map,
                            ignore=args.ignore, prefix=args.prefix, force=args.force)
    print(f"wrote {out}; evaluate it with: hseval evaluate {out} --out EVAL_DIR")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "import", help="make a run folder of a checkpoint trained elsewhere (.safetensors, .pt/.pth)",
        description="Make a run folder of a checkpoint trained elsewhere: a torchvision-style state dict "
                    "(.safetensors, or .pt/.pth read with torch.load(weights_only=True)); its last layer fc.weight "
                    "becomes the plain head, other heads' tensors are named with --map.")
    parser.add_argument("checkpoint", metavar="CHECKPOINT", help=".safetensors or .pt/.pth file of tensors")
    parser.add_argument("--backbone", required=True, help="resnet18, resnet50, densenet121, densenet161 or small-cnn")
    parser.add_argument("--head", required=True, help="the head the checkpoint's last layer becomes (e.g. plain)")
    parser.add_argument("--hierarchy", required=True, metavar="TREE",
                        help="hierarchy file; its classes, in order, are the rows of the class weights")
    parser.add_argument("--dataset", required=True, help="the dataset the model classifies (see 'hseval data info')")
    parser.add_argument("--data-root", help="folder of the dataset (checked when at hand; recorded for evaluate)")
    parser.add_argument("--in-channels", type=positive_int, help="image channels (default: from the first conv)")
    parser.add_argument("--image-size", type=positive_int, help="image size (default: the dataset's)")
    parser.add_argument("--small-stem", action=argparse.BooleanOptionalAction, default=None,
                        help="3x3 stride-1 first conv without max-pool (default: from the first conv's kernel)")
    parser.add_argument("--embedding-dim", type=positive_int, help="a linear bottleneck after the backbone "
                                                                   "(map backbone.bottleneck.weight)")
    parser.add_argument("--map", action="append", default=[], metavar="HSEVAL_KEY=CHECKPOINT_KEY",
                        help="take an hseval tensor from a checkpoint key, e.g. head.delta=hc.delta (repeatable)")
    parser.add_argument("--ignore", action="append", default=[], metavar="CHECKPOINT_KEY",
                        help="drop a checkpoint tensor the model does not use (repeatable)")
    parser.add_argument("--set", action="append", default=[], metavar="head.OPTION=VALUE",
                        help="a head option, e.g. --set head.radius_decay=0.7 (repeatable)")
    parser.add_argument("--prefix", help="strip this prefix from the checkpoint's keys (module. is stripped anyway)")
    parser.add_argument("--force", action="store_true", help="replace a run already in --out")
    parser.add_argument("--out", required=True, metavar="RUN_DIR", help="the run folder to write")
    parser.set_defaults(func=cmd_import)
