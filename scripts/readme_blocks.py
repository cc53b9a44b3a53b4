"""The figures of README.md that a script measures, written by that script between markers.

A block is the text between ``<!-- NAME:start -->`` and ``<!-- NAME:end -->``; it can sit inside a
sentence (an inline figure) or span lines (a table). Every script that measures a README figure
calls :func:`write_block` with the text and :func:`stamp`'s clause (machine, versions, date, the
load it saw, the command that wrote it), so no figure of the README is typed by hand and each says
where and when it was measured. A figure that depends on the machine being quiet is measured
after :func:`require_quiet`, which refuses a busy machine, and :func:`stamp` checks again when
the figure is written and refuses to date a figure that was not measured so.
``tests/test_readme_figures.py`` checks that every block has a writer and a stamp.

No torch here: ``bench/metrics.py`` runs where torch is not installed.
"""

from __future__ import annotations

import datetime
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
sys.path.insert(0, str(ROOT))

from hseval.core import fileio  # noqa: E402  (atomic writes; numpy and the standard library only)
from hseval.core.perf import cpu_model  # noqa: E402

__all__ = ["README", "block_names", "read_block", "write_block", "stamp", "cpu_model", "require_quiet", "busy"]

QUIET_LOAD = 0.3
"""A README figure is measured only while the load average (1 minute) is below this per core."""
_BUSY = ("hseval", "pytest")
_quiet_loads: list[float] = []  # the loads seen by the quiet checks that passed in this process

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


def busy() -> str | None:
    """Why this machine is too busy to measure a README figure, or None when it is quiet: the load
    average over the last minute is below :data:`QUIET_LOAD` per core, and no other process runs
    hseval or pytest (this process and its parents aside)."""
    return _other_work() or _load()


def _load() -> str | None:
    cores = os.cpu_count() or 1
    load = os.getloadavg()[0]
    if load >= QUIET_LOAD * cores:
        return f"load average {load:.2f} on {cores} cores (a README figure needs below {QUIET_LOAD * cores:.2f})"
    return None


def _other_work() -> str | None:
    others = _processes_running(_BUSY)
    if others:
        pid, command = others[0]
        return f"another process runs {next(w for w in _BUSY if w in command)} (pid {pid}: {command[:80]})"
    return None


def _processes_running(words: tuple[str, ...]) -> list[tuple[int, str]]:
    """(pid, command line) of every other process whose command line holds one of ``words``; this
    process and its parents (the shell or the script that started it) are not others."""
    own, pid = set(), os.getpid()
    while pid > 1:
        own.add(pid)
        pid = _parent(pid)
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in own:
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # ended meanwhile, or not ours to read
            continue
        if any(word in command for word in words):
            found.append((int(entry.name), command))
    return found


def _parent(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[1])  # the command name in (...) may hold spaces


def require_quiet(what: str) -> None:
    """Call before measuring a README figure: refuse (exit 1, saying why) when :func:`busy` says the
    machine is busy. :func:`stamp` checks again when the figure is written, so a figure measured
    while other work shared the cores never reaches README."""
    _check(what, "before")


SETTLE_SECONDS = 240
"""After a measurement, how long the load average may take to fall back below :data:`QUIET_LOAD`
per core: the one-minute average still holds the measurement's own work (two busy cores take
about 90 s to decay below 0.6 on their own); work of another process keeps it up."""


def _check(what: str, moment: str) -> None:
    reason = busy()
    if reason and moment == "after" and _other_work() is None:  # the measurement's own load decaying
        deadline = time.monotonic() + SETTLE_SECONDS
        while reason and time.monotonic() < deadline:
            time.sleep(5)
            reason = busy()
    if reason:
        raise SystemExit(f"{what}: the machine is busy {moment} the measurement ({reason}); "
                         "README.md is left as it is: measure again on a quiet machine")
    _quiet_loads.append(os.getloadavg()[0])


def stamp(command: str, *, device: str | None = None, threads: int | None = None,
          versions: dict[str, str] | None = None) -> str:
    """Where and when a figure was measured and how to measure it again, as a clause for a sentence or
    parentheses, e.g. ``measured by `python bench/evaluate.py --readme` on AMD EPYC (2 threads), torch
    2.14.1, load 0.12, 2026-11-26``. Only a figure measured after :func:`require_quiet` is dated,
    and only when the machine is still quiet now; the load is the highest that the checks saw."""
    if not _quiet_loads:
        raise SystemExit(f"{command}: call require_quiet() before measuring a README figure; "
                         "README.md is left as it is")
    _check(command, "after")
    where = device or cpu_model()
    if threads:
        where += f" ({threads} thread{'s' if threads > 1 else ''})"
    extra = "".join(f", {k} {v}" for k, v in (versions or {}).items())
    load = max(_quiet_loads)
    return f"measured by `{command}` on {where}{extra}, load {load:.2f}, {datetime.date.today().isoformat()}"
