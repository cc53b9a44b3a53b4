"""The ``hseval`` command line: the composition root of the product.

Each group of subcommands lives in :mod:`hseval.commands` and registers its parsers here. User
errors (any :class:`HsevalError`, and bad arguments) print one line ``hseval: error: ...`` on
stderr and return 2. ``train`` and ``app`` are imported lazily, inside the commands that need them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from hseval.errors import HsevalError

__all__ = ["main", "build_parser"]


class UsageError(HsevalError):
    """A command-line argument is missing or invalid."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, no usage dump; main() turns it into exit 2
        raise UsageError(f"{message} (see '{self.prog} --help')")


def build_parser() -> argparse.ArgumentParser:
    from hseval import __version__
    from hseval.commands import dashboard, data, demo, evaluate, hierarchy, train

    parser = _Parser(prog="hseval", description="Train, evaluate and inspect hierarchical classifiers "
                                                "(hierarchical spheres, Scieur & Kim 2021).")
    parser.add_argument("--version", action="version", version=f"hseval {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    data.register(commands, hierarchy.register(commands))
    train.register(commands)
    evaluate.register(commands)
    dashboard.register(commands)
    demo.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return int(args.func(args) or 0)
    except HsevalError as exc:
        print(f"hseval: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("hseval: interrupted (training keeps its last finished epoch: continue it with --resume)",
              file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
