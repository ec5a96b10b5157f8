"""A pretrained transformer encoder fine-tuned for classification (Devlin et al. 2019, Section
4.1: one linear layer on the encoder's sentence representation, every weight fine-tuned).

It is the accuracy peer of the fast models and the teacher of ``adaptext distill``. The default
encoder is all-MiniLM-L6-v2 (Wang et al. 2020's MiniLM, 6 layers of 384, trained by
sentence-transformers on sentence pairs), shipped for offline use by the ``transformers`` extra;
``--pretrained`` names another folder (or, with a hub, any model id).

Input: the encoder's own word pieces (the ``subword`` tokenizer), whose ids are the encoder's
shifted by adaptext's <pad> and <unk>. A text is read as ``[CLS] text [SEP]``, a pair as
``[CLS] text [SEP] pair [SEP]`` with token types 0 and 1 (the encoder's sentence-pair form),
cut to the encoder's positions. The sentence representation: the mean of the last layer's
states over the text (how all-MiniLM-L6-v2 was trained), or the ``[CLS]`` state.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .. import pretrained
from ..data.examples import ExampleKind
from ..nn.embedding import mark_word_embedding
from ..nn.head import ClassifierHead, masked_mean_pool
from ..registry import Options, TextClassifier, choice, register_model

SHIFT = 2          # adaptext's <pad> and <unk> come before the encoder's word pieces


@dataclass
class TransformerConfig(Options):
    pretrained: str = pretrained.DEFAULT     # the packaged encoder, a folder, or a hub id
    pooling: str = choice("mean", ("mean", "cls"), "sentence representation: mean of the last states, or [CLS]")
    layers: int = 0               # keep the encoder's first N layers only (0: all): smaller and faster
    dropout: float = 0.1


@register_model("transformer", config=TransformerConfig, inputs=(ExampleKind.TEXT, ExampleKind.PAIR),
                tokenizer="subword", paper="Devlin et al. 2019; MiniLM (Wang et al. 2020)",
                description="a pretrained transformer encoder, fine-tuned (the distillation teacher)",
                train_defaults={"optimizer": "adam", "lr": 3e-5, "batch_size": 32, "epochs": 3, "patience": 2,
                                "max_length": 128},
                test_config={"layers": 1})
class TransformerClassifier(TextClassifier):
    special: torch.Tensor           # a buffer: the encoder ids of <pad>, <unk>, [CLS] and [SEP]

    def __init__(self, cfg: TransformerConfig, spec):
        super().__init__(cfg, spec)
        tok = pretrained.tokenizer(cfg.pretrained)
        expected = len(tok.get_vocab()) + SHIFT
        if spec.vocab_size != expected:
            raise ValueError(f"the transformer reads its encoder's word pieces (--tokenizer subword): a vocabulary "
                             f"of {expected}, not {spec.vocab_size}")
        self.encoder = _encoder(cfg).train()        # from_pretrained leaves it in eval mode: dropout off
        mark_word_embedding(self.encoder.get_input_embeddings())    # counted apart, as other models' are
        # encoder ids of adaptext's <pad> and <unk>, and of [CLS] and [SEP]
        self.register_buffer("special", torch.tensor([tok.pad_token_id, tok.unk_token_id, tok.cls_token_id,
                                                      tok.sep_token_id]), persistent=False)
        self.positions = self.encoder.config.max_position_embeddings
        self.head = ClassifierHead(self.encoder.config.hidden_size, spec.num_classes, cfg.dropout)

    def forward(self, batch) -> torch.Tensor:
        ids, types, mask = self.pieces(batch)
        states = self.encoder(input_ids=ids, attention_mask=mask.long(), token_type_ids=types).last_hidden_state
        if self.config.pooling == "cls":
            return self.head(states[:, 0])
        return self.head(masked_mean_pool(states, mask))

    def word_vectors(self) -> tuple:
        embeddings = self.encoder.get_input_embeddings()      # word pieces only: positions and types stay
        return embeddings, embeddings.num_embeddings, self.encoder_ids

    def encoder_ids(self, ids: torch.Tensor) -> torch.Tensor:
        pad, unk = self.special[0], self.special[1]
        return torch.where(ids >= SHIFT, ids - SHIFT, torch.where(ids == 0, pad, unk))

    def pieces(self, batch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(ids, token types, attention mask) [B, P] of ``[CLS] text [SEP] (pair [SEP])``."""
        pair = batch.pair is not None
        budget = (self.positions - 3) // 2 if pair else self.positions - 2
        parts = [(self.encoder_ids(batch.text[:, :budget]), batch.lengths.clamp(max=budget))]
        if pair:
            parts.append((self.encoder_ids(batch.pair[:, :budget]), batch.pair_lengths.clamp(max=budget)))
        B = batch.text.shape[0]
        width = 1 + sum(p.shape[1] + 1 for p, _ in parts)
        ids = torch.full((B, width), int(self.special[0]), dtype=torch.long, device=batch.text.device)
        types = torch.zeros_like(ids)
        ids[:, 0] = self.special[2]
        start = torch.ones(B, dtype=torch.long, device=ids.device)
        for k, (piece, n) in enumerate(parts):
            col = start[:, None] + torch.arange(piece.shape[1], device=ids.device)
            valid = col < (start + n)[:, None]
            rows = torch.arange(B, device=ids.device)[:, None].expand_as(col)
            ids[rows[valid], col[valid]] = piece[valid]
            types[rows[valid], col[valid]] = k
            ids[torch.arange(B, device=ids.device), start + n] = self.special[3]
            types[torch.arange(B, device=ids.device), start + n] = k
            start = start + n + 1
        mask = torch.arange(width, device=ids.device)[None, :] < start[:, None]
        return ids, types, mask


def _encoder(cfg: TransformerConfig):
    """The pretrained encoder (only its architecture when building on the meta device, where
    parameters are counted, not loaded), cut to its first ``layers`` layers."""
    transformers = pretrained.require_transformers()
    config = pretrained.config(cfg.pretrained)
    if cfg.layers:
        config.num_hidden_layers = min(cfg.layers, config.num_hidden_layers)
    kw = {"add_pooling_layer": False} if config.model_type in ("bert", "roberta", "xlm-roberta") else {}
    if torch.empty(()).device.type == "meta":
        return transformers.AutoModel.from_config(config, **kw)
    return transformers.AutoModel.from_pretrained(pretrained.resolve(cfg.pretrained), config=config, **kw)
