"""Prediction throughput of the candidates, measured so that a decision taken on it holds on a
shared machine: after the candidates train, one pass in this process loads every finished run
and the teacher, and times them interleaved over several rounds (the order rotated each round)
on the same texts, at one torch thread, by the process's CPU time; each model's figure is the
median of its rounds, and the floor compares ratios to the teacher measured in the same pass.

Why CPU time: another job on the machine takes wall time from a pass, not CPU time, as long as
the pass runs on one thread (a pass with more threads than the machine has free cores waits for
them, and that wait is spent CPU time on some and not on others). Why the process's CPU time
(``time.process_time``) rather than the thread's (``time.thread_time``): with torch at one
intra-op thread the matrix products run on the calling thread, but any work a library hands to a
thread of its own (torch's inter-op pool, a tokenizer's pool) belongs to the prediction too, and
only the process's clock counts it; nothing else runs in this process during the pass. What
load can still move is what two jobs share below the scheduler (caches, memory bandwidth, a
core's other hyperthread): interleaving spreads that over every model alike.
"""
from __future__ import annotations

import statistics
import time

SPEED_TEXTS = 1000      # the dev texts timed (fewer when dev is smaller)
BATCH = 64
ROUNDS = 5              # passes over the texts per model, interleaved; the median counts
THREADS = 1             # torch threads of the pass: one, so that CPU time is the cost of a prediction


def measure(models: dict, texts: list, rounds: int = ROUNDS) -> dict:
    """{name: sentences per CPU second} of ``models`` ({name: an object with ``predict(texts,
    batch_size)``}), each predicting the same ``texts`` in ``rounds`` interleaved rounds after a
    warm-up batch; round r starts at the r-th model, so that no model always follows the same one
    (a model's first call after another's can pay for the caches the other filled)."""
    names = list(models)
    for name in names:
        models[name].predict(texts[:BATCH], batch_size=BATCH)   # first calls build caches (the LSTM's projections)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            started = time.process_time()
            models[name].predict(texts, batch_size=BATCH)
            seconds[name].append(time.process_time() - started)
    return {name: len(texts) / max(statistics.median(s), 1e-9) for name, s in seconds.items()}


def measure_runs(runs: dict, texts: list, rounds: int = ROUNDS) -> dict:
    """{name: sentences/s} of the run directories ``runs`` ({name: path}), loaded here (as a user
    predicts with them), over up to ``SPEED_TEXTS`` of ``texts`` (strings, or
    ``{"text", "pair"}`` dicts for pairs), at ``THREADS`` torch thread. The torch threads of the
    process are restored after."""
    import torch

    from ..api import Classifier
    texts = list(texts[:SPEED_TEXTS])
    if not texts or not runs:
        return {}
    before = torch.get_num_threads()
    torch.set_num_threads(THREADS)
    try:
        return measure({name: Classifier.load(path) for name, path in runs.items()}, texts, rounds)
    finally:
        torch.set_num_threads(before)


def size_mb(run_dir) -> float:
    """The run's weights on disk (model.safetensors), in MB (10^6 bytes)."""
    from pathlib import Path
    path = Path(run_dir) / "model.safetensors"
    return path.stat().st_size / 1e6 if path.is_file() else 0.0
