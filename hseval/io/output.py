"""The output transactions: every hseval command writes through :class:`OutputFolder` (a folder)
or :class:`OutputFile` (a file, such as a hierarchy), with the rules of :mod:`hseval.io.folders`.

A command makes them before any work, from every path it will write (a folder's files, a file's
companions) and its inputs; that is where every path is checked, writing nothing, so a refused
command has done no work and a command never fails for its output after writing. A command that
writes several sub-folders (an evaluation per run) plans each of them (:meth:`OutputFolder.plan`)
before the first is written. Entered, a transaction locks and claims its output and records in the
folder's marker what it is about to write; left, it commits; left by an exception, it undoes what
it did, so a refused or failed command leaves no trace and never loses the previous complete
output. A replaced folder is written into a hidden sibling, ``.hseval-staging-NAME-PID``, that
takes its place when complete; the old one is moved to ``.hseval-old-NAME-PID`` and removed. What a
killed writer leaves is put right by the next one (:func:`hseval.io.folders.recover`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Collection
from pathlib import Path
from typing import Any

from hseval.core import fileio
from hseval.core.errors import HsevalError
from hseval.io.folders import (
    HOLDS,
    KINDS,
    LOCK,
    MARKER,
    MARKERS,
    OLD,
    OURS,
    STAGING,
    OwnershipError,
    check_inside,
    check_planned,
    check_unlocked,
    foreign_entries,
    listing,
    locked,
    new_marker,
    read_marker,
    recorded,
    recover,
    shown,
)
from hseval.io.records import write_record

__all__ = ["OutputFolder", "OutputFile"]


def _settled(names: list[str]) -> list[str]:
    """``names`` without the temporary files of a writer, which come and go."""
    return [n for n in names if not (n.startswith(".") and n.endswith(".tmp"))]


class OutputFolder:
    """Write the folder ``path`` as a ``kind`` folder: one transaction per command.

    Construction checks, writing nothing (but putting right what a killed hseval left there):
    the path can be a folder there, it is new, empty or hseval's of this kind, it does not lie
    inside another hseval folder (``parent``: the folder of this command it is a sub-folder of,
    checked already; its name is none of the parent's ``writes``) and it is neither one of the
    paths the command ``reads`` nor inside one. Entering locks it (unless ``lock`` is False: a parent
    holds the lock) and claims it; :attr:`target` is where the command writes.

    ``writes``: the top-level names the command writes in place; one that is there and that the
    marker does not record (the user's ``report.md`` in an evaluation folder) is refused, the
    others are recorded on entering, and those it did not write are dropped from the record on
    leaving. ``replace``: the output replaces what hseval wrote there before, only after checking
    the folder holds nothing else and no input. ``staged``: write into a hidden sibling that takes
    the folder's place on success (default: when replacing a folder that holds something), so the
    previous complete folder stays until the new one is complete; every file it holds is recorded
    then. On failure the staging is removed, and a folder this command only claimed is left as it
    was found; what a command wrote in place stays (a killed or failed training keeps its
    checkpoint for ``--resume``). ``details`` go into the marker (the kind's fields)."""

    def __init__(self, path: str | Path, kind: str, *, option: str = "--out", replace: bool = False,
                 staged: bool | None = None, lock: bool = True, parent: OutputFolder | None = None,
                 writes: Collection[str] = (), reads: Collection[str | Path] = (), **details: Any) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown folder kind {kind!r}")
        self.path, self.kind, self.option = Path(os.path.abspath(path)), kind, option
        self.lock, self.details, self.staging, self.writes = lock, details, None, tuple(writes)
        fileio.check_output_folder(self.path, option=option)
        check_unlocked(self.path, option=option)  # a folder another process writes: named first, whatever it holds
        check_planned(self.path, reads, option, replaces=replace)
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
        elif self.path.parent != parent.path or self.path.name in parent.writes:
            raise OwnershipError(f"{self.path}: {KINDS[parent.kind]} holds {KINDS[kind]} in a sub-folder of its own, "
                                 f"named apart from its files ({', '.join(parent.writes) or 'none'}); choose another "
                                 "name")
        visible = [e for e in entries if not e.startswith(".")]
        if self.marker is not None and entries and (replace or self.writes):
            foreign = foreign_entries(self.path, self.marker, None if replace else self.writes)
            if foreign:
                what = "replace the folder" if replace else "write over it"
                raise OwnershipError(f"{self.path}: holds {shown(foreign)}, which hseval did not write there, so it "
                                     f"will not {what}; move {'it' if len(foreign) == 1 else 'them'} out or choose "
                                     f"another {option}")
        self.staged = (replace and bool(visible)) if staged is None else staged
        self._found = (self.path.exists(), entries, self.marker, (self.path / LOCK).exists())
        self._stack: contextlib.ExitStack | None = None
        self._held = self._claimed = False  # the lock taken, the marker written, by this transaction
        self._planned: dict[str, OutputFolder] = {}

    @property
    def target(self) -> Path:
        """Where the command writes: the staging folder while the folder is replaced, else the folder."""
        return self.staging or self.path

    def plan(self, name: str, kind: str, **options: Any) -> OutputFolder:
        """The sub-folder ``name`` this command will write (as :class:`OutputFolder` ``options``,
        under this folder's lock), checked now, writing nothing. A command that writes several
        sub-folders plans each before its first write, so that the last one's refusal comes before
        any work (the user's file in the last run's evaluation); :meth:`planned` hands it back."""
        self._planned[name] = OutputFolder(self.path / name, kind, option=self.option, lock=False, parent=self,
                                           **options)
        if self.path.is_dir():  # checking it put right what a killed writer left of it here: a change of ours,
            self._found = (self._found[0], listing(self.path), *self._found[2:])  # not another process's
        return self._planned[name]

    def planned(self, name: str) -> OutputFolder:
        """The sub-folder ``name`` planned by :meth:`plan`; a sub-folder is written only once planned."""
        if name not in self._planned:  # a bug: every output is checked before any work
            raise RuntimeError(f"{self.path / name} written without being planned")
        return self._planned[name]

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
                planned = {name: None for name in self.writes}
                if self.marker is None:
                    self._mkdir(self.path)
                    self._claimed = True
                    write_record(self.path / MARKER, new_marker(self.kind, **self.details, files=planned))
                elif not all(recorded(name, self.marker.files) for name in self.writes):
                    self._record({**planned, **self.marker.files})
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
            self._settle()
            self._close()

    def _mkdir(self, path: Path) -> None:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OwnershipError(f"cannot write {path}: {exc.strerror or exc}; choose another {self.option}") from None

    def _record(self, files: dict[str, str | None]) -> None:
        self.marker = self.marker.model_copy(update={"files": files})
        write_record(self.path / MARKER, self.marker)

    def _settle(self) -> None:
        """Drop from the marker's record the planned names this command did not write."""
        marker = read_marker(self.path) if self.path.is_dir() else None
        if marker is not None and self.writes:
            kept = {k: v for k, v in marker.files.items() if k not in self.writes or (self.path / k).exists()}
            if kept != marker.files:
                self.marker = marker
                self._record(kept)

    def _commit(self) -> None:
        """Record the marker (with every file written) in the staging folder, then put it in the folder's place."""
        staging = self.staging
        hashed = MARKERS[self.kind].hashed
        files = {p.relative_to(staging).as_posix(): fileio.sha256(p) if hashed else None
                 for p in sorted(staging.rglob("*")) if p.is_file() and p.name not in OURS}
        write_record(staging / MARKER, new_marker(self.kind, **self.details, files=files))
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
        with contextlib.suppress(OSError, HsevalError):  # the error that led here is the one to report
            self._settle()
        self._close()
        if not existed:
            with contextlib.suppress(OSError):
                self.path.rmdir()


class OutputFile:
    """Write the file ``path`` (and its ``companions``, the files a format writes beside it, such as
    a names sidecar): checked before any work, written into a hidden staging folder beside it,
    moved into place when every file is complete; nothing is left on failure.

    Refused before any work, for ``path`` and each companion: a folder there, a place that cannot
    be written, a name hseval keeps for itself, a path inside a folder hseval writes itself
    (``RUN/run.json`` would break the run), and one of the paths the command ``reads`` or a path
    inside one (an input run that has lost its marker)."""

    def __init__(self, path: str | Path, *, option: str = "--out", companions: Collection[str | Path] = (),
                 reads: Collection[str | Path] = ()) -> None:
        self.path, self.option = Path(os.path.abspath(path)), option
        for planned in (self.path, *(Path(os.path.abspath(c)) for c in companions)):
            if planned.is_dir():
                raise OwnershipError(f"{planned}: is a folder; {option} names the file to write" if planned == self.path
                                     else f"{planned}: is a folder, where hseval writes a file beside "
                                          f"{self.path.name}; choose another {option}")
            fileio.check_output_folder(planned.parent, option=option)
            check_planned(planned, reads, option)
            check_inside(planned, None, option)
        self._planned = [*(self.path.parent / Path(c).name for c in companions), self.path]  # the file itself last
        self.staging: Path | None = None
        self._made: list[Path] = []

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
            written = [self.staging / p.name for p in self._planned if (self.staging / p.name).exists()]
            unplanned = [n for n in _settled(os.listdir(self.staging)) if self.path.parent / n not in self._planned]
            if unplanned:  # a bug: every file is checked before any work
                raise RuntimeError(f"{shown(unplanned)} written beside {self.path} without being planned")
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
