"""Tokenisers, vocabulary, embeddings, batching and metrics on real data."""
import gzip
import struct

import numpy as np
import pytest
import torch

from adaptext.data import readers as R
from adaptext.data import tree_readers as T
from adaptext.data.batching import Collator, Encoder
from adaptext.data.embeddings import embedding_matrix, principal_components, read_vectors
from adaptext.errors import UsageError
from adaptext.data.text import LabelMap, Tokenizer, Vocab, kim_clean
from adaptext.runs import metrics as M

from conftest import BUNDLED_TREC, DATA, needs_data


def test_word_tokenizer_splits_clitics_and_punctuation():
    tok = Tokenizer()
    assert tok("It doesn't work, isn't it?") == ["it", "does", "n't", "work", ",", "is", "n't", "it", "?"]
    assert tok("the film 's charm<br />ends") == ["the", "film", "'s", "charm", "ends"]
    assert Tokenizer(lower=False)("New York") == ["New", "York"]
    assert kim_clean("Don't go, (now)!") == "Do n't go , ( now ) !"
    assert Tokenizer(clean="kim")("Don't go!") == ["do", "n't", "go", "!"]
    assert Tokenizer(level="char")("Ab  c") == ["a", "b", " ", "c"]


def test_a_masked_word_is_the_unknown_word_not_three_tokens():
    """A distillation copy masks words as <unk>: the student must read its unknown-word id there."""
    assert Tokenizer()("What is <unk> , a<UNK>b ?") == ["what", "is", "<unk>", ",", "a", "<unk>", "b", "?"]
    assert Tokenizer(clean="kim")("What's <unk>?") == ["what", "'s", "<unk>", "?"]
    v = Vocab.build([Tokenizer()("what is <unk> ?")])
    assert "<unk>" not in v.itos[2:] and v.encode(Tokenizer()("what is <unk> ?"))[2] == 1


def test_vocab_min_freq_and_special_ids():
    v = Vocab.build([["a", "b", "a"], ["a", "c", "b"]], min_freq=2)
    assert v.itos == ["<pad>", "<unk>", "a", "b"]
    assert v.encode(["a", "zzz", "b"]) == [2, 1, 3]


@needs_data
def test_glove_subset_coverage_and_oov_init():
    vocab = Vocab.build([["the", "movie", "qwertyzzz", "Rock"]])
    mat, cov = embedding_matrix(vocab, DATA / "glove/glove.6B.50d.subset.txt.gz", "normal", 0.6, seed=0)
    assert mat.shape == (len(vocab), 50) and cov.dim == 50
    assert cov.found == 3                    # the, movie, and Rock via its lower-cased form
    assert torch.allclose(mat[vocab.stoi["the"]][:3], torch.tensor([0.418, 0.24968, -0.41242]))
    assert mat[0].abs().sum() == 0           # padding row
    oov = mat[vocab.stoi["qwertyzzz"]]
    assert 0.05 < oov.std() < 2.0


@needs_data
def test_principal_components_keep_the_largest_variance_of_the_words():
    tok = Tokenizer()
    vocab = Vocab.build(tok(ex.text) for ex in R.read_trec_raw(BUNDLED_TREC))
    mat, cov = embedding_matrix(vocab, DATA / "glove/glove.6B.50d.subset.txt.gz", seed=0)
    low, low_cov = principal_components(mat, cov, 8)
    assert low.shape == (len(vocab), 8) and low_cov.dim == 8 and "PCA to 8" in low_cov.path
    assert low[0].abs().sum() == 0                          # padding stays zero
    # the kept variance is the sum of the covariance's 8 largest eigenvalues (numpy's, not torch's)
    x = mat[2:].double().numpy()
    eig = np.sort(np.linalg.eigvalsh(np.cov(x, rowvar=False)))[::-1]
    kept = np.var(low[2:].double().numpy(), axis=0, ddof=1)
    assert np.allclose(np.sort(kept)[::-1], eig[:8], rtol=1e-6)
    assert np.all(np.diff(kept) <= 1e-9)                    # components in order of variance
    with pytest.raises(UsageError, match="between 1 and 49"):
        principal_components(mat, cov, 50)


