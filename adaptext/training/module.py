"""The LightningModule: loss, optimiser, dev metrics, and the state a killed run needs to
continue exactly (position in the epoch, random number generators)."""
from __future__ import annotations

import time
from typing import cast

import lightning as L
import numpy as np
import torch
import torch.nn.functional as F

from ..errors import UsageError
from ..optim import OPTIMIZERS
from ..optim.schedules import lr_factor
from ..runs import metrics as M
from ..runs.files import write_csv
from ..runs.pipeline import logits_of, probabilities
from .state import RngState, TrainStats
from ..config import RunConfig


class Diverged(UsageError):
    """The training loss is no longer a finite number: the run stops instead of saving nonsense."""


def feature_map(model: torch.nn.Module, teacher_dim: int) -> torch.nn.Linear:
    """A linear map from what the model's classifier head reads to ``teacher_dim`` numbers, drawn
    apart from the run's random stream: the student starts and trains as it would without it."""
    head = getattr(model, "head", None)
    linear = head if isinstance(head, torch.nn.Linear) else getattr(head, "linear", None)
    if not isinstance(linear, torch.nn.Linear):
        raise UsageError(f"--feature-weight: {type(model).__name__} has no classifier head whose input could be "
                         f"mapped onto the teacher's")
    with torch.random.fork_rng(devices=[]):
        return torch.nn.Linear(linear.in_features, teacher_dim)


