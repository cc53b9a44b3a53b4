"""The ``hseval`` command line: the composition root of the product.

Each group of subcommands lives in :mod:`hseval.cli` and registers its parsers here.
``hseval.train`` and ``hseval.app`` are imported lazily, inside the commands that need them. The
process-wide settings are made here, once: glibc's allocator is tuned for the commands that run
a model (:func:`~hseval.core.perf.tune_malloc`), HsevalWarnings become one line each and a
library's warnings are not shown (:func:`~hseval.core.errors.warnings_as_lines`).

What reaches the user is always one line on stderr:

- a user error (any :class:`HsevalError`, a bad argument) or a known failure of the machine (a full
  disk, a missing permission: :class:`OSError`; no memory left, with the command's own
  ``memory_advice``) is ``hseval: error: ...`` and exit code 2; every file hseval writes is
  written atomically, so the last good state is kept;
- anything else is a bug: ``hseval: internal error ...`` names the log file that holds the
  traceback, and the exit code is 1;
- a :class:`~hseval.core.errors.HsevalWarning` is ``hseval: warning: ...``, once per message; a
  library's warning (torch's, numpy's) is not shown, unless asked for with ``python -W``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from hseval.cli import dashboard, data, demo, evaluate, export, hierarchy, importing, predict, select, train
from hseval.core import __version__
from hseval.core.errors import HsevalError, first_line, warnings_as_lines, write_crash_log
from hseval.core.perf import tune_malloc

__all__ = ["main", "build_parser"]

TENSOR_COMMANDS = frozenset({"train", "train-all", "evaluate", "demo", "import", "predict"})
"""The commands that run a model, whose big tensors glibc then keeps in its heap (``evaluate
--predictions`` runs none: it reads a file a block at a time and gives the memory back)."""


class UsageError(HsevalError):
    """A command-line argument is missing or invalid."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, no usage dump; main() turns it into exit 2
        raise UsageError(f"{message} (see '{self.prog} --help')")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="hseval", description="Train, evaluate and inspect hierarchical classifiers "
                                                "(hierarchical spheres, Scieur & Kim 2021).")
    parser.add_argument("--version", action="version", version=f"hseval {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    data.register(commands, hierarchy.register(commands))
    train.register(commands)
    predict.register(commands)
    evaluate.register(commands)
    select.register(commands)
    dashboard.register(commands)
    demo.register(commands)
    importing.register(commands)
    export.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = None
    with warnings_as_lines():
        try:
            args = build_parser().parse_args(argv)
            if args.command in TENSOR_COMMANDS and not getattr(args, "predictions", None):
                tune_malloc()
            return int(args.func(args) or 0)
        except HsevalError as exc:
            print(f"hseval: error: {first_line(exc)}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print("hseval: interrupted (training keeps its last finished epoch: continue it with --resume)",
                  file=sys.stderr)
            return 130
        except BrokenPipeError:
            return 0
        except OSError as exc:  # the machine's, not hseval's: a full disk, a permission, a vanished file
            print(f"hseval: error: {os_error_line(exc)}", file=sys.stderr)
            return 2
        except MemoryError:
            print(f"hseval: error: {memory_line(args)}", file=sys.stderr)
            return 2
        except Exception as exc:  # a bug: one line for the user, the traceback for the report
            torch = sys.modules.get("torch")  # imported by the commands that run a model, if this one did
            if torch is not None and isinstance(exc, torch.OutOfMemoryError):
                print(f"hseval: error: {memory_line(args, device=True)}", file=sys.stderr)
                return 2
            log = write_crash_log(exc, argv)
            where = f"the traceback is in {log}" if log else "the traceback could not be written to a log file"
            print(f"hseval: internal error ({type(exc).__name__}: {first_line(exc, limit=300)}); this is a bug in "
                  f"hseval, {where}; please report it", file=sys.stderr)
            return 1


def memory_line(args: argparse.Namespace | None, *, device: bool = False) -> str:
    """Out of memory (the machine's, or the ``device``'s), and what the command can do about it:
    its ``memory_advice``, which names its own options."""
    advice = getattr(args, "memory_advice", None)
    return f"out of memory{' on the device' if device else ''}" + (f"; {advice}" if advice else "")


def os_error_line(exc: OSError) -> str:
    """``PATH: reason`` for an error of the file system."""
    where = exc.filename if exc.filename is not None else ""
    reason = exc.strerror or first_line(exc)
    hint = {28: "; free some space and run the command again (finished files are kept)",
            13: "; choose a folder you can write to", 30: "; choose a folder you can write to"}.get(exc.errno or 0, "")
    return f"{where}: {reason}{hint}" if where else f"{reason}{hint}"


if __name__ == "__main__":
    sys.exit(main())
