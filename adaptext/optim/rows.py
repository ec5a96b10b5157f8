"""Adadelta and Adagrad that spend work only on the embedding rows a batch uses.

A word-embedding matrix is most of a small text model's parameters (Kim's CNN-rand on MR:
18k words x 300 = 5.4M of 5.8M), yet one batch of 50 sentences touches a few hundred of its
rows. torch.optim's Adadelta and Adagrad update the whole matrix on every step, so on a CPU the
optimiser costs as much as the forward and backward passes together.

Neither needs to. Where a row's gradient is zero, Adagrad changes nothing, and Adadelta
(Zeiler 2012) leaves the row itself unchanged and only decays its two running averages,
E[g^2] and E[dx^2], by rho. The decay of k skipped steps is rho^k, so it can wait until the row
is used again. Parameter groups marked ``rows=True`` (the embedding matrices; see
``param_groups``) take this path; every other tensor is updated whole. The parameters follow
torch.optim's to rounding (tested), and a step costs the rows in use, not the vocabulary.
With weight decay every row has a gradient, and the rows path is not taken.
"""
from __future__ import annotations

from typing import Any

import torch
from torch import nn


def param_groups(model: nn.Module) -> list[dict]:
    """The trainable parameters as two groups: embedding matrices (``rows=True``) and the rest."""
    emb = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    params = [p for p in model.parameters() if p.requires_grad]
    groups: list[dict[str, Any]] = [{"params": [p for p in params if id(p) not in emb]},
              {"params": [p for p in params if id(p) in emb], "rows": True}]
    return [g for g in groups if g["params"]]


class _RowOptimizer(torch.optim.Optimizer):
    """The shared step: each parameter's update on all of it, or on the rows with a gradient."""

    def __init__(self, params, defaults: dict):
        super().__init__(params, {**defaults, "rows": False})

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError(f"{type(self).__name__} takes dense gradients (nn.Embedding(sparse=False))")
                state = self.state[p]
                if not state:
                    self._init_state(state, p)
                state["step"] += 1
                g = p.grad
                if group["rows"] and group["weight_decay"] == 0 and p.dim() >= 2:
                    rows = g.flatten(1).ne(0).any(1).nonzero().squeeze(1)
                    self._update_rows(group, state, p, g.index_select(0, rows), rows)
                else:
                    if group["weight_decay"]:
                        g = g.add(p, alpha=group["weight_decay"])
                    self._update(group, state, p, g)
        return loss


class Adadelta(_RowOptimizer):
    """Adadelta as ``torch.optim.Adadelta`` (lr, rho, eps, weight_decay), lazy on ``rows`` groups."""

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0.0):
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay))

    @staticmethod
    def _init_state(state, p):
        state["step"] = 0
        state["square_avg"] = torch.zeros_like(p)
        state["acc_delta"] = torch.zeros_like(p)
        state["last"] = torch.zeros(p.shape[0] if p.dim() else 1, dtype=torch.long, device=p.device)  # rows path

    @staticmethod
    def _delta(g, sq, acc, rho, eps):
        """Zeiler's Algorithm 1 on (g, E[g^2], E[dx^2]), the averages updated in place."""
        sq.mul_(rho).addcmul_(g, g, value=1 - rho)
        delta = acc.add(eps).sqrt_().div_(sq.add(eps).sqrt_()).mul_(g)
        acc.mul_(rho).addcmul_(delta, delta, value=1 - rho)
        return delta

    def _update(self, group, state, p, g):
        p.add_(self._delta(g, state["square_avg"], state["acc_delta"], group["rho"], group["eps"]), alpha=-group["lr"])

    def _update_rows(self, group, state, p, g, rows):
        rho = group["rho"]
        # steps the rows sat out ("last" may come back from a checkpoint as floats: exact up to 2^24)
        skipped = (state["step"] - 1 - state["last"][rows]).to(torch.float64)
        decay = torch.pow(rho, skipped).to(p.dtype)
        decay = decay.view(-1, *([1] * (p.dim() - 1)))
        sq = state["square_avg"].index_select(0, rows).mul_(decay)
        acc = state["acc_delta"].index_select(0, rows).mul_(decay)
        delta = self._delta(g, sq, acc, rho, group["eps"])
        state["square_avg"].index_copy_(0, rows, sq)
        state["acc_delta"].index_copy_(0, rows, acc)
        p.index_add_(0, rows, delta, alpha=-group["lr"])
        state["last"][rows] = state["step"]


class Adagrad(_RowOptimizer):
    """Adagrad as ``torch.optim.Adagrad`` (lr, eps, weight_decay; no lr decay), lazy on ``rows`` groups:
    a zero gradient row changes neither the row nor its sum of squares, so nothing is deferred."""

    def __init__(self, params, lr: float = 1e-2, eps: float = 1e-10, weight_decay: float = 0.0):
        super().__init__(params, dict(lr=lr, eps=eps, weight_decay=weight_decay))

    @staticmethod
    def _init_state(state, p):
        state["step"] = 0
        state["sum"] = torch.zeros_like(p)

    def _update(self, group, state, p, g):
        s = state["sum"].addcmul_(g, g)
        p.addcdiv_(g, s.sqrt().add_(group["eps"]), value=-group["lr"])

    def _update_rows(self, group, state, p, g, rows):
        s = state["sum"].index_select(0, rows).addcmul_(g, g)
        state["sum"].index_copy_(0, rows, s)
        p.index_add_(0, rows, g / s.sqrt().add_(group["eps"]), alpha=-group["lr"])
