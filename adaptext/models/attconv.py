"""Yin & Schütze (2018), "Attentive Convolution: Equipping CNNs with RNN-style Attention
Mechanisms" (TACL 6), ATTCONV.

Architecture of the paper's experiments: word embeddings, one attentive convolution layer
(light, Section 3.1, or advanced, Section 3.2; the layer is
``adaptext.nn.attentive.AttentiveConv1d``), max-pooling over the text, logistic regression.
Defaults (Section 4): hidden size 300, filter width 3, AdaGrad, lr 0.01, mini-batch 50.

The mode follows the data:
- text only: intra-context, the context t^y is the text t^x itself (sentiment: zero context).
- pair: extra-context, ``batch.text`` (the hypothesis) is modelled with ``batch.pair`` (the
  premise) as its context. For the pair's label the representations of both sides are
  combined. The paper's released code runs the same attentive convolution in both
  directions (the premise with the hypothesis as context too, shared weights) and feeds
  [r_x, r_y, r_x + r_y, r_x * r_y] to the classifier. We keep both directions
  (``context_repr="attconv"``, the default) and use [r_x, r_y, r_x * r_y] (r_x + r_y is a
  linear function of the first two and adds nothing to a logistic regression);
  ``context_repr="cnn"`` reads the premise with the same filters without attention (a
  plain convolution), the reading in which only the hypothesis is attentive. Either way
  the order matters: swapping hypothesis and premise permutes the feature blocks.
- contexts [B, K, T3] (a claim with several pieces of evidence): ``context-wise`` runs one
  attentive convolution per context and takes the element-wise max over the K
  representations (missing contexts, length 0, are left out; a text whose contexts are all
  missing is read with an empty context, c_i = 0); ``context-concat`` joins the K contexts
  (padding removed) into one context. The context side r_y is computed the same way
  (per context then max, or over the joined context). With one context both equal the pair
  model on (text, context).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..data.batching import length_mask
from ..data.examples import ExampleKind
from ..nn.attentive import MATCHINGS, VARIANTS, AttentiveConv1d
from ..nn.embedding import WordEmbedding
from ..nn.head import ClassifierHead, masked_max_pool
from ..registry import Options, TextClassifier, choice, register_model

MULTI_CONTEXT = ("context-wise", "context-concat")
CONTEXT_REPR = ("attconv", "cnn")


@dataclass
class AttConvConfig(Options):
    variant: str = choice("light", VARIANTS, "light (Section 3.1) or advanced (Section 3.2)")
    matching: str = choice("dot", MATCHINGS, "the matching function f_e")
    multi_context: str = choice("context-wise", MULTI_CONTEXT, "how several contexts are attended")
    context_repr: str = choice("attconv", CONTEXT_REPR, "pair / contexts: how the context side is represented")
    embed_dim: int = 300                 # rand mode; pretrained vectors bring their own size
    hidden: int = 300                    # filters of the attentive convolution
    width: int = 3                       # filter width
    att_dim: int = 300                   # additive matching only: size of v
    dropout: float = 0.0                 # before the logistic regression (none in the released code)


def batch_kind(batch) -> ExampleKind:
    """The kind of examples a batch of plain texts was collated from."""
    return (ExampleKind.CONTEXTS if batch.contexts is not None else ExampleKind.PAIR if batch.pair is not None
            else ExampleKind.TEXT)


def check_kind(model, batch) -> ExampleKind:
    """The batch's kind, which must be the one ``model`` was built for."""
    have = batch_kind(batch)
    if have != model.kind:
        raise ValueError(f"this {type(model).__name__} model was built for {model.kind} examples, "
                         f"the batch has {have}")
    return have


def pair_features(rx: torch.Tensor, ry: torch.Tensor) -> torch.Tensor:
    """Text-side and context-side representations [B, H] -> classifier input [B, 3H]."""
    return torch.cat([rx, ry, rx * ry], dim=-1)


