"""Word embeddings in Kim (2014)'s four modes.

rand: randomly initialised, trained. static: pretrained, frozen. non-static: pretrained,
fine-tuned. multichannel: a frozen and a fine-tuned copy side by side, so every filter
sees both channels (output dim = 2 x dim).

At prediction a model whose first layer is linear in each word's vector (a convolution, a
QRNN's gates) can look that layer's products up instead of computing them: every word of the
vocabulary is one of the embedding's rows, so its products with the layer's weights are a table
of vocabulary x rows numbers made once per set of weights (``projection_tables``).
"""
from __future__ import annotations

import torch
from torch import nn

MODES = ("rand", "static", "non-static", "multichannel")
TABLE_BYTES = 256 * 2 ** 20    # a larger projection table is not built: such a model computes the products


def mark_word_embedding(table: nn.Module) -> None:
    """Mark a table of word vectors, which ``registry.count_parameters`` counts apart. The mark is a
    plain flag that the count reads with getattr, not a tensor or a module, so it is set with setattr."""
    setattr(table, "is_word_embedding", True)


class WordEmbedding(nn.Module):
    static: nn.Embedding | None                       # the frozen copy (multichannel)
    # projection_tables' last tables, and the key of the weights they were made from
    _tables: list[torch.Tensor] | None
    _tables_key: tuple | None

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
        mark_word_embedding(self.embed)
        if pre is not None and mode != "rand":
            self.embed.weight.data.copy_(pre)
        else:
            nn.init.uniform_(self.embed.weight, -init_scale, init_scale)
            self.embed.weight.data[spec.pad_id] = 0
        self.embed.weight.requires_grad = mode in ("rand", "non-static", "multichannel")
        self.static = None
        if mode == "multichannel":
            self.static = nn.Embedding(spec.vocab_size, dim, padding_idx=spec.pad_id)
            mark_word_embedding(self.static)
            self.static.weight.data.copy_(pre)
            self.static.weight.requires_grad = False
        self._tables, self._tables_key = None, None

    @property
    def out_dim(self) -> int:
        return self.dim * (2 if self.static is not None else 1)

    def source_ids(self, ids: torch.Tensor) -> torch.Tensor:
        """The vocabulary ids behind ``ids``: themselves, except while word attributions are
        computed, when each token's id stands for its position (``adaptext.explain.words``). A
        model that reads ids for more than this lookup (fastText's hashed bigrams) reads them here."""
        return ids

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        if self.static is not None:
            x = torch.cat([self.static(ids), x], dim=-1)
        return x

    def projection_tables(self, sources: list, rows: int, weights) -> list | None:
        """[vocabulary, k] tables, one for each matrix [k, out_dim] of ``weights()`` (``rows``: the k of
        all of them together, made from the parameters ``sources``): every word's vector (all channels)
        times the matrix, the padding row zero as the zeroed input of a padded step. Made once per set
        of weights (remade after any update or move); None where they would exceed TABLE_BYTES. Gradients
        (training, explanations) go through the word vectors themselves, so they never use them."""
        vocab = self.embed.num_embeddings
        if vocab * rows * self.embed.weight.element_size() > TABLE_BYTES:
            return None
        key = tuple((p.data_ptr(), p._version) for p in (*self.parameters(), *sources))
        if self._tables_key != key:
            words = self(torch.arange(vocab, device=self.embed.weight.device))
            if self.embed.padding_idx is not None:
                words[self.embed.padding_idx] = 0
            self._tables, self._tables_key = [words @ w.T for w in weights()], key
        return self._tables
