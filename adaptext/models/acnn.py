"""Shen, Min, Li & Carin (2018), "Learning Context-Sensitive Convolutional Filters for Text
Processing" (EMNLP): the adaptive CNN (ACNN) that Choi et al. (2019) compare against.

Section 3.1: a small meta network, the filter generation module, abstracts the input text
into its own set of filters, once: a convolutional encoder reads the word embeddings, its
feature maps are pooled to the filter width h, and a deconvolution (here of kernel 1, the
same linear map at each of the h pooled positions) turns the pooled encoding [m, h] into K
filters of size d x h. Section 3.2: the adaptive convolution module convolves the same word
embeddings with those generated filters, max-pools over time and classifies. Unlike Choi et
al.'s adaptive convolution there is no recurrent context and only one generated layer.

Our reading of the sizes: K = 100 generated filters of width h = 5, an encoder of m = 100
width-3 filters; the pooling to h positions splits each text's own length into h regions,
so a text's filters do not depend on the other texts of its batch.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..data.batching import length_mask
from ..nn import ClassifierHead, WordEmbedding
from ..nn.adaptive import conv1d_per_sample
from ..registry import TextClassifier, register_model


@dataclass
class ACNNConfig:
    embed_dim: int = 300
    filters: int = 100            # K generated filters
    width: int = 5                # h, width of the generated filters
    encoder_filters: int = 100    # m, feature maps of the generator's encoder
    encoder_width: int = 3
    dropout: float = 0.5


def region_max_pool(x: torch.Tensor, lengths: torch.Tensor, regions: int) -> torch.Tensor:
    """Adaptive max-pooling of x [B, C, T] to [B, C, regions] over each text's own length:
    region j of a text of length L covers positions floor(jL/r) .. ceil((j+1)L/r) - 1."""
    T = x.shape[2]
    j = torch.arange(regions, device=x.device)[None, :]                      # [1, r]
    L = lengths[:, None]
    start = torch.div(j * L, regions, rounding_mode="floor")
    end = torch.div((j + 1) * L + regions - 1, regions, rounding_mode="floor")
    t = torch.arange(T, device=x.device)[None, None, :]
    member = (t >= start[..., None]) & (t < end[..., None])                  # [B, r, T]
    y = x[:, :, None, :].masked_fill(~member[:, None], float("-inf"))         # [B, C, r, T]
    return y.amax(dim=3)


class FilterGenerationModule(nn.Module):
    """The meta network: encoder conv -> pooling to h positions -> deconvolution -> K filters."""

    def __init__(self, in_dim: int, filters: int, width: int, encoder_filters: int, encoder_width: int):
        super().__init__()
        self.filters, self.width, self.in_dim = filters, width, in_dim
        self.encoder = nn.Conv1d(in_dim, encoder_filters, encoder_width, padding=(encoder_width - 1) // 2)
        self.deconv = nn.ConvTranspose1d(encoder_filters, filters * in_dim, kernel_size=1)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        # x [B, D, T] with zeros past each text
        z = torch.relu(self.encoder(x))                                       # [B, m, T]
        z = region_max_pool(z, lengths, self.width)                           # [B, m, h]
        f = self.deconv(z)                                                    # [B, K * D, h]
        return f.view(x.shape[0], self.filters, self.in_dim, self.width)      # [B, K, D, h]


@register_model("acnn", config=ACNNConfig, paper="Shen et al. 2018",
                description="ACNN baseline: one set of filters generated from the word embeddings by a meta network",
                train_defaults={"optimizer": "adam", "lr": 1e-3, "batch_size": 64, "epochs": 20},
                test_config={"embed_dim": 16, "filters": 4, "width": 3, "encoder_filters": 6})
class ACNN(TextClassifier):
    def __init__(self, cfg: ACNNConfig, spec):
        super().__init__(cfg, spec)
        self.min_length = max(cfg.width, cfg.encoder_width)
        self.width = cfg.width
        self.embedding = WordEmbedding(spec, cfg.embed_dim)
        d = self.embedding.out_dim
        self.generator = FilterGenerationModule(d, cfg.filters, cfg.width, cfg.encoder_filters, cfg.encoder_width)
        self.bias = nn.Parameter(torch.zeros(cfg.filters))
        self.head = ClassifierHead(cfg.filters, spec.num_classes, cfg.dropout)

    def forward(self, batch) -> torch.Tensor:
        x = self.embedding(batch.text).transpose(1, 2)                       # [B, D, T]
        lengths = batch.lengths.clamp_min(1)
        f = self.generator(x, lengths)                                        # [B, K, D, h]
        y = torch.relu(conv1d_per_sample(x, f, self.bias))                    # [B, K, T - h + 1]
        valid = (lengths - self.width + 1).clamp_min(1)                       # a short text keeps one window
        keep = length_mask(valid, y.shape[2])
        return self.head(y.masked_fill(~keep[:, None, :], float("-inf")).amax(dim=2))
