"""Reading the MATLAB annotation files of the Stanford Cars and Dogs devkits (scipy.io), with
one-line errors naming the file and the variable or field that is missing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import scipy.io

from hseval.core.errors import DataError

__all__ = ["load_mat", "mat_variable", "mat_strings", "mat_ints", "struct_field"]


def load_mat(path: Path) -> dict[str, Any]:
    """The variables of a MATLAB 5 file, squeezed (a 1×N cell array becomes an (N,) object array)."""
    if not path.is_file():
        raise DataError(f"{path}: file is missing; the dataset folder is incomplete (download the devkit again)")
    try:
        return scipy.io.loadmat(path, squeeze_me=True)
    except Exception as exc:  # scipy raises many types for a damaged file; all mean the same to a user
        raise DataError(f"{path}: not a readable MATLAB file ({exc.__class__.__name__}: {exc}); the file is damaged, "
                        "download it again") from None


def mat_variable(mat: dict[str, Any], name: str, path: Path) -> np.ndarray:
    """Variable ``name`` as a 1-D array (a single value becomes length 1)."""
    if name not in mat:
        found = ", ".join(k for k in mat if not k.startswith("__")) or "none"
        raise DataError(f"{path}: no variable {name!r} (found: {found}); is this the official file?")
    return np.atleast_1d(mat[name])


def struct_field(struct: np.ndarray, name: str, path: Path, variable: str) -> np.ndarray:
    """Field ``name`` of a struct array loaded by :func:`load_mat`, as a 1-D array."""
    fields = struct.dtype.names or ()
    if name not in fields:
        raise DataError(f"{path}: {variable!r} has no field {name!r} (found: {', '.join(fields) or 'none'}); is "
                        "this the official file?")
    return np.atleast_1d(struct[name])


def mat_strings(values: np.ndarray, path: Path, what: str) -> list[str]:
    """Each element as a str (MATLAB char arrays load as str, or as arrays of them)."""
    out = []
    for value in values.tolist():
        while isinstance(value, (list, np.ndarray)) and len(value) == 1:
            value = value[0]
        if not isinstance(value, str):
            raise DataError(f"{path}: {what} should hold text, found {value!r}")
        out.append(value.strip())
    return out


def mat_ints(values: np.ndarray, path: Path, what: str) -> np.ndarray:
    """Each element as an int64 (MATLAB stores labels as doubles or small integers)."""
    try:
        ints = np.array([np.asarray(v).reshape(-1)[0] for v in values.tolist()], dtype=np.float64)
    except (TypeError, ValueError, IndexError):
        raise DataError(f"{path}: {what} should hold integer labels") from None
    bad = np.flatnonzero(~(np.isfinite(ints) & (ints == np.round(ints))))
    if len(bad):
        raise DataError(f"{path}: {what} should hold integer labels, found {ints[bad[0]]}")
    return ints.astype(np.int64)
