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

Prediction: the first layer's gates are linear in each word's vector, so a model can hand the
layer each word's products with the gate weights at every offset, looked up from a table made
once per set of weights (``gates_from_projections``): the convolution becomes a sum of shifted
rows, as Kim's CNN predicts.
"""
from __future__ import annotations

from typing import cast

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

    def _conv(self, direction: int) -> nn.Conv1d:
        """The given direction's convolution (``gates`` holds only ``nn.Conv1d``)."""
        return cast(nn.Conv1d, self.gates[direction])

    def gate_values(self, conv: nn.Conv1d, x: torch.Tensor) -> torch.Tensor:
        """The convolution's output [B, T, 3H] (Z, F, O before Eq. 1's squashing) from x [B, T, D]
        (padded steps already zero); step t sees x_{t-k+1..t}."""
        return conv(F.pad(x.transpose(1, 2), (self.window - 1, 0))).transpose(1, 2)

    def offset_weights(self, direction: int) -> torch.Tensor:
        """[k x 3H, D]: row j 3H + c is gate channel c's weights for the input at offset j
        (x_{t-k+1+j}) of the given direction's convolution."""
        w = self._conv(direction).weight                               # [3H, D, k]
        return w.permute(2, 0, 1).reshape(-1, w.shape[1])

    def gates_from_projections(self, direction: int, y: torch.Tensor) -> torch.Tensor:
        """``gate_values`` from y [B, T, k x 3H], each step's input projected on ``offset_weights``
        (zero at padded steps): the bias plus, for each offset j, block j of step t - k + 1 + j."""
        n = 3 * self.hidden
        bias = self._conv(direction).bias
        assert bias is not None, "the gate convolutions have a bias"
        g = y[..., (self.window - 1) * n:] + bias
        for j in range(self.window - 1):
            shift = self.window - 1 - j
            g[:, shift:] += y[:, :-shift, j * n:(j + 1) * n]
        return g

    def _direction(self, g: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        z, f, o = g.chunk(3, dim=-1)
        z, f, o = torch.tanh(z), torch.sigmoid(f), torch.sigmoid(o)   # Eq. 1
        if self.training and self.zoneout > 0:
            # zoneout: a random subset of channels keeps its previous cell (f = 1), not rescaled
            f = torch.where(torch.rand_like(f) < self.zoneout, torch.ones_like(f), f)
        c = linear_scan(f, (1 - f) * z * keep, self.scan)               # Eq. 4, c_t for all t
        return o * c                                                   # h_t = o_t . c_t

    def forward(self, x: torch.Tensor | None, mask: torch.Tensor, ids: torch.Tensor | None = None,
                tables: list | None = None) -> torch.Tensor:
        """``ids`` and ``tables``: instead of x, the word ids [B, T] and each direction's table of every
        word's projections on its ``offset_weights`` (the padding row zero)."""
        given = x if tables is None else tables[0]
        assert given is not None, "the layer reads x, or the ids and their tables"
        keep = mask[..., None].to(given.dtype)   # [B, T, 1]

        def gates(direction: int, flip: bool) -> torch.Tensor:
            if tables is not None:          # the ids flipped, not the wider projections
                assert ids is not None, "the tables are looked up by the ids"
                y = F.embedding(ids.flip(1) if flip else ids, tables[direction])
                return self.gates_from_projections(direction, y)
            assert x is not None, "without the tables, the layer reads x"
            xs = x * keep
            return self.gate_values(self._conv(direction), xs.flip(1) if flip else xs)

        h = self._direction(gates(0, False), keep)
        if self.bidirectional:
            # flipped batch: the padding comes first, the cell stays 0 across it
            hb = self._direction(gates(1, True), keep.flip(1)).flip(1)
            h = torch.cat([h, hb], dim=-1)
        return h * keep


def next_layer_input(h: torch.Tensor | None, out: torch.Tensor, dropout: nn.Module, dense: bool,
                     last: bool) -> torch.Tensor:
    """What the layer after one reads in a stack of recurrent layers (Section 2.1, the QRNN's and
    its LSTM baseline's): the layer's output ``out``, dropped out between layers and, where the
    layers are densely connected, beside the layer's own input ``h``; the last layer's output as
    it is."""
    if last:
        return out
    out = dropout(out)
    if not dense:
        return out
    assert h is not None, "a densely connected layer reads its input"
    return torch.cat([h, out], dim=-1)


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
        self.out_dim = self.layer(-1).out_dim

    def layer(self, i: int) -> QRNNLayer:
        """Layer ``i`` (``layers`` holds only ``QRNNLayer``)."""
        return cast(QRNNLayer, self.layers[i])

    def forward(self, x: torch.Tensor | None, mask: torch.Tensor, ids: torch.Tensor | None = None,
                tables: list | None = None) -> torch.Tensor:
        """x [B, T, D], mask [B, T] -> h [B, T, out_dim] of the last layer (0 at padded steps).
        ``ids`` and ``tables``: the first layer's gates looked up (``QRNNLayer.forward``); x is then
        needed only by densely connected later layers."""
        h = x
        for i, layer in enumerate(self.layers):
            out = layer(h, mask, *((ids, tables) if i == 0 else (None, None)))
            h = next_layer_input(h, out, self.dropout, self.dense, last=i + 1 == len(self.layers))
        assert h is not None, "a QRNN has at least one layer"
        return h
