"""Train the shipped bracketer on the SST training trees (Stanford-parser parses, binarised),
selecting the epoch by bracketing F1 on the SST dev trees. The shipped model is made in three
steps: three bracketers on the SST trees alone, their
ensemble's trees of 60,000 IMDB sentences, and one bracketer on the gold trees plus twice as many
of those silver trees each epoch:

    python -m adaptext.parse.train --seed S --out teachers/S                      # S = 1, 2, 3
    python -m adaptext.parse.silver --teachers teachers/1 teachers/2 teachers/3 \
        --texts ../shared/data/imdb/train.jsonl.gz --sentences 60000 --out silver.txt
    python -m adaptext.parse.train --silver silver.txt --silver-per-epoch 17088 --out adaptext/resources/parser

The loss is Stern et al.'s structured margin (CKY in the loop) rather than an independent
decision per span, and an auxiliary head learns NLTK's POS tags from the BiLSTM's states: the
tagger is needed to train (silver tags), not to parse.

The Penn Treebank sample is kept for evaluation only (its licence allows no redistribution
inside the package, and weights trained on it would carry it)."""
from __future__ import annotations

import argparse
import dataclasses
import random
import time
from collections import Counter
from pathlib import Path

import numpy as np
import torch

from ..data.embeddings import read_vectors
from ..errors import DataError
from ..data.lines import iter_lines
from ..data.trees import tree_from_brackets
from .bracketer import SPECIALS, UNK, Bracketer, BracketerConfig, SpanScorer, cky
from .spans import bracket_f1, nontrivial, spans_of

BRACKETS = {"-LRB-": "(", "-RRB-": ")", "-LCB-": "{", "-RCB-": "}", "-LSB-": "[", "-RSB-": "]"}


def read_trees(path) -> list:
    """The bracketed trees of a file (SST's, or silver ones), their words as the word tokenizer
    writes them; a line that is no tree is an error naming it."""
    trees = []
    for i, line in iter_lines(path, "utf-8"):
        if line.strip():
            try:
                trees.append(renamed_words(tree_from_brackets(line, labels_are="labels"), BRACKETS))
            except ValueError as e:
                raise DataError(path, i, f"bad tree: {e}") from None
    return trees


def renamed_words(tree, names: dict):
    """``tree`` with each word that ``names`` holds replaced by its entry."""
    return tree.__class__(tree.left, tree.right, tuple(names.get(w, w) if w else w for w in tree.words), tree.tags,
                          tree.labels)


def gold_matrix(tree, T: int) -> torch.Tensor:
    """[T + 1, T + 1]: 1 at the tree's non-trivial spans."""
    m = torch.zeros(T + 1, T + 1)
    for i, j in nontrivial(spans_of(tree), len(tree.leaves())):
        m[i, j] = 1
    return m


def valid_mask(lengths: torch.Tensor, T: int) -> torch.Tensor:
    """[B, T + 1, T + 1]: the spans a sentence can have beyond the trivial ones."""
    i = torch.arange(T + 1)[None, :, None]
    j = torch.arange(T + 1)[None, None, :]
    n = lengths[:, None, None]
    return (j - i >= 2) & (j <= n) & ~((i == 0) & (j == n))


# the Penn Treebank tag set NLTK's tagger writes
PTB_TAGS = ("CC CD DT EX FW IN JJ JJR JJS LS MD NN NNS NNP NNPS PDT POS PRP PRP$ RB RBR RBS RP SYM TO UH VB VBD "
            "VBG VBN VBP VBZ WDT WP WP$ WRB $ # `` '' -LRB- -RRB- , . :").split()
TAG_VOCAB = SPECIALS[:2] + PTB_TAGS    # the tag ids a model reads or its tagging head predicts


def build(train, vectors, cfg: BracketerConfig, silver=()) -> tuple[Bracketer, Counter[str]]:
    """A fresh bracketer whose vocabulary is every word of the ``train`` trees and the words seen
    at least twice in all (so the silver trees' one-off words do not swell the shipped file)."""
    gold = Counter(w.lower() for t in train for w in t.leaves())
    counts = gold + Counter(w.lower() for t in silver for w in t.leaves())
    vocab = SPECIALS + sorted(w for w, c in counts.items() if w in gold or c >= 2)
    tags = TAG_VOCAB if cfg.tag_dim else None
    model = SpanScorer(cfg, len(vocab), len(tags or ()))
    with torch.no_grad():
        for k, w in enumerate(vocab):
            if w in vectors:
                model.embed.weight[k] = torch.as_tensor(vectors[w])
    return Bracketer(model, vocab, tags), counts


