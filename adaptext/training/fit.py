"""One run from its splits: prepare the data -> build the model -> train it (best dev epoch) ->
evaluate it on dev and test -> save the run directory."""
from __future__ import annotations

import shutil
import time
from pathlib import Path


from ..data.datasets import Splits
from ..runs.threads import use_threads
from .engine import fit, quiet_engine
from .outputs import evaluate, run_info, save
from .prepare import prepare
from ..config import RunConfig


def fit_one(cfg: RunConfig, splits: Splits, out: Path, resume: bool = False, log=print, extra=()) -> dict:
    """Train, evaluate and save one run on ``splits`` (train, dev, test); its metrics. Empty on
    the processes of a distributed run other than rank 0. ``extra``: more Lightning callbacks."""
    import lightning as L
    quiet_engine()
    started = time.perf_counter()
    L.seed_everything(cfg.seed, workers=True, verbose=False)
    use_threads(cfg.threads)
    prepared = prepare(cfg, splits.train, splits.dev, splits.test, splits.kind, splits.multilabel, log)
    model = prepared.spec.build_model(prepared.vectors)
    fitted = fit(cfg, model, prepared, out, resume, started, extra)
    if fitted is None:
        return {}
    model.to(fitted.device)     # the engine's teardown leaves it on the CPU: a GPU run tests on the GPU
    metrics, labels, predictions = evaluate(model, prepared)
    model.cpu()
    prepared.spec.labels = labels
    metrics["info"] = run_info(cfg, model, prepared, fitted, splits.bad.count, splits.bad.filtered)
    save(out, prepared.spec, model, metrics, fitted, predictions)
    if not cfg.keep_checkpoints:      # resume state of a finished run: its weights are in model.safetensors
        shutil.rmtree(out / "checkpoints", ignore_errors=True)
    return metrics
