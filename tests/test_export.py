"""ONNX export: a single-text and a pair model's graphs in onnxruntime give the probabilities
their runs give in PyTorch on real texts of several lengths; every registered text / pair /
contexts model exports and passes the export's own check on inputs of another shape; models
whose graph depends on the length say so and export at a fixed one; a graph that fails its check
is not written; tree models are refused with a clear error."""
import json

import numpy as np
import pytest
import torch

import adaptext
from adaptext.cli import main
from adaptext.errors import DataError
from adaptext.registry import get_entry, list_models
from adaptext.training.run import train_run

from conftest import DATA, needs_data, registered_case

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")
from adaptext.export import export_model, export_run, graph_inputs  # noqa: E402

TINY = {"embed_dim": 16, "progress": False, "max_length": 60, "epochs": 1}
QUESTIONS = ["Who wrote Hamlet ?", "What is the capital of Mongolia and how many people live there today ?",
             "Why ?", "", "How far is it from Denver to Aspen ?"]


def run_onnx(out, feeds):
    session = ort.InferenceSession(str(out / "model.onnx"), providers=["CPUExecutionProvider"])
    return session.run(["probs"], feeds)[0]


@pytest.fixture(scope="module")
def questions(tmp_path_factory):
    """The first 400 questions of the bundled TREC demo, as a small training file."""
    import gzip
    from importlib.resources import files
    lines = gzip.decompress(files("adaptext").joinpath("resources/trec/train.txt.gz").read_bytes()).splitlines(True)
    f = tmp_path_factory.mktemp("data") / "trec.txt"
    f.write_bytes(b"".join(lines[:400]))
    return {"data": str(f), "test": str(f), "format": "trec"}


@pytest.fixture(scope="module")
def kim_run(tmp_path_factory, questions):
    out = tmp_path_factory.mktemp("export") / "kim"
    train_run({"out": str(out), "filters": 8, "seed": 3, **questions, **TINY})
    return out


def test_kim_cnn_onnx_matches_pytorch_on_real_texts(kim_run, tmp_path):
    out = tmp_path / "onnx"
    assert main(["export", str(kim_run), "--out", str(out)]) == 0
    manifest = json.loads((out / "export.json").read_text())
    assert manifest["inputs"] == ["text", "lengths"] and manifest["length"] is None
    assert manifest["min_length"] == 5 and manifest["check"]["max_abs_diff_probs"] < 1e-4
    assert manifest["check"]["batches"] == [[5, 14], [3, 5]]        # another batch and length, and the shortest
    assert manifest["fixed_length"] is None and "empty text" in manifest["encoding"]
    for name in ("vocab.json", "labels.json", "config.json"):
        assert (out / name).read_bytes() == (kim_run / name).read_bytes()
    clf = adaptext.load(kim_run)
    want = clf.predict_proba(QUESTIONS)
    feeds = graph_inputs(clf, QUESTIONS)
    assert feeds["text"].shape[0] == len(QUESTIONS) and feeds["text"].shape[1] > 5   # lengths vary freely
    got = run_onnx(out, feeds)
    np.testing.assert_allclose(got, want, atol=1e-5)
    one = graph_inputs(clf, ["Why ?"])                         # a batch of 1, padded to the widest filter
    assert one["text"].shape == (1, 5)
    np.testing.assert_allclose(run_onnx(out, one), want[2:3], atol=1e-5)
    labels = json.loads((out / "labels.json").read_text())["labels"]
    assert [labels[i] for i in got.argmax(1)] == [p["label"] for p in clf.predict(QUESTIONS)]


@needs_data
def test_pair_model_exports_with_both_texts(tmp_path):
    sick = tmp_path / "sick.txt"
    sick.write_text("".join((DATA / "sick/SICK_train.txt").read_text().splitlines(keepends=True)[:121]))
    run = tmp_path / "attconv"
    train_run({"out": str(run), "data": str(sick), "test": str(sick), "format": "sick", "model": "attconv",
               "hidden": 12, **TINY})
    manifest = export_run(run, tmp_path / "onnx", log=lambda *_: None)
    assert manifest["inputs"] == ["text", "lengths", "pair", "pair_lengths"]
    clf = adaptext.load(run)
    pairs = [{"text": "A man is playing a guitar", "pair": "A person plays an instrument on a stage tonight"},
             {"text": "Nobody is cutting an onion", "pair": "A woman is slicing an onion"}]
    np.testing.assert_allclose(run_onnx(tmp_path / "onnx", graph_inputs(clf, pairs)), clf.predict_proba(pairs),
                               atol=1e-5)
    swapped = [{"text": p["pair"], "pair": p["text"]} for p in pairs]
    assert not np.allclose(run_onnx(tmp_path / "onnx", graph_inputs(clf, swapped)), clf.predict_proba(pairs))


def test_a_length_dependent_graph_needs_length(tmp_path, questions):
    run = tmp_path / "qrnn"
    train_run({"out": str(run), "model": "qrnn", "hidden": 8, **questions, **TINY})
    with pytest.raises(ValueError, match="--length N"):
        export_run(run, tmp_path / "free", log=lambda *_: None)
    manifest = export_run(run, tmp_path / "fixed", length=16, log=lambda *_: None)
    assert manifest["length"] == 16
    clf = adaptext.load(run)
    texts = QUESTIONS[:3]
    feeds = graph_inputs(clf, texts, length=16)
    assert feeds["text"].shape == (3, 16)
    np.testing.assert_allclose(run_onnx(tmp_path / "fixed", feeds), clf.predict_proba(texts), atol=1e-5)
    with pytest.raises(Exception, match="(?i)dimension"):          # the graph holds 16 positions, no other
        run_onnx(tmp_path / "fixed", graph_inputs(clf, texts))


