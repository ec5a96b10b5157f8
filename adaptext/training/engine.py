"""The Lightning wiring of a run: its loaders, module, trainer and callbacks; the best dev
epoch's weights are left in the model."""
from __future__ import annotations

import contextlib
import os
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch

from ..data.loading import batch_loader
from ..runs.pipeline import collator
from .callbacks import StepCheckpoint, StepLog, Trim
from .prepare import Prepared, class_weights_of
from ..config import RunConfig


@dataclass
class Fitted:
    """What training leaves: the epoch log, the epochs run, the seconds they took and the device
    they ran on."""
    rows: list
    epochs_run: int
    seconds: float
    monitor: str
    device: torch.device


def teacher_dim(p: Prepared) -> int:
    """The numbers of the teacher's sentence representation the training items carry (0: none)."""
    first = p.train[0] if isinstance(p.train, list) and p.train else None
    return len(first.features) if first is not None and first.features is not None else 0


def fit(cfg: RunConfig, model, p: Prepared, out: Path, resume: bool, started: float, extra=()) -> Fitted | None:
    """Train with Lightning; the best dev epoch's weights are left in ``model``. None on the
    processes of a distributed run other than rank 0."""
    import lightning as L

    from .checkpoint import SafetensorsCheckpointIO, load_tree
    from .module import ClassifierModule
    collate = collator(model, p.spec.labels)
    train_loader = batch_loader(p.train, cfg.batch_size, collate, shuffle=True, bucket=cfg.bucket, seed=cfg.seed)
    dev_loader = batch_loader(p.dev, max(cfg.batch_size, 100), collate)
    module = ClassifierModule(model, cfg, p.spec.labels, train_loader, dev_loader, class_weights_of(cfg, p),
                              log_path=out / "log.csv", started=started, teacher_dim=teacher_dim(p))
    ckpt_dir = out / "checkpoints"
    trainer = L.Trainer(
        max_epochs=cfg.epochs, accelerator=cfg.accelerator, devices=cfg.devices, strategy=cfg.strategy,
        num_nodes=cfg.num_nodes, max_steps=cfg.max_steps or -1,
        gradient_clip_val=cfg.grad_clip or None, gradient_clip_algorithm="norm",
        deterministic=cfg.deterministic, plugins=[SafetensorsCheckpointIO()],
        callbacks=callbacks(cfg, out, len(train_loader)) + list(extra), logger=False, enable_model_summary=False,
        num_sanity_val_steps=0, enable_progress_bar=cfg.progress, default_root_dir=str(out),
        use_distributed_sampler=False)         # the batch sampler gives each rank its batches itself
    last = ckpt_dir / "last.ckpt"
    with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr):    # stdout is the result's
        # batches are collated in this process on purpose: a worker's round trip per batch costs more
        # than the collate itself (0.1 ms for 50 texts)
        warnings.filterwarnings("ignore", message=".*does not have many workers.*")
        # Lightning counts a loader resumable only with a state_dict; the batch sampler resumes itself
        # at the checkpoint's batch (ClassifierModule.on_load_checkpoint)
        warnings.filterwarnings("ignore", message=".*dataloader is not resumable.*")
        warnings.filterwarnings("ignore", message=".*smaller than the logging interval.*")
        trainer.fit(module, train_loader, dev_loader, ckpt_path=str(last) if resume and last.exists() else None)
    if not trainer.is_global_zero:
        return None
    if (ckpt_dir / "best.ckpt").exists():
        module.load_state_dict(load_tree(ckpt_dir / "best.ckpt")["state_dict"])
    seconds = module.seconds_before + time.perf_counter() - started      # a resumed run counts its earlier time
    return Fitted(module.epoch_rows, trainer.current_epoch, seconds, module.monitor, trainer.strategy.root_device)


def callbacks(cfg: RunConfig, out: Path, batches_per_epoch: int) -> list:
    from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint, TQDMProgressBar
    ckpt_dir = out / "checkpoints"
    # judged after each dev pass only: a run cut by --max-steps mid-epoch ends without one
    found = [ModelCheckpoint(dirpath=ckpt_dir, filename="best", monitor="dev_score", mode="max", save_top_k=1,
                             save_last=False, enable_version_counter=False, save_on_train_epoch_end=False),
             ModelCheckpoint(dirpath=ckpt_dir, filename="last", monitor=None, save_top_k=1,
                             enable_version_counter=False),
             EarlyStopping("dev_score", mode="max", patience=cfg.patience, check_on_train_epoch_end=False)]
    if cfg.checkpoint_every:
        found.append(StepCheckpoint(ckpt_dir / "last.ckpt", cfg.checkpoint_every))
    found.append(Trim())
    if cfg.log_every:
        found.append(StepLog(out / "steps.csv", cfg.log_every))
    if cfg.progress:
        found.append(TQDMProgressBar(refresh_rate=max(1, batches_per_epoch // 20)))
    return found


def quiet_engine() -> None:
    """Keep Lightning's banner lines (accelerator, tips) out of the user's terminal."""
    import logging
    for name in ("lightning.pytorch", "lightning.fabric"):
        logging.getLogger(name).setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", message=".*LeafSpec.*")
    warnings.filterwarnings("ignore", message=".*all_gather is deprecated.*")
    warnings.filterwarnings("ignore", message=".*sync_dist=True.*")   # dev metrics are gathered before logging
    warnings.filterwarnings("ignore", message=".*exists and is not empty.*")  # resuming into the run's own folder


def is_rank_zero() -> bool:
    """The process that writes the run directory (the only one outside a distributed run)."""
    return int(os.environ.get("LOCAL_RANK", 0)) == 0 and int(os.environ.get("NODE_RANK", 0)) == 0
