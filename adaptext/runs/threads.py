"""How many CPU threads a process computes with, chosen so that two adaptext jobs on one machine
share it instead of fighting over it.

torch's default is one thread per core in every process, and each thread spins while waiting for
work: two trainings on two cores then run four spinning threads on two cores, and each runs many
times slower than half its solo speed. Two defaults prevent that: OpenMP's idle threads sleep
(``OMP_WAIT_POLICY=PASSIVE``, set in ``adaptext/__init__.py`` before torch loads OpenMP), and a
process asked for no particular number takes only the cores that other work leaves free.
``benchmarks/concurrency.py`` measures both, alone and two at once.
"""
from __future__ import annotations

import os
import statistics
import time

# the kernel's count of runnable threads at this instant is the 4th field, "running/total"
LOADAVG = "/proc/loadavg"
SAMPLES, GAP_S = 7, 0.02


def busy_elsewhere() -> float:
    """Threads other than this one that are running now: the median of a few readings of the
    kernel's runnable count, less the reading thread. The one-minute load average would lag: it
    still counts a job that ended seconds ago, and a run started just after it would take one
    thread. Where the count cannot be read, the load average stands in."""
    counts = []
    for k in range(SAMPLES):
        try:
            with open(LOADAVG) as f:
                counts.append(int(f.read().split()[3].split("/")[0]) - 1)
        except (OSError, IndexError, ValueError):
            return _load_average()
        if k + 1 < SAMPLES:
            time.sleep(GAP_S)
    return statistics.median(counts)


def _load_average() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:                                   # no load average on this platform
        return 0.0


def free_cores() -> int:
    """This process's cores less those other work keeps busy now, at least 1."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, cores - round(busy_elsewhere())))


def use_threads(threads: int = 0) -> int:
    """Set torch's CPU threads: ``threads``, or with 0 the free cores; the number set."""
    import torch
    n = threads or free_cores()
    torch.set_num_threads(n)
    return n
