"""The figures of README.md that a script measures, written by that script between markers.

A block is the text between ``<!-- NAME:start -->`` and ``<!-- NAME:end -->``; it can sit inside a
sentence (an inline figure) or span lines (a table). Every script that measures a README figure
calls :func:`write_block` with the text and :func:`stamp`'s clause (machine, versions, date, the
command that wrote it), so no figure of the README is typed by hand and each says where and when
it was measured. ``tests/test_readme_figures.py`` checks that every block has a writer and a stamp.

No torch here: ``bench/metrics.py`` runs where torch is not installed.
"""

from __future__ import annotations

import datetime
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
sys.path.insert(0, str(ROOT))

from hseval.core import fileio  # noqa: E402  (atomic writes; numpy and the standard library only)
from hseval.core.perf import cpu_model  # noqa: E402

__all__ = ["README", "block_names", "read_block", "write_block", "stamp", "cpu_model"]

_BLOCK = re.compile(r"<!-- (?P<name>[a-z0-9-]+):start -->(?P<body>.*?)<!-- (?P=name):end -->", re.S)


def block_names(text: str) -> list[str]:
    """The names of the blocks of a README text, in order."""
    return [m.group("name") for m in _BLOCK.finditer(text)]


def read_block(name: str, path: Path = README) -> str:
    """The text of block ``name`` (without its markers)."""
    for m in _BLOCK.finditer(path.read_text(encoding="utf-8")):
        if m.group("name") == name:
            return m.group("body")
    raise KeyError(f"{path}: no block '{name}' (<!-- {name}:start --> … <!-- {name}:end -->)")


def write_block(name: str, body: str, path: Path = README) -> None:
    """Replace the text of block ``name`` in ``path`` by ``body`` (atomically; the rest is kept byte
    for byte). A block that spans lines keeps its markers on lines of their own."""
    text = path.read_text(encoding="utf-8")
    matches = [m for m in _BLOCK.finditer(text) if m.group("name") == name]
    if len(matches) != 1:
        raise KeyError(f"{path}: {len(matches)} blocks named '{name}', expected one")
    m = matches[0]
    if m.group("body").startswith("\n"):  # a multi-line block
        body = "\n" + body.strip("\n") + "\n"
    start, end = m.span("body")
    fileio.write_text(path, text[:start] + body + text[end:])
    print(f"{path.name}: block '{name}' updated", file=sys.stderr)


def stamp(command: str, *, device: str | None = None, threads: int | None = None,
          versions: dict[str, str] | None = None) -> str:
    """Where and when a figure was measured and how to measure it again, as a clause for a sentence or
    parentheses, e.g. ``measured by `python bench/evaluate.py --readme` on AMD EPYC (2 threads), torch
    2.14.1, 2026-11-26``."""
    where = device or cpu_model()
    if threads:
        where += f" ({threads} threads)"
    extra = "".join(f", {k} {v}" for k, v in (versions or {}).items())
    return f"measured by `{command}` on {where}{extra}, {datetime.date.today().isoformat()}"