def join_contexts(contexts: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """contexts [B, K, T] ids with lengths [B, K] -> the K contexts of each row joined into
    one sequence, padding removed: ids [B, L] and lengths [B] (L >= 1; an exported graph
    keeps L = K * T, the same sequences with more padding)."""
    b, k, t = contexts.shape
    total = lengths.sum(1)                                                   # [B]
    offsets = torch.cumsum(lengths, 1) - lengths                             # [B, K] start of each context
    width = k * t if torch.compiler.is_exporting() else max(int(total.max()) if b else 0, 1)
    pos = torch.arange(width, device=contexts.device)                        # position in the joined row
    # the context a position falls in: the last one starting at or before it (empty ones skipped)
    which = ((offsets[:, None, :] <= pos[None, :, None]).sum(-1) - 1).clamp(0, k - 1)    # [B, L]
    within = (pos[None, :] - offsets.gather(1, which)).clamp(0, t - 1)      # [B, L]
    ids = contexts.reshape(b, k * t).gather(1, which * t + within)          # [B, L]
    return ids.masked_fill(pos[None, :] >= total[:, None], 0), total


@register_model("attconv", config=AttConvConfig, inputs=(ExampleKind.TEXT, ExampleKind.PAIR, ExampleKind.CONTEXTS),
                paper="Yin & Schütze 2018",
                description="attentive convolution (light / advanced), intra-, extra- and multi-context",
                train_defaults={"optimizer": "adagrad", "lr": 0.01, "batch_size": 50},
                test_config={"embed_dim": 8, "hidden": 6, "att_dim": 5, "variant": "advanced",
                             "matching": "additive"})
class AttConv(TextClassifier):
    """Embedding, attentive convolution, masked max-pooling, logistic regression."""

    def __init__(self, cfg: AttConvConfig, spec):
        super().__init__(cfg, spec)
        self.cfg = cfg
        self.embedding = WordEmbedding(spec, cfg.embed_dim)
        self.attconv = AttentiveConv1d(self.embedding.out_dim, cfg.hidden, cfg.width, cfg.matching,
                                       cfg.variant, cfg.att_dim)
        feat = cfg.hidden if spec.kind == ExampleKind.TEXT else 3 * cfg.hidden
        self.head = ClassifierHead(feat, spec.num_classes, cfg.dropout)

    # ------------------------------------------------------------ one text with one context
    def _roles(self, ids: torch.Tensor, mask: torch.Tensor):
        """Embedded text -> (source / focus, beneficiary), computed once per text."""
        x = self.embedding(ids)
        return self.attconv.source(x, mask), self.attconv.beneficiary(x, mask)

    def _read(self, sx, bx, x_mask, sy, y_mask, keep: dict | None = None) -> torch.Tensor:
        """Text (roles sx, bx) read with context focus sy -> max-pooled representation [N, H]."""
        h, attn = self.attconv.attend(sx, bx, x_mask, sy, y_mask, return_attention=True)
        if keep is not None:
            keep.update(activations=h, attention=attn)
        return masked_max_pool(h, x_mask)                                   # max-pooling over the text

    def _both(self, sx, bx, x_mask, sy, by, y_mask, keep):
        """Pair features: the text read with its context, and the context side."""
        rx = self._read(sx, bx, x_mask, sy, y_mask, keep)
        if self.cfg.context_repr == "cnn":
            ry = masked_max_pool(self.attconv.convolve(by, None, y_mask), y_mask)
        else:                               # the context read with the text as its context
            ry = self._read(sy, by, y_mask, sx, x_mask)
        return rx, ry

    # ------------------------------------------------------------ the three modes
    def features(self, batch, keep: dict | None = None) -> torch.Tensor:
        check_kind(self, batch)
        x_mask = batch.mask                                                   # [B, T]
        sx, bx = self._roles(batch.text, x_mask)                              # [B, T, F], [B, T, D]
        if self.kind == ExampleKind.TEXT:                                     # intra-context
            return self._read(sx, bx, x_mask, sx, x_mask, keep)
        if self.kind == ExampleKind.PAIR:                                     # extra-context
            y_mask = batch.pair_mask
            sy, by = self._roles(batch.pair, y_mask)
            return pair_features(*self._both(sx, bx, x_mask, sy, by, y_mask, keep))
        ctx, ctx_len = batch.contexts, batch.context_lengths                  # [B, K, T3], [B, K]
        if self.cfg.multi_context == "context-concat":
            ids, lens = join_contexts(ctx, ctx_len)                           # [B, L], [B]
            y_mask = length_mask(lens, ids.shape[1])
            if keep is not None:
                keep["context_ids"], keep["context_lengths"] = ids, lens
            sy, by = self._roles(ids, y_mask)
            return pair_features(*self._both(sx, bx, x_mask, sy, by, y_mask, keep))
        # context-wise: the text read once per context, all B*K pairs in one batch
        b, k, t3 = ctx.shape
        t = x_mask.shape[1]
        rep = lambda z: z[:, None].expand(b, k, *z.shape[1:]).reshape(b * k, *z.shape[1:])
        y_mask = length_mask(ctx_len.reshape(-1), t3)                         # [BK, T3]
        sy, by = self._roles(ctx.reshape(b * k, t3), y_mask)                  # [BK, T3, F], [BK, T3, D]
        use = ctx_len > 0                                                     # [B, K]
        use[:, 0] |= ~use.any(1)          # all contexts missing: read with an empty context
        sub: dict | None = {} if keep is not None else None
        rx, ry = self._both(rep(sx), rep(bx), rep(x_mask), sy, by, y_mask, sub)
        if keep is not None and sub is not None:                              # sub is made exactly when keep is
            keep["attention"] = sub["attention"].view(b, k, t, t3)            # [B, K, T, T3]
            acts = sub["activations"].view(b, k, t, -1).masked_fill(~use[:, :, None, None], float("-inf"))
            keep["activations"] = acts.amax(1) * x_mask[..., None]           # [B, T, H], max over contexts
            keep["contexts_used"] = use
        rx, ry = rx.view(b, k, -1), ry.view(b, k, -1)                         # [B, K, H]
        return pair_features(masked_max_pool(rx, use), masked_max_pool(ry, use))   # element-wise max over K

    def forward(self, batch) -> torch.Tensor:
        return self.head(self.features(batch))

    @torch.no_grad()
    def explain(self, batch) -> dict:
        """What the attentive convolution saw, for plots: ``attention`` [B, T, Ty] (context-wise:
        [B, K, T, T3]), ``activations`` [B, T, H] (filter outputs along the text; context-wise:
        max over the contexts used), ``logits``, and for context-concat the joined
        ``context_ids`` / ``context_lengths``."""
        keep: dict = {}
        keep["logits"] = self.head(self.features(batch, keep))
        keep["mode"] = self.kind if self.kind != ExampleKind.CONTEXTS else self.cfg.multi_context
        return keep
