"""Process-wide performance settings that are not part of any model.

:func:`tune_malloc`: glibc serves every allocation above ``M_MMAP_THRESHOLD`` (at most 32 MiB
with its dynamic threshold) with a fresh ``mmap`` and returns it with ``munmap`` on free. A CPU
training step allocates several such blocks (a 20,000-class layer's gradient is 40 MB), so every
step pays the kernel to fault each of their pages in again, which can cost as much as the
arithmetic. Raising the thresholds keeps freed blocks in the heap for the next step. It changes
the whole process, so only the command line calls it, once, for the commands that run a model.

:func:`cpu_model`: the CPU's name, which every measured figure (the demo's, the benchmarks') carries.
:func:`available_cores`: the CPUs this process may run on, which its threads and loader processes share.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
import sys
import time
from pathlib import Path

__all__ = ["tune_malloc", "cpu_model", "available_cores"]

# mallopt parameters from glibc's <malloc.h>
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


def tune_malloc(mmap_threshold: int = 1 << 30, trim_threshold: int = 1 << 30) -> bool:
    """Keep big blocks in glibc's heap (no mmap/munmap, no page faults on reuse).

    Blocks up to ``mmap_threshold`` bytes come from the heap, and up to ``trim_threshold`` bytes of
    free memory at its top stay mapped. The price: memory freed by the process is not returned to
    the system (its peak stays resident). Returns True when applied; a no-op returning False where
    the C library is not glibc (macOS, Windows, musl).
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
        libc.gnu_get_libc_version  # glibc only  # noqa: B018
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    # mallopt takes a C int; it returns 0 where glibc refuses the value (then nothing changed)
    ok = mallopt(_M_MMAP_THRESHOLD, min(mmap_threshold, 2**31 - 1))
    ok &= mallopt(_M_TRIM_THRESHOLD, min(trim_threshold, 2**31 - 1))
    return bool(ok)


def cpu_model() -> str:
    """The CPU's model name from ``/proc/cpuinfo`` (Linux), else what :mod:`platform` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def spare_cores(*, interval: float = 0.1) -> int:
    """The CPUs this process may use that other work is not using now: :func:`available_cores`
    less the CPUs busy over the next ``interval`` seconds (``/proc/stat``; at least 1). Threads
    beyond it wait on each other: a computation whose threads meet at every step (t-SNE's) slows
    by many times on a busy machine. Not the load average: a minute's average still counts work
    that has just ended (a training that came before)."""
    def times() -> tuple[int, int] | None:
        try:
            fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        except (OSError, ValueError):
            return None
        return sum(fields), fields[3] + (fields[4] if len(fields) > 4 else 0)  # all, idle + iowait

    before = times()
    if before is None:  # not Linux: nothing says what else runs
        return available_cores()
    time.sleep(interval)
    after = times()
    total, idle = after[0] - before[0], after[1] - before[1]
    busy = (total - idle) / total * (os.cpu_count() or 1) if total > 0 else 0.0
    return max(1, available_cores() - int(busy + 0.5))


def available_cores() -> int:
    """The CPUs this process may run on: its affinity (``taskset``, a Slurm or container
    allocation), which can be fewer than the machine's ``os.cpu_count()``; at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS, Windows
        return max(1, os.cpu_count() or 1)
