"""The arrays of ``.npz`` and ``.safetensors`` prediction files, read without holding them.

A prediction file of 100,000 classes holds gigabytes of scores; the evaluation needs them a block
of rows at a time. Each array of a file is a :class:`Member`, known from its header alone (shape
and type): a small one is loaded whole, a per-sample matrix is read in blocks of rows, in order.
An ``.npz`` member (stored, as ``np.savez`` writes it, or compressed, as ``np.savez_compressed``
does) is streamed through :mod:`zipfile`: its bytes are first read through once, so that the CRC-32
the archive recorded for it is checked before any of its values is used (a byte changed in a
compressed stream decodes to other numbers, and only the CRC says the file is damaged), then its
``.npy`` header is parsed and its rows read; a safetensors tensor is sliced
(``safe_open(...).get_slice``), the file open for one block at a time so that its memory map does
not hold the file's pages. Nothing here unpickles: an ``.npy`` header
of Python objects is refused before any data is read. :mod:`hseval.io.prediction_format` names and
checks the members.
"""

from __future__ import annotations

import contextlib
import tokenize
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hseval.core.errors import DataError

__all__ = ["Member", "npz_members", "safetensors_members", "in_memory", "write_npz"]

Fail = Callable[[Path, str], DataError]
PICKLE = "holds Python objects (a pickle), which hseval never loads; save numeric arrays only"
_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")


@dataclass(frozen=True)
class Member:
    """One array of a file: ``shape`` and ``dtype`` as it reads (numpy's), :meth:`load` for the
    whole array, :meth:`blocks` for its rows in order, ``rows`` at a time."""

    shape: tuple[int, ...]
    dtype: np.dtype
    load: Callable[[], np.ndarray]
    blocks: Callable[[int], Iterator[np.ndarray]]


def in_memory(array: np.ndarray) -> Member:
    """An array already read (a CSV's columns) as a member."""
    return Member(array.shape, array.dtype, lambda: array,
                  lambda rows: (array[lo: lo + rows] for lo in range(0, len(array), rows)))


# ====================================================================== .npz
def npz_members(path: Path, fail: Fail) -> dict[str, Member]:
    """The members of an ``.npz`` archive by name (without ``.npy``), from their headers."""
    with open(path, "rb") as fh:
        magic = fh.read(len(_NPY_MAGIC))
    if magic.startswith(_NPY_MAGIC):
        raise fail(path, "holds one array, not named arrays; save with np.savez(path, targets=..., logits=...)")
    if not magic:
        raise fail(path, "not a readable .npz archive (EOFError)")
    if not magic.startswith(_ZIP_MAGIC):  # what np.load would try to unpickle
        raise fail(path, PICKLE)
    members = {}
    with _archive(path, fail) as archive:
        for info in archive.infolist():
            if not info.filename.endswith(".npy"):
                raise fail(path, f"not a readable .npz archive (member {info.filename!r} is not an .npy array)")
            _verify(archive, info, path, fail)
            with _reading(path, fail), archive.open(info) as fh:
                shape, fortran, dtype = _npy_header(fh, path, fail)
            members[info.filename[:-4]] = _npz_member(path, info.filename, shape, fortran, dtype, fail)
    return members


def _archive(path: Path, fail: Fail) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise fail(path, f"not a readable .npz archive ({type(exc).__name__})") from None


_DAMAGED = (zipfile.BadZipFile, OSError, EOFError, zlib.error, NotImplementedError)


def _verify(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path, fail: Fail) -> None:
    """Read a member through to its end, where :mod:`zipfile` checks the CRC-32 the archive
    recorded: a damaged member is one line before any of its values is used."""
    try:
        with archive.open(info) as fh:
            while fh.read(1 << 22):
                pass
    except _DAMAGED as exc:
        member, reason = info.filename.removesuffix(".npy"), str(exc)[:80] or type(exc).__name__
        raise fail(path, f"is damaged: '{member}' does not read back as it was saved ({reason}); copy the file "
                         "again, or save it again") from None


@contextlib.contextmanager
def _reading(path: Path, fail: Fail) -> Iterator[None]:
    """Errors of a damaged archive (bad CRC, cut short, bad compressed data) as one line."""
    try:
        yield
    except _DAMAGED as exc:
        raise fail(path, f"not a readable .npz archive ({type(exc).__name__})") from None


def _npy_header(fh, path: Path, fail: Fail) -> tuple[tuple[int, ...], bool, np.dtype]:
    fmt = np.lib.format
    try:
        version = fmt.read_magic(fh)
        header = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0}.get(version)
        if header is None:
            raise ValueError(f"npy format version {version}")
        shape, fortran, dtype = header(fh)
    except (ValueError, SyntaxError, tokenize.TokenError) as exc:  # numpy parses the header as Python literals
        raise fail(path, f"not a readable .npz archive (a damaged .npy header: {str(exc)[:80]})") from None
    if dtype.hasobject:
        raise fail(path, PICKLE)
    return shape, fortran, dtype


