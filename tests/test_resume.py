"""A training run killed mid-epoch (SIGKILL) and resumed with --resume ends with the same
epoch log and the same metrics as an uninterrupted run with the same seed."""
import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adaptext.training.checkpoint import load_tree

EVERY = 15
ARGS = ["--epochs", "3", "--checkpoint-every", str(EVERY), "--no-progress", "--seed", "3", "--filters", "20",
        "--embed-dim", "40", "--max-length", "30"]


def adaptext(*args, **kw):
    return subprocess.run([sys.executable, "-m", "adaptext.cli", *args], capture_output=True, text=True, **kw)


@pytest.mark.slow
def test_killed_mid_epoch_and_resumed_matches_uninterrupted(tmp_path):
    full, killed = tmp_path / "full", tmp_path / "killed"
    r = adaptext("train", "--out", str(full), *ARGS)
    assert r.returncode == 0, r.stderr

    proc = subprocess.Popen([sys.executable, "-m", "adaptext.cli", "train", "--out", str(killed), *ARGS],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    last = killed / "checkpoints" / "last.ckpt"
    deadline = time.time() + 120
    step, before, epoch_part = 0, 0.0, 0.0
    while time.time() < deadline and proc.poll() is None:
        if last.exists():
            os.kill(proc.pid, signal.SIGSTOP)          # the run cannot move on while its checkpoint is read
            try:
                ck = load_tree(last)
                step, batches = ck["global_step"], ck["adaptext"]["batches_done"]
                before, epoch_part = ck["adaptext"]["seconds"], ck["adaptext"]["epoch_seconds"]
                # kill in the third epoch, between two step checkpoints: with another step checkpoint still
                # due in this epoch, the stopped run has not reached the epoch's end (no third log line yet)
                if ck["epoch"] == 2 and 0 < batches <= ck["adaptext"]["train_loader_len"] - EVERY:
                    break
            except Exception:
                pass
            os.kill(proc.pid, signal.SIGCONT)
        time.sleep(0.2)
    assert proc.poll() is None, "the run finished before it could be killed mid-epoch"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (killed / "metrics.json").exists()
    assert step > 0
    cols = lambda p: [line.split(",")[:5] for line in Path(p).read_text().splitlines()]
    # the epoch log is written as the run goes: the killed run's holds its first two epochs
    assert cols(killed / "log.csv") == cols(full / "log.csv")[:3]

    r = adaptext("train", "--resume", str(killed))
    assert r.returncode == 0, r.stderr
    a = json.loads((full / "metrics.json").read_text())
    b = json.loads((killed / "metrics.json").read_text())
    for split in ("dev", "test"):
        assert a[split]["accuracy"] == b[split]["accuracy"]
        assert a[split]["confusion_matrix"] == b[split]["confusion_matrix"]
    # the resumed run's time counts the killed process's seconds as well
    assert b["info"]["train_seconds"] > before > 0
    assert cols(full / "log.csv") == cols(killed / "log.csv")   # epoch, losses and dev accuracy, every epoch
    # the epoch cut by the kill counts its seconds before the kill: its rate is not its examples over the rest
    resumed_epoch = next(r for r in csv.DictReader(open(killed / "log.csv")) if r["epoch"] == "3")
    assert float(resumed_epoch["seconds"]) >= epoch_part > 0
