"""Which folders are hseval's, of what kind, and who is writing into one now.

Every folder hseval writes carries a marker, ``.hseval-folder.json``, a typed record
(:class:`Marker`) that names its kind (:data:`KINDS`), who created it and when, the files hseval
wrote there, and what the kind needs (an evaluation's source and inputs, an export's runs).
Ownership follows from the marker alone, never from the names of the files a folder holds:

- a folder without hseval's marker is the user's: hseval writes into it only when it is empty;
- a marked folder of another kind is refused;
- hseval replaces or removes only what the marker records it wrote (:func:`foreign_entries`): a
  folder that holds anything else is not replaced, and a file it did not write is not written over;
- nothing is written inside another hseval folder unless that folder's kind holds the output's
  kind (:data:`HOLDS`: a run in a folder of runs, an evaluation in an evaluation folder);
- no output is one of the command's inputs, lies inside one, or takes a name hseval keeps for
  itself (:func:`check_planned`).

A writer holds the folder's lock (:func:`locked`: filelock's on ``.hseval.lock``, an OS lock the
system releases when the process ends, so a killed writer leaves no stale lock). The transactions that
apply these rules are :mod:`hseval.io.output`'s.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import shutil
import socket
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from filelock import FileLock, Timeout
from pydantic import Field, TypeAdapter

from hseval.core import __version__, fileio
from hseval.core.errors import HsevalError
from hseval.io.records import Json, Positive, Record, Sha256, parse_record

__all__ = ["MARKER", "LOCK", "STAGING", "OLD", "KINDS", "HOLDS", "Marker", "EvaluationMarker", "ExportMarker",
           "MARKERS", "OwnershipError", "read_marker", "kind_of", "new_marker", "listing", "recorded",
           "foreign_entries", "shown", "recover", "check_inside", "check_planned", "locked", "check_unlocked"]

MARKER = ".hseval-folder.json"
LOCK = ".hseval.lock"
STAGING, OLD = ".hseval-staging-", ".hseval-old-"
KINDS = {
    "run": "a training run",
    "runs": "a folder of training runs (hseval train-all)",
    "evaluations": "an evaluation folder (one sub-folder per evaluated run)",
    "evaluation": "the evaluation of one run",
    "export": "an export of an evaluation folder (hseval export)",
    "demo": "the output of hseval demo",
}
HOLDS = {"runs": ("run",), "evaluations": ("evaluation",), "demo": ("runs", "evaluations")}
"""The kinds that may be written inside a folder of each kind."""
OURS = (MARKER, LOCK)
"""hseval's own bookkeeping files in a folder: never a user's, never an output."""


class OwnershipError(HsevalError):
    """A path is not hseval's to write, replace or remove, or another process writes there."""


# ====================================================================== the marker
class Marker(Record):
    """A folder's marker: its kind, who created it and when, and what hseval wrote there."""

    kind: Literal["run", "runs", "evaluations", "evaluation", "export", "demo"]
    created_by: str
    created_at: _dt.datetime
    files: dict[str, Sha256 | None]
    """Relative path -> SHA-256 of each file or folder hseval wrote here (a folder covers what it
    holds); None where it is rewritten in place (a run's checkpoint, a folder's index and report).
    hseval replaces or removes nothing else; the sub-folders of a folder of runs or evaluations
    carry markers of their own."""
    hashed: ClassVar[bool] = False
    """Whether every file's SHA-256 is recorded (it is checked when the file is read)."""


class RunMarker(Marker):
    kind: Literal["run"]
    imported_from: str | None = None
    """The checkpoint ``hseval import`` made the run of."""


class CollectionMarker(Marker):
    """A folder that holds other hseval folders (and files such as index.json or a report)."""

    kind: Literal["runs", "evaluations", "demo"]


class EvaluationMarker(Marker):
    kind: Literal["evaluation"]
    source: str
    """The evaluated run folder or prediction file."""
    inputs: dict[str, Json]
    """What the evaluation depends on (checksums, settings): an equal one may be reused."""
    schema_version: Positive
    files: dict[str, Sha256]
    """Name -> SHA-256 of every file written: a file changed afterwards is refused when read."""
    hashed: ClassVar[bool] = True


class ExportMarker(Marker):
    kind: Literal["export"]
    source: str
    format: str
    runs: list[str]