def silver_tags(trees, tags: list[str]) -> dict:
    """Sentence -> NLTK's POS tag ids for its words, as the target of the auxiliary tagging head
    (training only: the shipped bracketer parses without a tagger)."""
    from ..data.tags import get_tagger
    tagger, index = get_tagger("nltk"), {t: k for k, t in enumerate(tags)}
    return {tuple(t.leaves()): [index.get(x, UNK) for x in tagger(t.leaves())] for t in trees}


def tree_spans(split: np.ndarray, n: int) -> list[tuple[int, int]]:
    """The inner spans of the binary tree ``split`` (from ``cky``) describes over n words."""
    out, stack = [], [(0, n)]
    while stack:
        i, j = stack.pop()
        if j - i >= 2:
            out.append((i, j))
            k = int(split[i, j])
            stack += [(i, k), (k, j)]
    return out


def margin_loss(scores: torch.Tensor, gold: torch.Tensor, mask: torch.Tensor, lengths) -> torch.Tensor:
    """Stern et al.'s structured hinge: the best tree under scores raised by 1 on every non-gold
    span (CKY, the Hamming loss augmented) against the gold tree, per sentence."""
    wrong = (1 - gold) * mask
    split = cky((scores + wrong).detach().numpy(), lengths)
    pred = torch.zeros_like(gold)
    for b, n in enumerate(lengths):
        for i, j in nontrivial(tree_spans(split[b], n), n):
            pred[b, i, j] = 1
    margin = ((scores + wrong) * pred * mask).sum((1, 2)) - (scores * gold * mask).sum((1, 2))
    return torch.relu(margin).mean()


def step(bracketer: Bracketer, batch, counts, opt, word_dropout: float, loss_kind: str = "margin",
         tagging=None) -> float:
    """One update on ``batch``; ``tagging`` (head, silver tags, weight) adds the auxiliary
    tagging loss on the BiLSTM's states."""
    sentences = [t.leaves() for t in batch]
    x = bracketer.encode(sentences)
    words = x["words"]
    rare = torch.tensor([[0] + [counts[w.lower()] == 1 for w in s] + [0] * (words.shape[1] - len(s) - 1)
                         for s in sentences], dtype=torch.bool)
    x["words"] = words.masked_fill(rare & (torch.rand(words.shape) < word_dropout), UNK)   # learn what <unk> means
    T = words.shape[1] - 2
    h = bracketer.model.states(x)
    scores = bracketer.model.spans(h)
    gold = torch.stack([gold_matrix(t, T) for t in batch])
    mask = valid_mask(x["lengths"], T)
    if loss_kind == "margin":
        loss = margin_loss(scores, gold, mask, x["lengths"].tolist())
    else:
        loss = torch.nn.functional.binary_cross_entropy_with_logits(scores[mask], gold[mask])
    if tagging is not None:
        head, silver, weight = tagging
        target = torch.full(words.shape, -100)
        for r, s in enumerate(sentences):
            target[r, 1:len(s) + 1] = torch.tensor(silver[tuple(s)])
        loss = loss + weight * torch.nn.functional.cross_entropy(head(h).flatten(0, 1), target.flatten())
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_([p for g in opt.param_groups for p in g["params"]], 5.0)
    opt.step()
    return loss.item()


def evaluate(bracketer: Bracketer, trees) -> float:
    bracketer.model.eval()
    return bracket_f1(trees, bracketer.parse([t.leaves() for t in trees]))


def word_vectors(data: Path, train_trees, source: str, dim: int) -> dict:
    """word -> start vector: the 50-d GloVe subset, or (``transformer``) the packaged MiniLM's
    states averaged over each word's occurrences in the training sentences, PCA to ``dim``:
    what the encoder knows of a word's syntax, at the cost of a lookup when parsing."""
    words = sorted({w.lower() for t in train_trees for w in t.leaves()})
    if source == "glove":
        return read_vectors(data / "glove" / "glove.6B.50d.subset.txt.gz", wanted=set(words))[0]
    from ..data.embeddings import principal_components
    from ..data.text import Vocab
    from ..data.transformer_vectors import transformer_vectors
    vocab = Vocab(words)
    mat, coverage = transformer_vectors(vocab, "transformer", [[w.lower() for w in t.leaves()] for t in train_trees])
    if dim < mat.shape[1]:
        mat, _ = principal_components(mat, coverage, dim)
    return {w: mat[k].numpy() for k, w in enumerate(vocab.itos) if k >= 2}


