"""The token store: files read as a stream into memory-mapped arrays, built once and reused, that
train, evaluate and predict exactly as the same file read into memory."""
from __future__ import annotations

import csv
import json
import os

import numpy as np
import pytest

from adaptext.cli import main
from adaptext.data import store as S
from adaptext.data.batching import Collator, Encoder, StoredItems
from adaptext.errors import BadLines, DataError
from adaptext.data.loading import ItemDataset, batch_loader
from adaptext.data.examples import ExampleKind, Location
from adaptext.data.readers import read_file
from adaptext.data.text import LabelMap, Tokenizer, TokenizerConfig, Vocab
from adaptext.training.run import train_run

from conftest import bundled_examples

TINY = {"filters": 8, "embed_dim": 16, "progress": False, "max_length": 12, "epochs": 2, "seed": 3,
        "deterministic": True}


def write_csv(path, examples, pair=False):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["text", "pair", "label"] if pair else ["text", "label"])
        for ex in examples:
            w.writerow([ex.text, ex.pair, ex.label] if pair else [ex.text, ex.label])
    return path


@pytest.fixture
def questions(tmp_path):
    qs = bundled_examples("text", 600)
    return write_csv(tmp_path / "train.csv", qs[:480]), write_csv(tmp_path / "test.csv", qs[480:])


def test_a_run_on_the_store_equals_the_run_in_memory(questions, tmp_path):
    train, test = questions
    runs = {}
    for store in ("auto", "off"):
        out = tmp_path / store
        runs[store] = train_run({"data": str(train), "test": str(test), "out": str(out), "store": store, **TINY})
        runs[store]["predictions"] = (out / "test_predictions.jsonl").read_text()
        runs[store]["vocab"] = json.loads((out / "vocab.json").read_text())["tokens"]
    stored, memory = runs["auto"], runs["off"]
    assert stored["vocab"] == memory["vocab"]                 # counted on the same training rows (dev held out)
    assert stored["predictions"] == memory["predictions"]     # same file:line, same decisions
    assert stored["test"]["accuracy"] == memory["test"]["accuracy"] and stored["dev"] == memory["dev"]
    assert stored["info"]["truncated_texts"] == memory["info"]["truncated_texts"] > 0
    assert list(S.stores_dir().glob("*/meta.json"))


def test_cross_validation_folds_are_the_same_on_the_store(tmp_path):
    data = write_csv(tmp_path / "all.csv", bundled_examples("text", 300))
    a = train_run({"data": str(data), "cv": 3, "out": str(tmp_path / "a"), **TINY, "epochs": 1})
    b = train_run({"data": str(data), "cv": 3, "out": str(tmp_path / "b"), "store": "off", **TINY, "epochs": 1})
    assert a["cv"]["test_accuracy"] == b["cv"]["test_accuracy"]


def test_a_store_is_built_once_and_reused_until_the_file_changes(tmp_path, monkeypatch):
    f = write_csv(tmp_path / "t.csv", bundled_examples("text", 50))
    cfg = TokenizerConfig()
    first = S.open_store(f, cfg)
    built = []
    monkeypatch.setattr(S._Builder, "build", lambda self, *a: built.append(1) or S.TokenStore(first.folder))
    assert S.open_store(f, cfg).folder == first.folder and not built
    S.open_store(f, TokenizerConfig(lower=False))
    assert built == [1]                                              # another tokenizer: another store
    f.write_text(f.read_text() + "one more question,DESC\n")
    os.utime(f, ns=(1, 1))
    S.open_store(f, cfg)
    assert len(built) == 2                                           # changed content: a new store


def test_a_store_of_a_megabyte_or_more_says_what_it_encoded_and_a_small_one_says_nothing(tmp_path):
    qs = bundled_examples("text", 5452)
    small, big = write_csv(tmp_path / "small.csv", qs[:200]), write_csv(tmp_path / "big.csv", qs * 4)
    said = []
    S.open_store(small, TokenizerConfig(), log=said.append)
    assert said == []                            # whatever the clock read: a one-line error stays one line
    S.open_store(big, TokenizerConfig(), log=said.append)
    assert big.stat().st_size >= 1e6 and len(said) == 1
    assert said[0].startswith(f"{big}: 21,808 examples encoded in ") and "kept in" in said[0]