MARKERS: dict[str, type[Marker]] = {"run": RunMarker, "runs": CollectionMarker, "evaluations": CollectionMarker,
                                    "demo": CollectionMarker, "evaluation": EvaluationMarker, "export": ExportMarker}
ANY_MARKER = TypeAdapter(Annotated[RunMarker | CollectionMarker | EvaluationMarker | ExportMarker,
                                   Field(discriminator="kind")])
"""Every marker, told apart by its kind: what docs/schemas/folder-marker.schema.json describes."""


def read_marker(folder: str | Path, *, error: type[HsevalError] = OwnershipError) -> Marker | None:
    """The marker of ``folder``, or None when it has none; a damaged marker is one line ``error``
    naming the file and the field."""
    path = Path(folder) / MARKER
    try:
        if not path.is_file():
            return None
    except OSError:  # an unreadable folder: what it holds cannot be told, nor read
        return None
    data = fileio.read_bytes(path, what="hseval's folder marker", error=error)
    try:
        kind = json.loads(data).get("kind")
    except (ValueError, AttributeError, RecursionError):
        kind = None  # the base model says what is wrong
    return parse_record(MARKERS.get(kind, Marker), data, where=path, error=error,
                        hint="the folder's marker is damaged: restore it, or move the folder away")


def kind_of(folder: str | Path, *, error: type[HsevalError] = OwnershipError) -> str | None:
    """The kind of ``folder`` by its marker; None when it has none (not hseval's, or new)."""
    marker = read_marker(folder, error=error) if Path(folder).is_dir() else None
    return None if marker is None else marker.kind


def new_marker(kind: str, **details: Any) -> Marker:
    """A marker of ``kind`` created now by this hseval, with the kind's ``details`` (``files``: none
    unless given)."""
    now = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0)
    return MARKERS[kind].model_validate({"kind": kind, "created_by": f"hseval {__version__}", "created_at": now,
                                         "files": {}, **details})


# ====================================================================== what a folder holds
def listing(folder: Path) -> list[str]:
    """Everything in ``folder`` but hseval's own marker and lock (hidden files included)."""
    try:
        return sorted(p.name for p in folder.iterdir() if p.name not in OURS)
    except OSError as exc:
        raise OwnershipError(f"{folder}: cannot list it ({exc.strerror or exc})") from None


def recorded(rel: str, files: Collection[str]) -> bool:
    """Whether the entry ``rel`` (a relative path) is one the marker's ``files`` records: itself, a
    folder above it, or a folder that holds a recorded file."""
    parts = Path(rel).parts
    return any("/".join(parts[:k]) in files for k in range(1, len(parts) + 1)) or \
        any(f.startswith(rel + "/") for f in files)


def foreign_entries(folder: Path, marker: Marker, names: Collection[str] | None = None) -> list[str]:
    """The entries of ``folder`` hseval did not write (not :func:`recorded` by its marker, nor a
    writer's leftover); ``names``: only these top-level entries and what they hold (default: all)."""
    found = []
    tops = sorted(folder.iterdir()) if names is None else [folder / n for n in names]
    for top in tops:
        if not (top.exists() or top.is_symlink()) or top.name in OURS or \
                top.name.startswith((STAGING, OLD)) or (top.name.startswith(".") and top.name.endswith(".tmp")):
            continue
        below = sorted(top.rglob("*")) if top.is_dir() and not top.is_symlink() else []
        for path in (top, *below):
            rel = path.relative_to(folder).as_posix()
            if not recorded(rel, marker.files):
                found.append(rel)
                break  # a foreign folder is named once, not each file it holds
    return found


def shown(names: list[str]) -> str:
    """The first names of a listing, for a message."""
    return ", ".join(repr(n) for n in names[:3]) + (" ..." if len(names) > 3 else "")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def recover(parent: Path, name: str | None = None) -> None:
    """Put right what killed writers left in ``parent`` (for the entry ``name``, or every entry):
    staging folders are removed; an old folder is restored where its replacement never arrived,
    else removed. Only leftovers of processes that are gone are touched."""
    with contextlib.suppress(OSError):
        for stale in parent.glob(f"{STAGING}*") if name is None else parent.glob(f"{STAGING}{name}-*"):
            entry, _, pid = stale.name[len(STAGING):].rpartition("-")
            if pid.isdigit() and (name is None or entry == name) and not _alive(int(pid)):
                shutil.rmtree(stale, ignore_errors=True)
        for old in parent.glob(f"{OLD}*") if name is None else parent.glob(f"{OLD}{name}-*"):
            entry, _, pid = old.name[len(OLD):].rpartition("-")
            if not pid.isdigit() or (name is not None and entry != name) or _alive(int(pid)):
                continue
            if (parent / entry).exists():
                shutil.rmtree(old, ignore_errors=True)
            else:
                old.rename(parent / entry)


