"""Loading a pickle that can only build plain data (the CIFAR python format), never run code.

A pickle names the callables it wants and the unpickler imports them; ``pickle.load`` on a
planted file can therefore run anything (``os.system``...). :func:`load_pickle` admits only the
names that the format needs: numpy's array reconstruction (``_reconstruct``, ``ndarray``,
``dtype``, under numpy 1's ``numpy.core`` and numpy 2's ``numpy._core`` names) and
``_codecs.encode``, which Python 3 writes for bytes in protocol-2 pickles. Every other name is a
:class:`DataError`, before anything is called.
"""

from __future__ import annotations

import codecs
import io
import pickle
from pathlib import Path
from typing import Any

import numpy as np

from hseval.core.errors import DataError

__all__ = ["load_pickle", "ALLOWED"]


_RECONSTRUCT = np.zeros(1).__reduce__()[0]  # numpy's own _reconstruct, whatever its module is today
ALLOWED: dict[tuple[str, str], Any] = {
    ("_codecs", "encode"): codecs.encode, ("numpy", "ndarray"): np.ndarray, ("numpy", "dtype"): np.dtype,
    **{(module, "_reconstruct"): _RECONSTRUCT for module in ("numpy.core.multiarray", "numpy._core.multiarray")}}


class _RestrictedUnpickler(pickle.Unpickler):
    def __init__(self, file: io.BufferedIOBase, path: Path) -> None:
        # latin1 turns Python 2 byte strings (the official files' keys, names and array data) into
        # str, and numpy reads array data given as latin1 str, as torchvision's loader relies on
        super().__init__(file, encoding="latin1")
        self.path = path

    def find_class(self, module: str, name: str) -> Any:
        try:
            return ALLOWED[(module, name)]
        except KeyError:
            raise DataError(f"{self.path}: refused to load: the pickle asks for {module}.{name}, which the CIFAR "
                            "format never uses (a foreign or tampered file); download the dataset again") from None


def load_pickle(path: str | Path) -> Any:
    """The object stored in the pickle ``path``, built only from plain data and numpy arrays."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            return _RestrictedUnpickler(fh, path).load()
    except DataError:
        raise
    except FileNotFoundError:
        raise DataError(f"{path}: file is missing; the dataset folder is incomplete") from None
    except Exception as exc:  # any failure to parse means a damaged file
        reason = " ".join(str(exc).split())[:200]  # one line: some pickle errors span two
        raise DataError(f"{path}: not a readable pickle ({exc.__class__.__name__}: {reason}); the file is damaged, "
                        "download it again") from None
