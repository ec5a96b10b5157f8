"""Layers of the fully convolutional classifier of Anderson (2018), "Fully Convolutional
Networks for Text Classification" (arXiv 1902.05575), Section 2.

- ``CausalConv1d``: position t sees only positions <= t (left padding (k-1) x dilation),
  so right-padding never reaches a valid position.
- ``DilatedResidualBlock``: a causal dilated convolution, local response normalisation
  then ReLU as the activation, spatial dropout (whole channels); the block's output adds a
  linear (width-1) projection of its input (the residual) and it emits the activation as a
  skip output. The stack uses dilations 1, 2, 4, ... so 9 layers of width 7 see 1 + 6 x 511
  past steps.
- The attention variants placed between the last convolution and the pooling:
  ``ScaledDotAttention`` (Vaswani et al., 1 or 8 heads, padded keys masked) and
  ``SimplifiedAttention``: a linear map of each step gives scores, a softmax over the valid
  time steps turns each channel's scores into weights, and the weights are multiplied
  element-wise into the values (the input); ``width > 1`` makes the map a causal
  convolution (the "local" variant); with several heads each head has its own map and a
  linear layer merges the heads.
- The pooling heads: masked global max over time, a GRU over the final sequence (its state
  at the last valid step), or strided causal convolutions before a smaller max pool.

All layers here work channels-last, x [B, T, C], with mask [B, T] (True = a real step).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .head import masked_max_pool


class CausalConv1d(nn.Conv1d):
    """Conv1d over [B, C, T] with left padding only: output t depends on inputs <= t."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, dilation: int = 1, stride: int = 1,
                 bias: bool = True):
        super().__init__(in_channels, out_channels, kernel_size, stride=stride, dilation=dilation, bias=bias)
        self.left = (kernel_size - 1) * dilation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(F.pad(x, (self.left, 0)))


class DilatedResidualBlock(nn.Module):
    """x [B, C, T] -> (out [B, C, T], skip [B, C, T])."""

    def __init__(self, channels: int, kernel_size: int = 7, dilation: int = 1, dropout: float = 0.1,
                 lrn_size: int = 5, residual: bool = True):
        super().__init__()
        self.conv = CausalConv1d(channels, channels, kernel_size, dilation)
        # LRN across channels at each step (the paper gives no constants; AlexNet's are used)
        self.norm = nn.LocalResponseNorm(lrn_size, alpha=1e-4, beta=0.75, k=2.0)
        self.dropout = nn.Dropout1d(dropout)              # spatial dropout: whole channels
        # linear projection of the input; the last block of a stack feeds only its skip output
        self.residual = nn.Conv1d(channels, channels, 1) if residual else None

    def forward(self, x: torch.Tensor):
        h = self.dropout(torch.relu(self.norm(self.conv(x))))
        return (h + self.residual(x) if self.residual is not None else h), h


class DilatedStack(nn.Module):
    """``layers`` residual blocks with dilations 1, 2, 4, ...; returns the last output and
    the sum of the skip outputs, both [B, C, T]. The classifier reads the skips only, so
    the last block has no residual projection (it would receive no gradient)."""

    def __init__(self, channels: int, kernel_size: int = 7, layers: int = 9, dropout: float = 0.1):
        super().__init__()
        self.blocks = nn.ModuleList(DilatedResidualBlock(channels, kernel_size, 2 ** i, dropout,
                                                         residual=i + 1 < layers) for i in range(layers))

    def forward(self, x: torch.Tensor):
        skips = 0
        for block in self.blocks:
            x, s = block(x)
            skips = skips + s
        return x, skips


def _valid_keys(mask: torch.Tensor) -> torch.Tensor:
    # an empty text keeps its first step as a key, so its softmax has something to weigh
    first = torch.zeros_like(mask)
    first[:, 0] = True
    return mask | first


