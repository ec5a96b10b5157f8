"""Kim (2014), "Convolutional Neural Networks for Sentence Classification".

Section 2: each filter w of width h slides over the word vectors (Eq. 2,
c_i = f(w . x_{i:i+h-1} + b)), max-over-time pooling keeps its largest feature, the
pooled features of all filters go through dropout to a softmax layer whose weight
rows are held to L2 norm <= s (Section 2.1). Section 3.1 defaults: widths 3, 4, 5 with
100 filters each, ReLU, dropout 0.5, s = 3, mini-batch 50, Adadelta.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..data.batching import length_mask
from ..nn import ClassifierHead, WordEmbedding
from ..nn.adaptive import ConvFactory
from ..registry import TextClassifier, register_model


@dataclass
class KimCNNConfig:
    embed_dim: int = 300          # rand mode; pretrained vectors bring their own size
    widths: tuple = (3, 4, 5)
    filters: int = 100            # per width
    dropout: float = 0.5
    max_norm: float = 3.0
    wide: bool = False            # wide convolution (pad h-1 on both sides) instead of Kim's narrow one


class ConvMaxPool(nn.Module):
    """Parallel convolutions of several widths, ReLU, max over the valid windows.

    ``factory`` builds the convolutions: static ones by default; adaptive ones (Choi et al.
    2019) generate the filters of every width from one context vector of the input."""

    def __init__(self, in_dim: int, widths, filters: int, wide: bool = False, factory: ConvFactory | None = None):
        super().__init__()
        factory = factory or ConvFactory()
        self.widths, self.wide = tuple(widths), wide
        self.context = factory.context(in_dim)
        self.convs = nn.ModuleList(factory.conv(in_dim, filters, h, (h - 1) if wide else 0, self.context)
                                   for h in self.widths)

    @property
    def out_dim(self) -> int:
        return sum(c.out_channels for c in self.convs)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        ctx = self.context(x, length_mask(lengths, x.shape[1])) if self.context is not None else None
        x = x.transpose(1, 2)                                      # [B, D, T]
        pooled = []
        for h, conv in zip(self.widths, self.convs):
            c = torch.relu(conv(x, context=ctx))                   # [B, F, T -/+ h - 1]
            # windows lying wholly in the padding are masked, so a text's features do not
            # depend on how long the other texts of its batch are; a text shorter than h
            # keeps its one (zero-padded) window
            valid = (lengths + h - 1) if self.wide else (lengths - h + 1).clamp_min(1)
            keep = torch.arange(c.shape[2], device=c.device)[None, :] < valid[:, None]
            pooled.append(c.masked_fill(~keep[:, None, :], float("-inf")).amax(dim=2))
        return torch.cat(pooled, dim=1)


@register_model("kim_cnn", config=KimCNNConfig, paper="Kim 2014",
                description="CNN with max-over-time pooling (rand / static / non-static / multichannel)",
                train_defaults={"optimizer": "adadelta", "lr": 1.0, "batch_size": 50, "epochs": 25},
                test_config={"embed_dim": 16, "filters": 4}, paper_params={"-": 0.4})
class KimCNN(TextClassifier):
    min_length = 5

    def __init__(self, cfg: KimCNNConfig, spec, factory: ConvFactory | None = None):
        super().__init__(cfg, spec)
        self.min_length = max(cfg.widths)
        self.embedding = WordEmbedding(spec, cfg.embed_dim)
        self.features = ConvMaxPool(self.embedding.out_dim, cfg.widths, cfg.filters, cfg.wide, factory)
        self.head = ClassifierHead(self.features.out_dim, spec.num_classes, cfg.dropout, cfg.max_norm)

    def forward(self, batch) -> torch.Tensor:
        x = self.embedding(batch.text)
        return self.head(self.features(x, batch.lengths))

    def apply_constraints(self) -> None:
        self.head.apply_constraints()