class ClassifierModule(L.LightningModule):
    class_weights: torch.Tensor             # a buffer: a weight per class, or empty for none

    def __init__(self, model: torch.nn.Module, cfg: RunConfig, labels, train_loader, dev_loader,
                 class_weights: torch.Tensor | None = None, log_path=None, started: float | None = None,
                 teacher_dim: int = 0):
        super().__init__()
        self.model, self.cfg, self.labels = model, cfg, labels
        # --feature-weight: the student's sentence representation mapped onto the teacher's
        # (``teacher_dim`` numbers); the map is trained beside the model, never saved with it
        self.feature_map = feature_map(model, teacher_dim) if cfg.feature_weight and teacher_dim else None
        self._head_input: torch.Tensor | None = None
        self._hook = None if self.feature_map is None else \
            cast(torch.nn.Module, model.head).register_forward_pre_hook(self._keep_head_input)   # feature_map checked
        self.train_loader, self.dev_loader = train_loader, dev_loader
        self.multilabel = labels.multilabel
        self.monitor = M.default_monitor(self.multilabel, cfg.monitor)
        self.smoothing = cfg.label_smoothing
        self.register_buffer("class_weights", class_weights if class_weights is not None else torch.ones(0),
                             persistent=False)
        self._val: list = []
        self._stats = TrainStats()
        self._epoch_start = time.perf_counter()
        self._train_time = 0.0
        self._batches_done = 0
        self._restore = None
        # (train stats, seconds) of an epoch cut by a kill
        self._resumed_epoch: tuple[TrainStats, float] | None = None
        self.started = time.perf_counter() if started is None else started
        self.seconds_before = 0.0               # wall seconds of the run's earlier processes (when resumed)
        self.last_dev: dict = {}
        self.epoch_rows: list = []
        self.log_path = log_path                # log.csv of the run directory, rewritten every epoch

    # ------------------------------------------------------------------ data
    def setup(self, stage: str) -> None:
        world = self.trainer.world_size
        if world > 1:
            self.train_loader.batch_sampler.set_distributed(self.trainer.global_rank, world)
            self.dev_loader.batch_sampler.set_distributed(self.trainer.global_rank, world)

    # ------------------------------------------------------------------ loss
    def loss(self, out, batch) -> torch.Tensor:
        logits = logits_of(out)
        if batch.soft is not None:
            return self.distillation_loss(logits, batch)
        if isinstance(out, dict) and "node_logits" in out and batch.tree is not None:
            # phrase-level supervision: every labelled node of every tree (roots included)
            nl = batch.tree.node_labels
            keep = nl >= 0
            w = self.class_weights if self.class_weights.numel() else None
            return F.cross_entropy(out["node_logits"][keep], nl[keep], weight=w, label_smoothing=self.smoothing)
        if self.multilabel:
            return F.binary_cross_entropy_with_logits(logits, batch.labels)
        w = self.class_weights if self.class_weights.numel() else None
        return F.cross_entropy(logits, batch.labels, weight=w, label_smoothing=self.smoothing)

    def distillation_loss(self, logits: torch.Tensor, batch) -> torch.Tensor:
        """Tang et al. (2019): alpha x cross-entropy on the true labels (of the texts that have
        one) + (1 - alpha) x the distance to the teacher's logits (every text of the transfer set)."""
        c = self.cfg
        if c.distill_loss == "kl":           # Hinton et al. (2015): T^2 keeps the gradients' scale
            t = c.temperature
            teach = F.kl_div(F.log_softmax(logits / t, -1), F.log_softmax(batch.soft / t, -1), log_target=True,
                             reduction="batchmean") * t * t
        else:
            teach = F.mse_loss(logits, batch.soft)
        if self.feature_map is not None and batch.features is not None:
            assert self._head_input is not None, "the model's head ran on the batch"
            teach = teach + c.feature_weight * F.mse_loss(self.feature_map(self._head_input), batch.features)
        labelled = batch.labels >= 0
        if not labelled.any():
            return (1 - c.alpha) * teach
        w = self.class_weights if self.class_weights.numel() else None
        hard = F.cross_entropy(logits[labelled], batch.labels[labelled], weight=w, label_smoothing=self.smoothing)
        return c.alpha * hard + (1 - c.alpha) * teach

    def _keep_head_input(self, module: torch.nn.Module, args: tuple[torch.Tensor, ...]) -> None:
        self._head_input = args[0]

    def on_fit_end(self) -> None:
        if self._hook is not None:              # the model outlives training: it keeps no tie to it
            self._hook.remove()

    def forward(self, batch):
        return self.model(batch)

    def training_step(self, batch, batch_idx):
        out = self.model(batch)
        loss = self.loss(out, batch)
        with torch.no_grad():
            if not torch.isfinite(loss):
                raise Diverged(f"training diverged: the loss is {float(loss)} at epoch {self.current_epoch + 1}, "
                               f"step {batch_idx + 1} (lr {self.cfg.lr} with {self.cfg.optimizer}); "
                               "lower --lr or set --grad-clip")
            s = self._stats
            s.loss_sum += float(loss) * batch.size
            if not self.multilabel:                  # accuracy on the labelled texts (a transfer set has others)
                s.correct += int((logits_of(out).argmax(-1) == batch.labels).sum())
                s.labelled += int((batch.labels >= 0).sum())
            s.examples += batch.size
            s.batches += 1
        self._batches_done = batch_idx + 1
        self._train_time = time.perf_counter() - self._epoch_start    # excludes the dev pass at epoch end
        rate = s.examples / max(self._train_time, 1e-9)
        self.log("ex/s", rate, prog_bar=True, on_step=True, on_epoch=False, batch_size=batch.size)
        return loss

    def optimizer_step(self, *args, **kwargs):
        super().optimizer_step(*args, **kwargs)
        self.model.apply_constraints()          # e.g. Kim 2014: max-norm of the softmax weight rows

    def on_train_epoch_start(self) -> None:
        if self._resumed_epoch is None:
            self._stats, self._epoch_start, self._batches_done = TrainStats(), time.perf_counter(), 0
            return
        # an epoch resumed mid-way counts the examples and the seconds of its part before the kill
        stats, seconds = self._resumed_epoch
        self._stats, self._epoch_start, self._resumed_epoch = stats, time.perf_counter() - seconds, None

    # ------------------------------------------------------------------ dev
    def validation_step(self, batch, batch_idx):
        out = self.model(batch)
        logits = logits_of(out)
        self._val.append((batch.index, probabilities(logits, self.multilabel).float(), batch.labels,
                          self.loss(out, batch).detach() * batch.size))

    def on_validation_epoch_end(self) -> None:
        if not self._val:
            return
        index = torch.cat([v[0] for v in self._val])
        probs = torch.cat([v[1] for v in self._val])
        labels = torch.cat([v[2] for v in self._val])
        loss_sum = torch.stack([v[3] for v in self._val]).sum()
        self._val = []
        if self.trainer.world_size > 1:
            index, probs, labels = (self._gather_uneven(t) for t in (index, probs, labels))
            loss_sum = self._gather(loss_sum).sum()
        _, keep = np.unique(index.cpu().numpy(), return_index=True)       # ranks may share a padded batch
        dev_probs, dev_labels = probs.cpu().numpy()[keep], labels.cpu().numpy()[keep]
        m = M.compute(dev_probs, dev_labels, self.labels.labels, self.multilabel, self.labels.threshold)
        m["loss"] = float(loss_sum) / max(len(keep), 1)
        self.last_dev = m
        self.log("dev_score", m[self.monitor], prog_bar=True, sync_dist=False)

    def _gather(self, t: torch.Tensor) -> torch.Tensor:
        """A tensor from every rank, stacked: [world, *t.shape]."""
        out = self.all_gather(t)
        assert isinstance(out, torch.Tensor), "all_gather of one tensor is one tensor"
        return out

    def _gather_uneven(self, t: torch.Tensor) -> torch.Tensor:
        """Concatenate a tensor from every rank when ranks hold different numbers of rows."""
        sizes = self._gather(torch.tensor(t.shape[0], device=t.device)).view(-1).tolist()
        pad = max(sizes) - t.shape[0]
        if pad:
            t = torch.cat([t, t.new_zeros((pad, *t.shape[1:]))])
        g = self._gather(t)                          # [world, max, ...]
        return torch.cat([g[r, :n] for r, n in enumerate(sizes)])

    # ------------------------------------------------------------------ epoch log
    def on_train_epoch_end(self) -> None:
        s = self._stats
        secs = self._train_time
        row = {"epoch": self.current_epoch + 1, "train_loss": s.mean_loss,
               "train_accuracy": s.accuracy if not self.multilabel else None,
               "dev_loss": self.last_dev.get("loss"), f"dev_{self.monitor}": self.last_dev.get(self.monitor),
               "seconds": secs, "examples_per_s": s.examples * self.trainer.world_size / max(secs, 1e-9)}
        self.epoch_rows = [r for r in self.epoch_rows if r["epoch"] < row["epoch"]] + [row]
        if self.log_path is not None and self.trainer.is_global_zero:   # a long run can be watched as it goes
            write_csv(self.log_path, self.epoch_rows)

    # ------------------------------------------------------------------ optimiser
    def configure_optimizers(self):
        c = self.cfg
        trained = self.model if self.feature_map is None else torch.nn.ModuleList([self.model, self.feature_map])
        optimizer = OPTIMIZERS[c.optimizer](trained, lr=c.lr, weight_decay=c.weight_decay)
        if c.lr_schedule == "constant" and not c.warmup:
            return optimizer
        steps = c.max_steps or c.epochs * len(self.train_loader)
        schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor(c.lr_schedule, c.warmup, steps))
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "step"}}

    # ------------------------------------------------------------------ resume
    def on_save_checkpoint(self, checkpoint: dict) -> None:
        checkpoint["adaptext"] = {
            "epoch": self.current_epoch, "batches_done": self._batches_done,
            "train_loader_len": len(self.train_loader),
            "rng": RngState.capture().to_checkpoint(),
            "train_stats": self._stats.to_checkpoint(), "epoch_seconds": self._train_time,
            "epoch_rows": self.epoch_rows,
            "last_dev_score": self.last_dev.get(self.monitor),
            "seconds": self.seconds_before + time.perf_counter() - self.started,
        }

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        st = checkpoint.get("adaptext")
        if not st:
            return
        if st["batches_done"] >= st["train_loader_len"]:
            self.train_loader.batch_sampler.resume(st["epoch"] + 1, 0)      # saved at the end of an epoch
        else:
            self.train_loader.batch_sampler.resume(st["epoch"], st["batches_done"])
            self._stats = TrainStats.from_checkpoint(st["train_stats"])
            self._resumed_epoch = (self._stats, float(st.get("epoch_seconds", 0.0)))
            self._batches_done = st["batches_done"]
        self.epoch_rows = list(st.get("epoch_rows", []))
        self.seconds_before = float(st.get("seconds", 0.0))
        self._restore = st

    def on_train_start(self) -> None:
        st, self._restore = self._restore, None
        if st is None:
            return
        RngState.from_checkpoint(st).restore()