class ScaledDotAttention(nn.Module):
    """Multi-head scaled dot-product self-attention, x [B, T, D] -> [B, T, D]; padded keys
    take no weight, so a valid step's output does not depend on the padding."""

    def __init__(self, dim: int, heads: int = 1, head_dim: int = 16):
        super().__init__()
        self.heads, self.head_dim = heads, head_dim
        self.qkv = nn.Linear(dim, 3 * heads * head_dim)
        self.out = nn.Linear(heads * head_dim, dim)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)  # [B, h, T, dh]
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)                           # [B, h, T, T]
        scores = scores.masked_fill(~_valid_keys(mask)[:, None, None, :], float("-inf"))
        a = scores.softmax(dim=-1)
        y = (a @ v).transpose(1, 2).reshape(B, T, self.heads * self.head_dim)
        return self.out(y)


class SimplifiedAttention(nn.Module):
    """Anderson's simplified attention: weights = softmax over time of a map of x, multiplied
    element-wise into x. ``width`` 1: a linear map ("simplified"); ``width`` > 1: a causal
    convolution ("local"). x [B, T, D] -> [B, T, D]. The weights sum to 1 over a text's steps,
    so with one head (no merge layer) the max-pooled scores shrink roughly as 1/T on long texts."""

    def __init__(self, dim: int, heads: int = 1, width: int = 1):
        super().__init__()
        self.heads, self.dim = heads, dim
        self.score = CausalConv1d(dim, heads * dim, width)
        self.merge = nn.Linear(heads * dim, dim) if heads > 1 else None

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        B, T, D = x.shape
        x = x * mask[..., None].to(x.dtype)
        s = self.score(x.transpose(1, 2)).view(B, self.heads, D, T)           # [B, h, D, T]
        s = s.masked_fill(~_valid_keys(mask)[:, None, None, :], float("-inf"))
        a = s.softmax(dim=-1)                                                  # over time, per channel
        y = a * x.transpose(1, 2)[:, None]                                     # element-wise into values
        y = y.permute(0, 3, 1, 2).reshape(B, T, self.heads * D)
        return self.merge(y) if self.merge is not None else y


def make_attention(kind: str, dim: int, heads: int = 1, head_dim: int = 16, local_width: int = 3):
    """none | scaled-dot | simplified | local -> a module (x, mask) -> x, or None."""
    if kind == "none":
        return None
    if kind == "scaled-dot":
        return ScaledDotAttention(dim, heads, head_dim)
    if kind == "simplified":
        return SimplifiedAttention(dim, heads, 1)
    if kind == "local":
        return SimplifiedAttention(dim, heads, local_width)
    raise ValueError(f"attention must be none, scaled-dot, simplified or local, not {kind!r}")


class MaxPoolHead(nn.Module):
    """Global max over the valid steps: [B, T, C] -> [B, C]."""

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return masked_max_pool(x, mask)


class GRUHead(nn.Module):
    """A GRU over the final sequence; its state at each text's last valid step, mapped to
    ``out_dim``. The GRU runs forward over right-padded texts, so that state never saw padding."""

    def __init__(self, dim: int, hidden: int, out_dim: int):
        super().__init__()
        self.gru = nn.GRU(dim, hidden, batch_first=True)
        self.out = nn.Linear(hidden, out_dim)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h, _ = self.gru(x)                                                     # [B, T, hidden]
        last = (mask.sum(1) - 1).clamp_min(0)
        return self.out(h[torch.arange(x.shape[0], device=x.device), last])


class StridedHead(nn.Module):
    """Strided causal convolutions (width 3, stride 2, ReLU) halve the sequence ``layers``
    times, a width-1 convolution maps to ``out_dim``, then a max over the remaining valid
    steps: output step j covers inputs 2j-2 .. 2j, all valid when 2j < length."""

    def __init__(self, dim: int, channels: int, out_dim: int, layers: int = 2):
        super().__init__()
        self.convs = nn.ModuleList(CausalConv1d(dim if i == 0 else channels, channels, 3, stride=2)
                                   for i in range(layers))
        self.out = nn.Conv1d(channels, out_dim, 1)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        lengths = mask.sum(1)
        h = x.transpose(1, 2)                                                  # [B, D, T]
        for conv in self.convs:
            h = torch.relu(conv(h * mask[:, None, :].to(h.dtype)))            # [B, F, ceil(T / 2)]
            lengths = torch.div(lengths + 1, 2, rounding_mode="floor")
            mask = torch.arange(h.shape[2], device=h.device)[None, :] < lengths[:, None]
        return masked_max_pool(self.out(h).transpose(1, 2), mask)
