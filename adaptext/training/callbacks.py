"""The run's own Lightning callbacks: checkpoints inside an epoch, memory kept flat, and a log of
the loss and memory every N steps."""
from __future__ import annotations

import time
from pathlib import Path

from lightning.pytorch.callbacks import Callback

from ..memory import MemoryGuard, memory_mb


class StepCheckpoint(Callback):
    """Checkpoint every N training steps inside an epoch (a killed run loses at most N steps);
    the end of an epoch is checkpointed by ModelCheckpoint."""

    def __init__(self, path, every: int):
        self.path, self.every = str(path), every

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if (batch_idx + 1) % self.every == 0 and batch_idx + 1 < trainer.num_training_batches:
            trainer.save_checkpoint(self.path)


class Trim(Callback):
    """Keeps the process's memory from creeping up over the steps (see ``MemoryGuard``)."""

    def __init__(self):
        self.guard = MemoryGuard()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.guard.check()


class StepLog(Callback):
    """Every N training steps, a row of steps.csv: the step, its loss, the seconds since the
    process started training and the process's resident memory (MB) now and at its peak, so
    memory growing during an epoch is seen, not guessed."""

    def __init__(self, path: Path, every: int):
        self.path, self.every, self.started = Path(path), every, time.perf_counter()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        step = trainer.global_step
        if step % self.every or not trainer.is_global_zero:
            return
        loss = outputs["loss"] if isinstance(outputs, dict) else outputs
        row = {"step": step, "epoch": trainer.current_epoch + 1, "loss": round(float(loss), 6),
               "seconds": round(time.perf_counter() - self.started, 2), **memory_mb()}
        new = not self.path.exists()
        with open(self.path, "a", encoding="utf-8") as f:
            if new:
                f.write(",".join(row) + "\n")
            f.write(",".join(str(v) for v in row.values()) + "\n")