@needs_data
def test_tree_models_are_refused_clearly(tmp_path):
    trees = tmp_path / "trees.txt"
    trees.write_text("".join((DATA / "sst_ptb/dev.txt").read_text().splitlines(keepends=True)[:40]))
    run = tmp_path / "treelstm"
    train_run({"out": str(run), "data": str(trees), "test": str(trees), "model": "treelstm", "hidden": 8, **TINY})
    with pytest.raises(DataError, match="parse per text"):
        export_run(run, tmp_path / "onnx", log=lambda *_: None)
    assert main(["export", str(run), "--out", str(tmp_path / "cli")]) == 2


# every registered model that reads text, pairs or contexts exports (three at a fixed length)
FIXED_LENGTH = {"qrnn", "dpcnn", "ac_dpcnn"}
CASES = [(n, k) for n in list_models() for k in get_entry(n).inputs if k in ("text", "pair", "contexts")]


@pytest.mark.parametrize("name,kind", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_every_registered_model_exports(name, kind, tmp_path):
    torch.manual_seed(0)
    model, _, _ = registered_case(name, kind)
    length = 24 if name in FIXED_LENGTH else None
    done = export_model(model, kind, False, model.spec.vocab_size, tmp_path / "m.onnx", length)
    assert done["check"]["max_abs_diff_probs"] < 1e-5          # checked on another batch size and length
    import onnx
    dims = {i.name: [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim]
            for i in onnx.load(str(tmp_path / "m.onnx")).graph.input}
    assert isinstance(dims["text"][0], str)                                 # the batch is free
    assert dims["text"][1] == 24 if length else isinstance(dims["text"][1], str)


def test_join_contexts_is_the_same_in_an_exported_graph(monkeypatch):
    from adaptext.models.attconv import join_contexts
    ctx = torch.tensor([[[0, 0], [5, 6], [7, 0]], [[0, 0], [0, 0], [0, 0]], [[1, 2], [3, 0], [4, 4]]])
    lens = torch.tensor([[0, 2, 1], [0, 0, 0], [2, 1, 2]])
    eager, total = join_contexts(ctx, lens)
    assert eager.tolist() == [[5, 6, 7, 0, 0], [0, 0, 0, 0, 0], [1, 2, 3, 4, 4]] and total.tolist() == [3, 0, 5]
    monkeypatch.setattr(torch.compiler, "is_exporting", lambda: True)
    wide, total2 = join_contexts(ctx, lens)
    assert wide.shape == (3, 6) and torch.equal(wide[:, :5], eager) and not wide[:, 5:].any()
    assert torch.equal(total, total2)


def test_a_graph_that_fails_its_check_is_not_written(kim_run, tmp_path, monkeypatch):
    import adaptext.export as E
    assert main(["export", str(kim_run), "--out", str(tmp_path / "bad")]) == 0     # an earlier export there
    assert (tmp_path / "bad" / "model.onnx").exists()
    monkeypatch.setattr(E, "TOLERANCE", -1.0)
    assert main(["export", str(kim_run), "--out", str(tmp_path / "bad")]) == 2
    assert not (tmp_path / "bad" / "model.onnx").exists() and not (tmp_path / "bad" / "export.json").exists()
    assert not list((tmp_path / "bad").glob("*.unchecked"))


def test_graph_inputs_and_the_output_folder_are_checked(kim_run, tmp_path):
    """One string was read as one text per character; an output folder that is the run itself
    ended in a traceback after writing the graph."""
    clf = adaptext.load(kim_run)
    with pytest.raises(TypeError, match="give a list of inputs, not one str"):
        graph_inputs(clf, "Who wrote Hamlet ?")
    with pytest.raises(ValueError, match="no inputs"):
        graph_inputs(clf, [])
    with pytest.raises(DataError, match="--out is the run directory itself"):
        export_run(kim_run, kim_run / ".", log=lambda *_: None)
    assert not (kim_run / "model.onnx").exists()
    (tmp_path / "afile").write_text("x")
    assert main(["export", str(kim_run), "--out", str(tmp_path / "afile")]) == 2


def test_a_run_reading_word_pieces_exports_its_tokenizer(questions, kim_run, tmp_path):
    """A subword run's export carries its tokenizer.json: the bundle alone turns text into the
    graph's ids (the tokenizers library's pieces, their rows in vocab.json) and predicts as the run."""
    tokenizers = pytest.importorskip("tokenizers")
    run, out = tmp_path / "pieces", tmp_path / "onnx"
    train_run({"out": str(run), "model": "lstm", "layers": 1, "hidden": 8, "tokenizer": "subword", **questions, **TINY})
    assert main(["export", str(run), "--out", str(out)]) == 0
    assert (out / "tokenizer.json").read_bytes() == (run / "tokenizer.json").read_bytes()
    assert "tokenizer.json" in json.loads((out / "export.json").read_text())["encoding"]
    pieces = tokenizers.Tokenizer.from_file(str(out / "tokenizer.json"))
    row = {t: k for k, t in enumerate(json.loads((out / "vocab.json").read_text())["tokens"])}
    texts = [q for q in QUESTIONS if q]
    ids = [[row.get(p, 1) for p in pieces.encode(t, add_special_tokens=False).tokens] for t in texts]
    width = max(map(len, ids))
    feeds = {"text": np.array([i + [0] * (width - len(i)) for i in ids], dtype=np.int64),
             "lengths": np.array([len(i) for i in ids], dtype=np.int64)}
    np.testing.assert_allclose(run_onnx(out, feeds), adaptext.load(run).predict_proba(texts), atol=1e-5)
    assert main(["export", str(kim_run), "--out", str(out)]) == 0          # a word-level run exported over it
    assert not (out / "tokenizer.json").exists()
