"""Which folders hseval may write into, replace or remove, and who is writing into one now.

Every folder hseval creates for a purpose carries a marker, ``.hseval-folder.json``, that names
its kind (:data:`KINDS`). hseval replaces or removes only folders whose marker says they are of
the kind being replaced, and writes into a folder only when it is new, empty or already of that
kind: ``hseval evaluate runs --out runs`` is refused before any work instead of replacing trained
runs by evaluations. Folders written by hseval before markers existed are recognised by holding
nothing but the files that kind of folder holds (a legacy run, an evaluation), and adopted.

A writer holds :func:`locked` on its output folder for as long as it writes there: an advisory
lock (``flock``) on ``.hseval.lock`` inside it, released by the kernel when the process ends, so a
killed writer never leaves a stale lock. A second writer is refused at once with the first one's
process id.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hseval.core import fileio
from hseval.core.errors import HsevalError

__all__ = ["MARKER", "LOCK", "KINDS", "OwnershipError", "read_marker", "kind_of", "claim", "check_claimable",
           "locked", "output_folder", "replace_folder", "remove_owned", "update_marker"]

MARKER = ".hseval-folder.json"
LOCK = ".hseval.lock"
KINDS = {
    "run": "a training run",
    "evaluations": "an evaluation folder (one sub-folder per evaluated run)",
    "evaluation": "the evaluation of one run",
    "export": "an export of an evaluation folder (hseval export)",
}

# What a folder of each kind holds besides hidden files: how folders written before markers
# existed are recognised. A sub-folder entry maps to the kind it must itself be.
_LEGACY_FILES: dict[str, frozenset[str]] = {
    "run": frozenset({"run.json", "model.safetensors", "train_state.pt", "history.csv", "tensorboard"}),
    "evaluation": frozenset({"metrics.json", "per_node.csv", "geometry.csv", "pair_angles.csv", "embeddings.npz",
                             "projections.csv", "predictions.npz"}),
    "evaluations": frozenset({"index.json", "summary.csv", "summary_grouped.csv", "superclass_accuracy.csv",
                              "superclass_accuracy.md", "report.md", "report.html"}),
}
_LEGACY_SUBFOLDERS = {"evaluations": "evaluation"}


class OwnershipError(HsevalError):
    """A folder is not hseval's to write into, replace or remove, or another process writes there."""


def read_marker(folder: str | Path) -> dict[str, Any] | None:
    """The marker of ``folder`` as a dict, or None when it has none (or an unreadable one)."""
    path = Path(folder) / MARKER
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) and data.get("kind") in KINDS else None


def _entries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))


def _legacy_kind(folder: Path, kind: str) -> bool:
    """True when ``folder`` (no marker) holds only what a ``kind`` folder of an older hseval held."""
    known = _LEGACY_FILES[kind]
    sub = _LEGACY_SUBFOLDERS.get(kind)
    found = False
    for name in _entries(folder):
        path = folder / name
        if name in known:
            found = True
        elif sub is not None and path.is_dir() and kind_of(path) == sub:
            found = True
        else:
            return False
    return found


