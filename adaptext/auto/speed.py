"""Prediction throughput of a candidate's run, measured as a user would predict with it: the run
loaded from its directory, ``predict`` over the data's own dev texts in batches of 64."""
from __future__ import annotations

import os
import time

SPEED_TEXTS = 1000      # the dev texts timed (fewer when dev is smaller)
REPEATS = 3             # timed passes; the best counts (the others met a busy machine)


def sentences_per_s(run_dir, texts: list, threads: int | None = None, repeats: int = REPEATS) -> float:
    """Texts per second of ``adaptext.load(run_dir).predict(texts, batch_size=64)`` over up to
    1,000 of ``texts`` (strings, or ``{"text", "pair"}`` dicts for pairs), the best of
    ``repeats`` passes after a warm-up batch, with ``threads`` torch threads (default: one per
    core of the machine, as a service predicting alone would)."""
    import torch

    from .. import load
    texts = list(texts[:SPEED_TEXTS])
    if not texts:
        return 0.0
    torch.set_num_threads(threads or os.cpu_count() or 1)
    clf = load(run_dir)
    clf.predict(texts[:64], batch_size=64)           # first calls build caches (the LSTM's projections)
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        clf.predict(texts, batch_size=64)
        best = min(best, time.perf_counter() - started)
    return len(texts) / max(best, 1e-9)


def size_mb(run_dir) -> float:
    """The run's weights on disk (model.safetensors), in MB (10^6 bytes)."""
    from pathlib import Path
    path = Path(run_dir) / "model.safetensors"
    return path.stat().st_size / 1e6 if path.is_file() else 0.0
