"""Wang, Huang & Deng (2018), "Densely Connected CNN with Multi-scale Feature Attention for
Text Classification" (IJCAI), in the one-dimensional form Choi et al. (2019) reproduce.

Section 3.2 (dense connections): block l convolves the concatenation of the outputs of all
the blocks before it, x_l = f([x_1; ...; x_{l-1}]) (x_1 from the word embeddings), so later
blocks compose n-grams of growing scale from smaller ones. Each block is a width-3
convolution with 75 feature maps and ReLU, "same" padding. Section 3.3 (multi-scale feature
attention): at each position i the feature ensemble of block l is s_i^l = sum_k x_l[k, i];
a two-layer MLP over s_i = [s_i^1 .. s_i^L] gives attention weights a_i = softmax(MLP(s_i))
over the L scales, and the attended feature is x_i = sum_l a_i^l x_l[:, i]. Max-pooling over the
text and a linear classifier follow. Inputs have one fixed length (300 words; 100 for AG News)
and 6 or 7 blocks.

``DenseCNN(cfg, spec, factory)`` builds its convolutions through a ``ConvFactory``;
``ac_densecnn`` is this class with adaptive convolutions, each block generating its filters
from its own input (the concatenation it reads).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..data.batching import length_mask
from ..nn import ClassifierHead, WordEmbedding, masked_max_pool
from ..nn.adaptive import ConvFactory
from ..registry import TextClassifier, register_model


@dataclass
class DenseCNNConfig:
    embed_dim: int = 300
    filters: int = 75             # feature maps per block
    width: int = 3
    blocks: int = 7               # 6 or 7
    fixed_length: int = 300       # every text padded / truncated to this many words (100 for AG News)
    attention_hidden: int = 0     # hidden units of the attention MLP (0: as many as blocks)
    dropout: float = 0.5


class MultiScaleAttention(nn.Module):
    """Section 3.3: position-wise attention over the outputs of the L blocks."""

    def __init__(self, scales: int, hidden: int):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(scales, hidden), nn.ReLU(), nn.Linear(hidden, scales))

    def forward(self, xs: list[torch.Tensor]) -> torch.Tensor:
        stack = torch.stack(xs, dim=1)                           # [B, L, F, T]
        s = stack.sum(dim=2).transpose(1, 2)                     # feature ensemble: [B, T, L]
        a = torch.softmax(self.mlp(s), dim=-1)                   # [B, T, L]
        return torch.einsum("btl,blft->bft", a, stack)           # [B, F, T]


@register_model("densecnn", config=DenseCNNConfig, paper="Wang et al. 2018",
                description="densely connected CNN with multi-scale feature attention",
                train_defaults={"optimizer": "adam", "lr": 1e-3, "batch_size": 64, "epochs": 20},
                test_config={"embed_dim": 16, "filters": 6, "blocks": 3, "fixed_length": 24}, paper_params={"-": 2.2})
class DenseCNN(TextClassifier):
    trim_padding = True     # False: every block reads all fixed_length positions (the slower form; same logits)

    def __init__(self, cfg: DenseCNNConfig, spec, factory: ConvFactory | None = None):
        super().__init__(cfg, spec)
        if cfg.blocks < 1:
            raise ValueError(f"blocks must be >= 1, not {cfg.blocks}")
        if cfg.width % 2 == 0:
            raise ValueError(f"width must be odd for 'same' convolutions, not {cfg.width}")
        factory = factory or ConvFactory()
        self.fixed_length = cfg.fixed_length
        self.min_length = 1
        self.embedding = WordEmbedding(spec, cfg.embed_dim)
        dims = [self.embedding.out_dim] + [cfg.filters * l for l in range(1, cfg.blocks)]
        self.contexts = nn.ModuleList()
        self.convs = nn.ModuleList()
        for d in dims:
            ctx = factory.context(d)
            self.contexts.append(ctx if ctx is not None else nn.Identity())
            self.convs.append(factory.conv(d, cfg.filters, cfg.width, (cfg.width - 1) // 2, ctx))
        self.adaptive = any(not isinstance(c, nn.Identity) for c in self.contexts)
        self.attention = MultiScaleAttention(cfg.blocks, cfg.attention_hidden or cfg.blocks)
        self.head = ClassifierHead(cfg.filters, spec.num_classes, cfg.dropout)

    def forward(self, batch) -> torch.Tensor:
        text = batch.text
        if self.trim_padding and not torch.compiler.is_exporting():   # an exported graph reads any length
            # the fixed length truncates long texts; past the batch's longest text every position
            # is padding that "same" convolutions, the mask and the masked pooling turn into zeros
            # anyway, so the blocks and their context GRUs stop there (sentences in 300 slots)
            text = text[:, :max(1, int(batch.lengths.max()))]
        x = self.embedding(text).transpose(1, 2)                             # [B, D, T]
        mask = length_mask(batch.lengths.clamp_min(1), x.shape[2])
        keep = mask[:, None, :].to(x.dtype)
        outs = []
        inp = x
        for ctx, conv in zip(self.contexts, self.convs):
            c = ctx(inp.transpose(1, 2), mask) if self.adaptive else None
            outs.append(torch.relu(conv(inp, context=c)) * keep)              # x_l: [B, F, T]
            inp = torch.cat(outs, dim=1)                                      # dense connection
        att = self.attention(outs)                                            # [B, F, T]
        return self.head(masked_max_pool(att.transpose(1, 2), mask))
