"""Anderson (2018), "Fully Convolutional Networks for Text Classification" (arXiv 1902.05575).

Section 2 (Figure 1): characters embedded in 16 dimensions; a causal convolution of 128
filters of width 3; 9 residual layers of causal convolutions, 128 filters of width 7 with
dilations 1, 2, 4, ..., 256, each with local response normalisation then ReLU, spatial
dropout 0.1, a linear projection of its input added as the residual, and a skip output;
the skips summed then ReLU; a width-1 convolution to the number of classes; global max
pooling over time; L2 penalty 1e-4. Section 3 compares attention placed between that last
convolution and the pooling (none, scaled dot-product with 1 or 8 heads, the paper's
simplified attention and its local, convolutional form, each also with 8 heads), and
Section 5 proposes a GRU over the final sequence or strided convolutions before a smaller
pool in place of the global max pool, which throws away where the evidence was.

Any length: every convolution is causal, so a valid step never sees the right-padding;
attention gives padded keys no weight and the pooling heads skip padded steps. A text's
logits are therefore the same alone and in a batch padded to any length, and no text is
truncated. The tokenizer is a run option: word ids work the same as character ids.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..nn import WordEmbedding
from ..nn.fcn import CausalConv1d, DilatedStack, GRUHead, MaxPoolHead, StridedHead, make_attention
from ..registry import Options, TextClassifier, choice, register_model

ATTENTION = ("none", "scaled-dot", "simplified", "local")
POOLING = ("max", "gru", "strided")


@dataclass
class FCNConfig(Options):
    embed_dim: int = 16           # character embedding
    causal_filters: int = 128
    causal_width: int = 3
    filters: int = 128            # residual stack
    width: int = 7
    layers: int = 9               # dilations 1, 2, ..., 2^(layers - 1)
    dropout: float = 0.1          # spatial dropout in the stack
    attention: str = choice("none", ATTENTION, "the attention layer after the dilated stack")
    heads: int = 1                # 1 or 8 in the paper
    head_dim: int = 16            # per head, scaled-dot only
    local_width: int = 3          # width of the local attention's causal convolution
    pooling_head: str = choice("max", POOLING, "global max pool, or a GRU / strided convolution head")
    head_hidden: int = 128        # GRU state / strided convolution filters
    strided_layers: int = 2


@register_model("fcn", config=FCNConfig, tokenizer="char", paper="Anderson 2018",
                description="fully convolutional, any-length classifier: causal dilated residual stack, "
                            "attention variants, global max pool",
                train_defaults={"optimizer": "adam", "lr": 1e-3, "batch_size": 32, "epochs": 20,
                                "weight_decay": 1e-4},
                test_config={"causal_filters": 8, "filters": 8, "layers": 3, "attention": "scaled-dot",
                             "heads": 2, "head_dim": 4, "head_hidden": 8})
class FCN(TextClassifier):
    pool: MaxPoolHead | GRUHead | StridedHead        # the pooling head of cfg.pooling_head

    def __init__(self, cfg: FCNConfig, spec):
        super().__init__(cfg, spec)
        C = spec.num_classes
        self.embedding = WordEmbedding(spec, cfg.embed_dim)
        self.causal = CausalConv1d(self.embedding.out_dim, cfg.causal_filters, cfg.causal_width)
        self.project = (nn.Conv1d(cfg.causal_filters, cfg.filters, 1) if cfg.causal_filters != cfg.filters
                        else nn.Identity())
        self.stack = DilatedStack(cfg.filters, cfg.width, cfg.layers, cfg.dropout)
        self.classes = nn.Conv1d(cfg.filters, C, 1)                 # width-1 convolution to the classes
        self.attention = make_attention(cfg.attention, C, cfg.heads, cfg.head_dim, cfg.local_width)
        if cfg.pooling_head == "max":
            self.pool = MaxPoolHead()
        elif cfg.pooling_head == "gru":
            self.pool = GRUHead(C, cfg.head_hidden, C)
        else:
            self.pool = StridedHead(C, cfg.head_hidden, C, cfg.strided_layers)

    def sequence(self, text: torch.Tensor) -> torch.Tensor:
        """Per-step class scores [B, T, C] before attention and pooling; step t depends on
        tokens <= t only."""
        x = self.embedding(text).transpose(1, 2)                    # [B, E, T]
        x = self.project(self.causal(x))                            # [B, F, T]
        _, skips = self.stack(x)                                    # sum of the 9 skip outputs
        return self.classes(torch.relu(skips)).transpose(1, 2)     # [B, T, C]

    def forward(self, batch) -> torch.Tensor:
        mask = batch.mask
        x = self.sequence(batch.text)
        if self.attention is not None:
            x = self.attention(x, mask)
        return self.pool(x, mask)                                   # [B, C]
