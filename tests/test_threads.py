"""Thread defaults that let two jobs share a machine: threads 0 takes the cores that other work
leaves free now, and OpenMP's idle threads sleep unless the user chose a wait policy."""
from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest
import torch

from adaptext.runs import threads


def loadavg_file(tmp_path, running: int, average: float = 0.0):
    path = tmp_path / "loadavg"
    path.write_text(f"{average:.2f} {average:.2f} {average:.2f} {running}/85 4242\n")
    return str(path)


@pytest.mark.parametrize("running,cores,expected", [(1, 2, 2), (2, 2, 1), (3, 2, 1), (9, 2, 1),
                                                    (4, 8, 5), (1, 1, 1)])
def test_threads_zero_takes_the_cores_other_work_leaves_free(monkeypatch, tmp_path, running, cores, expected):
    # "running" counts the thread reading it: 1 means nothing else runs
    monkeypatch.setattr(threads, "LOADAVG", loadavg_file(tmp_path, running))
    monkeypatch.setattr(threads, "GAP_S", 0.0)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: set(range(cores)))
    assert threads.free_cores() == expected
    before = torch.get_num_threads()
    try:
        assert threads.use_threads(0) == expected and torch.get_num_threads() == expected
        assert threads.use_threads(3) == 3 and torch.get_num_threads() == 3      # asked for: taken as asked
    finally:
        torch.set_num_threads(before)


def test_a_job_that_just_ended_does_not_count(monkeypatch, tmp_path):
    # the minute's load average still holds a finished job (2.0 on 2 cores); nothing runs now
    monkeypatch.setattr(threads, "LOADAVG", loadavg_file(tmp_path, 1, average=2.0))
    monkeypatch.setattr(os, "getloadavg", lambda: (2.0, 2.0, 2.0))
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: {0, 1})
    assert threads.free_cores() == 2


def test_a_burst_between_readings_is_outvoted(monkeypatch):
    readings = iter(["0 0 0 1/9 1", "0 0 0 4/9 1", "0 0 0 1/9 1", "0 0 0 1/9 1", "0 0 0 3/9 1",
                     "0 0 0 1/9 1", "0 0 0 1/9 1"])
    monkeypatch.setattr("builtins.open", lambda *a, **k: io.StringIO(next(readings)))
    monkeypatch.setattr(threads, "GAP_S", 0.0)
    assert threads.busy_elsewhere() == 0


@pytest.mark.parametrize("load,expected", [(0.4, 2), (1.2, 1), (7.0, 1)])
def test_without_the_kernels_count_the_load_average_stands_in(monkeypatch, tmp_path, load, expected):
    monkeypatch.setattr(threads, "LOADAVG", str(tmp_path / "absent"))
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: {0, 1})
    assert threads.free_cores() == expected


@pytest.mark.parametrize("given,seen", [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_openmp_threads_sleep_when_idle_unless_the_user_chose(given, seen):
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if given:
        env["OMP_WAIT_POLICY"] = given
    code = "import adaptext, os; print(os.environ['OMP_WAIT_POLICY'])"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == seen
