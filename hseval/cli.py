"""The ``hseval`` command line: the composition root of the product.

Every subcommand is a function ``(args) -> int``; user errors (any :class:`HsevalError`) print one
line ``hseval: error: ...`` on stderr and return 2. ``train`` and ``app`` are imported lazily,
inside the subcommands that need them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from hseval.errors import HsevalError

__all__ = ["main"]


class UsageError(HsevalError):
    """A command-line argument is missing or invalid."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, no usage dump; main() turns it into exit 2
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _hierarchy_read(args: argparse.Namespace, path: str):
    from hseval.hierarchy import Hierarchy

    return Hierarchy.read(path, args.format)


def cmd_hierarchy_stats(args: argparse.Namespace) -> int:
    stats = _hierarchy_read(args, args.file).stats()
    if args.json:
        print(json.dumps(stats))
    else:
        for key, value in stats.items():
            print(f"{key}: {value}")
    return 0


def cmd_hierarchy_convert(args: argparse.Namespace) -> int:
    from hseval.hierarchies.transforms import merge_single_child_chains

    hierarchy = _hierarchy_read(args, args.input)
    if args.merge_chains:
        hierarchy = merge_single_child_chains(hierarchy)
    hierarchy.write(args.output, args.to)
    print(f"wrote {args.output} ({args.to}, {hierarchy.num_leaves} classes, {hierarchy.num_nodes} nodes)")
    return 0


def cmd_hierarchy_show(args: argparse.Namespace) -> int:
    hierarchy = _hierarchy_read(args, args.file)
    lines = [hierarchy.root_name]

    def walk(node: int, prefix: str) -> None:
        kids = hierarchy.children[node]
        for k, child in enumerate(kids):
            last = k == len(kids) - 1
            label = hierarchy.node_names[child]
            if not hierarchy.is_leaf(child):
                label += f"  ({len(hierarchy.subtree_leaves(child))} classes)"
            lines.append(f"{prefix}{'└── ' if last else '├── '}{label}")
            if args.max_depth is None or hierarchy.depth[child] < args.max_depth:
                walk(child, prefix + ("    " if last else "│   "))

    walk(-1, "")
    print("\n".join(lines))
    return 0


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    from hseval import __version__
    from hseval.hierarchy_io import FORMATS

    parser = _Parser(prog="hseval", description="Train, evaluate and inspect hierarchical classifiers "
                                                "(hierarchical spheres, Scieur & Kim 2021).")
    parser.add_argument("--version", action="version", version=f"hseval {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    hierarchy = commands.add_parser("hierarchy", help="inspect and convert hierarchy files")
    hsub = hierarchy.add_subparsers(dest="hierarchy_command", metavar="ACTION", required=True)
    stats = hsub.add_parser("stats", help="print |L|, |P|, max depth and nodes per depth")
    stats.add_argument("file")
    stats.add_argument("--format", choices=FORMATS, help="file format (default: detect)")
    stats.add_argument("--json", action="store_true", help="print one JSON object")
    stats.set_defaults(func=cmd_hierarchy_stats)
    convert = hsub.add_parser("convert", help="convert between hierarchy formats")
    convert.add_argument("input")
    convert.add_argument("output")
    convert.add_argument("--to", required=True, choices=FORMATS, help="output format")
    convert.add_argument("--format", choices=FORMATS, help="input format (default: detect)")
    convert.add_argument("--merge-chains", action="store_true",
                         help="merge every super-class that has a single child into that child")
    convert.set_defaults(func=cmd_hierarchy_convert)
    show = hsub.add_parser("show", help="print the tree")
    show.add_argument("file")
    show.add_argument("--format", choices=FORMATS, help="file format (default: detect)")
    show.add_argument("--max-depth", type=_positive_int, help="stop at this depth")
    show.set_defaults(func=cmd_hierarchy_show)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return int(args.func(args) or 0)
    except HsevalError as exc:
        print(f"hseval: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("hseval: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