def kind_of(folder: str | Path) -> str | None:
    """The kind of ``folder``: its marker's, else the kind whose files it holds (an older hseval's
    folder), else None (not hseval's, or empty)."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    marker = read_marker(folder)
    if marker is not None:
        return marker["kind"]
    try:
        return next((kind for kind in _LEGACY_FILES if _legacy_kind(folder, kind)), None)
    except OSError:
        return None


def check_claimable(folder: str | Path, kind: str, *, option: str = "--out") -> None:
    """Refuse, without writing anything, a ``folder`` that :func:`claim` would refuse: a file in the
    way, a folder of another kind, or a non-empty folder that hseval did not write."""
    folder = Path(folder)
    fileio.check_output_folder(folder, option=option)
    if not folder.is_dir():
        return
    found = kind_of(folder)
    if found == kind:
        return
    if found is not None:
        raise OwnershipError(f"{folder}: holds {KINDS[found]}, not {KINDS[kind]}; choose another {option}")
    try:
        entries = _entries(folder)
    except OSError as exc:
        raise OwnershipError(f"{folder}: cannot list it ({exc.strerror or exc}); choose another {option}") from None
    if entries:
        shown = ", ".join(repr(e) for e in entries[:3]) + (" ..." if len(entries) > 3 else "")
        raise OwnershipError(f"{folder}: is not empty and was not written by hseval as {KINDS[kind]} (it holds "
                             f"{shown}); choose a new or empty {option}")


def claim(folder: str | Path, kind: str, *, option: str = "--out", **details: Any) -> Path:
    """Make ``folder`` a ``kind`` folder: create it with its marker, adopt an empty folder or an
    older hseval's folder of that kind, or check that it already is one. ``details`` are stored in
    a new marker. Writing the marker is also the check that the folder is writable, before any work."""
    folder = Path(folder)
    check_claimable(folder, kind, option=option)
    if read_marker(folder) is None:
        marker = {"kind": kind, "created_by": f"hseval {_version()}",
                  "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), **details}
        fileio.write_json(folder / MARKER, marker)
    return folder


def update_marker(folder: str | Path, **details: Any) -> None:
    """Add ``details`` to the marker of ``folder`` (a folder hseval claimed)."""
    folder = Path(folder)
    marker = read_marker(folder)
    if marker is None:
        raise OwnershipError(f"{folder}: has no hseval marker; it was not claimed")
    fileio.write_json(folder / MARKER, {**marker, **details})


def _version() -> str:
    from hseval import __version__

    return __version__


_HELD: dict[Path, list] = {}  # locks this process holds: path -> [fd, depth] (re-entrant)


@contextlib.contextmanager
def locked(folder: str | Path, *, option: str = "--out") -> Iterator[Path]:
    """Hold the write lock of ``folder`` (created if needed); a second process gets a one-line
    :class:`OwnershipError` at once. Re-entrant within one process."""
    folder = Path(folder)
    key = folder.resolve()
    if key in _HELD:
        _HELD[key][1] += 1
        try:
            yield folder
        finally:
            _HELD[key][1] -= 1
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o666 & ~_umask())
    except OSError as exc:
        raise OwnershipError(f"cannot write {folder}: {exc.strerror or exc}; choose another {option}") from None
    try:
        if not _try_lock(fd):
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            raise OwnershipError(f"{folder}: another hseval process (pid {holder}) is writing into it; wait until it "
                                 f"finishes or choose another {option}")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        _HELD[key] = [fd, 1]
        try:
            yield folder
        finally:
            del _HELD[key]
    finally:
        os.close(fd)  # closing the descriptor releases the lock


@contextlib.contextmanager
def output_folder(folder: str | Path, kind: str, *, option: str = "--out", **details: Any) -> Iterator[Path]:
    """Write into ``folder`` as a ``kind`` folder: checked, locked and claimed on entry. When the
    command fails before writing anything there, the folder is left as it was found (a folder
    this command created is removed again), so a refused command leaves no trace."""
    folder = Path(folder)
    check_claimable(folder, kind, option=option)
    existed = folder.exists()
    had_marker = read_marker(folder) is not None
    had_lock = (folder / LOCK).exists()
    with locked(folder, option=option):
        try:
            claim(folder, kind, option=option, **details)
            yield folder
        except BaseException:
            _undo_claim(folder, existed=existed, had_marker=had_marker, had_lock=had_lock)
            raise


def _undo_claim(folder: Path, *, existed: bool, had_marker: bool, had_lock: bool) -> None:
    """Remove what :func:`output_folder` added to ``folder`` when nothing else was written there."""
    with contextlib.suppress(OSError):
        added = ({MARKER} if not had_marker else set()) | ({LOCK} if not had_lock else set())
        others = [p for p in folder.iterdir() if p.name not in (MARKER, LOCK)]
        if others:
            return
        for name in added:
            with contextlib.suppress(FileNotFoundError):
                (folder / name).unlink()
        if not existed:
            folder.rmdir()


def _try_lock(fd: int) -> bool:
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _require(folder: Path, kind: str, what: str) -> None:
    found = kind_of(folder)
    if found != kind:
        holds = f"holds {KINDS[found]}" if found else "was not written by hseval"
        raise OwnershipError(f"{folder}: {holds}; hseval replaces only {KINDS[kind]} it wrote, so it will not "
                             f"{what} it: move it away or choose another output folder")


def replace_folder(staging: Path, final: Path, kind: str) -> None:
    """Move the complete folder ``staging`` onto ``final``, replacing an older ``kind`` folder there
    (checked by its marker first: anything else at ``final`` is refused and kept)."""
    old = None
    if final.exists() or final.is_symlink():
        _require(final, kind, "replace")
        old = final.with_name(f".hseval-old-{final.name}-{os.getpid()}")
        final.rename(old)
    staging.rename(final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def remove_owned(folder: Path, kind: str, *, only: Callable[[Path], bool] | None = None) -> None:
    """Remove ``folder`` (or, with ``only``, the entries of it that ``only`` accepts) after checking
    that it is a ``kind`` folder."""
    if not folder.exists():
        return
    _require(folder, kind, "remove")
    if only is None:
        shutil.rmtree(folder)
        return
    for entry in folder.iterdir():
        if only(entry):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
