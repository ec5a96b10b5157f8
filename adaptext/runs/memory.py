"""The process's memory: what it holds now and at its peak, and keeping it from creeping up
while batches of different lengths come and go."""
from __future__ import annotations

import ctypes
import os
import sys

M_MMAP_THRESHOLD = -3
STEADY_THRESHOLD = 4 << 20


def steady_allocator() -> bool:
    """Fix glibc's mmap threshold (True where it was set).

    glibc raises the threshold each time a large block is freed, after which the activations of
    variable-length batches are carved from the heap and fragment it: kim_cnn on IMDB-length
    reviews grew from 1.4 to 3.5 GB over 600 steps. With a fixed threshold every block this large
    is mapped on its own and handed back to the system when freed (see benchmarks/scale.py)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return bool(ctypes.CDLL("libc.so.6").mallopt(M_MMAP_THRESHOLD, STEADY_THRESHOLD))
    except (OSError, AttributeError):          # not glibc (musl): its allocator returns memory itself
        return False


def memory_mb() -> dict:
    """Resident memory now (Linux) and at the peak, in MB."""
    import resource
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1024 if sys.platform != "darwin" else 1024 ** 2)
    try:
        with open("/proc/self/statm") as f:
            now = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20
    except OSError:
        now = peak
    return {"rss_mb": round(now, 1), "peak_rss_mb": round(peak, 1)}
