"""Wu et al. (2019), "Pay Less Attention with Lightweight and Dynamic Convolutions", Sections 3-5.

Two comparison encoders for the convolutions whose parameters depend on the input, ``lightconv``
and ``dynamicconv``: the word embeddings, a stack of the encoder blocks of
``adaptext.nn.lightconv`` at a small size (the paper's kernel widths grow with depth), a max
pooling over time and the shared classifier head. They differ only in how the kernels are made:
softmax-normalised depthwise kernels shared by heads (Section 3), or a kernel predicted at every
position (Section 4).

The blocks zero padded steps before each convolution (``adaptext.nn.lightconv``) and the max
pooling skips them: a text gets the same logits alone as inside a padded batch.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from ..nn import ClassifierHead, WordEmbedding, masked_max_pool
from ..nn.lightconv import LightConvBlock
from ..registry import TextClassifier, register_model


@dataclass
class LightConvConfig:
    embed_dim: int = 300
    dim: int = 256
    heads: int = 4
    kernel_sizes: tuple = (3, 7, 15)     # one block per width, growing with depth as in the paper
    ffn_dim: int = 512
    dropout: float = 0.1
    weight_dropout: float = 0.1
    head_dropout: float = 0.5


class _ConvEncoder(TextClassifier):
    dynamic = False

    def __init__(self, cfg: LightConvConfig, spec):
        super().__init__(cfg, spec)
        self.embedding = WordEmbedding(spec, cfg.embed_dim)
        self.project = (nn.Linear(self.embedding.out_dim, cfg.dim) if self.embedding.out_dim != cfg.dim
                        else nn.Identity())
        self.blocks = nn.ModuleList(LightConvBlock(cfg.dim, k, cfg.heads, self.dynamic, cfg.ffn_dim, cfg.dropout,
                                                   cfg.weight_dropout) for k in cfg.kernel_sizes)
        self.head = ClassifierHead(cfg.dim, spec.num_classes, cfg.head_dropout)

    def forward(self, batch) -> torch.Tensor:
        mask = batch.mask
        x = self.project(self.embedding(batch.text))                      # [B, T, D]
        for block in self.blocks:
            x = block(x, mask)
        return self.head(masked_max_pool(x, mask))


# Wu et al.'s two encoders differ only in how the kernels are made
_LIGHT: dict[str, Any] = {"config": LightConvConfig, "paper": "Wu et al. 2019",
          "train_defaults": {"optimizer": "adam", "lr": 5e-4, "batch_size": 50, "epochs": 10},
          "test_config": {"embed_dim": 8, "dim": 8, "heads": 2, "kernel_sizes": (3, 5), "ffn_dim": 8}}


@register_model("lightconv", **_LIGHT,
                description="lightweight convolution encoder: softmax-normalised depthwise kernels shared by heads")
class LightConvEncoder(_ConvEncoder):
    dynamic = False


@register_model("dynamicconv", **_LIGHT, description="dynamic convolution encoder: a kernel predicted at every position")
class DynamicConvEncoder(_ConvEncoder):
    dynamic = True
