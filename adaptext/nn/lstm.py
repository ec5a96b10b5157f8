"""An LSTM's recurrence from its gate inputs, for prediction through word-projection tables.

An LSTM layer's gates at step t are ``W_ih x_t + b_ih + b_hh + W_hh h_{t-1}`` (PyTorch's order of
the four blocks: input i, forget f, cell candidate g, output o), then

    c_t = sigmoid(f) c_{t-1} + sigmoid(i) tanh(g),      h_t = sigmoid(o) tanh(c_t).

For the first layer of a word-level model ``W_ih x_t`` depends only on the word, so it is one row
of a table of vocabulary x 4H numbers per direction (``WordEmbedding.projection_tables``), and
only ``W_hh h_{t-1}`` is left to compute at each step. ``nn.LSTM`` reads inputs, not gate inputs,
so ``lstm_from_gate_inputs`` runs the recurrence itself: one step at a time over the whole batch,
both directions of a bidirectional layer in the same step (a batched matrix product).

tanh is computed as 2 sigmoid(2x) - 1, which is the same function: on a CPU PyTorch's tanh costs
about five times its sigmoid per number, and it is most of a step's time at these sizes. So
the cell candidate's rows of the gate inputs and of W_hh are doubled once (``double_candidate``:
doubling is exact in floating point), one sigmoid covers all four gates, and the cell is kept
doubled (2c) so that tanh(c) = 2 sigmoid(2c) - 1 needs no extra product. The results equal
``nn.LSTM``'s up to float rounding (about 1e-7).

No masking is needed for right-padded batches read as ``LSTMClassifier`` reads them: the forward
direction reaches a text's padding only after its last word, and the backward direction reads
each text reversed within its own length, so padding again comes last. The states at a text's
positions are never touched by its padding; those at padded positions are never read.
"""
from __future__ import annotations

import torch


def double_candidate(w: torch.Tensor) -> torch.Tensor:
    """w with the cell candidate's block (the third of four along dim 0: rows of W_ih or W_hh, or a
    bias) doubled: its sigmoid is then sigmoid(2g), from which tanh(g) = 2 sigmoid(2g) - 1."""
    h = w.shape[0] // 4
    w = w.clone()
    w[2 * h:3 * h] *= 2
    return w


def lstm_from_gate_inputs(pre: torch.Tensor, w_hh: torch.Tensor) -> torch.Tensor:
    """h [T, D, B, H] of D LSTM directions from zero states, given pre [T, D, B, 4H] (each step's
    ``W_ih x_t + b_ih + b_hh`` for each direction and text) and w_hh [D, H, 4H] (each direction's
    W_hh, transposed), both with the cell candidate's block doubled (``double_candidate``). Step t
    of direction d reads pre[t, d]: a backward direction is handed its texts already reversed."""
    steps, directions, batch, four_h = pre.shape
    hidden = four_h // 4
    h = pre.new_zeros(directions, batch, hidden)
    c2 = pre.new_zeros(directions, batch, hidden)          # 2 c
    out = pre.new_empty(steps, directions, batch, hidden)
    for t in range(steps):
        i, f, g, o = torch.sigmoid(torch.baddbmm(pre[t], h, w_hh)).chunk(4, dim=-1)     # g = sigmoid(2 g~)
        # c = f c + i tanh(g~) = f c + i (2 g - 1), kept doubled: 2c = f 2c + 4 i g - 2 i
        c2 = torch.addcmul(f * c2, i, g, value=4).sub_(i, alpha=2)
        # h = o tanh(c) = o (2 sigmoid(2c) - 1)
        h = torch.mul(o, torch.sigmoid(c2).mul_(2).sub_(1), out=out[t])
    return out
