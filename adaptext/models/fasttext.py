"""Joulin et al. (2017), "Bag of Tricks for Efficient Text Classification" (fastText).

Section 2: a text is the average of its word embeddings and of the embeddings of its n-grams
(here word bigrams, Section 2.2), fed to a linear classifier (Eq. 1: -1/N sum y log f(BAx)).
Bigrams are hashed into a table of ``buckets`` rows (the hashing trick, Weinberger et al.
2009), so the table does not grow with the corpus. The bigram ids are computed inside the
forward pass from each pair of consecutive token ids: nothing about them is stored with the
vocabulary, and a text's bigrams are the same at training and at prediction.

The linear baseline of ``adaptext auto``: it trains in seconds and reads word order only
through its bigrams, as a tf-idf n-gram model does.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..nn import WordEmbedding
from ..registry import TextClassifier, register_model

PRIME = 1_000_003          # bucket of the bigram (a, b): (a * PRIME + b) mod buckets; a * PRIME stays in int64


@dataclass
class FastTextConfig:
    embed_dim: int = 50           # Section 3.1 uses 10 hidden units; 50 costs little here and helps small data
    buckets: int = 100_000        # rows of the hashed bigram table (Section 2.2 hashes into 10M on large corpora)
    bigrams: bool = True
    dropout: float = 0.0


@register_model("fasttext", config=FastTextConfig, paper="Joulin et al. 2017",
                description="mean of word and hashed-bigram embeddings, then a linear layer (fastText)",
                # Adagrad updates only the rows a batch uses (adaptext.optim): Adam's update of the whole
                # bigram table each step made an epoch of the TREC demo 3x slower (11-16 s against 4-5 s),
                # and lr 0.2 read 86.8 dev / 90.2 test there against Adam's 84.8 / 89.2
                train_defaults={"optimizer": "adagrad", "lr": 0.2, "batch_size": 32, "epochs": 5},
                test_config={"embed_dim": 8, "buckets": 97})
class FastText(TextClassifier):
    def __init__(self, cfg: FastTextConfig, spec):
        super().__init__(cfg, spec)
        self.embedding = WordEmbedding(spec, cfg.embed_dim, init_scale=1.0 / cfg.embed_dim)
        self.bigram = nn.Embedding(cfg.buckets, self.embedding.out_dim) if cfg.bigrams else None
        if self.bigram is not None:
            nn.init.uniform_(self.bigram.weight, -1.0 / cfg.embed_dim, 1.0 / cfg.embed_dim)
        self.dropout = nn.Dropout(cfg.dropout)
        self.head = nn.Linear(self.embedding.out_dim, spec.num_classes)

    def forward(self, batch) -> torch.Tensor:
        ids, mask = batch.text, batch.mask                                 # [B, T]
        m = mask[..., None].to(torch.float32)
        total = (self.embedding(ids) * m).sum(1)                           # [B, E]
        count = m.sum(1)
        if self.bigram is not None and ids.shape[1] > 1:
            pair = (mask[:, :-1] & mask[:, 1:])[..., None].to(torch.float32)   # both words real
            words = self.embedding.source_ids(ids)            # an explanation's ids stand for positions
            buckets = (words[:, :-1] * PRIME + words[:, 1:]) % self.config.buckets  # [B, T-1]
            total = total + (self.bigram(buckets) * pair).sum(1)
            count = count + pair.sum(1)
        return self.head(self.dropout(total / count.clamp_min(1.0)))       # Eq. 1: f(B A x)
