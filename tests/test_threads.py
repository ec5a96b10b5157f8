"""Thread defaults that let two jobs share a machine: threads 0 takes the cores the load leaves
free, and OpenMP's idle threads sleep unless the user chose a wait policy."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from adaptext.runs import threads


@pytest.mark.parametrize("load,cores,expected", [(0.0, 2, 2), (0.4, 2, 2), (1.2, 2, 1), (7.0, 2, 1),
                                                 (2.6, 8, 5), (0.0, 1, 1)])
def test_threads_zero_takes_the_cores_the_load_leaves_free(monkeypatch, load, cores, expected):
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: set(range(cores)))
    assert threads.free_cores() == expected
    before = torch.get_num_threads()
    try:
        assert threads.use_threads(0) == expected and torch.get_num_threads() == expected
        assert threads.use_threads(3) == 3 and torch.get_num_threads() == 3      # asked for: taken as asked
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("given,seen", [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_openmp_threads_sleep_when_idle_unless_the_user_chose(given, seen):
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if given:
        env["OMP_WAIT_POLICY"] = given
    code = "import adaptext, os; print(os.environ['OMP_WAIT_POLICY'])"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == seen
