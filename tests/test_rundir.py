"""A run directory's state is read in one place (``runs/rundir.py``): each state built on disk is
read as itself, every command acts on it by that reading (train refuses all but new, resume
takes a resumable run, ``trained`` reads back, resumes or trains), and no other module decides
a run's state from its files."""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from adaptext.cli import main
from adaptext.errors import DataError
from adaptext.runs.files import writer_lock
from adaptext.runs.rundir import RunDir, RunState
from adaptext.training.run import trained

from test_hardening import kim_run, one_line_error, questions  # noqa: F401  (fixtures)

PACKAGE = Path(__file__).resolve().parent.parent / "adaptext"


@pytest.fixture
def states(kim_run, tmp_path):
    """One run directory in each state, made from a tiny finished run."""
    made = {RunState.NEW: tmp_path / "new"}
    for state in (RunState.FINISHED, RunState.RESUMABLE, RunState.FAILED, RunState.RUNNING):
        shutil.copytree(kim_run, tmp_path / state)
        made[state] = tmp_path / state
    (made[RunState.RESUMABLE] / "metrics.json").unlink()               # cut short
    (made[RunState.FAILED] / "metrics.json").unlink()
    (made[RunState.FAILED] / "error.txt").write_text("Traceback ...")
    (made[RunState.RUNNING] / "metrics.json").unlink()
    return made


def test_each_state_is_read_as_itself(states):
    with writer_lock(states[RunState.RUNNING]):
        assert {s: RunDir(p).state for s, p in states.items()} == {s: s for s in states}
        assert f"process {os.getpid()}" in RunDir(states[RunState.RUNNING]).holder()
    assert RunDir(states[RunState.RUNNING]).state is RunState.RESUMABLE        # its writer has gone
    assert not RunDir(states[RunState.NEW]).started
    assert all(RunDir(p).started for s, p in states.items() if s is not RunState.NEW)


def test_train_writes_only_a_new_directory(states, capsys):
    with writer_lock(states[RunState.RUNNING]):
        for state, path in states.items():
            if state is RunState.NEW:
                continue
            assert main(["train", "--out", str(path), "--epochs", "1"]) == 2
            line = one_line_error(capsys, str(path))
            assert ("is writing this run directory now" in line) == (state is RunState.RUNNING)
            assert ("use --resume" in line) == (state is not RunState.RUNNING)


def test_trained_reads_back_resumes_or_trains_by_the_state(states, monkeypatch):
    calls = []
    monkeypatch.setattr("adaptext.training.run.train_run", lambda opts, log, callbacks=(): calls.append(opts) or {})
    finished = json.loads((states[RunState.FINISHED] / "metrics.json").read_text())
    assert trained(RunDir(states[RunState.FINISHED]), {"epochs": 1}) == finished and not calls
    trained(RunDir(states[RunState.RESUMABLE]), {"epochs": 3, "lr": 0.5})
    trained(RunDir(states[RunState.FAILED]), {"epochs": 3})
    trained(RunDir(states[RunState.NEW]), {"epochs": 3, "lr": 0.5})
    assert calls == [{"epochs": 3, "resume": str(states[RunState.RESUMABLE])},     # lr may not change on resume
                     {"epochs": 3, "resume": str(states[RunState.FAILED])},
                     {"epochs": 3, "lr": 0.5, "out": str(states[RunState.NEW])}]
    assert not (states[RunState.FAILED] / "error.txt").exists()           # a new attempt clears the old failure
    with writer_lock(states[RunState.RUNNING]), pytest.raises(DataError, match="is writing this run directory"):
        trained(RunDir(states[RunState.RUNNING]), {})


def test_a_failure_is_kept_with_its_traceback(tmp_path):
    try:
        raise ValueError("a bad value")
    except ValueError as e:
        said = RunDir(tmp_path / "run").record_failure(e)
    assert said == "ValueError: a bad value"
    assert RunDir(tmp_path / "run").state is RunState.FAILED
    assert "Traceback" in (tmp_path / "run" / "error.txt").read_text()


def test_no_other_module_reads_a_run_s_state_from_its_files():
    """metrics.json, checkpoints/last.ckpt and error.txt are named for their state only in
    rundir.py (files.py and the writers of those files name them to write them)."""
    reads_state = re.compile(r"""["'](metrics\.json|last\.ckpt|error\.txt)["']\)?\s*\)?\.(exists|is_file)\(""")
    found = [f"{p.relative_to(PACKAGE)}:{i}" for p in PACKAGE.rglob("*.py") if p.name != "rundir.py"
             for i, line in enumerate(p.read_text().splitlines(), 1) if reads_state.search(line)]
    assert not found, found