def test_worker_processes_build_the_same_store(tmp_path, monkeypatch):
    f = write_csv(tmp_path / "t.csv", bundled_examples("text", 900))
    monkeypatch.setattr(S, "CHUNK", 50)                             # many chunks over both workers
    one = S.open_store(f, TokenizerConfig(clean="kim"), workers=1)
    import shutil
    shutil.rmtree(one.folder)
    two = S.open_store(f, TokenizerConfig(clean="kim"), workers=2)
    ex = read_file(f)
    tok = Tokenizer(clean="kim")
    for store in (two,):
        assert len(store) == len(ex) == 900
        for row in (0, 1, 449, 899):
            assert [store.strings[i] for i in store.texts(row)[0]] == tok(ex[row].text)
            assert store.where(row) == ex[row].where == Location(str(f), row + 2)     # after the header
        assert store.label_keys(np.arange(900)) == [e.label for e in ex]


@pytest.mark.parametrize("kind", ["pair", "contexts"])
def test_stored_items_equal_encoded_items(kind, tmp_path):
    examples = bundled_examples(kind, 40)
    if kind == "pair":
        f = write_csv(tmp_path / "p.csv", examples, pair=True)
        columns = {"pair_col": "pair"}
    else:
        f = tmp_path / "c.jsonl"
        f.write_text("".join(json.dumps({"text": e.text, "contexts": list(e.contexts), "label": e.label}) + "\n"
                             for e in examples))
        columns = {"contexts_col": "contexts"}
    store = S.open_store(f, TokenizerConfig(), **columns)
    assert store.kind is ExampleKind(kind) and json.loads((store.folder / "meta.json").read_text())["kind"] == kind
    tok = Tokenizer()
    vocab = Vocab.build(tok(t) for e in examples[:20] for t in [e.text, *getattr(e, "contexts", [getattr(e, "pair", "")])])
    labels = LabelMap.of_names({e.label for e in examples})
    stored = StoredItems(S.StoredSplit(store), vocab, labels, max_length=6)
    encoded = Encoder(tok, vocab, labels, max_length=6).encode(read_file(f, **columns))
    collate = Collator(len(labels), min_length=3)
    protocol = lambda data: (data.lengths(), data.labels(), data.indices())
    assert protocol(ItemDataset(stored)) == protocol(ItemDataset(encoded))
    for a, b in zip(batch_loader(stored, 7, collate), batch_loader(encoded, 7, collate), strict=True):
        for name in ("index", "labels", "text", "lengths", "pair", "pair_lengths", "contexts", "context_lengths"):
            x, y = getattr(a, name), getattr(b, name)
            assert (x is None and y is None) or bool((x == y).all()), name
    assert stored.truncated == sum(it.truncated for it in encoded) > 0


def test_bad_lines_of_a_stored_file_are_said_again_on_reuse(tmp_path, capsys):
    f = tmp_path / "bad.csv"
    f.write_text("text,label\n" + "".join(f"question {i} here,{'ab'[i % 2]}\n" for i in range(30))
                 + "a,b,c,d\n" + ",a\n")
    skipped = []
    for _ in range(2):
        bad = BadLines("skip")
        S.open_store(f, TokenizerConfig(), bad=bad)
        skipped.append(bad.skipped)
    assert skipped[0] == skipped[1] and len(skipped[0]) == 2 and skipped[0][0].startswith(f"{f}:32:")
    with pytest.raises(DataError, match=":32: expected 2 fields"):
        S.open_store(f, TokenizerConfig(), bad=BadLines("error"))


def test_dev_labels_unseen_in_training_are_named_with_their_line(tmp_path, capsys):
    qs = bundled_examples("text", 200)
    train = write_csv(tmp_path / "train.csv", [q for q in qs if q.label != "ABBR"])
    test = write_csv(tmp_path / "test.csv", qs[:60])
    line = 2 + [q.label for q in qs[:60]].index("ABBR")
    code = main(["train", "--data", str(train), "--test", str(test), "--out", str(tmp_path / "r"), "--no-progress"])
    assert code == 2
    assert capsys.readouterr().err.startswith(f"error: {test}:{line}: label 'ABBR' does not occur in the training")


