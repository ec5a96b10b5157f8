"""The transfer set's rewritten copies (Tang et al. 2019, Section 3.2): masking, replacement by a
training word of the same part of speech, n-gram sampling; each rule checked on its own."""
from __future__ import annotations

from conftest import bundled_examples

from adaptext.data.tags import get_tagger
from adaptext.data.text import Tokenizer
from adaptext.training import distill


def _copies(monkeypatch, mask: float, pos: float, ngram: float, n: int = 5):
    monkeypatch.setattr(distill, "P_MASK", mask)
    monkeypatch.setattr(distill, "P_POS", pos)
    monkeypatch.setattr(distill, "P_NGRAM", ngram)
    examples = bundled_examples("text", 60)
    return examples, distill.augmented(examples, n, seed=5)


def test_pos_guided_replacement_puts_a_training_word_of_the_same_tag(monkeypatch):
    examples, copies = _copies(monkeypatch, mask=0.0, pos=0.3, ngram=0.0)
    tagger, words = get_tagger("nltk"), Tokenizer(lower=False)
    seen: dict = {}
    for ex in examples:
        toks = words(ex.text)
        for w, t in zip(toks, tagger(toks)):
            seen.setdefault(t, set()).add(w)
    replaced = 0
    for k, copy in enumerate(copies):
        original = words(examples[k // 5].text)
        new = copy.text.split(" ")
        assert len(new) == len(original)                     # no masking, no n-grams: word for word
        for w, tag, v in zip(original, tagger(original), new):
            if v != w:
                replaced += 1
                assert v in seen[tag], (w, tag, v)           # a training word of the same tag
    assert replaced > 0.15 * sum(len(words(e.text)) for e in examples) * 5 * 0.5


def test_without_replacement_and_masking_copies_are_the_originals(monkeypatch):
    examples, copies = _copies(monkeypatch, mask=0.0, pos=0.0, ngram=0.0)
    words = Tokenizer(lower=False)
    assert [c.text for c in copies] == [" ".join(words(e.text)) for e in examples for _ in range(5)]


def test_masking_only_masks_and_ngrams_only_cut(monkeypatch):
    examples, masked = _copies(monkeypatch, mask=0.5, pos=0.0, ngram=0.0)
    words = Tokenizer(lower=False)
    for k, copy in enumerate(masked):
        for w, v in zip(words(examples[k // 5].text), copy.text.split(" ")):
            assert v in (w, distill.MASK)
    assert sum(c.text.count(distill.MASK) for c in masked) > 0
    examples, cut = _copies(monkeypatch, mask=0.0, pos=0.0, ngram=1.0)
    for k, copy in enumerate(cut):
        original = " ".join(words(examples[k // 5].text))
        assert copy.text in original and 1 <= len(copy.text.split(" ")) <= distill.MAX_N


def test_spans_are_distinct_strict_contiguous_parts_of_their_texts():
    examples = bundled_examples("text", 60)
    words = Tokenizer(lower=False)
    spans = distill.spans(examples, 8, seed=3)
    texts = {ex.text for ex in examples}
    assert len(spans) > 4 * len(examples)          # a few repeats (single words) are dropped
    assert len({s.text for s in spans}) == len(spans) and not texts & {s.text for s in spans}
    assert all(s.label is None for s in spans)
    tokens = [words(ex.text) for ex in examples]
    for s in spans[:100]:
        part = s.text.split(" ")
        assert any(0 < len(part) < len(t) and any(t[i:i + len(part)] == part for i in range(len(t)))
                   for t in tokens)
    assert [s.text for s in distill.spans(examples, 8, seed=3)] == [s.text for s in spans]
    assert [s.text for s in distill.spans(examples, 8, seed=4)] != [s.text for s in spans]