# ====================================================================== the lock
def _lock(folder: Path) -> FileLock:
    """The write lock of ``folder``: one per folder in this process (re-entrant, from any thread); it
    writes its holder into the lock file, which filelock's contenders leave as it is, and the file
    stays (on Windows too) for the next writer."""
    return FileLock(folder / LOCK, timeout=0, thread_local=False, is_singleton=True, preserve_lock_file=True,
                    on_acquired=_write_holder)


def _write_holder(fd: int) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)


def _acquire(lock: FileLock, folder: Path, option: str) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        lock.acquire()
    except Timeout:
        pid, host = "", ""
        with contextlib.suppress(OSError):  # released and removed meanwhile (Windows): no one to name
            pid, _, host = (folder / LOCK).read_bytes()[:256].decode("ascii", "replace").strip().partition(" ")
        holder = f"pid {pid or 'unknown'}" + (f" on {host}" if host else "")
        raise OwnershipError(f"{folder}: another hseval process ({holder}) is writing into it; wait until it "
                             f"finishes or choose another {option}") from None
    except OSError as exc:
        raise OwnershipError(f"cannot write {folder}: {exc.strerror or exc}; choose another {option}") from None


@contextlib.contextmanager
def locked(folder: str | Path, *, option: str = "--out") -> Iterator[Path]:
    """Hold the write lock of ``folder`` (created if needed); a second process gets a one-line
    :class:`OwnershipError` at once. Re-entrant within one process."""
    folder = Path(folder)
    lock = _lock(folder)
    _acquire(lock, folder, option)
    try:
        yield folder
    finally:
        lock.release()


def check_unlocked(folder: str | Path, *, option: str = "--out") -> None:
    """Refuse ``folder`` in one line naming the process when another process holds its lock (a
    command checks this before anything else about a folder, so that it names the writer whatever
    else it would refuse); creates and writes nothing."""
    folder = Path(folder)
    if (folder / LOCK).is_file() and not _lock(folder).is_locked:  # no file: a new folder, nobody to name
        _acquire(probe := FileLock(folder / LOCK, timeout=0, preserve_lock_file=True), folder, option)
        probe.release()


def check_planned(path: Path, inputs: Collection[Path], option: str, *, replaces: bool = False) -> None:
    """Refuse the output ``path`` before any work where it takes a name hseval keeps for its own
    files (a marker, a lock, a staging folder), is one of the command's ``inputs``, lies inside one
    (a run folder, an evaluation), or holds one that writing it would remove (``replaces``)."""
    if path.name in OURS or path.name.startswith((STAGING, OLD)):
        raise OwnershipError(f"{path}: {path.name!r} is the name of hseval's own bookkeeping files; choose another "
                             f"{option}")
    real = Path(os.path.realpath(path))
    for given in inputs:
        source = Path(os.path.realpath(given))
        if real == source:
            raise OwnershipError(f"{path}: is an input of this command; write the output to another {option}")
        if source in real.parents:
            raise OwnershipError(f"{path}: lies inside {given}, an input of this command; write the output outside it "
                                 f"(choose another {option})")
        if replaces and real in source.parents:
            raise OwnershipError(f"{path}: holds {given}, an input of this command, which writing the output would "
                                 f"remove; choose another {option}")


def check_inside(path: Path, kind: str | None, option: str) -> None:
    """Refuse ``path`` when it lies inside an hseval folder whose kind does not hold ``kind``
    (None: a file, which no hseval folder holds)."""
    for folder in path.parents:
        marker = read_marker(folder) if folder.is_dir() else None
        if marker is None:
            continue
        if kind is None or kind not in HOLDS.get(marker.kind, ()):
            what = "a file" if kind is None else KINDS[kind]
            raise OwnershipError(f"{path}: lies inside {folder}, which holds {KINDS[marker.kind]} that hseval "
                                 f"writes itself; write {what} outside it (choose another {option})")
        return
