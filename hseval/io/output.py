"""The output transactions: every hseval command writes through :class:`OutputFolder` (a folder)
or :class:`OutputFile` (a file, such as a hierarchy), with the rules of :mod:`hseval.io.folders`.

Each is checked when it is made, before any work and writing nothing; entered, it locks and claims
its output; left, it commits; left by an exception, it undoes what it did, so a refused or failed
command leaves no trace and never loses the previous complete output. A replaced folder is written
into a hidden sibling, ``.hseval-staging-NAME-PID``, that takes its place when complete; the old
one is moved to ``.hseval-old-NAME-PID`` and removed. What a killed writer leaves is put right by
the next one (:func:`hseval.io.folders.recover`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Collection
from pathlib import Path
from typing import Any

from hseval.core import fileio
from hseval.io.folders import (
    HOLDS,
    KINDS,
    LOCK,
    MARKER,
    MARKERS,
    OLD,
    STAGING,
    OwnershipError,
    check_inside,
    foreign_entries,
    listing,
    locked,
    new_marker,
    read_marker,
    recover,
    shown,
)
from hseval.io.records import write_record

__all__ = ["OutputFolder", "OutputFile"]

_OURS = (MARKER, LOCK)


def _settled(names: list[str]) -> list[str]:
    """``names`` without the temporary files of a writer, which come and go."""
    return [n for n in names if not (n.startswith(".") and n.endswith(".tmp"))]


class OutputFolder:
    """Write the folder ``path`` as a ``kind`` folder: one transaction per command.

    Construction checks, writing nothing (but putting right what a killed hseval left there):
    the path can be a folder there, it is new, empty or hseval's of this kind, and it does not
    lie inside another hseval folder (``parent``: the folder of this command it lies in, checked
    already). Entering locks it (unless ``lock`` is False: a parent holds the lock) and claims it;
    :attr:`target` is where the command writes.

    ``replace``: the output replaces what hseval wrote there before, only after checking the
    folder holds nothing else (``own``: the top-level names its format writes, for kinds whose
    marker does not list ``files``). ``staged``: write into a hidden sibling that takes the
    folder's place on success (default: when replacing a folder that holds something), so the
    previous complete folder stays until the new one is complete. On failure the staging is
    removed, and a folder this command only claimed is left as it was found; what a command
    wrote in place stays (a killed or failed training keeps its checkpoint for ``--resume``).
    ``details`` go into the marker (the kind's fields; an export's and an evaluation's ``files``
    are recorded when they are committed)."""

    def __init__(self, path: str | Path, kind: str, *, option: str = "--out", replace: bool = False,
                 staged: bool | None = None, lock: bool = True, parent: OutputFolder | None = None,
                 own: Collection[str] = (), **details: Any) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown folder kind {kind!r}")
        self.path, self.kind, self.option = Path(os.path.abspath(path)), kind, option
        self.lock, self.details, self.staging = lock, details, None
        fileio.check_output_folder(self.path, option=option)
        recover(self.path.parent, self.path.name)  # a killed replacement: the previous folder is put back
        self.marker = read_marker(self.path) if self.path.is_dir() else None
        entries = listing(self.path) if self.path.is_dir() else []
        if self.marker is None and entries:
            raise OwnershipError(f"{self.path}: is not empty and was not written by hseval as {KINDS[kind]} (it "
                                 f"holds {shown(entries)}); choose a new or empty {option}")
        if self.marker is not None and self.marker.kind != kind:
            raise OwnershipError(f"{self.path}: holds {KINDS[self.marker.kind]}, not {KINDS[kind]}; choose another "
                                 f"{option}")
        if parent is None:
            check_inside(self.path, kind, option)
        elif kind not in HOLDS.get(parent.kind, ()):
            raise OwnershipError(f"{self.path}: {KINDS[parent.kind]} holds no {KINDS[kind]}")
        visible = [e for e in entries if not e.startswith(".")]
        if replace and self.marker is not None and entries:
            foreign = foreign_entries(self.path, self.marker, own)
            if foreign:
                raise OwnershipError(f"{self.path}: holds {shown(foreign)}, which hseval did not write there, so it "
                                     f"will not replace the folder; move {'it' if len(foreign) == 1 else 'them'} out "
                                     f"or choose another {option}")
        self.staged = (replace and bool(visible)) if staged is None else staged
        self._found = (self.path.exists(), entries, self.marker, (self.path / LOCK).exists())
        self._stack: contextlib.ExitStack | None = None
        self._held = self._claimed = False  # the lock taken, the marker written, by this transaction

    @property
    def target(self) -> Path:
        """Where the command writes: the staging folder while the folder is replaced, else the folder."""
        return self.staging or self.path

    def __enter__(self) -> OutputFolder:
        _, entries, marker, _ = self._found
        self._stack = contextlib.ExitStack()
        try:
            if self.lock:
                self._stack.enter_context(locked(self.path, option=self.option))
                self._held = True
            now = (listing(self.path), read_marker(self.path)) if self.path.is_dir() else ([], None)
            if _settled(now[0]) != _settled(entries) or now[1] != marker:
                raise OwnershipError(f"{self.path}: changed since hseval checked it (another process wrote there); "
                                     "run the command again")
            if self.staged:
                self.staging = self.path.parent / f"{STAGING}{self.path.name}-{os.getpid()}"
                self._mkdir(self.staging)
            else:
                if self.path.is_dir():
                    recover(self.path)
                    fileio.remove_stale_temporaries(self.path)
                if self.marker is None:
                    self._mkdir(self.path)
                    self._claimed = True
                    write_record(self.path / MARKER, new_marker(self.kind, **self.details))
        except BaseException:
            self._undo()
            raise
        return self

    def __exit__(self, kind, exc, tb) -> None:
        if exc is None and self.staging is not None:
            try:
                self._commit()
            except BaseException:
                self._undo()
                raise
        elif exc is not None:
            self._undo()
        else:
            self._close()

    def _mkdir(self, path: Path) -> None:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OwnershipError(f"cannot write {path}: {exc.strerror or exc}; choose another {self.option}") from None

    def _commit(self) -> None:
        """Record the marker in the staging folder, then put it in the folder's place."""
        staging = self.staging
        details = dict(self.details)
        if "files" in MARKERS[self.kind].model_fields:
            details["files"] = {str(p.relative_to(staging)): fileio.sha256(p) for p in sorted(staging.rglob("*"))
                                if p.is_file() and p.name not in _OURS}
        write_record(staging / MARKER, new_marker(self.kind, **details))
        old = None
        try:
            if self.path.exists():
                old = self.path.parent / f"{OLD}{self.path.name}-{os.getpid()}"
                self.path.rename(old)
            staging.rename(self.path)
        except OSError as exc:
            if old is not None and not self.path.exists():
                old.rename(self.path)
            raise OwnershipError(f"cannot write {self.path}: {exc.strerror or exc}") from None
        self.staging = None
        self._close()
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)

    def _close(self) -> None:
        if self._stack is not None:
            self._stack.close()
            self._stack = None
        self._held = self._claimed = False

    def _undo(self) -> None:
        """Leave the folder as it was found, except what the command wrote in place."""
        existed, entries, _, had_lock = self._found
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
            self.staging = None
        with contextlib.suppress(OSError):
            written = [e for e in listing(self.path) if e not in entries] if self.path.is_dir() else []
            if not written:
                for name, ours in ((MARKER, self._claimed), (LOCK, self._held and not had_lock)):
                    if ours:
                        with contextlib.suppress(FileNotFoundError):
                            (self.path / name).unlink()
        self._close()
        if not existed:
            with contextlib.suppress(OSError):
                self.path.rmdir()


