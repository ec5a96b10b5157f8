"""Thread defaults that let two jobs share a machine: threads 0 takes the cores that other work
leaves free now, and two jobs started together see each other."""
from __future__ import annotations

import io
import os
import subprocess
import sys
import time

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


def test_openmp_keeps_its_own_wait_policy():
    # sleeping threads would halve a lone job's speed; the thread count is what shares the machine
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    code = "import adaptext, os; print(os.environ.get('OMP_WAIT_POLICY', 'unset'))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "unset"


def test_two_jobs_reading_at_the_same_instant_count_each_other():
    # each reader keeps running while it reads, so the other counts it: both take one core of two
    # where sleeping readers would each see an idle machine and both take every core
    code = ("import sys; from adaptext.runs import threads\n"
            "print('ready', flush=True); sys.stdin.readline()\n"
            "print(threads.busy_elsewhere(), flush=True)")
    procs = [subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    assert [p.stdout.readline().strip() for p in procs] == ["ready", "ready"]
    for p in procs:                # the second starts half a gap later: sleeping readers would then
        p.stdin.write("go\n")     # read while the other sleeps, and each would see an idle machine
        p.stdin.flush()
        time.sleep(threads.GAP_S / 2)
    seen = [float(p.communicate(timeout=60)[0]) for p in procs]
    assert all(n >= 1 for n in seen), seen
