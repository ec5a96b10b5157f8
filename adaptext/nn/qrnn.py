"""Quasi-recurrent neural network (Bradbury et al. 2017, "Quasi-Recurrent Neural Networks").

Section 2: a QRNN layer computes its candidate, forget and output gates with one
convolution of width k over the inputs, masked so that position t sees only
x_{t-k+1}, ..., x_t (Eq. 1: Z = tanh(W_z * X), F = sigmoid(W_f * X), O = sigmoid(W_o * X)),
then mixes them over time with fo-pooling (Eq. 4):

    c_t = f_t . c_{t-1} + (1 - f_t) . z_t,      h_t = o_t . c_t.

The only sequential part is a first-order linear recurrence c_t = a_t c_{t-1} + b_t,
vectorised over batch and channels. ``linear_scan`` computes it either step by step (one
fused multiply-add per step: fastest on a CPU, which streams the data once) or by a
parallel prefix scan (Hillis & Steele) over the associative composition (a1, b1) then
(a2, b2) = (a2 a1, a2 b1 + b2), log2(T) whole-tensor steps (for GPUs). Both are exact up
to float rounding: no division, exponent or logarithm (a log-space cumulative sum would
lose precision on long texts). Its backward pass is the adjoint recurrence run in
reverse by the same scan, so autograd keeps no graph of the T steps.

Padding: texts are right-padded. Inputs at padded steps are zeroed and contribute
nothing to the cell (b = 0 there), and the backward direction runs on the flipped batch,
where the padding comes first and keeps the cell at its zero initial state, so a text's
states are the same alone and in a padded batch. Zoneout (Section 2.1) is optional.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def _scan_loop(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """c_t = a_t c_{t-1} + b_t along dim 1 of [B, T, H], one fused multiply-add per step."""
    a, b = a.transpose(0, 1).contiguous(), b.transpose(0, 1).contiguous()    # [T, B, H]
    out = torch.empty_like(b)
    c = torch.zeros_like(b[0])
    for t in range(b.shape[0]):
        c = torch.addcmul(b[t], a[t], c, out=out[t])
    return out.transpose(0, 1)


def _scan_parallel(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The same by a Hillis-Steele prefix scan: after the step with offset d, position t
    holds the composition of the elements (t - 2d, t]; log2(T) whole-tensor steps."""
    a, b = a.clone(), b.clone()
    T, d = b.shape[1], 1
    while d < T:
        carry = a[:, d:] * b[:, :-d]               # (a2, b2) after (a1, b1) = (a2 a1, a2 b1 + b2)
        if 2 * d < T:
            a[:, d:] = a[:, d:] * a[:, :-d]
        b[:, d:] += carry
        d *= 2
    return b


def _scan(a: torch.Tensor, b: torch.Tensor, method: str) -> torch.Tensor:
    if method == "auto":
        # a CPU streams through memory once per step and is fastest with the loop; a GPU pays a
        # launch per step and prefers log2(T) whole-tensor steps
        method = "parallel" if b.is_cuda and b.shape[1] > 32 else "loop"
    if method == "loop":
        return _scan_loop(a, b)
    if method == "parallel":
        return _scan_parallel(a, b)
    raise ValueError(f"scan method must be auto, loop or parallel, not {method!r}")


class _LinearScan(torch.autograd.Function):
    """c = scan(a, b) with the adjoint recurrence as its backward pass:
    lambda_t = g_t + a_{t+1} lambda_{t+1} (a reverse scan), dL/db_t = lambda_t,
    dL/da_t = lambda_t c_{t-1}. Saves a and c only; no graph of the T steps is kept."""

    @staticmethod
    def forward(ctx, a, b, method):
        c = _scan(a, b, method)
        ctx.save_for_backward(a, c)
        ctx.method = method
        return c

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):
        a, c = ctx.saved_tensors
        a_next = torch.cat([a[:, 1:], torch.zeros_like(a[:, :1])], dim=1)
        lam = _scan(a_next.flip(1), g.flip(1), ctx.method).flip(1)
        c_prev = torch.cat([torch.zeros_like(c[:, :1]), c[:, :-1]], dim=1)
        return lam * c_prev, lam, None


