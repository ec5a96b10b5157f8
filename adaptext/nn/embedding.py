"""Word embeddings in Kim (2014)'s four modes.

rand: randomly initialised, trained. static: pretrained, frozen. non-static: pretrained,
fine-tuned. multichannel: a frozen and a fine-tuned copy side by side, so every filter
sees both channels (output dim = 2 x dim).
"""
from __future__ import annotations

import torch
from torch import nn

MODES = ("rand", "static", "non-static", "multichannel")


class WordEmbedding(nn.Module):
    def __init__(self, spec, dim: int, mode: str | None = None, init_scale: float = 0.25):
        super().__init__()
        mode = mode or spec.embedding_mode
        if mode not in MODES:
            raise ValueError(f"embedding mode must be one of {', '.join(MODES)}, not {mode!r}")
        pre = spec.embeddings
        if mode != "rand" and pre is None:
            raise ValueError(f"embedding mode {mode!r} needs pretrained vectors (--embeddings PATH)")
        if pre is not None:
            dim = pre.shape[1]
        self.mode, self.dim = mode, dim
        self.embed = nn.Embedding(spec.vocab_size, dim, padding_idx=spec.pad_id)
        self.embed.is_word_embedding = True
        if pre is not None and mode != "rand":
            self.embed.weight.data.copy_(pre)
        else:
            nn.init.uniform_(self.embed.weight, -init_scale, init_scale)
            self.embed.weight.data[spec.pad_id] = 0
        self.embed.weight.requires_grad = mode in ("rand", "non-static", "multichannel")
        self.static = None
        if mode == "multichannel":
            self.static = nn.Embedding(spec.vocab_size, dim, padding_idx=spec.pad_id)
            self.static.is_word_embedding = True
            self.static.weight.data.copy_(pre)
            self.static.weight.requires_grad = False

    @property
    def out_dim(self) -> int:
        return self.dim * (2 if self.static is not None else 1)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        if self.static is not None:
            x = torch.cat([self.static(ids), x], dim=-1)
        return x
