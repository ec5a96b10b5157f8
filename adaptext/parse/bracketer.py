"""A span-based constituency bracketer, shipped in the package (Stern, Andreas & Klein 2017's
span representation with independent span classification and CKY decoding).

A BiLSTM reads the words between sentinels <s> and </s>; fencepost k (between word k and
k + 1) is represented by the forward state at word k and the backward state at word k + 1, and
span (i, j) by [f_j - f_i ; b_i - b_j]. An MLP scores every span as a constituent or not
(trained with binary cross-entropy against the spans of gold binary trees), and CKY finds the
binary tree whose spans have the highest total score. The first MLP layer is linear in the
span vector, so it is applied to the fenceposts once and differenced per span: memory grows
with length x length x the MLP width, not x the LSTM width.

Words are read lower-cased (runs lower-case their texts before parsing), as a vocabulary id
(50-d vectors initialised from GloVe) and the hashed ids of their last two and three characters
(so an unknown word still shows its morphology: -ly, -ing, -ed); optionally also through a CNN
over their characters (prefixes, inner hyphens) and NLTK's POS tags.
"""
from __future__ import annotations

import json
import zlib
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ..errors import UsageError
from ..data.trees import Tree, TreeBuilder

SUFFIX_BUCKETS = 4096
CHAR_BUCKETS, CHAR_EMBED, MAX_CHARS = 512, 16, 24
PAD, UNK, BOS, EOS = 0, 1, 2, 3
SPECIALS = ["<pad>", "<unk>", "<s>", "</s>"]


@dataclass
class BracketerConfig:
    embed_dim: int = 50
    suffix_dim: int = 16
    hidden: int = 128
    layers: int = 2
    mlp: int = 128
    dropout: float = 0.3
    tag_dim: int = 0           # > 0: POS tags from NLTK's tagger are read too
    char_dim: int = 32         # > 0: a width-3 CNN over the word's characters adds this many features


@lru_cache(maxsize=1 << 16)
def suffix_ids(word: str) -> tuple[int, int]:
    """Hashed buckets (1..SUFFIX_BUCKETS-1) of the word's last two and three characters."""
    two, three = (1 + zlib.crc32(f"{n}:{word[-n:]}".encode()) % (SUFFIX_BUCKETS - 1) for n in (2, 3))
    return two, three


@lru_cache(maxsize=1 << 16)
def char_ids(word: str) -> tuple[int, ...]:
    """The word's first MAX_CHARS characters as buckets 1..CHAR_BUCKETS-1 (code points above fold
    onto the last one), padded with 0 to MAX_CHARS."""
    ids = [min(ord(c), CHAR_BUCKETS - 1) or 1 for c in word[:MAX_CHARS]]
    return tuple(ids + [0] * (MAX_CHARS - len(ids)))