def linear_scan(a: torch.Tensor, b: torch.Tensor, method: str = "auto") -> torch.Tensor:
    """All c_t of c_t = a_t * c_{t-1} + b_t (c_{-1} = 0) for a, b [B, T, H].

    Exact up to float rounding by either method (no division, exponent or logarithm):
    ``loop`` (one step per time step, vectorised over batch and channels), ``parallel``
    (Hillis-Steele prefix scan), ``auto`` (loop on CPU, parallel on GPU).
    """
    return _LinearScan.apply(a, b, method)


class QRNNLayer(nn.Module):
    """One QRNN layer: x [B, T, D] -> h [B, T, H] (or [B, T, 2H] if bidirectional)."""

    def __init__(self, in_dim: int, hidden: int, window: int = 2, bidirectional: bool = False,
                 zoneout: float = 0.0, scan: str = "auto"):
        super().__init__()
        self.hidden, self.window, self.zoneout, self.scan = hidden, window, zoneout, scan
        self.bidirectional = bidirectional
        # one convolution gives Z, F, O at once (Eq. 1); a second one for the backward direction
        self.gates = nn.ModuleList(nn.Conv1d(in_dim, 3 * hidden, window) for _ in range(2 if bidirectional else 1))

    @property
    def out_dim(self) -> int:
        return self.hidden * (2 if self.bidirectional else 1)

    def gate_values(self, conv: nn.Conv1d, x: torch.Tensor):
        """Z, F, O [B, T, H] from x [B, T, D] (padded steps already zero); step t sees x_{t-k+1..t}."""
        g = conv(F.pad(x.transpose(1, 2), (self.window - 1, 0)))      # [B, 3H, T]
        z, f, o = g.transpose(1, 2).chunk(3, dim=-1)
        return torch.tanh(z), torch.sigmoid(f), torch.sigmoid(o)     # Eq. 1

    def _direction(self, conv: nn.Conv1d, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        z, f, o = self.gate_values(conv, x)
        if self.training and self.zoneout > 0:
            # zoneout: a random subset of channels keeps its previous cell (f = 1), not rescaled
            f = torch.where(torch.rand_like(f) < self.zoneout, torch.ones_like(f), f)
        c = linear_scan(f, (1 - f) * z * keep, self.scan)               # Eq. 4, c_t for all t
        return o * c                                                   # h_t = o_t . c_t

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        keep = mask[..., None].to(x.dtype)                             # [B, T, 1]
        x = x * keep
        h = self._direction(self.gates[0], x, keep)
        if self.bidirectional:
            # flipped batch: the padding comes first, the cell stays 0 across it
            hb = self._direction(self.gates[1], x.flip(1), keep.flip(1)).flip(1)
            h = torch.cat([h, hb], dim=-1)
        return h * keep


class QRNN(nn.Module):
    """Stacked QRNN layers with dropout between them; ``dense`` concatenates each layer's
    input to its output before the next layer (Section 2.1, densely connected layers)."""

    def __init__(self, in_dim: int, hidden: int, layers: int = 1, window: int = 2, bidirectional: bool = False,
                 dropout: float = 0.0, zoneout: float = 0.0, dense: bool = False, scan: str = "auto"):
        super().__init__()
        self.dense = dense
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList()
        dim = in_dim
        for _ in range(layers):
            layer = QRNNLayer(dim, hidden, window, bidirectional, zoneout, scan)
            self.layers.append(layer)
            dim = dim + layer.out_dim if dense else layer.out_dim
        self.out_dim = self.layers[-1].out_dim

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """x [B, T, D], mask [B, T] -> h [B, T, out_dim] of the last layer (0 at padded steps)."""
        h = x
        for i, layer in enumerate(self.layers):
            out = layer(h, mask)
            if i + 1 < len(self.layers):
                out = self.dropout(out)
                h = torch.cat([h, out], dim=-1) if self.dense else out
            else:
                h = out
        return h
