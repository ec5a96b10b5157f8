"""Lightweight and dynamic convolutions (Wu et al. 2019, "Pay Less Attention with
Lightweight and Dynamic Convolutions").

Section 3 (LightConv): a depthwise convolution whose kernel W [H, k] is shared by the
d/H channels of each of H heads and normalised over its width by a softmax (Eq. 2-3):

    LightConv(X, W, i, c) = sum_j softmax(W_{h(c)})_j . X_{i + j - pad, c}

with h(c) the head of channel c (channels in H contiguous blocks). Weight dropout drops
entries of the normalised kernel. Section 4 (DynamicConv): the same, with a kernel
predicted at every position i from that position by a linear map (Eq. 4-5):

    W_i = reshape(W^Q X_i)  [H, k],   DynamicConv(X, i, c) = LightConv(X, W_i, i, c).

``LightConvBlock`` is the encoder block of Section 5 (as in fairseq's layer): a linear
map d -> 2d with a GLU, the (light or dynamic) convolution, a linear output map,
residual + layer norm, then a position-wise feed-forward layer with residual + norm.

Padding: padded steps are set to zero before every convolution, so right-padding looks
exactly like the convolution's own zero padding and a text's outputs are the same alone
and in a padded batch.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def _pads(kernel_size: int, causal: bool) -> tuple[int, int]:
    left = kernel_size - 1 if causal else (kernel_size - 1) // 2
    return left, kernel_size - 1 - left


class _HeadedConv(nn.Module):
    """The settings LightConv and DynamicConv share: H heads over C channels, softmax-normalised
    kernels of width k, weight dropout, centred or causal padding."""
    channels: int
    kernel_size: int
    heads: int
    weight_softmax: bool
    weight_dropout: float
    padding: tuple[int, int]            # (left, right) steps of zeros

    def _setup(self, channels: int, kernel_size: int, heads: int, weight_softmax: bool, weight_dropout: float,
               causal: bool) -> None:
        if channels % heads:
            raise ValueError(f"channels ({channels}) must be a multiple of heads ({heads})")
        self.channels, self.kernel_size, self.heads = channels, kernel_size, heads
        self.weight_softmax, self.weight_dropout = weight_softmax, weight_dropout
        self.padding = _pads(kernel_size, causal)


class LightweightConv1d(_HeadedConv):
    """x [B, T, C] -> [B, T, C]; kernel [H, k] softmax-normalised, shared across C/H channels."""

    def __init__(self, channels: int, kernel_size: int, heads: int = 1, weight_softmax: bool = True,
                 weight_dropout: float = 0.0, causal: bool = False, bias: bool = False):
        super().__init__()
        self._setup(channels, kernel_size, heads, weight_softmax, weight_dropout, causal)
        self.weight = nn.Parameter(torch.empty(heads, kernel_size))
        nn.init.xavier_uniform_(self.weight)
        self.bias = nn.Parameter(torch.zeros(channels)) if bias else None

    def kernel(self) -> torch.Tensor:
        w = self.weight.softmax(dim=-1) if self.weight_softmax else self.weight      # Eq. 3
        return F.dropout(w, self.weight_dropout, self.training)                      # [H, k]

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        if mask is not None:
            x = x * mask[..., None].to(x.dtype)
        w = self.kernel().repeat_interleave(self.channels // self.heads, dim=0)      # [C, k]
        x = F.pad(x.transpose(1, 2), self.padding)                                    # [B, C, T + k - 1]
        y = F.conv1d(x, w[:, None, :], self.bias, groups=self.channels)               # [B, C, T], Eq. 2
        return y.transpose(1, 2)


class DynamicConv1d(_HeadedConv):
    """x [B, T, C] -> [B, T, C]; at step i a kernel [H, k] predicted from x_i (Eq. 4-5)."""

    def __init__(self, channels: int, kernel_size: int, heads: int = 1, weight_softmax: bool = True,
                 weight_dropout: float = 0.0, causal: bool = False, bias: bool = False):
        super().__init__()
        self._setup(channels, kernel_size, heads, weight_softmax, weight_dropout, causal)
        self.weight_linear = nn.Linear(channels, heads * kernel_size)                 # W^Q
        nn.init.xavier_uniform_(self.weight_linear.weight)
        nn.init.zeros_(self.weight_linear.bias)
        self.bias = nn.Parameter(torch.zeros(channels)) if bias else None

    def kernels(self, x: torch.Tensor) -> torch.Tensor:
        """Per-position kernels [B, T, H, k] from x [B, T, C]."""
        B, T, _ = x.shape
        w = self.weight_linear(x).view(B, T, self.heads, self.kernel_size)
        if self.weight_softmax:
            w = w.softmax(dim=-1)
        return F.dropout(w, self.weight_dropout, self.training)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        if mask is not None:
            x = x * mask[..., None].to(x.dtype)
        B, T, C = x.shape
        H, k = self.heads, self.kernel_size
        w = self.kernels(x)                                                           # [B, T, H, k]
        windows = F.pad(x, (0, 0) + self.padding).unfold(1, k, 1)                     # [B, T, C, k]
        y = torch.einsum("bthrk,bthk->bthr", windows.reshape(B, T, H, C // H, k), w)  # Eq. 5
        y = y.reshape(B, T, C)
        return y if self.bias is None else y + self.bias


class LightConvBlock(nn.Module):
    """GLU input map, light/dynamic convolution, output map, residual + LayerNorm, then a
    feed-forward layer with residual + LayerNorm. x [B, T, D] -> [B, T, D]."""

    def __init__(self, dim: int, kernel_size: int, heads: int, dynamic: bool = False, ffn_dim: int = 0,
                 dropout: float = 0.1, weight_dropout: float = 0.0, causal: bool = False):
        super().__init__()
        conv = DynamicConv1d if dynamic else LightweightConv1d
        self.in_proj = nn.Linear(dim, 2 * dim)
        self.conv = conv(dim, kernel_size, heads, weight_dropout=weight_dropout, causal=causal)
        self.out_proj = nn.Linear(dim, dim)
        self.norm1 = nn.LayerNorm(dim)
        self.ffn = nn.Sequential(nn.Linear(dim, ffn_dim), nn.ReLU(), nn.Dropout(dropout),
                                 nn.Linear(ffn_dim, dim)) if ffn_dim else None
        self.norm2 = nn.LayerNorm(dim) if ffn_dim else None
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        h = F.glu(self.in_proj(x), dim=-1)                       # [B, T, D]
        h = self.out_proj(self.conv(h, mask))
        x = self.norm1(x + self.dropout(h))
        if self.ffn is not None:
            assert self.norm2 is not None, "a block with a feed-forward layer has its norm"
            x = self.norm2(x + self.dropout(self.ffn(x)))
        return x