class OutputFile:
    """Write the file ``path`` (and the files a format writes beside it, such as a names sidecar):
    checked before any work, written into a hidden staging folder beside it, moved into place
    when every file is complete; nothing is left on failure.

    Refused before any work: a folder at ``path``, a place that cannot be written, a path inside
    a folder hseval writes itself (a run, an evaluation...: ``RUN/run.json`` would break the run)
    and one of the command's ``inputs``."""

    def __init__(self, path: str | Path, *, option: str = "--out", inputs: Collection[str | Path] = ()) -> None:
        self.path, self.option = Path(os.path.abspath(path)), option
        if self.path.is_dir():
            raise OwnershipError(f"{self.path}: is a folder; {option} names the file to write")
        fileio.check_output_folder(self.path.parent, option=option)
        check_inside(self.path, None, option)
        self._inputs = {Path(p).resolve() for p in inputs}
        self._refuse_input(self.path)
        self.staging: Path | None = None
        self._made: list[Path] = []

    def _refuse_input(self, path: Path) -> None:
        if path.resolve() in self._inputs:
            raise OwnershipError(f"{path}: is an input of this command; write the output to another {self.option}")

    def __enter__(self) -> Path:
        """The path to write the file to (in the staging folder, with the file's name)."""
        self._made = [p for p in (self.path.parent, *self.path.parent.parents) if not p.exists()]
        self.staging = self.path.parent / f"{STAGING}{self.path.name}-{os.getpid()}"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            recover(self.path.parent, self.path.name)
            self.staging.mkdir()
        except OSError as exc:
            self._undo()
            raise OwnershipError(f"cannot write {self.path}: {exc.strerror or exc}; choose another "
                                 f"{self.option}") from None
        return self.staging / self.path.name

    def __exit__(self, kind, exc, tb) -> None:
        if exc is not None:
            self._undo()
            return
        try:
            written = sorted(p for p in self.staging.iterdir() if not p.name.startswith("."))
            for path in written:
                target = self.path.parent / path.name
                self._refuse_input(target)
                if target.is_dir():
                    raise OwnershipError(f"{target}: is a folder, where hseval writes a file beside {self.path.name}; "
                                         f"choose another {self.option}")
            for path in written:
                os.replace(path, self.path.parent / path.name)
        except OSError as exc:
            raise OwnershipError(f"cannot write {self.path}: {exc.strerror or exc}") from None
        finally:
            self._undo()

    def _undo(self) -> None:
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
        for folder in self._made:  # the folders this command created for the file, deepest first
            with contextlib.suppress(OSError):
                folder.rmdir()
