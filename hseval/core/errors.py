"""Error types that the command line turns into one-line messages with exit code 2.

Every error a user can cause (a bad file, a bad argument, missing data) is raised as a subclass
of :class:`HsevalError`; anything else escaping the CLI is a bug in hseval.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import sys
import tempfile
import traceback
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from hseval.core import __version__


class HsevalError(Exception):
    """Base class for errors caused by user input; the message is one actionable line."""


class HierarchyError(HsevalError, ValueError):
    """A hierarchy file or tree is malformed (cycle, two parents, gaps, unknown names...)."""


class RunFormatError(HsevalError, ValueError):
    """A run folder does not follow the run format (missing/corrupt files, wrong schema, shapes)."""


class ConfigError(HsevalError, ValueError):
    """A configuration value or command-line option is invalid."""


class DataError(HsevalError, ValueError):
    """A dataset is missing, incomplete or corrupt."""


class HsevalWarning(UserWarning):
    """Something the user should know that does not stop the command (the CLI prints it as one
    line ``hseval: warning: ...``)."""


@contextlib.contextmanager
def warnings_as_lines() -> Iterator[None]:
    """What a command shows of warnings, set once where a process starts (the CLI, a worker it
    spawns): each :class:`HsevalWarning` once, as ``hseval: warning: ...`` on stderr; a library's
    warnings (torch, numpy, scikit-learn) not at all, unless the user asked for them with Python's
    ``-W`` or ``PYTHONWARNINGS``. Restored on exit."""
    shown: set[str] = set()
    previous = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, HsevalWarning):
            text = str(message)
            if text not in shown:
                shown.add(text)
                print(f"hseval: warning: {text}", file=sys.stderr, flush=True)
            return
        previous(message, category, filename, lineno, file, line)

    with warnings.catch_warnings():
        if not sys.warnoptions:
            warnings.simplefilter("ignore")
        warnings.simplefilter("always", HsevalWarning)
        warnings.showwarning = show
        try:
            yield
        finally:
            warnings.showwarning = previous


def first_line(exc: BaseException, *, limit: int | None = None, clause: bool = False) -> str:
    """The first line of ``exc``'s message (its type's name when the message is empty), cut at the
    first ";" with ``clause`` and to ``limit`` characters: an exception as one line of a message."""
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else type(exc).__name__
    if clause:
        text = text.split(";")[0]
    return text if limit is None else text[:limit]


_EXPECTED = {"float_type": "a number", "float_parsing": "a number", "int_type": "an integer",
             "int_from_float": "an integer", "int_parsing": "an integer", "bool_type": "true or false",
             "string_type": "a string", "list_type": "a list", "dict_type": "a mapping", "model_type": "an object",
             "finite_number": "a finite number", "none_required": "null",
             "sequence_str": "a sequence, not a string"}
_BOUNDS = {"greater_than_equal": ("ge", ">="), "greater_than": ("gt", ">"), "less_than_equal": ("le", "<="),
           "less_than": ("lt", "<")}


def problem_text(problem: Mapping[str, Any]) -> tuple[str, str]:
    """(the field as ``a.b[2]``, what it must be) of one problem of a pydantic ``ValidationError``
    (an item of its ``errors()``), in hseval's words: "must be an integer", "must be >= 1"."""
    loc = problem["loc"][:-2] + ("key",) if problem["loc"][-1:] == ("[key]",) else problem["loc"]
    # a key read from a file may hold a newline: escaped, so that the message stays one line
    parts = [part if not isinstance(part, str) or part.isprintable() else repr(part)[1:-1] for part in loc]
    field = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in parts).lstrip(".")
    kind, context = problem["type"], problem.get("ctx") or {}
    if kind in _EXPECTED:
        return field, f"must be {_EXPECTED[kind]}"
    if kind == "is_instance_of":
        return field, f"must be a {context['class']}"
    if kind in _BOUNDS:
        key, sign = _BOUNDS[kind]
        bound = context[key]
        return field, f"must be {sign} {bound:g}" if isinstance(bound, float) else f"must be {sign} {bound}"
    if kind == "literal_error":
        return field, f"must be {context['expected']}"
    if kind == "string_pattern_mismatch":
        return field, f"must match {context['pattern']}"
    return field, problem["msg"].removeprefix("Value error, ").replace("Input should be", "must be")


def write_crash_log(exc: BaseException, argv: Sequence[str] | None) -> Path | None:
    """Write the traceback of ``exc`` with the command line and versions into ``$HSEVAL_LOG_DIR``, else
    the temporary folder's ``hseval-logs``; None if that fails too."""
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    folder = Path(os.environ.get("HSEVAL_LOG_DIR") or Path(tempfile.gettempdir()) / "hseval-logs")
    path = folder / f"crash-{stamp}-{os.getpid()}.log"
    text = (f"hseval {__version__}, python {sys.version.split()[0]}, {_dt.datetime.now().isoformat()}\n"
            f"command: hseval {' '.join(sys.argv[1:] if argv is None else argv)}\n\n"
            + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError:
        return None
    return path
