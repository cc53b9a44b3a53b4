"""Progress bars that only draw on a terminal.

A tqdm bar redraws itself with carriage returns many times a second: on a terminal that is a
bar with a rate and an ETA, but written to a file or a pipe (a CI log, ``nohup``, ``| tee``) it is
thousands of lines of noise. :func:`bar` therefore draws only when stderr is a terminal; elsewhere
the commands' own one line per epoch, run or stage is the record.
"""

from __future__ import annotations

import sys
from typing import Any

from tqdm import tqdm

__all__ = ["bar"]


def bar(*, enabled: bool = True, **options: Any):
    """A ``tqdm`` bar (``options`` as tqdm's), disabled unless ``enabled`` and stderr is a terminal."""
    try:
        terminal = sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stream
        terminal = False
    return tqdm(disable=not (enabled and terminal), dynamic_ncols=True, **options)
