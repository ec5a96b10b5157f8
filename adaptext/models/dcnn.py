"""Kalchbrenner et al. (2014), "A Convolutional Neural Network for Modelling Sentences", Section 3.

A comparison encoder for the convolutions whose parameters depend on the input: wide
one-dimensional convolutions applied to each row of the sentence matrix (Eq. 1-2, feature maps
summed over the previous layer's maps, Eq. 6), dynamic k-max pooling with
k_l = max(k_top, ceil((L - l) / L * s)) (Eq. 5), bias and tanh after the pooling, folding (sum
of every two rows) in the last layer, then a fully connected softmax layer. Section 5.1/5.2
setup: d = 48, widths 7 and 5, 6 and 14 feature maps, k_top = 4, dropout on the penultimate
layer, Adagrad. ``wide=False`` gives narrow convolutions instead.

Padding is kept out: inputs are zeroed at padded steps before each convolution and k-max
pooling chooses among the valid steps only, so a text's logits are the same alone and in a
padded batch.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..nn import ClassifierHead, WordEmbedding
from ..registry import TextClassifier, register_model


def dynamic_k(lengths: torch.Tensor, layer: int, num_layers: int, k_top: int) -> torch.Tensor:
    """Eq. 5: k_l = max(k_top, ceil((L - l) / L * s)) for layer l of L, sentence length s."""
    if layer >= num_layers:
        return torch.full_like(lengths, k_top)
    k = torch.div((num_layers - layer) * lengths + num_layers - 1, num_layers, rounding_mode="floor")
    return k.clamp_min(k_top)


def kmax_pool(x: torch.Tensor, lengths: torch.Tensor, k: torch.Tensor):
    """k-max pooling: per text b and channel, the k[b] largest values among its first
    lengths[b] steps, in their original order. x [B, C, T] -> ([B, C, max k], kept [B]);
    steps past a text's k are 0. k is clamped to [1, length]."""
    B, C, T = x.shape
    k = torch.minimum(k, lengths).clamp_min(1)
    kmax = int(k.max())
    steps = torch.arange(T, device=x.device)
    scores = x.masked_fill(~(steps[None, :] < lengths[:, None])[:, None, :], float("-inf"))
    idx = scores.topk(kmax, dim=-1).indices                            # [B, C, kmax], by value
    chosen = (torch.arange(kmax, device=x.device)[None, :] < k[:, None])[:, None, :]
    idx = torch.where(chosen, idx, T).sort(dim=-1).values              # original order; unchosen last
    out = x.gather(-1, idx.clamp_max(T - 1)) * chosen.to(x.dtype)
    return out, k


class DCNNLayer(nn.Module):
    """Row-wise wide (or narrow) convolution, optional folding, dynamic k-max pooling, bias,
    tanh. x [B, rows, maps, T] -> [B, rows (/2 if fold), out_maps, k]."""

    def __init__(self, rows: int, in_maps: int, out_maps: int, width: int, fold: bool, wide: bool = True):
        super().__init__()
        if fold and rows % 2:
            raise ValueError(f"folding needs an even number of rows, not {rows}")
        self.rows, self.out_maps, self.width, self.fold, self.wide = rows, out_maps, width, fold, wide
        # groups = rows: each row of the sentence matrix is convolved on its own (Eq. 1);
        # map j of this layer sums the convolutions of all maps of the previous one (Eq. 6)
        self.conv = nn.Conv1d(rows * in_maps, rows * out_maps, width, groups=rows, bias=False)
        self.bias = nn.Parameter(torch.zeros(rows // 2 if fold else rows, out_maps, 1))

    def forward(self, x: torch.Tensor, lengths: torch.Tensor, k: torch.Tensor):
        B, R, M, T = x.shape
        steps = torch.arange(T, device=x.device)
        x = x * (steps[None, :] < lengths[:, None])[:, None, None, :].to(x.dtype)
        x = x.reshape(B, R * M, T)
        if self.wide:
            x = F.pad(x, (self.width - 1, self.width - 1))
            lengths = lengths + self.width - 1
        else:
            x = F.pad(x, (0, max(0, self.width - T)))
            lengths = (lengths - self.width + 1).clamp_min(1)
        c = self.conv(x).view(B, R, self.out_maps, -1)                    # [B, R, M', T']
        if self.fold:
            c = c.view(B, R // 2, 2, self.out_maps, -1).sum(2)              # folding: rows 2i + 2i+1
        Rn = c.shape[1]
        pooled, k = kmax_pool(c.reshape(B, Rn * self.out_maps, -1), lengths, k)
        h = torch.tanh(pooled.view(B, Rn, self.out_maps, -1) + self.bias)
        h = h * (torch.arange(h.shape[-1], device=h.device)[None, :] < k[:, None])[:, None, None, :].to(h.dtype)
        return h, k


@dataclass
class DCNNConfig:
    embed_dim: int = 48
    widths: tuple = (7, 5)
    maps: tuple = (6, 14)
    k_top: int = 4
    wide: bool = True             # False: narrow convolutions (no h-1 padding)
    dropout: float = 0.5


@register_model("dcnn", config=DCNNConfig, paper="Kalchbrenner et al. 2014",
                description="dynamic CNN: wide row-wise convolutions, dynamic k-max pooling, folding",
                train_defaults={"optimizer": "adagrad", "lr": 0.05, "batch_size": 50, "epochs": 15,
                                "weight_decay": 1e-4},
                test_config={"embed_dim": 8, "maps": (2, 3)})
class DCNN(TextClassifier):
    def __init__(self, cfg: DCNNConfig, spec):
        super().__init__(cfg, spec)
        if len(cfg.widths) != len(cfg.maps):
            raise ValueError("widths and maps need one entry per layer")
        self.k_top, self.num_layers = cfg.k_top, len(cfg.widths)
        self.min_length = 1 if cfg.wide else cfg.widths[0]
        self.embedding = WordEmbedding(spec, cfg.embed_dim)
        rows, in_maps = self.embedding.out_dim, 1
        self.layers = nn.ModuleList()
        for i, (w, m) in enumerate(zip(cfg.widths, cfg.maps)):
            fold = i + 1 == len(cfg.widths)                             # folding in the last layer
            self.layers.append(DCNNLayer(rows, in_maps, m, w, fold, cfg.wide))
            rows, in_maps = (rows // 2 if fold else rows), m
        self.head = ClassifierHead(rows * in_maps * cfg.k_top, spec.num_classes, cfg.dropout)

    def forward(self, batch) -> torch.Tensor:
        s = batch.lengths
        x = self.embedding(batch.text).transpose(1, 2)[:, :, None, :]     # [B, d, 1, T]: d rows, 1 map
        lengths = s
        for l, layer in enumerate(self.layers, start=1):
            x, lengths = layer(x, lengths, dynamic_k(s, l, self.num_layers, self.k_top))
        x = F.pad(x, (0, self.k_top - x.shape[-1]))                      # a text shorter than k_top
        return self.head(x.flatten(1))                                    # [B, rows * maps * k_top]
