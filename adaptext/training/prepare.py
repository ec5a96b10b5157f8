"""A run's data made ready for its model: tags, vocabulary, labels, pretrained vectors and the
encoded splits, from examples in memory or from the splits of a token store."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..data.batching import Encoder, StoredItems
from ..data.loading import ItemDataset, Items
from ..data.embeddings import Coverage, embedding_matrix, leading_words, principal_components
from ..errors import BadLines, DataError, UsageError
from ..data.examples import ExampleKind
from ..data.store import StoredSplit
from ..data.text import LabelMap, Tokenizer, Vocab
from ..data.transformer_vectors import is_transformer_spec, piece_vectors, transformer_vectors
from ..registry import get_entry
from ..runs.pipeline import tag
from ..runs.spec import RunSpec, make_tokenizer
from ..runs.splits import DEMO, require_dev
from .distill import soft_items, unlabeled_of
from ..config import RunConfig


@dataclass
class Prepared:
    """A run's data made ready for its model: the spec (tokenizer, vocabulary, labels), the
    pretrained vectors and the encoded splits."""
    spec: RunSpec
    vectors: torch.Tensor | None
    coverage: Coverage | None
    train: Items
    dev: Items
    test: Items | None
    test_examples: list
    bad: BadLines
    truncated: int


def prepare(cfg: RunConfig, train, dev, test, kind: ExampleKind, multilabel: bool, log=print) -> Prepared:
    entry = get_entry(cfg.model)
    where = cfg.data or DEMO
    if kind not in entry.inputs:
        raise DataError(where, None, f"model {entry.name} reads {'/'.join(entry.inputs)} examples, "
                                     f"but this dataset holds {kind} examples")
    require_dev(where, dev)
    if cfg.feature_weight and not cfg.teacher:
        raise UsageError("--feature-weight needs the teacher run (--teacher): its representations are read as it "
                         "reads the transfer set (a file of logits holds none)")
    if isinstance(train, StoredSplit):
        return prepare_stored(cfg, train, dev, test, kind, multilabel, log)
    train, dev, test = (tag(s, cfg) for s in (train, dev, test))
    tokenizer = make_tokenizer(cfg)
    distilled = bool(cfg.teacher or cfg.teacher_logits)
    unlabeled = unlabeled_of(cfg) if distilled else []
    # a student learns the words of its unlabelled transfer texts from the teacher's logits, so they
    # are counted with the training texts' words
    vocab = tokenizer.vocabulary(token_lists(train + unlabeled, tokenizer), cfg.min_freq, cfg.max_vocab or None)
    vocab = with_embedding_words(cfg, vocab)
    found = LabelMap.from_examples(train)
    labels = checked_labels(cfg, LabelMap(found.labels, found.multilabel or multilabel))
    tag_vocab = tag_vocab_of(train) if entry.needs_tags else None
    bad = BadLines(cfg.on_bad_line)
    vectors, coverage = pretrained_vectors(cfg, tokenizer, vocab, lambda: token_lists(train, tokenizer), bad, log)
    spec = RunSpec(cfg, kind, tokenizer, vocab, tag_vocab, labels, coverage.dim if coverage else None)
    encoder = Encoder(tokenizer, vocab, labels, tag_vocab, cfg.max_length)
    encoded = [encoder.encode(s, bad) if s else None for s in (train, dev, test)]
    if distilled:
        encoded[0] = soft_items(cfg, train, unlabeled, encoder, bad, log, device=prepare_device(cfg))
    train_items, dev_items, test_items = encoded
    # the training examples give at least two labels (checked_labels) and dev is not empty (above)
    assert train_items is not None and dev_items is not None, "train and dev hold examples"
    return Prepared(spec, vectors, coverage, train_items, dev_items, test_items, test or [], bad,
                    encoder.truncated)


def prepare_stored(cfg: RunConfig, train, dev, test, kind: ExampleKind, multilabel: bool, log=print) -> Prepared:
    """``prepare`` for splits of token stores: the vocabulary counted on the training rows, items
    made batch by batch from the stores."""
    tokenizer = make_tokenizer(cfg)
    if tokenizer.config.level == "subword":
        vocab = tokenizer.vocabulary(())
    else:
        counts = train.store.token_counts(train.rows)
        vocab = with_embedding_words(cfg, Vocab.from_counts(
            ((train.store.strings[i], int(counts[i])) for i in np.flatnonzero(counts)), cfg.min_freq,
            cfg.max_vocab or None))
    labels = checked_labels(cfg, LabelMap.of_names(train.label_names(), train.multilabel() or multilabel))
    bad = BadLines(cfg.on_bad_line)
    vectors, coverage = pretrained_vectors(cfg, tokenizer, vocab, lambda: stored_token_lists(train), bad, log)
    spec = RunSpec(cfg, kind, tokenizer, vocab, None, labels, coverage.dim if coverage else None)
    encoded = [StoredItems(s, vocab, labels, cfg.max_length, bad) if s else None for s in (train, dev, test)]
    truncated = sum(e.truncated for e in encoded if e is not None)
    train_items, dev_items, test_items = encoded
    # the training rows give at least two labels (checked_labels) and dev is not empty (prepare)
    assert train_items is not None and dev_items is not None, "train and dev hold examples"
    return Prepared(spec, vectors, coverage, train_items, dev_items, test_items, test or [], bad, truncated)


def checked_labels(cfg: RunConfig, labels: LabelMap) -> LabelMap:
    if len(labels) < 2:
        raise DataError(cfg.data or DEMO, None, f"the training data has {len(labels)} class(es); "
                                                   "at least 2 are needed")
    return labels


def with_embedding_words(cfg: RunConfig, vocab: Vocab) -> Vocab:
    """The vocabulary and ``--embedding-words`` N: the first N words of ``--embeddings``, so that a
    word the training texts lack is read with its pretrained vector, not as the unknown word (a
    vocabulary of words: ``check_new_run``)."""
    if not cfg.embedding_words:
        return vocab
    # a bad line of the file is counted once, when the vectors themselves are read
    return vocab.extended(leading_words(cfg.embeddings, cfg.embedding_words, cfg.lower, BadLines(cfg.on_bad_line)))


def pretrained_vectors(cfg: RunConfig, tokenizer: Tokenizer, vocab: Vocab, texts, bad: BadLines, log=print) -> tuple:
    """(vectors, coverage) of the run's ``--embeddings`` for its vocabulary, or (None, None);
    ``texts()``: the training texts as token lists (transformer-derived vectors read them)."""
    if is_transformer_spec(cfg.embeddings):
        pieces_of = tokenizer.config.pretrained if tokenizer.config.level == "subword" else None
        vectors, coverage = piece_vectors(vocab, cfg.embeddings, pieces_of) if pieces_of else \
            transformer_vectors(vocab, cfg.embeddings, texts(), log, device=prepare_device(cfg))
    elif cfg.embeddings:
        vectors, coverage = embedding_matrix(vocab, cfg.embeddings, cfg.oov_init, cfg.oov_scale, cfg.seed,
                                             bad=bad)
    elif cfg.embedding_mode != "rand":
        raise DataError(cfg.data or DEMO, None, f"embedding mode {cfg.embedding_mode} needs --embeddings PATH")
    else:
        return None, None
    if cfg.pca_dim:
        vectors, coverage = principal_components(vectors, coverage, cfg.pca_dim)
    log(f"embeddings: {coverage}")
    return vectors, coverage


def prepare_device(cfg: RunConfig) -> str:
    """Where the encoders that prepare a run's data (derived vectors, a teacher's logits) run: the
    GPU the run will train on, else the CPU."""
    if cfg.accelerator in ("gpu", "cuda", "auto") and torch.cuda.is_available():
        return "cuda"
    return "cpu"


def stored_token_lists(split):
    strings = split.store.strings
    for row in split.rows:
        for ids in split.store.texts(int(row)):
            yield [strings[i] for i in ids]


def token_lists(examples, tokenizer):
    """The tokens of every text of the examples; a parse's are its words (a parser has split them)."""
    lower = tokenizer.config.lower
    for ex in examples:
        if ex.kind.is_tree:
            yield from ([w.lower() if lower else w for w in t.leaves()] for t in ex.trees())
        else:
            yield from map(tokenizer, ex.texts())


def tag_vocab_of(examples):
    tags = set()
    for ex in examples:
        for t in ex.trees():
            tags.update(x for x in t.tags if x is not None)
    return Vocab(sorted(tags)) if tags else None


def class_weights_of(cfg: RunConfig, p: Prepared) -> torch.Tensor | None:
    """balanced: each class weighs n / (classes * its count), so rare classes count as much as common ones."""
    labels = p.spec.labels
    if cfg.class_weights != "balanced" or labels.multilabel:
        return None
    counts = np.bincount(ItemDataset(p.train).labels(), minlength=len(labels)).astype(float)
    return torch.tensor(len(p.train) / (len(labels) * np.maximum(counts, 1)), dtype=torch.float32)
