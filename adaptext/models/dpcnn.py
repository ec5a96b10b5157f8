"""Johnson & Zhang (2017), "Deep Pyramid Convolutional Neural Networks for Text
Categorization" (ACL), as reproduced without region embedding by Choi et al. (2019).

Section 2 of Johnson & Zhang: convolutions of width 3 with "same" padding and a fixed number
of feature maps; blocks of two convolutions, each preceded by its activation
(pre-activation, W sigma(x) + b), with a shortcut z + f(z); between blocks, max-pooling with
size 3 and stride 2 halves the length (the "pyramid"); after the last block, max-pooling
over the whole text and a linear classifier. "Depth" counts the weight layers: depth - 1
convolutions in (depth - 1) / 2 blocks, plus the classifier (11 by default, 9 for AG-size
inputs). Choi et al. feed word embeddings straight in (no unsupervised region embedding)
and use 100 feature maps: the first block's first convolution maps the embeddings to 100
channels and its shortcut starts after it.

``DPCNN(cfg, spec, factory)`` builds its convolutions through a ``ConvFactory``
(adaptext.nn.adaptive); ``ac_dpcnn`` is this class with adaptive convolutions, each block
generating its two convolutions' filters from the block's own input.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..data.batching import length_mask
from ..nn import ClassifierHead, WordEmbedding, masked_max_pool
from ..nn.adaptive import ConvFactory
from ..registry import TextClassifier, register_model


@dataclass
class DPCNNConfig:
    embed_dim: int = 300
    filters: int = 100            # feature maps per convolution (Choi et al.; 250 in Johnson & Zhang)
    width: int = 3
    depth: int = 11               # weight layers: depth - 1 convolutions + the classifier (9 for AG)
    dropout: float = 0.5


def _zero_pad(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Zero the positions past each text's end (x [B, C, T], mask [B, T]): the next
    convolution then sees the text exactly as if it were alone, zero padded."""
    return x * mask[:, None, :].to(x.dtype)


def downsample(x: torch.Tensor, lengths: torch.Tensor):
    """Max-pooling of size 3, stride 2 over the valid positions: [B, C, T] -> [B, C, ceil(T/2)],
    lengths -> ceil(lengths / 2) (what the text alone would give)."""
    x = x.masked_fill(~length_mask(lengths, x.shape[2])[:, None, :], float("-inf"))
    y = F.max_pool1d(x, kernel_size=3, stride=2, padding=1)
    lengths = (lengths + 1) // 2
    return _zero_pad(y.nan_to_num(0.0, neginf=0.0), length_mask(lengths, y.shape[2])), lengths


class DPCNNBlock(nn.Module):
    """Two convolutions with pre-activation and a shortcut; blocks after the first begin
    with the stride-2 downsampling. One context per block for adaptive factories."""

    def __init__(self, in_dim: int, filters: int, width: int, factory: ConvFactory, first: bool):
        super().__init__()
        self.first = first
        self.context = factory.context(in_dim)
        pad = (width - 1) // 2
        self.conv_a = factory.conv(in_dim, filters, width, pad, self.context)
        self.conv_b = factory.conv(filters, filters, width, pad, self.context)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor):
        # x [B, C, T] with zeros past each text
        if not self.first:
            x, lengths = downsample(x, lengths)
        mask = length_mask(lengths, x.shape[2])
        c = self.context(x.transpose(1, 2), mask) if self.context is not None else None
        if self.first:
            z = _zero_pad(self.conv_a(x, context=c), mask)                      # embeddings -> F channels
            h = z
        else:
            z = x
            h = _zero_pad(self.conv_a(torch.relu(z), context=c), mask)         # W sigma(z) + b
        h = self.conv_b(torch.relu(h), context=c)
        return _zero_pad(z + h, mask), lengths                                  # shortcut


@register_model("dpcnn", config=DPCNNConfig, paper="Johnson & Zhang 2017",
                description="deep pyramid CNN: pre-activation residual blocks, stride-2 downsampling",
                train_defaults={"optimizer": "adam", "lr": 1e-3, "batch_size": 64, "epochs": 20},
                test_config={"embed_dim": 16, "filters": 8, "depth": 7}, paper_params={"-": 3.1})
class DPCNN(TextClassifier):
    def __init__(self, cfg: DPCNNConfig, spec, factory: ConvFactory | None = None):
        super().__init__(cfg, spec)
        if cfg.depth < 3 or cfg.depth % 2 == 0:
            raise ValueError(f"depth counts weight layers (2 per block + the classifier): an odd number >= 3, "
                             f"not {cfg.depth}")
        if cfg.width % 2 == 0:
            raise ValueError(f"width must be odd for 'same' convolutions, not {cfg.width}")
        factory = factory or ConvFactory()
        self.embedding = WordEmbedding(spec, cfg.embed_dim)
        n_blocks = (cfg.depth - 1) // 2
        dims = [self.embedding.out_dim] + [cfg.filters] * (n_blocks - 1)
        self.blocks = nn.ModuleList(DPCNNBlock(d, cfg.filters, cfg.width, factory, first=(i == 0))
                                    for i, d in enumerate(dims))
        self.head = ClassifierHead(cfg.filters, spec.num_classes, cfg.dropout)

    def forward(self, batch) -> torch.Tensor:
        x = self.embedding(batch.text).transpose(1, 2)                  # [B, D, T]
        lengths = batch.lengths.clamp_min(1)
        for block in self.blocks:
            x, lengths = block(x, lengths)                               # [B, F, T / 2^i]
        pooled = masked_max_pool(x.transpose(1, 2), length_mask(lengths, x.shape[2]))   # [B, F]
        return self.head(pooled)