class SpanScorer(nn.Module):
    def __init__(self, cfg: BracketerConfig, vocab_size: int, tag_count: int = 0):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(vocab_size, cfg.embed_dim, padding_idx=PAD)
        self.suffix = nn.Embedding(SUFFIX_BUCKETS, cfg.suffix_dim, padding_idx=0)
        self.tag = nn.Embedding(tag_count, cfg.tag_dim, padding_idx=PAD) if cfg.tag_dim else None
        self.chars = nn.Sequential(nn.Embedding(CHAR_BUCKETS, CHAR_EMBED, padding_idx=0),
                                   _Channels(nn.Conv1d(CHAR_EMBED, cfg.char_dim, 3, padding=1))) if cfg.char_dim else None
        self.lstm = nn.LSTM(cfg.embed_dim + 2 * cfg.suffix_dim + cfg.tag_dim + cfg.char_dim, cfg.hidden, cfg.layers,
                            batch_first=True, bidirectional=True, dropout=cfg.dropout)
        self.drop = nn.Dropout(cfg.dropout)
        self.first = nn.Linear(2 * cfg.hidden, cfg.mlp)
        self.out = nn.Linear(cfg.mlp, 1)

    def states(self, x: dict) -> torch.Tensor:
        """The BiLSTM's states [B, T + 2, 2H] over the sentinel-framed words of ``x`` (from
        ``Bracketer.encode``: words and suffixes, tags and chars when the model reads them)."""
        words = x["words"]
        parts = [self.embed(words), self.suffix(x["suffixes"]).flatten(2)]
        if self.tag is not None:
            parts.append(self.tag(x["tags"]))
        if self.chars is not None:
            parts.append(self.chars(x["chars"].flatten(0, 1)).amax(1).view(*words.shape, -1))
        h = self.drop(torch.cat(parts, dim=-1))
        packed = nn.utils.rnn.pack_padded_sequence(h, (x["lengths"] + 2).cpu(), batch_first=True, enforce_sorted=False)
        return nn.utils.rnn.pad_packed_sequence(self.lstm(packed)[0], batch_first=True, total_length=words.shape[1])[0]

    def forward(self, x: dict) -> torch.Tensor:
        """Span scores [B, T + 1, T + 1] of the batch ``x``: entry (i, j) scores words i..j-1 (two
        words or more; the rest 0)."""
        return self.spans(self.states(x))

    def spans(self, h: torch.Tensor) -> torch.Tensor:
        H = self.cfg.hidden
        f, b = h[:, :-1, :H], h[:, 1:, H:]                       # fenceposts 0..T: [B, T + 1, H]
        w = self.first.weight
        g = self.drop(f) @ w[:, :H].T - self.drop(b) @ w[:, H:].T   # W [f_j - f_i ; b_i - b_j] = g_j - g_i
        T = h.shape[1] - 2
        i, j = torch.triu_indices(T + 1, T + 1, offset=2, device=h.device)
        span = self.out(torch.relu(g[:, j] - g[:, i] + self.first.bias)).squeeze(-1)     # [B, spans]
        scores = span.new_zeros(h.shape[0], T + 1, T + 1)
        scores[:, i, j] = span
        return scores


class _Channels(nn.Module):
    """A Conv1d over [N, length, channels] inputs, its output back in that layout."""

    def __init__(self, conv: nn.Conv1d):
        super().__init__()
        self.conv = conv

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x.transpose(1, 2)).transpose(1, 2)


def cky(scores: np.ndarray, lengths) -> np.ndarray:
    """split[b, i, j]: where the best binary tree over words i..j-1 of sentence b divides them,
    maximising the total score of its spans (single words score nothing). ``scores`` [B, T + 1,
    T + 1]; the sentences of a batch are decoded together, one span length at a time."""
    B, n = scores.shape[0], scores.shape[1] - 1
    best = np.zeros((B, n + 1, n + 1), dtype=np.float64)
    split = np.zeros((B, n + 1, n + 1), dtype=np.int64)
    for length in range(2, int(max(lengths)) + 1):
        i = np.arange(0, n - length + 1)
        j = i + length
        ks = i[:, None] + np.arange(1, length)[None, :]                      # [starts, splits]
        cand = best[:, i[:, None], ks] + best[:, ks, j[:, None]]            # [B, starts, splits]
        pick = cand.argmax(-1)
        best[:, i, j] = scores[:, i, j] + np.take_along_axis(cand, pick[..., None], -1)[..., 0]
        split[:, i, j] = np.take_along_axis(np.broadcast_to(ks, cand.shape), pick[..., None], -1)[..., 0]
    return split


def tree_from_splits(tokens: list[str], split: np.ndarray) -> Tree:
    """The binary tree over ``tokens`` that ``split`` describes (built without recursion, so
    any depth works)."""
    b = TreeBuilder()
    node = {}
    stack = [(0, len(tokens), False)]
    while stack:
        i, j, children_done = stack.pop()
        if j - i == 1:
            node[i, j] = b.add(word=tokens[i])
        elif children_done:
            k = int(split[i, j])
            node[i, j] = b.add(left=node[i, k], right=node[k, j])
        else:
            k = int(split[i, j])
            stack += [(i, j, True), (k, j, False), (i, k, False)]
    return b.build()


