"""The bag-of-vectors baseline: the mean of the word vectors, then a small MLP.

The simplest of the comparison encoders for the convolutions whose parameters depend on the
input: word order is not read at all. The mean skips padded steps, so a text's logits are the
same alone and in a padded batch.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..nn import ClassifierHead, WordEmbedding, masked_mean_pool
from ..registry import TextClassifier, register_model


@dataclass
class BOVConfig:
    embed_dim: int = 300
    hidden: int = 256
    dropout: float = 0.5


@register_model("bov", config=BOVConfig, paper="bag of vectors baseline",
                description="mean of the word vectors, then a one-hidden-layer MLP",
                train_defaults={"optimizer": "adam", "lr": 1e-3, "batch_size": 50, "epochs": 10},
                test_config={"embed_dim": 8, "hidden": 6})
class BagOfVectors(TextClassifier):
    def __init__(self, cfg: BOVConfig, spec):
        super().__init__(cfg, spec)
        self.embedding = WordEmbedding(spec, cfg.embed_dim)
        self.hidden = nn.Sequential(nn.Linear(self.embedding.out_dim, cfg.hidden), nn.ReLU())
        self.head = ClassifierHead(cfg.hidden, spec.num_classes, cfg.dropout)

    def forward(self, batch) -> torch.Tensor:
        x = masked_mean_pool(self.embedding(batch.text), batch.mask)        # [B, E]
        return self.head(self.hidden(x))
