"""How many CPU threads a process computes with, chosen so that two adaptext jobs on one machine
share it instead of fighting over it.

torch's default is one thread per core in every process, and each thread spins while waiting for
work: two trainings on two cores then run four spinning threads on two cores, and each runs many
times slower than half its solo speed. Two defaults prevent that: OpenMP's idle threads sleep
(``OMP_WAIT_POLICY=PASSIVE``, set in ``adaptext/__init__.py`` before torch loads OpenMP), and a
process asked for no particular number takes only the cores the machine's load leaves free.
``benchmarks/concurrency.py`` measures both, alone and two at once.
"""
from __future__ import annotations

import os


def free_cores() -> int:
    """The cores not busy with other work: this process's cores less the last minute's load
    (the runnable processes averaged by the kernel), at least 1."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        load = os.getloadavg()[0]
    except OSError:                                   # no load average on this platform
        load = 0.0
    return max(1, min(cores, cores - round(load)))


def use_threads(threads: int = 0) -> int:
    """Set torch's CPU threads: ``threads``, or with 0 the free cores; the number set."""
    import torch
    n = threads or free_cores()
    torch.set_num_threads(n)
    return n