def parse_batched(scores, sentences: list[list[str]], max_positions: int = 200_000) -> list[Tree]:
    """One binary tree per sentence, CKY over ``scores(batch)`` ([B, T + 1, T + 1] span scores);
    sentences are scored in batches of similar length holding at most ``max_positions`` span
    cells."""
    order = sorted(range(len(sentences)), key=lambda k: len(sentences[k]))
    trees: list = [None] * len(sentences)
    lo = 0
    while lo < len(order):
        hi = lo + 1
        while hi < len(order) and (hi - lo + 1) * (len(sentences[order[hi]]) + 1) ** 2 <= max_positions:
            hi += 1
        chunk = [sentences[k] for k in order[lo:hi]]
        split = cky(scores(chunk).numpy(), [len(c) for c in chunk])
        for r, k in enumerate(order[lo:hi]):
            trees[k] = tree_from_splits(sentences[k], split[r])
        lo = hi
    return trees


class Bracketer:
    """Plain tokens -> binary trees, with the shipped (or any saved) span scorer."""

    def __init__(self, model: SpanScorer, vocab: list[str], tags: list[str] | None = None):
        self.model = model.eval()
        self.vocab, self.tags = vocab, tags
        self.index = {w: k for k, w in enumerate(vocab)}
        self.tag_index = {t: k for k, t in enumerate(tags or [])}
        self.tagger = None
        if model.cfg.tag_dim:
            from ..data.tags import get_tagger
            self.tagger = get_tagger("nltk")

    def encode(self, sentences: list[list[str]]) -> dict:
        """The model's inputs for lower-cased sentences between sentinels: words, suffixes,
        lengths, and tags and chars when the model reads them."""
        B, T = len(sentences), max(len(s) for s in sentences) + 2
        words = np.zeros((B, T), dtype=np.int64)
        suffixes = np.zeros((B, T, 2), dtype=np.int64)
        chars = np.zeros((B, T, MAX_CHARS), dtype=np.int64) if self.model.chars is not None else None
        tags = np.zeros((B, T), dtype=np.int64) if self.tagger else None
        for r, s in enumerate(sentences):
            low = [w.lower() for w in s]
            n = len(low)
            words[r, :n + 2] = [BOS] + [self.index.get(w, UNK) for w in low] + [EOS]
            if not n:
                continue
            suffixes[r, 1:n + 1] = [suffix_ids(w) for w in low]
            if chars is not None:
                chars[r, 1:n + 1] = [char_ids(w) for w in low]
            if tags is not None and self.tagger is not None:
                tags[r, 1:n + 1] = [self.tag_index.get(t, UNK) for t in self.tagger(low)]
        x = {"words": torch.from_numpy(words), "suffixes": torch.from_numpy(suffixes),
             "lengths": torch.tensor([len(s) for s in sentences])}
        for name, a in (("chars", chars), ("tags", tags)):
            if a is not None:
                x[name] = torch.from_numpy(a)
        return x

    def parse(self, sentences: list[list[str]], max_positions: int = 200_000) -> list[Tree]:
        """One binary tree per sentence (each at least one token)."""
        return parse_batched(self.scores, sentences, max_positions)

    @torch.no_grad()
    def scores(self, sentences: list[list[str]]) -> torch.Tensor:
        """Span scores [B, T + 1, T + 1] of a batch of sentences."""
        return self.model(self.encode(sentences))

    # ------------------------------------------------------------------ files
    def save(self, folder) -> None:
        from safetensors.torch import save_file
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().to(torch.float16 if v.is_floating_point() else v.dtype).contiguous()
                 for k, v in self.model.state_dict().items()}
        save_file(state, str(folder / "bracketer.safetensors"))
        (folder / "bracketer.json").write_text(json.dumps({"config": asdict(self.model.cfg), "vocab": self.vocab,
                                                           "tags": self.tags}))

    @classmethod
    def load(cls, folder) -> "Bracketer":
        from safetensors.torch import load_file
        folder = Path(folder)
        if not (folder / "bracketer.json").is_file():
            raise UsageError(f"{folder}: no bracketer here (bracketer.json and bracketer.safetensors)")
        meta = json.loads((folder / "bracketer.json").read_text())
        tags = meta.get("tags")
        config = {"char_dim": 0, **meta["config"]}          # folders saved before characters were read
        model = SpanScorer(BracketerConfig(**config), len(meta["vocab"]), len(tags or ()))
        model.load_state_dict({k: v.float() for k, v in load_file(str(folder / "bracketer.safetensors")).items()})
        return cls(model, meta["vocab"], tags)

