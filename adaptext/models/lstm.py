"""The LSTM that Bradbury et al. (2017), "Quasi-Recurrent Neural Networks", compare the QRNN
with (Section 3.1: a densely connected 4-layer LSTM of the same width).

A comparison encoder built from the QRNN's parts (``models/qrnn.py``): dense connections,
dropout between layers, the same masked max pooling over time, head and training. At
prediction its first layer's input projections are looked up per word, as the QRNN's gates
are (``adaptext.nn.lstm``).

Padding is kept out: the backward direction reads each text reversed within its own length
and the pooling skips padded steps, so a text's logits are the same alone and in a padded
batch.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, cast

import torch
import torch.nn.functional as F
from torch import nn

from ..nn import ClassifierHead, WordEmbedding, masked_max_pool
from ..nn.lstm import double_candidate, lstm_from_gate_inputs
from ..nn.qrnn import next_layer_input
from ..registry import Options, TextClassifier, register_model
from .qrnn import SENTIMENT_SETUP


class _OneLayerLSTM(Protocol):
    """The parameters of a one-layer ``nn.LSTM`` with biases, which it registers by name when it is
    built (so its class declares none of them)."""
    weight_ih_l0: torch.Tensor
    weight_hh_l0: torch.Tensor
    bias_ih_l0: torch.Tensor
    bias_hh_l0: torch.Tensor


@dataclass
class LSTMConfig(Options):
    embed_dim: int = 300
    hidden: int = 256
    layers: int = 4
    bidirectional: bool = False
    dense: bool = True            # each layer reads the embeddings and every earlier layer's output
    dropout: float = 0.3          # between layers
    head_dropout: float = 0.3


@register_model("lstm", config=LSTMConfig, paper="Bradbury et al. 2017 (baseline)",
                description="stacked LSTM (densely connected), masked max pooling over time: the QRNN's baseline",
                **SENTIMENT_SETUP)
class LSTMClassifier(TextClassifier):
    """At prediction (eval mode, no gradient) the first layer's input projections W_ih x_t are looked
    up, one row per word of a vocabulary x 4H table per direction (``projections``), and its
    recurrence runs from them (``adaptext.nn.lstm``); training, explanations (gradients), exports and
    the layers above the first run ``nn.LSTM`` on the word vectors. Both give the same logits."""

    # Where the table path is used: None, where it was measured faster (below); True / False: always
    # (where the tables fit in TABLE_BYTES) / never, for benchmarks (benchmarks/lstm_speed.py).
    #
    # The table path saves the input projection (E x 4H multiply-adds per word and direction, E the
    # word vectors' size) but runs the recurrence step by step from Python, where nn.LSTM runs it in
    # C++. benchmarks/lstm_speed.py (1 thread, batches of 64 of the 1,821 SST-2 test sentences, one
    # bidirectional layer, a 2-core machine shared with other jobs; the range of two runs, the
    # second in benchmarks/results/lstm_speed.md; model forward / whole predict call): 300-d
    # vectors, 64 units a direction 1.9-2.1x / 1.6-1.7x nn.LSTM's sentences/s, 150 units 1.6-2.1x /
    # 1.6-1.8x; 50-d GloVe vectors, 64 units 0.80-0.90x / 0.66-0.81x (little projection to save).
    # A bare bidirectional layer, table and loop against nn.LSTM (the same batches, 1 thread): 300-d
    # and 256 units 1.4x, 512 units 1.0x; 600-d (multichannel) and 150 units 3.0x; 50-d and 150
    # units 0.97x. So the table path is used on a CPU where H <= E; on a GPU a step-by-step loop of
    # small kernels is not measured against cuDNN, and nn.LSTM is kept.
    use_tables: bool | None = None

    def __init__(self, cfg: LSTMConfig, spec):
        super().__init__(cfg, spec)
        self.hidden = cfg.hidden
        self.embedding = WordEmbedding(spec, cfg.embed_dim)
        self.dense, self.dropout = cfg.dense, nn.Dropout(cfg.dropout)
        directions = 2 if cfg.bidirectional else 1
        self.layers, dim = nn.ModuleList(), self.embedding.out_dim
        for _ in range(cfg.layers):
            self.layers.append(nn.ModuleList(nn.LSTM(dim, cfg.hidden, batch_first=True) for _ in range(directions)))
            dim = dim + cfg.hidden * directions if cfg.dense else cfg.hidden * directions
        self.head = ClassifierHead(cfg.hidden * directions, spec.num_classes, cfg.head_dropout)

    def forward(self, batch) -> torch.Tensor:
        return self.head(masked_max_pool(self.states(batch), batch.mask))

    def states(self, batch) -> torch.Tensor:
        """What the pooling reads: the last layer's output at each word [B, T, H or 2H] (zero or
        stale at padded steps, which the pooling skips)."""
        mask = batch.mask
        # the backward direction reads each text reversed within its own length, so padding
        # (always after the text) reaches no state of either direction
        steps = torch.arange(mask.shape[1], device=mask.device)[None, :]
        back = torch.where(mask, batch.lengths[:, None] - 1 - steps, steps)
        # a traced graph (ONNX export, torch.compile) keeps nn.LSTM: the table path's loop would unroll
        # over the traced text length
        predicting = not (self.training or torch.is_grad_enabled() or torch.compiler.is_compiling())
        tables = self.projections() if predicting else None
        # the word vectors: read by the first layer, unless it looks its products up, and by
        # every layer of a densely connected stack
        h = self.embedding(batch.text) if tables is None or (self.dense and len(self.layers) > 1) else None
        for i, directions in enumerate(self.layers):
            if i == 0 and tables is not None:
                out = self._first_layer_from_tables(batch.text, back, tables)
            else:
                assert h is not None, "a layer run through nn.LSTM reads its input"
                out = self._layer(directions, h, back)
            h = next_layer_input(h, out, self.dropout, self.dense, last=i + 1 == len(self.layers))
        assert h is not None, "the stack has at least one layer"
        return h

    @staticmethod
    def _layer(directions, h: torch.Tensor, back: torch.Tensor) -> torch.Tensor:
        """One layer through nn.LSTM: h [B, T, D] -> [B, T, H or 2H]."""
        outs = [directions[0](h)[0]]
        if len(directions) == 2:
            flip = back[..., None].expand(-1, -1, h.shape[-1])
            reversed_out = directions[1](h.gather(1, flip))[0]
            outs.append(reversed_out.gather(1, back[..., None].expand(-1, -1, reversed_out.shape[-1])))
        return torch.cat(outs, dim=-1)

    def _first_layer(self) -> list[_OneLayerLSTM]:
        """The first layer's nn.LSTM of each direction (``layers``: a ModuleList of them per layer)."""
        return [cast(_OneLayerLSTM, m) for m in cast(nn.ModuleList, self.layers[0])]

    def _first_layer_from_tables(self, ids: torch.Tensor, back: torch.Tensor, tables: list) -> torch.Tensor:
        """The first layer's output [B, T, H or 2H] from the word ids [B, T] and each direction's
        table of W_ih x (``projections``): the ids reversed for the backward direction, not the
        wider projections."""
        first = self._first_layer()
        order = [ids, ids.gather(1, back)][: len(first)]
        pre = torch.stack([F.embedding(d_ids.T, table) for d_ids, table in zip(order, tables)], dim=1)
        pre += torch.stack([double_candidate(m.bias_ih_l0 + m.bias_hh_l0) for m in first])[:, None, :]
        w_hh = torch.stack([double_candidate(m.weight_hh_l0).T for m in first])            # [D, H, 4H]
        out = lstm_from_gate_inputs(pre, w_hh).permute(2, 0, 1, 3)                       # [B, T, D, H]
        outs = [out[:, :, 0]]
        if len(first) == 2:
            outs.append(out[:, :, 1].gather(1, back[..., None].expand(-1, -1, self.hidden)))
        return torch.cat(outs, dim=-1)

    def projections(self) -> list | None:
        """Per direction, [vocabulary, 4H]: every word's vector (all channels) times the first layer's
        W_ih, the cell candidate's block doubled (``adaptext.nn.lstm``; the padding row zero), made
        once per set of weights (``WordEmbedding.projection_tables``); None where the tables would be
        too large or the table path is not used (``use_tables``)."""
        first = self._first_layer()
        use = self.use_tables
        if use is None:
            use = first[0].weight_ih_l0.device.type == "cpu" and self.hidden <= self.embedding.out_dim
        if not use:
            return None
        return self.embedding.projection_tables([m.weight_ih_l0 for m in first], len(first) * 4 * self.hidden,
                                                lambda: [double_candidate(m.weight_ih_l0) for m in first])
