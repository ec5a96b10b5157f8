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

from adaptext.config import RunConfig
from adaptext.training.checkpoint import load_tree

EVERY = 15
ARGS = ["--epochs", "3", "--checkpoint-every", str(EVERY), "--no-progress", "--seed", "3", "--filters", "20",
        "--embed-dim", "40", "--max-length", "30", "--lr-schedule", "linear", "--warmup", "0.1"]  # a schedule too


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


# ----------------------------------------------------------------------- the resume state
class _Sampler:
    """Where a resumed run starts."""
    resumed_at = None

    def resume(self, epoch: int, batch: int) -> None:
        self.resumed_at = (epoch, batch)


class _Loader:
    """A training loader as the module sees it: its length, and its batch sampler."""

    def __init__(self, batches: int = 10):
        self.batches, self.batch_sampler = batches, _Sampler()

    def __len__(self):
        return self.batches


def _module(loader=None):
    from types import SimpleNamespace

    import torch
    from adaptext.training.module import ClassifierModule
    return ClassifierModule(torch.nn.Linear(2, 2), RunConfig(),
                            SimpleNamespace(multilabel=False), loader or _Loader(), None)


def _draws() -> list:
    """The next draws of every generator a run uses; Gaussians too, which cache half a pair."""
    import random

    import numpy as np
    import torch
    return [random.random(), random.gauss(0, 1), np.random.rand(3).tolist(), np.random.normal(size=3).tolist(),
            torch.rand(3).tolist(), torch.randn(3).tolist()]


def _resumed_from(checkpoint: dict, path) -> tuple:
    """(a fresh module, its loader) resumed from ``checkpoint`` as written to ``path`` and read
    back, the random generators moved elsewhere in between."""
    import random

    import numpy as np
    import torch
    from adaptext.training.checkpoint import load_tree, save_tree
    save_tree(checkpoint, path)
    random.seed(99), np.random.seed(99), torch.manual_seed(99)
    loader = _Loader(10)
    resumed = _module(loader)
    resumed.on_load_checkpoint(load_tree(path))
    resumed.on_train_start()
    return resumed, loader


def test_a_checkpoint_restores_every_random_generator_exactly(tmp_path):
    """Saved through a checkpoint file and restored, Python's, NumPy's and torch's generators
    draw what they would have drawn, cached Gaussians included; the epoch's statistics keep
    their values by name."""
    import random

    import numpy as np
    import torch
    from adaptext.training.state import TrainStats
    random.seed(3), np.random.seed(3), torch.manual_seed(3)
    random.gauss(0, 1), np.random.normal()                      # each generator now holds a cached Gaussian
    saving = _module(_Loader(10))
    saving._batches_done, saving._stats = 4, TrainStats(1.5, 30, 40, 4, 35)
    checkpoint: dict = {}
    saving.on_save_checkpoint(checkpoint)
    expected = _draws()
    resumed, loader = _resumed_from(checkpoint, tmp_path / "last.ckpt")
    assert _draws() == expected
    assert loader.batch_sampler.resumed_at == (0, 4) and resumed._stats == TrainStats(1.5, 30, 40, 4, 35)
    assert isinstance(checkpoint["adaptext"]["rng"]["python"]["words"], list)      # no repr to parse back


def test_a_checkpoint_written_before_the_resume_state_was_named_still_resumes(tmp_path):
    """Older checkpoints hold Python's generator as its repr, NumPy's as its key and position in
    one list, and the epoch's statistics as a list (four numbers before labelled texts were
    counted apart)."""
    import random

    import numpy as np
    import torch
    from adaptext.training.state import TrainStats
    random.seed(5), np.random.seed(5), torch.manual_seed(5)
    random.gauss(0, 1)
    old = {"epoch": 1, "batches_done": 3, "train_loader_len": 10, "torch_rng": torch.get_rng_state(),
           "numpy_rng": np.random.get_state()[1].tolist() + [int(np.random.get_state()[2])],
           "python_rng": repr(random.getstate()), "train_stats": [2.0, 7, 12, 3], "epoch_seconds": 1.5,
           "epoch_rows": [{"epoch": 1}], "seconds": 9.0}
    expected = _draws()
    resumed, loader = _resumed_from({"adaptext": old}, tmp_path / "old.ckpt")
    assert _draws() == expected
    assert resumed._stats == TrainStats(loss_sum=2.0, correct=7, examples=12, batches=3, labelled=12)
    assert loader.batch_sampler.resumed_at == (1, 3)
    assert resumed.seconds_before == 9.0 and resumed.epoch_rows == [{"epoch": 1}]
