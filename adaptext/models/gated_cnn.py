"""Dauphin et al. (2017), "Language Modeling with Gated Convolutional Networks", Section 2.

A comparison encoder for the convolutions whose parameters depend on the input: gated linear
units h(X) = (X * W + b) . sigmoid(X * V + c) (Eq. 1) stacked in residual blocks over the word
embeddings, a max pooling over time and the shared classifier head. For classification the
convolutions see both sides (an option makes them causal as in the language model).

Padding is kept out: inputs are zeroed at padded steps before each convolution (so
right-padding looks like the convolution's own zero padding) and the pooling skips padded
steps, so a text's logits are the same alone and in a padded batch.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

from ..nn import ClassifierHead, WordEmbedding, masked_max_pool
from ..registry import TextClassifier, register_model


@dataclass
class GatedCNNConfig:
    embed_dim: int = 300
    channels: int = 256
    width: int = 5
    blocks: int = 3               # residual blocks
    block_layers: int = 2         # GLU convolutions per block
    causal: bool = False          # True: the language model's convolutions (see only the past)
    dropout: float = 0.5


class GLUConv(nn.Module):
    """(X * W + b) . sigmoid(X * V + c) over x [B, C, T] (Eq. 1); padded steps zeroed first."""

    def __init__(self, in_dim: int, out_dim: int, width: int, causal: bool):
        super().__init__()
        left = width - 1 if causal else (width - 1) // 2
        self.pads = (left, width - 1 - left)
        self.conv = nn.Conv1d(in_dim, 2 * out_dim, width)

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        return F.glu(self.conv(F.pad(x * keep, self.pads)), dim=1)


@register_model("gated_cnn", config=GatedCNNConfig, paper="Dauphin et al. 2017",
                description="gated convolutional network: residual blocks of gated linear units, max pool",
                train_defaults={"optimizer": "adam", "lr": 1e-3, "batch_size": 50, "epochs": 10},
                test_config={"embed_dim": 8, "channels": 6, "blocks": 2})
class GatedCNN(TextClassifier):
    def __init__(self, cfg: GatedCNNConfig, spec):
        super().__init__(cfg, spec)
        self.embedding = WordEmbedding(spec, cfg.embed_dim)
        self.first = GLUConv(self.embedding.out_dim, cfg.channels, cfg.width, cfg.causal)
        self.blocks = nn.ModuleList(
            nn.ModuleList(GLUConv(cfg.channels, cfg.channels, cfg.width, cfg.causal) for _ in range(cfg.block_layers))
            for _ in range(cfg.blocks))
        self.head = ClassifierHead(cfg.channels, spec.num_classes, cfg.dropout)

    def forward(self, batch) -> torch.Tensor:
        mask = batch.mask
        keep = mask[:, None, :].to(torch.float32)                         # [B, 1, T]
        x = self.first(self.embedding(batch.text).transpose(1, 2), keep)   # [B, C, T]
        for block in self.blocks:
            h = x
            for layer in cast(nn.ModuleList, block):                     # blocks: ModuleLists of GLUConv
                h = layer(h, keep)
            x = x + h                                                     # residual block
        return self.head(masked_max_pool(x.transpose(1, 2), mask))
