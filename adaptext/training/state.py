"""What a checkpoint keeps for a killed run to continue exactly, beside the weights and the
optimiser: the statistics of the epoch it was cut in, and the random number generators of
Python, NumPy and torch (shuffling, dropout, augmentation draw from them).

Both are stored as plain values (numbers, lists, a tensor) that the checkpoint writes without
pickle. Checkpoints written before they were named hold the statistics as a list and Python's
generator as its ``repr``; those are read as well, so that such a run still resumes.
"""
from __future__ import annotations

import ast
import dataclasses
import random
from dataclasses import dataclass

import numpy as np
import torch


@dataclass
class TrainStats:
    """What the training steps of an epoch add up, for its row of log.csv."""
    loss_sum: float = 0.0        # each batch's mean loss times its size
    correct: int = 0             # texts whose true label is predicted (single-label)
    examples: int = 0
    batches: int = 0
    labelled: int = 0            # texts with a true label: a transfer set also has texts without one

    @property
    def mean_loss(self) -> float:
        return self.loss_sum / max(self.examples, 1)

    @property
    def accuracy(self) -> float:
        return 100.0 * self.correct / max(self.labelled, 1)

    def to_checkpoint(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_checkpoint(cls, saved) -> TrainStats:
        if isinstance(saved, dict):
            return cls(**saved)
        # the list of older checkpoints: loss sum, correct, examples, batches and, once they were
        # counted apart, labelled texts (before that every text had its label)
        values = list(saved)
        return cls(*values, *[values[2]] * (5 - len(values)))


@dataclass
class RngState:
    """The state of the three random number generators a run draws from."""
    torch: torch.Tensor          # torch.get_rng_state(): bytes of the CPU generator
    numpy: dict                  # the Mersenne Twister's key and position, and its cached Gaussian
    python: dict                 # random.getstate(): version, the twister's 625 words, cached Gaussian

    @classmethod
    def capture(cls) -> RngState:
        bits = np.random.get_state(legacy=False)
        version, words, gauss_next = random.getstate()
        return cls(torch=torch.get_rng_state(),
                   numpy={"key": bits["state"]["key"].tolist(), "pos": int(bits["state"]["pos"]),
                          "has_gauss": int(bits["has_gauss"]), "gauss": float(bits["gauss"])},
                   python={"version": version, "words": list(words), "gauss_next": gauss_next})

    def restore(self) -> None:
        torch.set_rng_state(self.torch)
        n = self.numpy
        np.random.set_state(("MT19937", np.asarray(n["key"], dtype=np.uint32), n["pos"], n["has_gauss"], n["gauss"]))
        p = self.python
        random.setstate((p["version"], tuple(p["words"]), p["gauss_next"]))

    def to_checkpoint(self) -> dict:
        return {"torch": self.torch, "numpy": self.numpy, "python": self.python}

    @classmethod
    def from_checkpoint(cls, saved: dict) -> RngState:
        """From a checkpoint's resume state: ``saved["rng"]``, or the three keys of older ones."""
        if "rng" in saved:
            return cls(**saved["rng"])
        # older checkpoints: NumPy's key words then its position in one list (no cached Gaussian),
        # and Python's state as the repr of random.getstate()
        version, words, gauss_next = ast.literal_eval(saved["python_rng"])
        return cls(torch=saved["torch_rng"],
                   numpy={"key": list(saved["numpy_rng"][:-1]), "pos": int(saved["numpy_rng"][-1]),
                          "has_gauss": 0, "gauss": 0.0},
                   python={"version": version, "words": list(words), "gauss_next": gauss_next})