def _npz_member(path: Path, name: str, shape: tuple[int, ...], fortran: bool, dtype: np.dtype, fail: Fail) -> Member:
    def load() -> np.ndarray:
        with _reading(path, fail), _archive(path, fail) as archive, archive.open(name) as fh:
            _npy_header(fh, path, fail)
            data = fh.read()
        count = int(np.prod(shape))
        if len(data) != count * dtype.itemsize:
            raise fail(path, f"not a readable .npz archive ('{name[:-4]}' is cut short)")
        return np.frombuffer(data, dtype).reshape(shape, order="F" if fortran else "C")

    def blocks(rows: int) -> Iterator[np.ndarray]:
        if fortran or len(shape) != 2:  # rows not contiguous: read whole
            yield from in_memory(load()).blocks(rows)
            return
        width = shape[1] * dtype.itemsize
        with _reading(path, fail), _archive(path, fail) as archive, archive.open(name) as fh:
            _npy_header(fh, path, fail)
            for lo in range(0, shape[0], rows):
                count = min(rows, shape[0] - lo)
                data = fh.read(count * width)
                if len(data) != count * width:
                    raise fail(path, f"not a readable .npz archive ('{name[:-4]}' is cut short)")
                yield np.frombuffer(data, dtype).reshape(count, shape[1])
            fh.read()  # to the end, where zipfile checks the CRC

    return Member(tuple(shape), dtype, load, blocks)


# ====================================================================== .safetensors
def safetensors_members(path: Path, fail: Fail) -> dict[str, Member]:
    """The tensors of a safetensors file by name: floating point ones read as float64, integer
    ones as int64 (a boolean or complex tensor keeps its type, for the caller to refuse)."""
    from safetensors import SafetensorError  # only for a .safetensors file: an .npz or a CSV does not load torch

    def read(use: Callable) -> object:
        from safetensors import safe_open  # (the same reason)

        try:
            with safe_open(str(path), framework="pt") as tensors:
                return use(tensors)
        except (SafetensorError, ValueError, RuntimeError, OverflowError, OSError) as exc:
            raise fail(path, f"not a readable safetensors file ({str(exc)[:80]})") from None

    layout = read(lambda t: {name: (tuple(t.get_slice(name).get_shape()), t.get_slice(name).get_dtype())
                             for name in t.keys()})
    return {name: _tensor(read, name, shape, dtype) for name, (shape, dtype) in layout.items()}


def _tensor(read: Callable, name: str, shape: tuple[int, ...], kind: str) -> Member:
    import torch  # only for a .safetensors file (see above)

    def as_numpy(tensor) -> np.ndarray:
        if tensor.is_floating_point():
            return tensor.to(torch.float64).numpy()
        if tensor.dtype == torch.bool or tensor.is_complex():
            return tensor.numpy()
        return tensor.to(torch.int64).numpy()

    def blocks(rows: int) -> Iterator[np.ndarray]:
        for lo in range(0, shape[0] if shape else 1, rows):  # the file open for one block at a time
            yield read(lambda t, lo=lo: as_numpy(t.get_slice(name)[lo: lo + rows]))

    dtype = np.dtype(np.float64 if kind.startswith(("F", "BF")) else np.int64 if kind[0] in "IU" else
                     np.bool_ if kind == "BOOL" else np.complex128)
    return Member(shape, dtype, lambda: read(lambda t: as_numpy(t.get_tensor(name))), blocks)


# ====================================================================== writing
Streamed = tuple[tuple[int, ...], type, Callable[[], Iterator[np.ndarray]]]


def write_npz(path: Path, arrays: dict[str, np.ndarray | Streamed]) -> None:
    """An ``.npz`` (stored, as ``np.savez`` writes it) of ``arrays``: each an array, or
    ``(shape, dtype, blocks)`` whose ``blocks()`` gives its rows in order, a block at a time, so
    that a file larger than the memory is written from its parts."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, array in arrays.items():
            shape, dtype, blocks = (array.shape, array.dtype, lambda a=array: iter([a])) \
                if isinstance(array, np.ndarray) else array
            dtype, written = np.dtype(dtype), 0
            with archive.open(f"{name}.npy", "w", force_zip64=True) as fh:
                np.lib.format.write_array_header_2_0(fh, {"descr": np.lib.format.dtype_to_descr(dtype),
                                                          "fortran_order": False, "shape": tuple(shape)})
                for block in blocks():
                    block = np.ascontiguousarray(block, dtype=dtype)
                    fh.write(block.data)
                    written += block.size
            if written != int(np.prod(shape)):
                raise ValueError(f"{name}: {written} values written for shape {tuple(shape)}")