def test_word2vec_text_with_header_and_binary(tmp_path):
    txt = tmp_path / "w.vec"
    txt.write_text("2 3\nfoo 1 2 3\nbar 4 5 6\n")
    vecs, dim = read_vectors(txt)
    assert dim == 3 and vecs["bar"].tolist() == [4, 5, 6]
    b = tmp_path / "w.bin.gz"
    with gzip.open(b, "wb") as f:
        f.write(b"2 3\n")
        for w, v in (("foo", (1, 2, 3)), ("bar", (4, 5, 6))):
            f.write(w.encode() + b" " + struct.pack("3f", *v) + b"\n")
    vecs, dim = read_vectors(b)
    assert dim == 3 and vecs["foo"].tolist() == [1, 2, 3] and vecs["bar"].tolist() == [4, 5, 6]


@needs_data
def test_collate_pads_masks_and_trees():
    ex = T.read_sst_trees(DATA / "sst_ptb/dev.txt")[:3]
    vocab = Vocab.build([[w.lower() for w in e.tree.leaves()] for e in ex])
    labels = LabelMap.from_examples(ex)
    items = Encoder(Tokenizer(), vocab, labels).encode(ex)
    b = Collator(len(labels))(items)
    tb = b.tree
    assert tb.num_nodes == sum(len(e.tree) for e in ex)
    # each level's nodes have their children in earlier levels
    done = set(tb.levels[0].tolist())
    assert all(tb.left[i] < 0 for i in done)
    for lvl in tb.levels[1:]:
        for i in lvl.tolist():
            assert int(tb.left[i]) in done and int(tb.right[i]) in done
        done |= set(lvl.tolist())
    assert tb.roots.tolist() == list(np.cumsum([len(e.tree) for e in ex]) - 1)
    assert (tb.node_labels >= 0).all()


@needs_data
def test_text_batches_lengths_min_and_fixed_length():
    ex = R.read_trec_raw(DATA / "trec/raw/TREC.test")[:4]
    tok = Tokenizer()
    vocab = Vocab.build([tok(e.text) for e in ex])
    labels = LabelMap.from_examples(ex)
    items = Encoder(tok, vocab, labels, max_length=6).encode(ex)
    b = Collator(len(labels), min_length=8)(items)
    assert b.text.shape == (4, 8) and b.lengths.max() <= 6
    assert (b.text[~b.mask] == 0).all()
    b = Collator(len(labels), fixed_length=3)(items)
    assert b.text.shape == (4, 3) and (b.lengths <= 3).all()


def test_metrics_single_and_multi_label():
    m = M.single_label([0, 0, 1, 2], [0, 1, 1, 2], ["a", "b", "c"])
    assert m["accuracy"] == 75.0
    assert m["per_class"]["a"]["recall"] == 50.0 and m["per_class"]["b"]["precision"] == 50.0
    assert m["macro_f1"] == pytest.approx(100 * (2 / 3 + 2 / 3 + 1) / 3)
    assert m["confusion_matrix"]["matrix"] == [[1, 1, 0], [0, 1, 0], [0, 0, 1]]
    t = np.array([[1, 1, 0], [0, 0, 1]])
    p = np.array([[1, 0, 0], [0, 1, 1]])
    mm = M.multi_label(t, p, ["x", "y", "z"])
    assert mm["micro_f1"] == pytest.approx(100 * 2 * 2 / (2 * 2 + 1 + 1))
    assert mm["example_f1"] == pytest.approx(100 * (2 / 3 + 2 / 3) / 2)
    probs = np.array([[0.9, 0.4, 0.1], [0.2, 0.3, 0.8]])
    th = M.tune_threshold(probs, t)
    assert M.multi_label(t, M.decide(probs, True, th), ["x", "y", "z"])["micro_f1"] == 100.0


def test_accuracy_by_length_deciles():
    lengths = np.arange(1, 101)                     # 100 texts of lengths 1..100
    correct = lengths > 50                          # the long half right, the short half wrong
    bins = M.by_length(lengths, correct)
    assert [b["n"] for b in bins] == [10] * 10
    assert [b["accuracy"] for b in bins] == [0.0] * 5 + [100.0] * 5
    assert bins[0]["min_len"] == 1 and bins[-1]["max_len"] == 100
    tied = M.by_length([5] * 30 + [9] * 10, [1] * 40, bins=4)   # ties stay in one bucket
    assert sum(b["n"] for b in tied) == 40 and all(b["min_len"] == b["max_len"] for b in tied)
    with pytest.raises(ValueError):
        M.by_length([1, 2], [1])


