"""The baselines of Yin & Schütze (2018), "Attentive Convolution" (TACL 6), against which
ATTCONV is compared on entailment and claim verification (Section 4, the ablation of the
advanced model and the attentive-pooling comparison).

- ``attconv_noatt``, w/o attention: a Siamese CNN. One convolution (width 3, tanh), shared
  by both texts, max-pooling, the two vectors combined as in ``attconv``
  ([r_x, r_y, r_x * r_y], so only the attention differs). A single text: a plain CNN.
- ``attconv_noconv``, w/o convolution: the attentive context is added to the hidden state,
  h_i + c_i (c_i as in the light ATTCONV, dot matching by default), then four fully
  connected tanh layers at every position instead of the convolution, max-pooling.
- ``attentive_pooling``: attention applied to pooling, not to convolution (APCNN,
  dos Santos et al. 2016; ABCNN, Yin et al. 2016, is the same idea): both texts are
  convolved (shared width-3 tanh convolution, Q [T, H], A [T2, H]), G = tanh(Q U A^T) matches
  every pair of positions, the row-wise / column-wise max of G through a softmax gives
  pooling weights, and each text is the weighted mean of its convolved states.

Several contexts (``contexts`` [B, K, T3]) are joined into one context (padding removed),
as ATTCONV's ``context-concat``; for the Siamese CNN the context side is the max over all
positions of all contexts.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from ..data.batching import length_mask
from ..data.examples import ExampleKind
from ..nn.attentive import MATCHINGS, Matching, masked_softmax
from ..nn.embedding import WordEmbedding
from ..nn.head import ClassifierHead, masked_max_pool
from ..registry import Options, TextClassifier, choice, register_model
from .attconv import check_kind, join_contexts, pair_features

TRAIN = {"optimizer": "adagrad", "lr": 0.01, "batch_size": 50}
TINY = {"embed_dim": 8, "hidden": 6}
ABLATION: dict[str, Any] = {"inputs": (ExampleKind.PAIR, ExampleKind.CONTEXTS, ExampleKind.TEXT),
            "paper": "Yin & Schütze 2018 (ablation)", "train_defaults": TRAIN, "test_config": TINY}


def joined_context(embedding, batch):
    """The context side of a pair or contexts batch: ids embedded [B, L, D] and mask [B, L]."""
    if batch.pair is not None:
        return embedding(batch.pair), batch.pair_mask
    ids, lens = join_contexts(batch.contexts, batch.context_lengths)
    return embedding(ids), length_mask(lens, ids.shape[1])


def masked_conv(conv: nn.Conv1d, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """tanh(conv(x)) [B, T, H] with padding zero before and after (same-length convolution)."""
    m = mask[..., None].to(x.dtype)
    return torch.tanh(conv((x * m).transpose(1, 2))).transpose(1, 2) * m


# ---------------------------------------------------------------- w/o attention
@dataclass
class SiameseCNNConfig:
    embed_dim: int = 300
    hidden: int = 300
    width: int = 3
    dropout: float = 0.0

    def __post_init__(self):
        if self.width % 2 != 1:           # "same" padding keeps one output per word only for odd widths
            raise ValueError(f"filter width must be odd, not {self.width}")


@register_model("attconv_noatt", config=SiameseCNNConfig, **ABLATION,
                description="ATTCONV w/o attention: Siamese CNN, shared convolution, max-pooling")
class SiameseCNN(TextClassifier):
    def __init__(self, cfg: SiameseCNNConfig, spec):
        super().__init__(cfg, spec)
        self.embedding = WordEmbedding(spec, cfg.embed_dim)
        self.conv = nn.Conv1d(self.embedding.out_dim, cfg.hidden, cfg.width, padding=cfg.width // 2)
        feat = cfg.hidden if spec.kind == ExampleKind.TEXT else 3 * cfg.hidden
        self.head = ClassifierHead(feat, spec.num_classes, cfg.dropout)

    def encode(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return masked_max_pool(masked_conv(self.conv, self.embedding(ids), mask), mask)    # [N, H]

    def forward(self, batch) -> torch.Tensor:
        kind = check_kind(self, batch)
        rx = self.encode(batch.text, batch.mask)
        if kind == ExampleKind.TEXT:
            return self.head(rx)
        if kind == ExampleKind.PAIR:
            ry = self.encode(batch.pair, batch.pair_mask)
        else:                               # max over every position of every context
            b, k, t3 = batch.contexts.shape
            mask = length_mask(batch.context_lengths.reshape(-1), t3)                       # [BK, T3]
            h = masked_conv(self.conv, self.embedding(batch.contexts.reshape(b * k, t3)), mask)
            ry = masked_max_pool(h.reshape(b, k * t3, -1), mask.reshape(b, k * t3))
        return self.head(pair_features(rx, ry))


# ---------------------------------------------------------------- w/o convolution
@dataclass
class NoConvConfig(Options):
    embed_dim: int = 300
    hidden: int = 300
    layers: int = 4               # fully connected layers replacing the convolution
    matching: str = choice("dot", MATCHINGS, "the matching function f_e")
    att_dim: int = 300            # additive matching only
    dropout: float = 0.0

    def __post_init__(self):
        super().__post_init__()
        if self.layers < 1:
            raise ValueError("attconv_noconv needs at least one fully connected layer")


@register_model("attconv_noconv", config=NoConvConfig, **ABLATION,
                description="ATTCONV w/o convolution: h_i + c_i, four fully connected layers, max-pooling")
class AttentionNoConv(TextClassifier):
    def __init__(self, cfg: NoConvConfig, spec):
        super().__init__(cfg, spec)
        self.embedding = WordEmbedding(spec, cfg.embed_dim)
        d = self.embedding.out_dim
        self.match = Matching(cfg.matching, d, d, cfg.att_dim)
        self.fc = nn.ModuleList(nn.Linear(d if i == 0 else cfg.hidden, cfg.hidden) for i in range(cfg.layers))
        feat = cfg.hidden if spec.kind == ExampleKind.TEXT else 3 * cfg.hidden
        self.head = ClassifierHead(feat, spec.num_classes, cfg.dropout)

    def encode(self, x, x_mask, y, y_mask) -> torch.Tensor:
        """x [B, T, D] read with context y [B, Ty, D] -> [B, H]."""
        m = x_mask[..., None].to(x.dtype)
        x, y = x * m, y * y_mask[..., None].to(y.dtype)
        attn = masked_softmax(self.match(x, y), y_mask[:, None, :])                          # [B, T, Ty]
        h = x + attn @ y                                                                     # h_i + c_i
        for fc in self.fc:
            h = torch.tanh(fc(h))                                                            # [B, T, H]
        return masked_max_pool(h, x_mask)

    def forward(self, batch) -> torch.Tensor:
        kind = check_kind(self, batch)
        x, x_mask = self.embedding(batch.text), batch.mask
        if kind == ExampleKind.TEXT:
            return self.head(self.encode(x, x_mask, x, x_mask))                               # intra-context
        y, y_mask = joined_context(self.embedding, batch)
        return self.head(pair_features(self.encode(x, x_mask, y, y_mask), self.encode(y, y_mask, x, x_mask)))


# ---------------------------------------------------------------- attentive pooling
@dataclass
class AttentivePoolingConfig(SiameseCNNConfig):
    pass


@register_model("attentive_pooling", config=AttentivePoolingConfig, inputs=(ExampleKind.PAIR, ExampleKind.CONTEXTS),
                paper="dos Santos et al. 2016; Yin et al. 2016 (baseline in Yin & Schütze 2018)",
                description="attentive pooling (APCNN / ABCNN): cross-text matching weights the mean pooling",
                train_defaults=TRAIN, test_config=TINY)
class AttentivePooling(SiameseCNN):
    """The Siamese CNN's shared convolution, pooled with weights from cross-text matching."""

    def __init__(self, cfg: AttentivePoolingConfig, spec):
        super().__init__(cfg, spec)
        self.U = nn.Parameter(torch.empty(cfg.hidden, cfg.hidden))
        nn.init.xavier_uniform_(self.U)
        self.head = ClassifierHead(3 * cfg.hidden, spec.num_classes, cfg.dropout)

    def pool(self, q, q_mask, a, a_mask):
        """Convolved texts q [B, T, H], a [B, Ta, H] -> pooling weights [B, T], [B, Ta] and the
        attentive mean-pooled vectors [B, H], [B, H]."""
        g = torch.tanh(q @ self.U @ a.transpose(1, 2))                                      # G [B, T, Ta]
        both = q_mask[:, :, None] & a_mask[:, None, :]
        g = g.masked_fill(~both, float("-inf"))
        row, col = g.amax(2), g.amax(1)                                     # [B, T], [B, Ta]
        # an empty other side leaves a row of -inf: equal scores there, a plain mean
        row, col = row.masked_fill(torch.isinf(row), 0.0), col.masked_fill(torch.isinf(col), 0.0)
        wq, wa = masked_softmax(row, q_mask), masked_softmax(col, a_mask)
        return wq, wa, (wq[..., None] * q).sum(1), (wa[..., None] * a).sum(1)

    def forward(self, batch) -> torch.Tensor:
        check_kind(self, batch)
        x, x_mask = self.embedding(batch.text), batch.mask
        y, y_mask = joined_context(self.embedding, batch)
        q, a = masked_conv(self.conv, x, x_mask), masked_conv(self.conv, y, y_mask)
        _, _, rq, ra = self.pool(q, x_mask, a, a_mask=y_mask)
        return self.head(pair_features(rq, ra))
