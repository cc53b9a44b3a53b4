"""Atomic writes: write to a temporary name in the same folder, fsync, then rename.

A reader never sees a half-written file, and an interrupted write leaves the previous version
(or nothing) in place. Errors of the file system (full disk, no permission) become one-line
:class:`~hseval.core.errors.HsevalError` messages that name the path.

Every text file hseval reads is decoded by :func:`decode`: UTF-8, with the byte-order mark that
Windows editors write in front dropped.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hseval.core.errors import HsevalError, RunFormatError, first_line

__all__ = ["atomic_path", "write_text", "write_bytes", "write_json", "decode", "read_text", "read_json",
           "check_output_folder", "remove_stale_temporaries", "json_ready", "sha256", "verified_bytes"]


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success rename it onto ``path``."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
    except OSError as exc:
        raise HsevalError(f"cannot write {path}: {exc.strerror or exc}; choose a writable folder") from None
    tmp_path = Path(tmp)
    try:
        os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
        yield tmp_path
        with open(tmp_path, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp_path, path)
    except OSError as exc:
        raise HsevalError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()


def check_output_folder(path: str | Path, *, option: str = "--out") -> None:
    """Refuse, before any work, an output folder that cannot be created or written (a file in the
    way, a read-only place); creates nothing."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise HsevalError(f"{path}: is a file, not a folder; choose another {option}")
    existing = next(p for p in (path, *path.parents) if p.exists() or p == p.parent)
    if not existing.is_dir():
        raise HsevalError(f"{path}: cannot be created ({existing} is a file); choose another {option}")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise HsevalError(f"{path}: cannot write there ({existing} is not writable); choose another {option}")


def remove_stale_temporaries(folder: str | Path) -> None:
    """Remove the temporary files that a killed writer left in ``folder`` (``.NAME.XXXXXXXX.tmp``)."""
    folder = Path(folder)
    for stale in folder.glob(".*.tmp") if folder.is_dir() else []:
        with contextlib.suppress(OSError):
            if stale.is_file():
                stale.unlink()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text(path: str | Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8", newline="\n")


def write_bytes(path: str | Path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def write_json(path: str | Path, obj: Any) -> None:
    """Strict JSON (no NaN/Infinity tokens: they become null), indented, atomic."""
    write_text(path, json.dumps(json_ready(obj), indent=2, allow_nan=False) + "\n")


def read_bytes(path: str | Path, *, what: str, error: type[HsevalError] = HsevalError, missing: str | None = None,
               max_bytes: int | None = None) -> bytes:
    """A file's bytes, or one line ``error`` naming the file: missing (``missing``, default
    "<what> not found"), a folder, larger than ``max_bytes``, or unreadable."""
    path = Path(path)
    try:
        if path.is_dir():
            raise error(f"{path}: is a folder, expected {what}")
        if max_bytes is not None and (size := path.stat().st_size) > max_bytes:
            raise error(f"{path}: {size} bytes is too large for {what} (limit {max_bytes})")
        return path.read_bytes()
    except FileNotFoundError:
        raise error(f"{path}: {missing or what + ' not found'}") from None
    except OSError as exc:
        raise error(f"{path}: cannot read {what}: {exc.strerror or exc}") from None


def decode(data: bytes, *, errors: str = "strict") -> str:
    """The text of a file's bytes: UTF-8, a leading byte-order mark dropped (the one decoding of
    every text file hseval reads); ``UnicodeDecodeError`` for other bytes (with ``errors="strict"``)."""
    return data.decode("utf-8-sig", errors)


def read_text(path: str | Path, *, what: str, error: type[HsevalError] = HsevalError,
              missing: str = "not found", damaged: str = "is not UTF-8 text") -> str:
    """A UTF-8 text file (:func:`decode`), or one line ``error`` naming the file (``what`` names it
    for the user; ``missing`` and ``damaged`` end the messages for a missing and a non-text file)."""
    data = read_bytes(path, what=what, error=error, missing=f"{what} {missing}")
    try:
        return decode(data)
    except UnicodeDecodeError:
        raise error(f"{path}: {what} {damaged}") from None


def read_json(path: str | Path, *, what: str = "JSON file") -> Any:
    """Parse a JSON file, with a one-line error naming the file and line on failure."""
    path = Path(path)
    text = read_text(path, what=what, error=RunFormatError)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise RunFormatError(f"{path}, line {exc.lineno}: {what} is not valid JSON ({exc.msg})") from None
    except (ValueError, RecursionError) as exc:  # a number too long to convert, nesting too deep
        raise RunFormatError(f"{path}: {what} is not valid JSON ({first_line(exc, clause=True)})") from None


def sha256(source: bytes | Path, *, error: type[HsevalError] = HsevalError) -> str:
    """The SHA-256 (hex) of ``source``: bytes, or the content of the file at that path, read in
    chunks (one line ``error`` naming the file when it cannot be read)."""
    digest = hashlib.sha256()
    if isinstance(source, bytes):
        digest.update(source)
        return digest.hexdigest()
    try:
        with open(source, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    except OSError as exc:
        raise error(f"{source}: cannot read ({exc.strerror or exc})") from None
    return digest.hexdigest()


def verified_bytes(path: Path, recorded: str | None, *, what: str, error: type[HsevalError], missing: str,
                   changed: str) -> bytes:
    """The bytes of a file hseval sealed, whose SHA-256 its writer ``recorded`` (an evaluation's
    marker, a training state): one line ``error`` naming the file when it is ``missing``, unreadable,
    or ``changed`` since."""
    data = read_bytes(path, what=what, error=error, missing=missing)
    if sha256(data) != recorded:
        raise error(f"{path}: {changed}")
    return data


def json_ready(obj: Any) -> Any:
    """``obj`` as what strict JSON holds and reads back: non-finite floats become None, tuples
    lists, keys strings (so ``json.loads(json.dumps(json_ready(x))) == json_ready(x)``)."""
    if isinstance(obj, float):
        return obj if obj == obj and abs(obj) != float("inf") else None
    if isinstance(obj, dict):
        return {str(k): json_ready(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_ready(v) for v in obj]
    return obj
