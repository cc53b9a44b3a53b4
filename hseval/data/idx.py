"""Reader of the IDX format of MNIST and Fashion-MNIST (optionally gzip-compressed)."""

from __future__ import annotations

import gzip
import math
import struct
import zlib
from pathlib import Path

import numpy as np

from hseval.core.errors import DataError

_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: np.dtype(">i2"), 0x0C: np.dtype(">i4"), 0x0D: np.dtype(">f4"),
           0x0E: np.dtype(">f8")}


def read_idx(path: str | Path) -> np.ndarray:
    """The array stored in an IDX file; a clear :class:`DataError` for any damage."""
    path = Path(path)
    try:
        raw = path.read_bytes()
        data = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except (OSError, EOFError, zlib.error) as exc:  # BadGzipFile is an OSError
        raise DataError(f"{path}: cannot decompress ({exc.__class__.__name__}: {exc}); the file is damaged, "
                        "download it again") from None
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _DTYPES or data[3] == 0:
        raise DataError(f"{path}: not an IDX file (bad magic number)")
    dtype, ndim = np.dtype(_DTYPES[data[2]]), data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise DataError(f"{path}: truncated IDX header")
    shape = struct.unpack(f">{ndim}I", data[4:header])
    expected = header + math.prod(shape) * dtype.itemsize  # exact: np.prod wraps around
    if len(data) != expected:
        kind = "truncated" if len(data) < expected else "longer than its header says"
        raise DataError(f"{path}: {kind} IDX file (expected {expected} bytes for shape {shape}, found "
                        f"{len(data)}); download it again")
    try:
        array = np.frombuffer(data, dtype=dtype, offset=header).reshape(shape)
    except ValueError:  # an empty array whose other dimensions overflow numpy's size limit
        raise DataError(f"{path}: IDX shape {shape} is too large; the file is damaged, download it again") from None
    return array.astype(dtype.newbyteorder("="))
