"""k-fold cross-validation: one run directory per fold, and their mean and standard deviation."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from ..runs.files import read_json, write_atomic
from ..runs.rundir import RunDir, RunState
from ..runs.spec import write_config
from ..runs.splits import fold_splits
from .engine import is_rank_zero
from .fit import fit_one
from .outputs import mean_or_none


def cross_validate(cfg, splits, out: Path, resume: bool, log=print, extra=()) -> dict:
    """k-fold CV: each fold trains on k-1 folds (10% of them held out as dev) and tests on the
    remaining fold; metrics.json holds every fold and the mean and standard deviation."""
    folds = []
    for k in range(1, len(splits.folds) + 1):
        fold = RunDir(out).fold(k)
        fold_dir, state = fold.path, fold.state
        if state is RunState.FINISHED:
            folds.append(read_json(fold.metrics))
            continue
        train, dev, test = fold_splits(splits, k)
        log(f"fold {k}/{len(splits.folds)}: train {len(train)}, dev {len(dev)}, test {len(test)}")
        if is_rank_zero():                        # each fold a run directory of its own: load / evaluate it
            fold_dir.mkdir(parents=True, exist_ok=True)
            write_config(fold_dir, cfg)
        part = dataclasses.replace(splits, train=train, dev=dev, test=test, folds=None)
        m = fit_one(cfg, part, fold_dir, resume and state is RunState.RESUMABLE, log, extra)
        if not m:
            return {}
        folds.append(m)
    metrics = {**cv_summary(folds), "cv": {"folds": len(folds), "seed": cfg.cv_seed,
                                           "test_accuracy": [f["test"]["accuracy"] for f in folds]},
               "info": {"model": cfg.model, "parameters": folds[0]["info"]["parameters"],
                        "train_seconds": sum(f["info"]["train_seconds"] for f in folds),
                        "train_examples_per_s": mean_or_none([f["info"]["train_examples_per_s"] for f in folds])}}
    write_atomic(RunDir(out).metrics, metrics)
    return metrics


def cv_summary(folds: list) -> dict:
    """Mean and standard deviation over folds of each headline metric, on dev and test."""
    summary: dict[str, dict[str, float]] = {}
    for split in ("dev", "test"):
        summary[split] = {}
        for key in ("accuracy", "macro_f1", "micro_f1"):
            vals = [f[split][key] for f in folds if key in f.get(split, {})]
            if vals:
                summary[split][key] = float(np.mean(vals))
                summary[split][f"{key}_std"] = float(np.std(vals))
    return summary
