"""Bradbury et al. (2017), "Quasi-Recurrent Neural Networks", Sections 2 and 3.1 (QRNN).

A comparison encoder for the convolutions whose parameters depend on the input: a word
embedding, the QRNN of ``adaptext.nn.qrnn``, a pooling over time and the shared classifier
head. Section 3.1's sentiment setup: 4 densely connected layers of 256 units, window 2,
dropout 0.3 between layers, L2 4e-6, batches of 24; with a bidirectional option. At
prediction the first layer's gate products are looked up per word (``projections``).

Padding is kept out: the QRNN masks its recurrence and the pooling skips padded steps, so a
text's logits are the same alone and in a padded batch.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ..nn import ClassifierHead, WordEmbedding, masked_max_pool
from ..nn.qrnn import QRNN
from ..registry import Options, TextClassifier, choice, register_model

# Section 3.1's sentiment training, and the small size the tests build, both shared by the LSTM
# baseline (``models/lstm.py``): the paper compares the two under one setup, at the same width
SENTIMENT_SETUP: dict[str, Any] = {
    "train_defaults": {"optimizer": "adam", "lr": 1e-3, "batch_size": 24, "epochs": 10, "weight_decay": 4e-6},
    "test_config": {"embed_dim": 8, "hidden": 6, "layers": 2, "bidirectional": True}}


@dataclass
class QRNNConfig(Options):
    embed_dim: int = 300
    hidden: int = 256
    layers: int = 4
    window: int = 2
    bidirectional: bool = False
    dense: bool = True            # densely connected layers (Section 3.1)
    dropout: float = 0.3          # between layers
    zoneout: float = 0.0
    pooling: str = choice("max", ("max", "last"), "max (masked max over time) or last (final state per direction)")
    head_dropout: float = 0.3


@register_model("qrnn", config=QRNNConfig, paper="Bradbury et al. 2017",
                description="quasi-recurrent network: convolutional gates + fo-pooling (optionally bidirectional)",
                **SENTIMENT_SETUP)
class QRNNClassifier(TextClassifier):
    def __init__(self, cfg: QRNNConfig, spec):
        super().__init__(cfg, spec)
        self.pooling, self.bidirectional, self.hidden = cfg.pooling, cfg.bidirectional, cfg.hidden
        self.embedding = WordEmbedding(spec, cfg.embed_dim)
        self.qrnn = QRNN(self.embedding.out_dim, cfg.hidden, cfg.layers, cfg.window, cfg.bidirectional,
                         cfg.dropout, cfg.zoneout, cfg.dense)
        self.head = ClassifierHead(self.qrnn.out_dim, spec.num_classes, cfg.head_dropout)

    def forward(self, batch) -> torch.Tensor:
        mask = batch.mask
        tables = self.projections() if not (self.training or torch.is_grad_enabled()) else None
        if tables is None:
            h = self.qrnn(self.embedding(batch.text), mask)               # [B, T, H or 2H]
        else:                       # prediction: the first layer's gate products looked up, not computed
            x = self.embedding(batch.text) if len(self.qrnn.layers) > 1 else None
            h = self.qrnn(x, mask, batch.text, tables)
        if self.pooling == "max":
            return self.head(masked_max_pool(h, mask))
        rows = torch.arange(h.shape[0], device=h.device)
        last = h[rows, (batch.lengths - 1).clamp_min(0), : self.hidden]  # forward: last valid step
        if self.bidirectional:
            last = torch.cat([last, h[:, 0, self.hidden:]], dim=-1)        # backward: first step
        return self.head(last)

    def projections(self) -> list | None:
        """Per direction, [vocabulary, k x 3H]: every word's vector times the first layer's gate
        weights at each of its k offsets (``WordEmbedding.projection_tables``); None where that would
        be too large."""
        first = self.qrnn.layer(0)
        directions = range(len(first.gates))
        return self.embedding.projection_tables([g.weight for g in first.gates],
                                                len(first.gates) * first.window * 3 * first.hidden,
                                                lambda: [first.offset_weights(d) for d in directions])
