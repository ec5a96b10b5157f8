"""Shared fixtures: small real slices of ../shared/data (resolved from the repository root)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from adaptext.data import readers as R
from adaptext.data.batching import Collator, Encoder
from adaptext.data.examples import ContextsExample
from adaptext.data.text import LabelMap, Tokenizer, Vocab

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("ADAPTEXT_DATA") or ROOT / ".." / "shared" / "data").resolve()   # a GPU machine: a copied slice
os.environ.setdefault("ADAPTEXT_DATA", str(DATA))
os.environ.setdefault("NLTK_DATA", str(DATA / "nltk_data"))
torch.set_num_threads(min(2, os.cpu_count() or 1))

needs_data = pytest.mark.skipif(not DATA.exists(), reason="../shared/data is not beside the repository")


def real_examples(kind: str, n: int = 8):
    """n real examples of a task kind, from the shared benchmark data."""
    if kind == "text":
        return R.read_trec_raw(DATA / "trec/raw/TREC.train")[:n]
    if kind == "pair":
        return R.read_sick(DATA / "sick/SICK_train.txt")[:n]
    if kind == "contexts":
        pairs = R.read_sick(DATA / "sick/SICK_train.txt")[: n + 3]
        return [ContextsExample(p.text, tuple(q.pair for q in pairs[i: i + 1 + i % 3]), p.label, p.where)
                for i, p in enumerate(pairs[:n])]
    if kind == "tree":
        return R.read_sst_trees(DATA / "sst_ptb/dev.txt")[:n]
    if kind == "tree_pair":
        return R.read_sick_trees(DATA / "sick/parsed/dev", DATA / "sick/SICK_trial.txt")[:n]
    raise ValueError(kind)


def with_simple_tags(examples):
    """Give tree nodes deterministic tags (leaf: word-shape tag, inner: 'X') for model tests
    that need tags but are not about tagging."""
    from adaptext.data.examples import TreeExample, TreePairExample

    def tag(t):
        return t.with_tags(("NN" if w and w[0].isalpha() else "SYM") if w is not None else "NP" for w in t.words)
    out = []
    for ex in examples:
        if isinstance(ex, TreePairExample):
            out.append(TreePairExample(tag(ex.tree), tag(ex.pair), ex.label, ex.where))
        else:
            out.append(TreeExample(tag(ex.tree), ex.label, ex.where))
    return out


def encode_for(examples, tokenizer_level: str = "word"):
    """(items, vocab size, number of classes, tag vocab size, multilabel) for a list of examples."""
    tok = Tokenizer(level=tokenizer_level)
    texts = []
    for ex in examples:
        if hasattr(ex, "tree"):
            texts.append([w.lower() for w in ex.tree.leaves()] + ([w.lower() for w in ex.pair.leaves()] if hasattr(ex, "pair") and not isinstance(ex.pair, str) else []))
        else:
            texts.append(tok(ex.text) + (tok(ex.pair) if hasattr(ex, "pair") else []) +
                         [t for c in getattr(ex, "contexts", ()) for t in tok(c)])
    vocab = Vocab.build(texts)
    labels = LabelMap.from_examples(examples)
    tags = sorted({t for ex in examples for tr in ([ex.tree] + ([ex.pair] if hasattr(ex, "tree") and hasattr(ex, "pair") else []))
                   if hasattr(ex, "tree") for t in tr.tags if t is not None}) if hasattr(examples[0], "tree") else []
    tag_vocab = Vocab(tags) if tags else None
    enc = Encoder(tok, vocab, labels, tag_vocab)
    items = enc.encode(examples)
    return items, len(vocab), len(labels), len(tag_vocab) if tag_vocab else 0, labels.multilabel


def collate_for(items, num_classes, model, multilabel=False):
    """Collate as training does: padded to the model's ``min_length`` / ``fixed_length``."""
    return Collator(num_classes, multilabel, getattr(model, "min_length", 1), getattr(model, "fixed_length", 0))(items)


CASE_SIZE = 6


def registered_case(name: str, kind: str):
    """(model, batch, number of classes) of a registered model at its test size, on ``CASE_SIZE``
    real examples of a task kind."""
    from adaptext.registry import create_model, get_entry
    entry = get_entry(name)
    examples = real_examples(kind, CASE_SIZE)
    if entry.needs_tags:
        examples = with_simple_tags(examples)
    items, vocab_size, num_classes, n_tags, _ = encode_for(examples, entry.tokenizer)
    model = create_model(name, num_classes=num_classes, vocab_size=vocab_size, kind=kind,
                         tag_vocab_size=n_tags, **entry.test_config)
    return model, collate_for(items, num_classes, model), num_classes
