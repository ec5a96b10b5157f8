"""Kim (2014), "Convolutional Neural Networks for Sentence Classification".

Section 2: each filter w of width h slides over the word vectors (Eq. 2,
c_i = f(w . x_{i:i+h-1} + b)), max-over-time pooling keeps its largest feature, the
pooled features of all filters go through dropout to a softmax layer whose weight
rows are held to L2 norm <= s (Section 2.1). Section 3.1 defaults: widths 3, 4, 5 with
100 filters each, ReLU, dropout 0.5, s = 3, mini-batch 50, Adadelta.

Prediction uses the linearity of the first layer: a filter's response to a window is the sum,
over its offsets j, of w_j . x_{i+j}, and every x is one of the vocabulary's word vectors. So at
inference each word's products with every filter offset are computed once (a table of
vocabulary x sum(h) x filters numbers) and a convolution becomes a lookup and a sum of shifted
columns: the same features without the matrix products.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from ..data.batching import length_mask
from ..nn import ClassifierHead, WordEmbedding
from ..nn.adaptive import AdaptiveConv1d, ConvFactory, StaticConv1d
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

    def _layers(self) -> list[StaticConv1d | AdaptiveConv1d]:
        """``convs`` as a ``ConvFactory`` builds them: static or adaptive convolutions."""
        layers = [c for c in self.convs if isinstance(c, (StaticConv1d, AdaptiveConv1d))]
        assert len(layers) == len(self.convs), "a ConvFactory builds static or adaptive convolutions"
        return layers

    def _static(self) -> list[StaticConv1d]:
        """``convs`` of a ``projectable`` layer: static convolutions, whose weights are projected."""
        static = [c for c in self.convs if isinstance(c, StaticConv1d)]
        assert len(static) == len(self.convs), "only static filters are projected"
        return static

    @property
    def out_dim(self) -> int:
        return sum(c.out_channels for c in self._layers())

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        ctx = self.context(x, length_mask(lengths, x.shape[1])) if self.context is not None else None
        x = x.transpose(1, 2)                                      # [B, D, T]
        return torch.cat([max_over_windows(torch.relu(conv(x, context=ctx)), lengths, h, self.wide, time_dim=2)
                          for h, conv in zip(self.widths, self.convs)], dim=1)

    @property
    def projectable(self) -> bool:
        """Static narrow filters: their responses can be summed from per-word projections."""
        return self.context is None and not self.wide

    @property
    def offset_rows(self) -> int:
        return sum(h * conv.out_channels for h, conv in zip(self.widths, self._layers()))

    def offset_weights(self) -> torch.Tensor:
        """[sum(h) x F, D]: row j F + f of width h's block is filter f's weights at offset j."""
        return torch.cat([conv.weight.permute(2, 0, 1).reshape(-1, conv.in_channels) for conv in self._static()])

    def from_projections(self, y: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """``forward``'s features from y [B, T, sum(h) x F], each position's word projected on
        ``offset_weights``: width h's response at i is its bias plus sum_j y[i + j, block j]."""
        pooled, start = [], 0
        for h, conv in zip(self.widths, self._static()):
            n, f = y.shape[1] - h + 1, conv.out_channels
            assert conv.bias is not None, "a ConvFactory's static convolutions have a bias"
            c = y[:, :n, start:start + f] + conv.bias
            for j in range(1, h):
                c = c + y[:, j:j + n, start + j * f:start + (j + 1) * f]
            pooled.append(max_over_windows(torch.relu(c), lengths, h, wide=False, time_dim=1))
            start += h * f
        return torch.cat(pooled, dim=1)


def max_over_windows(c: torch.Tensor, lengths: torch.Tensor, h: int, wide: bool, time_dim: int) -> torch.Tensor:
    """Max over time of c ([B, F, windows] or [B, windows, F]: ``time_dim`` 2 or 1). Windows lying
    wholly in the padding are masked, so a text's features do not depend on how long the other
    texts of its batch are; a text shorter than h keeps its one (zero-padded) window."""
    valid = (lengths + h - 1) if wide else (lengths - h + 1).clamp_min(1)
    keep = torch.arange(c.shape[time_dim], device=c.device)[None, :] < valid[:, None]
    return c.masked_fill(~keep.unsqueeze(3 - time_dim), float("-inf")).amax(dim=time_dim)


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
        table = self.projections() if not (self.training or torch.is_grad_enabled()) else None
        if table is not None:                   # inference: the filters' products looked up, not computed
            return self.head(self.features.from_projections(F.embedding(batch.text, table), batch.lengths))
        return self.head(self.features(self.embedding(batch.text), batch.lengths))

    def projections(self) -> torch.Tensor | None:
        """[vocabulary, sum(h) x F]: every word's vector (all channels) times every filter offset
        (``WordEmbedding.projection_tables``); None where the filters are adaptive or wide, or the
        table would be too large."""
        if not self.features.projectable:
            return None
        tables = self.embedding.projection_tables([conv.weight for conv in self.features.convs],
                                                  self.features.offset_rows, lambda: [self.features.offset_weights()])
        return tables[0] if tables else None

    def apply_constraints(self) -> None:
        self.head.apply_constraints()
