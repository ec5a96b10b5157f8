"""Pooling over time and the classification head shared by the encoders."""
from __future__ import annotations

import torch
from torch import nn


def masked_max_pool(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Max over time of x [B, T, D] where mask [B, T] is True; rows with no valid step give 0."""
    x = x.masked_fill(~mask[..., None], float("-inf"))
    out = x.max(dim=1).values
    return torch.where(torch.isinf(out), torch.zeros_like(out), out)


def masked_mean_pool(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    m = mask[..., None].to(x.dtype)
    return (x * m).sum(1) / m.sum(1).clamp_min(1.0)


class ClassifierHead(nn.Module):
    """Dropout then a linear layer to the classes; optional max-norm on the weight rows
    (Kim 2014: rescale each class's weight vector to L2 norm s when it exceeds s)."""

    def __init__(self, in_dim: int, num_classes: int, dropout: float = 0.5, max_norm: float = 0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.linear = nn.Linear(in_dim, num_classes)
        self.max_norm = max_norm

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.linear(self.dropout(h))

    @torch.no_grad()
    def apply_constraints(self) -> None:
        if self.max_norm > 0:
            w = self.linear.weight
            norms = w.norm(dim=1, keepdim=True)
            w.mul_(torch.clamp(self.max_norm / norms.clamp_min(1e-12), max=1.0))
