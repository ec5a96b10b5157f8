"""How many CPU threads a process computes with, chosen so that two adaptext jobs on one machine
share it instead of fighting over it.

torch's default is one thread per core in every process, and OpenMP's threads spin a while
before they sleep: two trainings on two cores then run four threads on two cores, and each runs
many times slower than half its solo speed. A process asked for no particular number takes only
the cores that other work leaves free when it starts, so the second of two jobs takes one thread
and the machine holds three: measured in ``benchmarks/concurrency.py``, two jobs then take about
as long as if OpenMP's threads slept at once (``OMP_WAIT_POLICY=PASSIVE``), which would make a
job alone take a third longer (a thread that sleeps wakes slowly, between every two operations).
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
    thread. Where the count cannot be read, the load average stands in.

    Between readings this thread keeps running instead of sleeping: a job started at the same
    instant then counts this one (a sleeping reader is invisible to it), and two jobs started
    together take a thread each instead of both taking every core."""
    counts = []
    for k in range(SAMPLES):
        try:
            with open(LOADAVG) as f:
                counts.append(int(f.read().split()[3].split("/")[0]) - 1)
        except (OSError, IndexError, ValueError):
            return _load_average()
        if k + 1 < SAMPLES:
            _run_for(GAP_S)
    return statistics.median(counts)


def _run_for(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


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
