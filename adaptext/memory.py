"""The process's memory: what it holds now and at its peak, and keeping it from creeping up
while batches of different lengths come and go."""
from __future__ import annotations

import ctypes
import functools
import os
import sys
from typing import Callable


class MemoryGuard:
    """Hands freed heap memory back to the system when the process has grown by ``slack`` since
    it last did (glibc's ``malloc_trim``; True from ``check`` where it trimmed).

    glibc raises its mmap threshold each time a large block is freed, after which the
    activations of variable-length batches are carved from the heap and fragment it: kim_cnn on
    IMDB-length reviews grew from 1.4 to 3.5 GB over 600 steps. A fixed low threshold stops that
    but maps every activation on its own (twice the step time, measured); trimming only when
    memory has grown costs a few milliseconds now and then (see benchmarks/scale.py)."""

    def __init__(self, slack: float = 0.05) -> None:
        self.slack = slack
        self.level: float | None = None
        self.trim = _malloc_trim()

    def check(self) -> bool:
        if self.trim is None:
            return False
        now = resident_mb()
        if self.level is None or now <= self.level * (1 + self.slack):
            self.level = now if self.level is None else self.level
            return False
        self.trim(0)
        self.level = resident_mb()
        return True


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, looked up once (loading a library builds a class each time)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):          # not glibc (musl): its allocator returns memory itself
        return None


def resident_mb() -> float:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20
    except OSError:
        return 0.0


def memory_mb() -> dict[str, float]:
    """Resident memory now (Linux) and at the peak, in MB."""
    import resource
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1024 if sys.platform != "darwin" else 1024 ** 2)
    return {"rss_mb": round(resident_mb() or peak, 1), "peak_rss_mb": round(peak, 1)}


def total_memory() -> int | None:
    """The machine's physical memory in bytes (None where the system does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def human_bytes(n: float) -> str:
    """1536 -> '1.5 KiB', 1.2e11 -> '111.8 GiB'."""
    units, k = ("B", "KiB", "MiB", "GiB", "TiB"), 0
    while n >= 1024 and k < len(units) - 1:
        n, k = n / 1024, k + 1
    return f"{n:.0f} B" if k == 0 else f"{n:.1f} {units[k]}"