def test_predict_streams_a_file_in_chunks(questions, tmp_path, capsys, monkeypatch):
    train, test = questions
    out = tmp_path / "run"
    train_run({"data": str(train), "test": str(test), "out": str(out), **TINY})
    texts = tmp_path / "texts.txt"
    lines = [q.text for q in bundled_examples("text", 600)[480:]]
    texts.write_text("\n".join(lines) + "\n")
    from adaptext import load
    whole = load(out).predict(lines)
    from adaptext.runs import pipeline
    original = pipeline.Pipeline.predict_stream
    monkeypatch.setattr(pipeline.Pipeline, "predict_stream", lambda self, xs, bs: original(self, xs, bs, chunk=7))
    capsys.readouterr()
    assert main(["predict", str(out), str(texts)]) == 0
    streamed = [json.loads(l) for l in capsys.readouterr().out.splitlines()]
    assert streamed == whole and len(streamed) == 120


def test_cache_command_lists_and_clears_the_stores(questions, capsys):
    S.open_store(questions[0], TokenizerConfig(level="char"))
    assert main(["cache", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert any(r["kind"] == "stores" and r["bytes"] > 0 for r in rows)
    assert main(["cache", "--clear", "stores"]) == 0
    assert "removed" in capsys.readouterr().out and not S.stores_dir().exists()


def test_training_memory_does_not_grow_over_steps(tmp_path):
    """Step log of a run over long, variable-length texts: resident memory at the last step
    within 10% of memory at the first logged step (before the allocator fix it grew ~2.5x)."""
    rng = np.random.default_rng(0)
    words = [q.text for q in bundled_examples("text", 400)]
    with open(tmp_path / "long.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        for i in range(1200):
            n = int(rng.integers(20, 400))
            w.writerow([" ".join(rng.choice(words, n // 8 + 1)), "ab"[i % 2]])
    out = tmp_path / "r"
    train_run({"data": str(tmp_path / "long.csv"), "cv": 0, "test": str(tmp_path / "long.csv"), "out": str(out),
               "filters": 64, "embed_dim": 64, "progress": False, "max_length": 2000, "epochs": 5,
               "batch_size": 16, "log_every": 20, "patience": 10})
    rows = list(csv.DictReader(open(out / "steps.csv")))
    assert len(rows) >= 10
    first, last = float(rows[1]["rss_mb"]), float(rows[-1]["rss_mb"])
    assert last <= first * 1.10, [r["rss_mb"] for r in rows]


def test_evaluate_scores_a_stored_file_as_training_did(questions, tmp_path, capsys):
    train, test = questions
    out = tmp_path / "run"
    m = train_run({"data": str(train), "test": str(test), "out": str(out), **TINY})
    capsys.readouterr()
    assert main(["evaluate", str(out)]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["accuracy"] == pytest.approx(m["test"]["accuracy"], abs=0.01)
    assert again["confusion_matrix"] == m["test"]["confusion_matrix"]


def test_token_counts_of_any_rows_equal_counting_their_tokens(tmp_path):
    f = write_csv(tmp_path / "t.csv", bundled_examples("text", 200))
    store = S.open_store(f, TokenizerConfig())
    rng = np.random.default_rng(0)
    for size in (0, 7, 100, 150, 200):                # none, few, half, most, all
        rows = np.sort(rng.choice(200, size, replace=False))
        direct = np.bincount(np.concatenate([store.texts(int(r))[0] for r in rows] or [np.zeros(0, np.int32)]),
                             minlength=len(store.strings))
        assert (store.token_counts(rows) == direct).all(), size


def test_two_processes_filling_one_cache_entry_at_once_both_finish(tmp_path, monkeypatch):
    """Students distilled side by side from one teacher compute the same chunk of teacher logits:
    the second writer starts and finishes while the first is still writing. Each writes its own
    temporary file, so both moves succeed, the entry is whole and nothing is left beside it."""
    from adaptext.training import distill
    entry = tmp_path / "teacher_logits" / "chunk.npy"
    real, raced = np.save, []

    def save_with_a_rival(file, array):
        real(file, array)
        if not raced:
            raced.append(1)
            distill._save(entry, np.ones(3))            # the other process, start to end, meanwhile
    monkeypatch.setattr(np, "save", save_with_a_rival)
    distill._save(entry, np.zeros(3))
    assert raced and np.array_equal(np.load(entry), np.zeros(3))        # the last move wins, whole
    assert [p.name for p in entry.parent.iterdir()] == ["chunk.npy"]