def test_macro_f1_counts_classes_predicted_but_absent_from_gold():
    """A class the model predicts but the gold labels never hold scores F1 0 and counts in the
    macro average, as sklearn's f1_score(average="macro") does; leaving it out inflates macro F1."""
    from sklearn.metrics import f1_score
    gold, pred = [0, 0, 1, 1], [0, 2, 1, 1]
    m = M.single_label(gold, pred, ["a", "b", "c", "d"])      # d: neither gold nor predicted
    assert m["macro_f1"] == pytest.approx(100 * f1_score(gold, pred, average="macro"))
    assert m["macro_f1"] == pytest.approx(100 * (2 / 3 + 1 + 0) / 3)
    t = np.array([[1, 0, 0], [0, 1, 0], [1, 1, 0]])
    p = np.array([[1, 0, 1], [0, 1, 1], [1, 1, 1]])           # z predicted everywhere, never gold
    assert M.multi_label(t, p, ["x", "y", "z"])["macro_f1"] == pytest.approx(
        100 * f1_score(t, p, average="macro", zero_division=0))
    assert M.multi_label(t, p, ["x", "y", "z"])["macro_f1"] == pytest.approx(200 / 3)


def _close(got, expected, where="metrics"):
    """Equal keys all the way down, numbers equal to rounding, types kept (a count stays an int)."""
    if isinstance(expected, dict):
        assert list(got) == list(expected), where
        for k in expected:
            _close(got[k], expected[k], f"{where}.{k}")
    elif isinstance(expected, list):
        assert len(got) == len(expected), where
        for k, (g, e) in enumerate(zip(got, expected)):
            _close(g, e, f"{where}[{k}]")
    else:
        assert type(got) is type(expected) and got == pytest.approx(expected, abs=1e-9), (where, got, expected)


def test_every_metric_of_a_split_with_classes_never_predicted_and_never_gold():
    """The whole dict a run writes to metrics.json, on the percent scale: c is predicted but never
    gold, d neither (single-label); y is predicted but never gold, z gold but never predicted, and
    the third example has no label and none predicted (multi-label)."""
    pc = lambda p, r, f, s: {"precision": p, "recall": r, "f1": f, "support": s}    # noqa: E731
    _close(M.single_label([0, 0, 1, 1, 1], [0, 1, 1, 1, 2], ["a", "b", "c", "d"]), {
        "n": 5, "accuracy": 60.0, "macro_f1": 100 * (2 / 3 + 2 / 3 + 0) / 3, "micro_f1": 60.0,
        "weighted_f1": 100 * 2 / 3,
        "per_class": {"a": pc(100.0, 50.0, 200 / 3, 2), "b": pc(200 / 3, 200 / 3, 200 / 3, 3),
                      "c": pc(0.0, 0.0, 0.0, 0), "d": pc(0.0, 0.0, 0.0, 0)},
        "confusion_matrix": {"labels": ["a", "b", "c", "d"],
                             "matrix": [[1, 1, 0, 0], [0, 2, 1, 0], [0, 0, 0, 0], [0, 0, 0, 0]]}})
    t = np.array([[1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 0, 0], [0, 1, 0, 1]])
    p = np.array([[1, 0, 1, 0], [0, 1, 1, 0], [0, 0, 0, 0], [0, 1, 0, 0]])
    _close(M.multi_label(t, p, ["w", "x", "y", "z"]), {
        "n": 4, "micro_f1": 60.0, "micro_precision": 60.0, "micro_recall": 60.0,
        "macro_f1": 100 * (2 / 3 + 1 + 0 + 0) / 4, "example_f1": 100 * (2 / 3 + 1 / 2 + 1 + 2 / 3) / 4,
        "subset_accuracy": 25.0, "accuracy": 25.0,
        "per_class": {"w": pc(100.0, 50.0, 200 / 3, 2), "x": pc(100.0, 100.0, 100.0, 2),
                      "y": pc(0.0, 0.0, 0.0, 0), "z": pc(0.0, 0.0, 0.0, 1)}})
    empty = M.single_label([], [], ["a", "b"])
    assert (empty["n"], empty["accuracy"], empty["confusion_matrix"]["matrix"]) == (0, 0.0, [[0, 0], [0, 0]])
