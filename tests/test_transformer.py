"""Transformer knowledge in fast models: the fine-tuned transformer (the packaged
all-MiniLM-L6-v2, one layer of it to stay quick), word vectors derived from it, and
distillation into a student that needs no transformers to load."""
from __future__ import annotations

import gzip
import json
import random
import sys
from pathlib import Path

import numpy as np
import pytest

import adaptext
from adaptext.cli import main
from adaptext.errors import DataError
from adaptext.training.run import train_run

pytest.importorskip("transformers")
TREC = Path(adaptext.__file__).parent / "resources" / "trec" / "train.txt.gz"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """300 shuffled TREC questions to train on, 100 to test on (Kim format)."""
    lines = gzip.open(TREC, "rt", encoding="latin-1").read().splitlines()
    random.Random(0).shuffle(lines)
    kim = [l.split(":", 1)[0] + " " + l.split(" ", 1)[1] for l in lines[:400]]
    folder = tmp_path_factory.mktemp("data")
    (folder / "train.txt").write_text("\n".join(kim[:300]) + "\n")
    (folder / "test.txt").write_text("\n".join(kim[300:]) + "\n")
    return folder


@pytest.fixture(scope="module")
def teacher(data, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "teacher"
    m = train_run({"model": "transformer", "layers": 1, "epochs": 2, "lr": 1e-4, "data": str(data / "train.txt"),
                   "test": str(data / "test.txt"), "out": str(out), "progress": False})
    return out, m


def test_the_transformer_fine_tunes_and_round_trips_through_its_run_directory(teacher, data):
    out, m = teacher
    assert m["test"]["accuracy"] > 30                       # 6 classes, 100 questions: it learned something
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["model"]["name"] == "transformer" and cfg["model"]["pretrained"] == "all-MiniLM-L6-v2"
    vocab = json.loads((out / "vocab.json").read_text())
    assert vocab["tokenizer"]["level"] == "subword" and vocab["tokens"][2] == "[PAD]"
    rows = [json.loads(l) for l in (out / "test_predictions.jsonl").read_text().splitlines()]
    texts = [l.split(" ", 1)[1] for l in (data / "test.txt").read_text().splitlines()]
    got = adaptext.load(out).predict(texts[:20])             # the saved weights give the run's own predictions
    assert [g["label"] for g in got] == [r["pred"] for r in rows[:20]]
    assert [g["probs"][g["label"]] for g in got] == pytest.approx([r["prob"] for r in rows[:20]], abs=1e-5)


def test_without_the_extra_a_transformer_says_what_to_install(tmp_path, capsys, monkeypatch):
    from adaptext import pretrained
    pretrained.tokenizer.cache_clear()
    monkeypatch.setitem(sys.modules, "transformers", None)
    assert main(["train", "--model", "transformer", "--epochs", "1", "--out", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err.strip() == ("error: pretrained transformer encoders need the transformers extra: "
                                               'pip install -e ".[transformers]"')
    pretrained.tokenizer.cache_clear()


def test_derived_vectors_are_cached_and_identical_on_reload(tmp_path, monkeypatch):
    from adaptext.data import transformer_vectors as TV
    from adaptext.data.text import Vocab
    monkeypatch.setenv("ADAPTEXT_CACHE", str(tmp_path))
    vocab = Vocab(["the", "film", "bank", "river"])
    texts = [["the", "film"], ["the", "river", "bank"], ["the", "bank"]]
    first, coverage = TV.transformer_vectors(vocab, "transformer", iter(texts), log=lambda *_: None)
    assert first.shape == (6, 384) and coverage.ratio == 1.0 and (first[0] == 0).all()
    monkeypatch.setattr(TV, "_derive", lambda *a: pytest.fail("derived again instead of read from the cache"))
    again, _ = TV.transformer_vectors(vocab, "transformer:all-MiniLM-L6-v2", iter(texts), log=lambda *_: None)
    assert np.array_equal(first.numpy(), again.numpy())
    alone = Vocab(["bank"])                         # another vocabulary: its own cache entry, in context
    monkeypatch.undo()
    monkeypatch.setenv("ADAPTEXT_CACHE", str(tmp_path))
    other, _ = TV.transformer_vectors(alone, "transformer", iter([["the", "river", "bank"]]), log=lambda *_: None)
    assert not np.allclose(other[2].numpy(), first[4].numpy())     # "bank" by the river, not averaged with money


def test_augmentation_masks_replaces_and_samples(tmp_path):
    from adaptext.data.examples import TextExample
    from adaptext.training.distill import augmented
    ex = [TextExample("What is the capital of the country of France ?", "LOC"),
          TextExample("Who wrote the play about the prince of Denmark ?", "HUM")]
    copies = augmented(ex, 20, seed=3)
    assert len(copies) == 40 and all(c.label is None for c in copies)
    assert copies == augmented(ex, 20, seed=3)                       # the seed decides
    texts = [c.text for c in copies]
    assert any("<unk>" in t for t in texts)                            # masking
    assert any(len(t.split()) < 6 for t in texts)                      # n-gram sampling


def test_teacher_logits_resume_after_a_kill(teacher, tmp_path, monkeypatch):
    from adaptext.data.examples import TextExample
    from adaptext.runs.pipeline import Pipeline
    from adaptext.training import distill
    monkeypatch.setenv("ADAPTEXT_CACHE", str(tmp_path))
    monkeypatch.setattr(distill, "CHUNK", 4)
    examples = [TextExample(f"question number {k} about a place ?", None) for k in range(10)]
    labels = adaptext.load(teacher[0]).labels.labels
    calls, real = [], Pipeline.logits

    def dying(self, items, batch_size=256, representations=None):
        calls.append(len(items))
        if len(calls) == 2:
            raise KeyboardInterrupt                        # killed while the second chunk is computed
        return real(self, items, batch_size, representations)
    monkeypatch.setattr(Pipeline, "logits", dying)
    with pytest.raises(KeyboardInterrupt):
        distill.teacher_logits(teacher[0], examples, labels, log=lambda *_: None)
    calls.clear()

    def counted(self, items, batch_size=256, representations=None):
        calls.append(len(items))
        return real(self, items, batch_size, representations)
    monkeypatch.setattr(Pipeline, "logits", counted)
    resumed = distill.teacher_logits(teacher[0], examples, labels, log=lambda *_: None)
    assert calls == [4, 2]                                  # the first chunk came from the cache
    assert resumed.shape == (10, len(labels))
    fresh = real(adaptext.load(teacher[0]).pipeline, adaptext.load(teacher[0]).pipeline.items(
        [e.text for e in examples]))
    assert np.allclose(resumed, fresh, atol=1e-5)
    calls.clear()
    more = examples + [TextExample("an unlabelled question about a river ?", None)]
    larger = distill.teacher_logits(teacher[0], more, labels, log=lambda *_: None)
    assert calls == [3]                                     # a larger transfer set reuses the chunks it shares
    assert np.allclose(larger[:8], resumed[:8])


def test_a_masked_word_reaches_a_pretrained_teacher_as_its_mask_token(teacher):
    from adaptext.data.examples import TextExample
    from adaptext.training.distill import as_the_teacher_reads
    t = adaptext.load(teacher[0])
    texts = [ex.text for ex in as_the_teacher_reads(t, [TextExample("what is <unk> ?"), TextExample("who wrote it ?")])]
    assert texts == ["what is [MASK] ?", "who wrote it ?"]
    assert "[MASK]" in t.tokens(texts[0])                   # one piece, the encoder's own mask


def test_a_distilled_student_learns_from_its_teacher_and_loads_without_transformers(teacher, data, tmp_path,
                                                                                    capsys, monkeypatch):
    monkeypatch.setenv("ADAPTEXT_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "student"
    assert main(["distill", str(teacher[0]), "--model", "kim_cnn", "--filters", "8", "--embed-dim", "16",
                 "--epochs", "2", "--augment", "1", "--alpha", "0", "--no-progress", "--out", str(out)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert "test" in result                                   # the teacher's data, test file included
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["distillation"]["teacher"] == str(teacher[0].resolve()) and cfg["distillation"]["augment"] == 1
    assert json.loads((out / "metrics.json").read_text())["info"]["train_examples"] == 540   # 270 (a tenth is dev) + 270 copies
    monkeypatch.setitem(sys.modules, "transformers", None)   # an environment without the extra
    preds = adaptext.load(out).predict(["Who wrote Hamlet ?", "How far is the moon ?"])
    assert len(preds) == 2 and all(p["label"] for p in preds)


def test_a_student_reading_word_pieces_keeps_them_in_its_run_and_loads_without_transformers(teacher, tmp_path,
                                                                                           monkeypatch):
    monkeypatch.setenv("ADAPTEXT_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "pieces"
    assert main(["distill", str(teacher[0]), "--model", "qrnn", "--layers", "1", "--hidden", "8", "--embed-dim", "16",
                 "--tokenizer", "subword", "--epochs", "1", "--augment", "1", "--no-progress", "--out", str(out)]) == 0
    assert len(json.loads((out / "vocab.json").read_text())["tokens"]) == 30522 + 2   # every piece: no unseen word
    texts = ["Who painted Quetzalcoatl's temple ?", "How far is the moon ?"]
    with_transformers = adaptext.load(out)
    assert with_transformers.tokens(texts[0])[2:6] == ["que", "##tz", "##al", "##coat"]
    assert with_transformers.tokens("what is <unk> ?") == ["what", "is", "[UNK]", "?"]   # a masked word: one piece
    before = with_transformers.predict(texts)
    from adaptext import pretrained
    pretrained.tokenizer.cache_clear()                       # nothing kept from the calls above
    monkeypatch.setitem(sys.modules, "transformers", None)   # an environment with tokenizers only
    student = adaptext.load(out)
    assert student.tokens(texts[0]) == with_transformers.tokens(texts[0])
    assert student.predict(texts) == before
    (out / "tokenizer.json").write_text("{not json")
    with pytest.raises(DataError, match="tokenizer.json"):
        adaptext.load(out)


def test_a_run_reading_word_pieces_gets_the_encoders_own_vectors_of_them(data, tmp_path):
    """``--embeddings transformer`` with ``--tokenizer subword``: each piece's row is the encoder's
    input vector of that piece (not a vector derived by reading the piece as a word)."""
    import torch
    from safetensors.torch import load_file
    from adaptext import pretrained
    from adaptext.errors import UsageError
    out = tmp_path / "pieces"
    opts = {"model": "lstm", "layers": 1, "hidden": 8, "tokenizer": "subword", "embeddings": "transformer",
            "embedding_mode": "static", "epochs": 1, "data": str(data / "train.txt"), "test": str(data / "test.txt"),
            "progress": False}
    train_run({**opts, "out": str(out)})
    rows = next(w for k, w in load_file(str(out / "model.safetensors")).items() if k.endswith("embed.weight"))
    table = pretrained.encoder(pretrained.DEFAULT).get_input_embeddings().weight.detach()
    moon = pretrained.tokenizer(pretrained.DEFAULT).convert_tokens_to_ids("moon")
    assert torch.equal(rows[moon + 2], table[moon]) and not rows[0].any()
    assert rows.shape == (table.shape[0] + 2, table.shape[1])
    with pytest.raises(UsageError, match="reads the word pieces of all-MiniLM-L6-v2"):
        train_run({**opts, "embeddings": "transformer:another-encoder", "out": str(tmp_path / "other")})


def test_distillation_loss_follows_the_teacher():
    import torch
    from adaptext.data.text import LabelMap
    from adaptext.training.module import ClassifierModule
    from adaptext.data.batching import Batch
    from adaptext.config import RunConfig
    cfg = RunConfig(distill_loss="mse", alpha=0.0, temperature=2.0)
    module = ClassifierModule(torch.nn.Linear(1, 1), cfg, LabelMap(["a", "b"]), None, None)
    soft = torch.tensor([[2.0, -1.0], [0.5, 0.5]])
    batch = Batch(index=torch.arange(2), labels=torch.tensor([0, -100]), soft=soft)
    assert float(module.distillation_loss(soft.clone(), batch)) == 0.0
    assert float(module.distillation_loss(soft + 1.0, batch)) == pytest.approx(1.0)
    module.cfg = cfg.replace(distill_loss="kl")
    assert float(module.distillation_loss(soft + 3.0, batch)) == pytest.approx(0.0, abs=1e-6)   # same softmax
    module.cfg = cfg.replace(alpha=1.0)
    hard = torch.nn.functional.cross_entropy(soft[:1], torch.tensor([0]))
    assert float(module.distillation_loss(soft, batch)) == pytest.approx(float(hard))        # only the labelled text