def train(data: Path, out: Path, epochs: int, patience: int, seed: int, cfg: BracketerConfig, lr: float = 2e-3,
          batch_size: int = 32, word_dropout: float = 0.3, vectors: str = "glove", loss: str = "margin",
          tag_loss: float = 0.5, silver: Path | None = None, silver_per_epoch: int | None = None) -> float:
    """The bracketer trained on the SST training trees and, with ``silver``, on a fresh draw of
    ``silver_per_epoch`` (default: as many as the gold trees) of that file's trees each epoch."""
    random.seed(seed)
    torch.manual_seed(seed)
    gold, dev = read_trees(data / "sst_ptb" / "train.txt"), read_trees(data / "sst_ptb" / "dev.txt")
    pool = read_trees(silver) if silver else []
    start = word_vectors(data, gold + pool, vectors, cfg.embed_dim)
    bracketer, counts = build(gold, start, cfg, pool)
    params = list(bracketer.model.parameters())
    tagging = None
    if tag_loss:
        head = torch.nn.Linear(2 * cfg.hidden, len(TAG_VOCAB))
        tagging, params = (head, silver_tags(gold + pool, TAG_VOCAB), tag_loss), params + list(head.parameters())
    opt = torch.optim.Adam(params, lr=lr)
    halve = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="max", factor=0.5, patience=0)
    best, waited = -1.0, 0
    for epoch in range(1, epochs + 1):
        drawn = random.sample(pool, min(len(pool), silver_per_epoch or len(gold))) if pool else []
        t0, order = time.perf_counter(), sorted(gold + drawn, key=lambda t: len(t.leaves()) + random.random() * 6)
        batches = [order[k:k + batch_size] for k in range(0, len(order), batch_size)]
        random.shuffle(batches)
        bracketer.model.train()
        losses = [step(bracketer, b, counts, opt, word_dropout, loss, tagging) for b in batches]
        f1 = evaluate(bracketer, dev)
        print(f"epoch {epoch}: loss {np.mean(losses):.4f}  dev F1 {f1:.2f}  ({time.perf_counter() - t0:.0f}s)", flush=True)
        halve.step(f1)
        if f1 > best:
            best, waited = f1, 0
            bracketer.save(out)
        else:
            waited += 1
            if waited >= patience:
                break
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2].parent / "shared" / "data"))
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "resources" / "parser"))
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--patience", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--vectors", choices=("glove", "transformer"), default="glove",
                    help="the words' start: the 50-d GloVe subset, or MiniLM-derived vectors (PCA to --embed-dim)")
    ap.add_argument("--loss", choices=("bce", "margin"), default="margin",
                    help="each span a constituent or not (binary cross-entropy), or Stern et al.'s structured hinge")
    ap.add_argument("--tag-loss", type=float, default=0.5,
                    help="> 0: weight of an auxiliary loss predicting NLTK's POS tags from the BiLSTM (training only)")
    ap.add_argument("--silver", help="a file of silver trees (python -m adaptext.parse.silver) trained on beside "
                    "the gold")
    ap.add_argument("--silver-per-epoch", type=int,
                    help="silver trees drawn afresh each epoch (default: as many as the gold)")
    for f in dataclasses.fields(BracketerConfig):
        ap.add_argument("--" + f.name.replace("_", "-"), type=type(f.default), default=f.default)
    a = ap.parse_args(argv)
    torch.set_num_threads(2)
    cfg = BracketerConfig(**{f.name: getattr(a, f.name) for f in dataclasses.fields(BracketerConfig)})
    best = train(Path(a.data), Path(a.out), a.epochs, a.patience, a.seed, cfg, a.lr, vectors=a.vectors,
                 loss=a.loss, tag_loss=a.tag_loss, silver=a.silver and Path(a.silver),
                 silver_per_epoch=a.silver_per_epoch)
    print(f"best dev F1 {best:.2f}; saved to {a.out}")


if __name__ == "__main__":
    main()
