"""End to end: train on real data, write the run directory, reload it, predict."""
import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import adaptext
from adaptext.cli import main
from adaptext.errors import DataError, UsageError
from adaptext.runs.inputs import InputReader
from adaptext.training.run import train_run

from conftest import DATA, distil_small, needs_data

TINY = {"filters": 8, "embed_dim": 16, "progress": False, "max_length": 60}


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "demo"
    m = train_run({"out": str(out), "epochs": 2, "seed": 7, **TINY})
    return out, m


def test_run_directory_is_complete_and_pickle_free(demo_run):
    out, m = demo_run
    for name in ("config.json", "model.safetensors", "vocab.json", "labels.json", "metrics.json", "log.csv",
                 "plots/learning_curves.png", "plots/confusion_matrix.png"):
        assert (out / name).stat().st_size > 0, name
    for f in out.rglob("*"):
        if f.is_file():
            head = f.read_bytes()[:2]
            assert head not in (b"\x80\x02", b"\x80\x04", b"\x80\x05") and head != b"PK", f"pickle/zip in {f}"
    for split in ("dev", "test"):
        for key in ("accuracy", "macro_f1", "micro_f1", "per_class", "confusion_matrix"):
            assert key in m[split]
    assert m["test"]["n"] == 500 and m["test"]["accuracy"] > 50      # 6 classes: far above chance
    assert len((out / "log.csv").read_text().splitlines()) == 3       # header + 2 epochs
    preds = [json.loads(line) for line in (out / "test_predictions.jsonl").read_text().splitlines()]
    assert [p["index"] for p in preds] == list(range(500)) and preds[0]["where"].endswith(":1")
    assert 100 * sum(p["pred"] == p["gold"] for p in preds) / 500 == pytest.approx(m["test"]["accuracy"], abs=0.01)
    cfg = json.loads((out / "config.json").read_text())       # the documented form: the model, then the sections
    assert list(cfg) == ["model", "data", "text", "optimisation", "engine", "distillation", "output"]
    assert cfg["model"]["name"] == "kim_cnn" and cfg["model"]["filters"] == 8
    assert cfg["optimisation"]["optimizer"] == "adadelta" and "seed" in cfg["engine"]


def test_config_json_reproduces_the_run(demo_run, tmp_path, capsys):
    out, m = demo_run
    code = main(["train", "--config", str(out / "config.json"), "--out", str(tmp_path / "again")])
    assert code == 0
    again = json.loads((tmp_path / "again" / "metrics.json").read_text())
    assert again["test"]["confusion_matrix"] == m["test"]["confusion_matrix"]
    assert again["dev"]["accuracy"] == m["dev"]["accuracy"]


@pytest.mark.parametrize("name,text,expect", [
    ("c.yaml", "model: kim_cnn\n  epochs: [1\n", "c.yaml:2: invalid YAML (mapping values are not allowed here)"),
    ("c.json", '{"model": "kim_cnn",}', "c.json:1: invalid JSON (Expecting property name enclosed in double quotes"),
    ("c.json", "[1, 2]", "c.json: a config file must hold one mapping of options"),
    ("none.yaml", None, "none.yaml: no such config file"),
    # a value the file sets that its option refuses: at the line that sets it, before any data is read
    ("c.yaml", "model: ac_cnn\ndata: absent.csv\ngeneration: hashed\ncontext: nope\n",
     "c.yaml:4: context must be one of gru, mean, attention-only, not 'nope'"),
    ("c.yaml", "model: ac_cnn\nepochs: 2\nbatch-size: 0\n", "c.yaml:3: batch_size must be at least 1, not 0"),
    ("c.json", '{\n  "model": "kim_cnn",\n  "data": "absent.csv",\n  "widths": [3, 0]\n}',
     "c.json:4: widths must be one or more numbers of at least 1, not 3,0"),
    ("c.json", '{"model": "kim_cnn", "filters": "many"}', "c.json:1: filters must be a whole number, not 'many'"),
    ("c.yaml", "model: kim_cnn\nepochs: 2\nheads: 8\n", "c.yaml:3: unknown option(s) heads for model kim_cnn")])
def test_bad_config_file_is_one_line_naming_file_and_line(tmp_path, capsys, name, text, expect):
    f = tmp_path / name
    if text is not None:
        f.write_text(text)
    assert main(["train", "--config", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {tmp_path}/{expect}") and err.count("\n") == 1, err


def test_a_command_line_value_is_not_blamed_on_the_config_file(tmp_path, capsys):
    f = tmp_path / "c.yaml"
    f.write_text("model: kim_cnn\nbatch_size: 0\nfilters: 4\n")
    assert main(["train", "--config", str(f), "--filters", "0", "--batch-size", "8"]) == 2
    assert capsys.readouterr().err == "error: filters must be at least 1, not 0\n"   # the file's 0 batch size is overridden


@pytest.mark.parametrize("argv,expect", [
    (["--epochs", "-1"], "epochs must be at least 1, not -1"),      # Lightning: train for ever
    (["--batch-size", "0"], "batch_size must be at least 1, not 0"),
    (["--lr", "0"], "lr must be above 0, not 0.0"),
    (["--cv", "1"], "cv must be 0 (a held-out test split) or at least 2 folds, not 1"),
    (["--widths", "0"], "widths must be one or more numbers of at least 1, not 0"),   # was a oneDNN traceback
    (["--filters", "0"], "filters must be at least 1, not 0"),
    (["--dropout", "1"], "dropout must be in [0, 1), not 1.0"),
    (["--max-norm", "-1"], "max_norm must be at least 0 (0: no constraint), not -1.0"),
    (["--model", "densecnn", "--fixed-length", "-1"], "fixed_length must be at least 0, not -1")])
def test_out_of_range_option_is_an_error_before_training(tmp_path, capsys, argv, expect):
    assert main(["train", "--out", str(tmp_path / "run"), *argv]) == 2
    assert capsys.readouterr().err == f"error: {expect}\n"
    assert not (tmp_path / "run").exists()


def test_loaded_run_reproduces_its_predictions(demo_run, capsys):
    out, m = demo_run
    clf = adaptext.load(out)
    code = main(["evaluate", str(out), "--split", "test"])
    assert code == 0
    ev = json.loads(capsys.readouterr().out)
    assert ev["confusion_matrix"] == m["test"]["confusion_matrix"]
    texts = ["What is the capital of France ?", "Who wrote Hamlet ?"]
    a, b = clf.predict(texts), adaptext.load(out).predict(texts)
    assert a == b and a[0]["label"] in clf.labels.labels
    assert abs(sum(a[0]["probs"].values()) - 1) < 1e-4


def test_damaged_run_directory_is_one_error_line(demo_run, tmp_path, capsys):
    import shutil
    run = tmp_path / "run"
    shutil.copytree(demo_run[0], run, ignore=shutil.ignore_patterns("checkpoints", "plots"))
    (run / "labels.json").write_text('{"labels": ["A", ')
    assert main(["evaluate", str(run)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {run / 'labels.json'}:1: not valid JSON (")


def test_short_empty_and_huge_texts_are_classified(demo_run):
    clf = adaptext.load(demo_run[0])
    huge = "what " * 100_000
    out = clf.predict(["Why ?", "", "!!!", huge])
    assert [o["label"] in clf.labels.labels for o in out] == [True] * 4
    assert out[3].get("truncated") is True and "truncated" not in out[0]


def test_predict_cli_reads_stdin(demo_run, monkeypatch, capsys):
    import io
    monkeypatch.setattr(sys, "stdin", io.StringIO("How far is the moon ?\nWho is the president ?\n"))
    assert main(["predict", str(demo_run[0])]) == 0
    lines = [json.loads(l) for l in capsys.readouterr().out.splitlines()]
    assert len(lines) == 2 and set(lines[0]) >= {"label", "probs"}


def test_predict_cli_file_errors_name_file_and_line(demo_run, tmp_path, capsys):
    f = tmp_path / "in.txt"
    f.write_bytes("How far is the moon ?\ncaf\xe9 ?\n".encode("latin-1"))
    assert main(["predict", str(demo_run[0]), str(f)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {f}:2: byte 0xe9 at column 4 is not valid utf-8")
    assert main(["predict", str(demo_run[0]), str(tmp_path / "none.txt")]) == 2
    assert capsys.readouterr().err.strip() == f"error: {tmp_path / 'none.txt'}: no such file"


def test_models_and_datasets_commands(capsys):
    assert main(["models"]) == 0
    assert "kim_cnn" in capsys.readouterr().out
    assert main(["datasets", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["trec-demo"]["train"] == 5452
    if DATA.exists():
        assert rows["sst2"]["test"] == 1821 and rows["ag_news"]["train"] == "missing"
        assert rows["mr"]["test"] == "10-fold CV" and rows["sick"]["classes"] == 3


def test_multilabel_from_fasttext_lines(tmp_path):
    lines = []
    for i in range(240):
        topic = ["sport", "politics", "science"][i % 3]
        words = {"sport": "match goal team player", "politics": "vote election party law",
                 "science": "atom cell energy theory"}[topic]
        extra = " __label__news" if i % 2 else ""
        lines.append(f"__label__{topic}{extra} {words} story {i % 7}")
    train = tmp_path / "train.txt"
    train.write_text("\n".join(lines) + "\n")
    out = tmp_path / "ml"
    m = train_run({"data": str(train), "test": str(train), "out": str(out), "epochs": 6, "lr": 0.01,
                   "optimizer": "adam", **TINY})
    for key in ("micro_f1", "macro_f1", "example_f1"):
        assert key in m["test"]
    assert m["test"]["micro_f1"] > 60
    labels = json.loads((out / "labels.json").read_text())
    assert labels["multilabel"] and 0 < labels["threshold"] < 1
    pred = adaptext.load(out).predict(["match goal team player story 3"])[0]
    assert "sport" in pred["labels"]
    probs = [pred["probs"][l] for l in pred["labels"]]
    assert probs == sorted(probs, reverse=True) and pred["label"] == pred["labels"][0]   # most probable first


def test_evaluate_scores_the_split_the_run_trained_with(demo_run, tmp_path, capsys):
    """`evaluate --split S` scores split S of the run's own data: for a named set, the dev held
    out of train is the same 10% again; for files, the run's --test file read with the run's
    column options (not the training file)."""
    out, m = demo_run
    assert main(["evaluate", str(out), "--split", "dev"]) == 0
    dev = json.loads(capsys.readouterr().out)
    assert dev["n"] == m["dev"]["n"] and dev["accuracy"] == round(m["dev"]["accuracy"], 2)     # rounded as train prints
    from adaptext.data.datasets import read_split
    import csv
    questions = read_split("trec-demo", "test")
    for name, rows in (("train.csv", questions[:400]), ("test.csv", questions[400:]), ("other.csv", questions[:7])):
        with open(tmp_path / name, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["question", "coarse"])
            w.writerows([q.text, q.label] for q in rows)
    run = tmp_path / "files"
    assert main(["train", "--data", str(tmp_path / "train.csv"), "--test", str(tmp_path / "test.csv"),
                 "--text-col", "question", "--label-col", "coarse", "--epochs", "1", "--filters", "4",
                 "--embed-dim", "8", "--no-progress", "--out", str(run)]) == 0
    trained = json.loads((run / "metrics.json").read_text())
    capsys.readouterr()
    for split, n in (("test", 100), ("dev", trained["dev"]["n"]), ("train", 400 - trained["dev"]["n"])):
        assert main(["evaluate", str(run), "--split", split]) == 0
        assert json.loads(capsys.readouterr().out)["n"] == n, split
    assert main(["evaluate", str(run), "--data", str(tmp_path / "other.csv")]) == 0
    assert json.loads(capsys.readouterr().out)["n"] == 7
    (tmp_path / "renamed.csv").write_text((tmp_path / "other.csv").read_text().replace("question,coarse", "q,y", 1))
    assert main(["evaluate", str(run), "--data", str(tmp_path / "renamed.csv"), "--text-col", "q", "--label-col", "y"]) == 0
    assert json.loads(capsys.readouterr().out)["n"] == 7                          # another file's own column names


def test_embeddings_default_to_non_static_and_rand_refuses_them():
    from adaptext.runs.options import resolve
    assert resolve({}).embedding_mode == "rand"
    assert resolve({"embeddings": "vectors.txt"}).embedding_mode == "non-static"
    assert resolve({"embeddings": "vectors.txt", "embedding_mode": "static"}).embedding_mode == "static"
    with pytest.raises(ValueError, match="rand .* does not use --embeddings"):
        train_run({"embeddings": "vectors.txt", "embedding_mode": "rand"})


def test_too_few_examples_for_a_dev_split_is_one_error_line(tmp_path, capsys):
    f = tmp_path / "tiny.csv"
    f.write_text("text,label\n" + "".join(f"text number {i},{'ab'[i % 2]}\n" for i in range(8)))
    assert main(["train", "--data", str(f), "--test", str(f), "--out", str(tmp_path / "r"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {f}: no dev examples") and "--dev FILE" in err and "\n" not in err


def test_cross_validation_reports_mean_and_std(tmp_path, capsys):
    rows = "".join(f"{'pos' if i % 2 else 'neg'} {'great fine good' if i % 2 else 'bad awful poor'} text {i}\n"
                   for i in range(120))
    f = tmp_path / "sorted.txt"
    f.write_text(rows)
    m = train_run({"data": str(f), "format": "kim", "cv": 3, "out": str(tmp_path / "cv"), "epochs": 2, **TINY})
    assert m["cv"]["folds"] == 3 and len(m["cv"]["test_accuracy"]) == 3
    assert "accuracy_std" in m["test"]
    assert (tmp_path / "cv" / "fold-3" / "model.safetensors").exists()
    fold2 = json.loads((tmp_path / "cv" / "fold-2" / "metrics.json").read_text())
    capsys.readouterr()
    for split in ("test", "dev"):                         # a fold's splits rebuilt as it was trained on them
        assert main(["evaluate", str(tmp_path / "cv" / "fold-2"), "--split", split]) == 0
        ev = json.loads(capsys.readouterr().out)
        assert ev["n"] == fold2[split]["n"] and ev["confusion_matrix"] == fold2[split]["confusion_matrix"]
    (tmp_path / "cv" / "metrics.json").unlink()          # as if killed before the summary: still a run there
    with pytest.raises(DataError, match="already holds a run"):
        train_run({"data": str(f), "format": "kim", "cv": 3, "out": str(tmp_path / "cv"), "epochs": 1, **TINY})


@needs_data
@pytest.mark.parametrize("mode", ["static", "non-static", "multichannel"])
def test_embedding_modes_with_glove(tmp_path, mode):
    out = tmp_path / mode
    train_run({"out": str(out), "epochs": 1, "embeddings": str(DATA / "glove/glove.6B.50d.subset.txt.gz"),
               "embedding_mode": mode, **TINY})
    clf = adaptext.load(out)
    emb = clf.model.embedding
    assert emb.dim == 50
    from adaptext.data.embeddings import read_vectors
    vecs, _ = read_vectors(DATA / "glove/glove.6B.50d.subset.txt.gz", {"what"})
    frozen = emb.static if mode == "multichannel" else emb.embed
    row = frozen.weight[clf.encoder.vocab.stoi["what"]]
    same = torch.allclose(row, torch.from_numpy(vecs["what"]))
    assert same == (mode != "non-static")          # static channels keep GloVe; non-static fine-tunes it


@needs_data
def test_pca_dim_trains_on_the_vectors_principal_components(tmp_path):
    glove = DATA / "glove/glove.6B.50d.subset.txt.gz"
    out = tmp_path / "pca"
    train_run({"out": str(out), "epochs": 1, "embeddings": str(glove), "embedding_mode": "static", "pca_dim": 12,
               **TINY})
    clf = adaptext.load(out)
    assert clf.model.embedding.dim == 12 and clf.pipeline.spec.embedding_dim == 12
    assert len(clf.predict(["Who wrote Hamlet ?"])) == 1
    with pytest.raises(UsageError, match="needs --embeddings"):
        train_run({"out": str(tmp_path / "no"), "pca_dim": 12, **TINY})
    with pytest.raises(UsageError, match="have 50 dimensions"):
        train_run({"out": str(tmp_path / "wide"), "embeddings": str(glove), "pca_dim": 50, **TINY})


def test_embedding_words_give_a_word_training_lacks_its_pretrained_vector(tmp_path):
    """--embedding-words N: the first N words of the vectors file join the vocabulary after the
    training words, so a test word training never saw is read with its vector, not as unknown;
    the words past N, and a run without the option, still read it as unknown."""
    vectors = tmp_path / "vectors.txt"
    vectors.write_text("What 0.5 0.5 0.5 0.5\nzqxfoo 1 2 3 4\nzqxbar 4 3 2 1\n")
    opts = {"epochs": 1, "max_steps": 3, "embeddings": str(vectors), "embedding_mode": "static", **TINY}
    train_run({"out": str(tmp_path / "two"), "embedding_words": 2, **opts})
    clf = adaptext.load(tmp_path / "two")
    vocab = clf.encoder.vocab
    assert vocab.itos.count("what") == 1 and vocab.stoi["zqxfoo"] == len(vocab) - 1 and "zqxbar" not in vocab
    assert clf.model.embedding.embed.weight[vocab.stoi["zqxfoo"]].tolist() == [1, 2, 3, 4]
    assert vocab.encode(["zqxfoo", "zqxbar"]) == [len(vocab) - 1, vocab.stoi["<unk>"]]
    train_run({"out": str(tmp_path / "none"), **opts})
    assert "zqxfoo" not in adaptext.load(tmp_path / "none").encoder.vocab
    with pytest.raises(UsageError, match="needs --embeddings FILE"):
        train_run({"out": str(tmp_path / "no"), "embedding_words": 2, **TINY})
    with pytest.raises(UsageError, match="this run's tokenizer reads chars"):
        train_run({"out": str(tmp_path / "chars"), "embedding_words": 2, "tokenizer": "char", **opts})


def test_balanced_class_weights_lift_the_minority_class(tmp_path):
    """ABBR is 86 of TREC's 5,452 training questions (1.6%): one unweighted epoch never predicts
    it; weighting the loss by inverse class frequency does, at a small cost elsewhere."""
    recall = {}
    for cw in ("none", "balanced"):
        m = train_run({"out": str(tmp_path / cw), "epochs": 1, "optimizer": "adagrad", "lr": 0.05,
                       "class_weights": cw, "grad_clip": 1.0, **TINY})
        recall[cw] = m["test"]["per_class"]["ABBR"]["recall"]
        assert m["test"]["accuracy"] > 55                      # the test set's majority class is 27.6%
    assert recall["none"] < 20 and recall["balanced"] > 50, recall


def test_label_smoothing_makes_the_model_less_sure(tmp_path):
    """The same run with 30% of each target spread over the other classes predicts with lower
    confidence; a share of 1 (no target left) is refused."""
    confidence = {}
    for share in (0.0, 0.3):
        out = tmp_path / str(share)
        train_run({"out": str(out), "epochs": 2, "label_smoothing": share, **TINY})
        rows = [json.loads(l) for l in (out / "test_predictions.jsonl").read_text().splitlines()]
        confidence[share] = sum(r["prob"] for r in rows) / len(rows)
    assert confidence[0.3] < confidence[0.0] - 0.05, confidence
    with pytest.raises(ValueError, match="label_smoothing must be below 1, not 1.0"):
        train_run({"out": str(tmp_path / "x"), "label_smoothing": 1.0, **TINY})


@pytest.mark.parametrize("opt,lr", [("sgd", 0.05), ("adadelta", 1.0), ("adam", 0.01), ("adagrad", 0.05)])
def test_every_optimiser_learns(opt, lr, tmp_path):
    """Three epochs: the training loss falls every epoch and the test accuracy ends well above
    the majority class's 27.6%."""
    m = train_run({"out": str(tmp_path / opt), "epochs": 3, "optimizer": opt, "lr": lr, "grad_clip": 1.0, **TINY})
    losses = [float(r["train_loss"]) for r in csv.DictReader((tmp_path / opt / "log.csv").open())]
    assert len(losses) == 3 and losses[0] > losses[1] > losses[2], losses
    assert m["test"]["accuracy"] > 50


@pytest.mark.slow
def test_ddp_two_cpu_processes(tmp_path):
    """Two ranks train on disjoint batches of one token store (a CSV file is read into it once)."""
    from conftest import bundled_examples
    questions = bundled_examples("text", 1500)
    for name, rows in (("train.csv", questions[:1000]), ("test.csv", questions[1000:])):
        with open(tmp_path / name, "w", newline="") as f:
            csv.writer(f).writerows([("text", "label")] + [(q.text, q.label) for q in rows])
    data = {"data": str(tmp_path / "train.csv"), "test": str(tmp_path / "test.csv")}
    out = tmp_path / "ddp"
    r = subprocess.run([sys.executable, "-m", "adaptext.cli", "train", "--out", str(out), "--epochs", "1",
                        "--data", data["data"], "--test", data["test"],
                        "--devices", "2", "--strategy", "ddp", "--accelerator", "cpu", "--filters", "8",
                        "--embed-dim", "16", "--no-progress"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    m = json.loads((out / "metrics.json").read_text())
    single = train_run({"out": str(tmp_path / "single"), "epochs": 1, "filters": 8, "embed_dim": 16, "progress": False,
                        **data})
    assert set(m) == set(single) and set(m["test"]) == set(single["test"])
    assert m["test"]["n"] == 500 and m["info"]["train_examples"] == single["info"]["train_examples"] == 900


def test_web_service_predicts_and_rejects_bad_input(demo_run):
    from fastapi.testclient import TestClient
    from adaptext.serve import create_app
    client = TestClient(create_app(demo_run[0]))
    assert client.get("/health").json() == {"status": "ok"}
    info = client.get("/info").json()
    assert info["model"] == "kim_cnn" and len(info["labels"]) == 6
    r = client.post("/predict", json={"inputs": ["Who wrote Hamlet ?", ""]})
    assert r.status_code == 200
    preds = r.json()["predictions"]
    assert len(preds) == 2 and preds[0] == adaptext.load(demo_run[0]).predict(["Who wrote Hamlet ?"])[0]
    assert client.post("/predict", json={"inputs": [3]}).status_code == 422
    assert client.post("/predict", json={"nope": []}).status_code == 422
    r = client.post("/predict", json={"inputs": ["fine", {"txt": "typo"}]})
    assert r.status_code == 422 and r.json()["detail"] == "<input>:2: no 'text' field"
    r = client.post("/predict", json={"inputs": [{"text": 5}]})
    assert r.status_code == 422 and r.json()["detail"] == "<input>:1: 'text' must be a string, found int"
    from adaptext.serve import MAX_CHARS, MAX_INPUTS
    r = client.post("/predict", json={"inputs": ["fine", "a" * (MAX_CHARS + 1)]})
    assert r.status_code == 422 and r.json()["detail"] == f"input 2 is longer than {MAX_CHARS:,} characters"
    r = client.post("/predict", json={"inputs": ["x"] * (MAX_INPUTS + 1)})
    assert r.status_code == 422 and r.json()["detail"] == f"at most {MAX_INPUTS} inputs per request"
    assert client.post("/predict", json={"inputs": []}).json() == {"predictions": []}


@needs_data
def test_web_service_serves_pair_and_contexts_runs(tmp_path):
    """Real pair and multi-context runs over HTTP: objects with the generic or the run's own field
    names answer as the API does; a bare string or a missing context is a 422 naming the input."""
    from fastapi.testclient import TestClient

    from adaptext.data import readers as R
    from adaptext.serve import create_app
    sick = R.read_sick(DATA / "sick/SICK_train.txt")[:240]
    tiny = {"epochs": 1, "progress": False, "embed_dim": 16, "hidden": 16, "model": "attconv"}
    train_run({"data": str(DATA / "sick/SICK_train.txt"), "test": str(DATA / "sick/SICK_trial.txt"),
               "out": str(tmp_path / "pair"), "max_vocab": 2000, **tiny})
    rows = [{"claim": ex.text, "evidence": [ex.pair] + [q.pair for q in sick[k + 1: k + 1 + k % 3]], "label": ex.label}
            for k, ex in enumerate(sick)]
    (tmp_path / "ctx.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    train_run({"data": str(tmp_path / "ctx.jsonl"), "test": str(tmp_path / "ctx.jsonl"), "text_col": "claim",
               "contexts_col": "evidence", "out": str(tmp_path / "ctx"), **tiny})

    h, p = "A man is playing a guitar", "A person plays an instrument"
    client = TestClient(create_app(tmp_path / "pair"))
    assert client.get("/info").json()["task"] == "pair"
    r = client.post("/predict", json={"inputs": [{"text": h, "pair": p}]})
    assert r.status_code == 200
    assert r.json()["predictions"] == adaptext.load(tmp_path / "pair").predict([{"text": h, "pair": p}])
    assert set(r.json()["predictions"][0]["probs"]) == {"ENTAILMENT", "NEUTRAL", "CONTRADICTION"}
    r = client.post("/predict", json={"inputs": [{"text": h, "pair": p}, h]})
    assert r.status_code == 422 and r.json()["detail"].startswith("<input>:2: this model reads pair input")
    r = client.post("/predict", json={"inputs": [{"text": h}]})
    assert r.status_code == 422 and "a pair model needs" in r.json()["detail"]

    client = TestClient(create_app(tmp_path / "ctx"))
    assert client.get("/info").json()["task"] == "contexts"
    generic = {"text": h, "contexts": [p, "Nobody is playing"]}
    r = client.post("/predict", json={"inputs": [generic, {"claim": h, "evidence": [p, "Nobody is playing"]}]})
    assert r.status_code == 200
    first, second = r.json()["predictions"]
    assert first == second == adaptext.load(tmp_path / "ctx").predict([generic])[0]
    r = client.post("/predict", json={"inputs": [{"text": h, "contexts": []}]})
    assert r.status_code == 422 and "non-empty list" in r.json()["detail"]


def test_batch_size_and_device_are_checked(demo_run, capsys):
    """A batch size below 1 ran no batch and answered every input with zero probabilities."""
    clf = adaptext.load(demo_run[0])
    for bad in (0, -1, 2.5):
        with pytest.raises(ValueError, match="batch_size must be a whole number of at least 1"):
            clf.predict(["Who wrote Hamlet ?"], batch_size=bad)
        with pytest.raises(ValueError, match="batch_size must be"):
            clf.predict_proba(["Who wrote Hamlet ?"], batch_size=bad)
    with pytest.raises(SystemExit) as exit_:
        main(["predict", str(demo_run[0]), "--batch-size", "-3"])
    assert exit_.value.code == 2
    assert "expected a whole number of at least 1, not '-3'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="device 'gpu': "):
        adaptext.load(demo_run[0], device="gpu")


def test_predict_flags_texts_cut_at_the_model_s_fixed_length(tmp_path):
    """DenseCNN reads its fixed number of positions whatever the run's max_length: a longer text is flagged."""
    out = tmp_path / "dense"
    train_run({"out": str(out), "model": "densecnn", "epochs": 1, "embed_dim": 16, "filters": 6, "blocks": 2,
               "fixed_length": 8, "progress": False, "max_length": 60})
    clf = adaptext.load(out)
    short, long = clf.predict(["Who wrote Hamlet ?", "Who wrote the play about the prince of Denmark and his father ?"])
    assert "truncated" not in short and long["truncated"] is True


def test_predict_names_the_stdin_line_that_is_not_utf8(demo_run):
    r = subprocess.run([sys.executable, "-m", "adaptext.cli", "predict", str(demo_run[0])],
                       input=b"Who wrote Hamlet ?\ncaf\xe9 ?\n", capture_output=True)
    assert r.returncode == 2
    assert r.stderr.decode().strip() == "error: <stdin>:2: byte 0xe9 at column 4 is not valid utf-8 " \
                                        "(try --encoding cp1252 or latin-1)"


def test_inputs_of_other_kinds_are_checked(demo_run):
    """What a pair, contexts or tree model is given is checked before it reaches the model: a
    context list that is empty or not texts, a tree that does not parse, are errors naming the input."""
    clf = adaptext.load(demo_run[0])

    def reader(kind):
        return InputReader(kind, clf.config, clf.tokens, 0)
    (ex,) = reader("contexts").examples([{"text": "is it true ?", "contexts": "one piece of evidence"}])
    assert ex.contexts == ("one piece of evidence",)                  # a string is one context, not letters
    for bad in ([], [3], None, ["evidence", " "]):
        with pytest.raises(DataError, match=r"<input>:1: \"contexts\" must be a non-empty list of non-empty texts"):
            reader("contexts").examples([{"text": "is it true ?", "contexts": bad}])
    with pytest.raises(DataError, match=r"<input>:2: .*"):
        reader("tree").examples([{"tree": "(3 (2 good) (2 film))"}, {"tree": "(3 (2 a)"}])
    deep = "(2 " * 5000 + "word" + ")" * 5000                 # recursed past Python's limit
    with pytest.raises(DataError, match=r"<input>:1: the tree nests 5000 brackets deep; at most 300 are read"):
        reader("tree").examples([{"tree": deep}])
    with pytest.raises(DataError, match=r"<input>:1: 'pair' must be a string, found list"):
        reader("pair").examples([{"text": "a man sings", "pair": ["x"]}])


def test_text_pair_col_is_an_alias_of_pair_col():
    from adaptext.cli import train_parser
    assert train_parser("kim_cnn").parse_args(["--text-pair-col", "premise"]).pair_col == "premise"


def test_options_that_would_be_ignored_are_errors(tmp_path, capsys):
    f = tmp_path / "t.csv"
    f.write_text("text,label\nhello there,a\n")
    assert main(["train", "--data", "trec-demo", "--test", str(f), "--out", str(tmp_path / "a")]) == 2
    assert "a named dataset brings its own splits" in capsys.readouterr().err
    assert main(["train", "--data", str(f), "--test", str(f), "--cv", "3", "--out", str(tmp_path / "b")]) == 2
    assert capsys.readouterr().err.strip() == f"error: {f}: --cv is for data without a test file: drop --test or --cv"


def test_model_options_from_a_config_file_take_their_field_s_type(tmp_path):
    """YAML writes a one-width tuple as 3 and a quoted number as a string; densecnn's
    fixed_length 0 (pad to the batch) is a value, not an error; what cannot convert says so."""
    from adaptext.runs.options import resolve
    cfg = resolve({}, {"model": "kim_cnn", "widths": 3, "filters": "20"})
    assert cfg.model_options["widths"] == (3,) and cfg.model_options["filters"] == 20
    assert resolve({"model": "densecnn", "fixed_length": 0}).model_options["fixed_length"] == 0
    with pytest.raises(ValueError, match=r"widths must be comma-separated whole numbers, not '3,x'"):
        resolve({}, {"widths": "3,x"})
    with pytest.raises(ValueError, match=r"dropout must be a number, not True"):
        resolve({}, {"dropout": True})


def test_predict_reads_what_the_run_was_trained_on(demo_run, tmp_path, monkeypatch, capsys):
    """What a user gives predict: a bare string was predicted letter by letter, the run's own field
    names (--text-col / --pair-col) were refused, a CSV file was read line by line (its header
    and gold labels predicted as texts), one text line starting with '{' stopped the whole
    prediction, and '| head' ended in a traceback."""
    out, _ = demo_run
    clf = adaptext.load(out)
    for call in (clf.predict, clf.predict_proba):
        with pytest.raises(TypeError, match=r"give a list of inputs, not one str \(e.g. predict\(\[text\]\)\)"):
            call("great")
    reader = InputReader("text", clf.config.replace(text_col="question"), clf.tokens, 0)
    assert reader.examples([{"question": "Who wrote Hamlet ?"}])[0].text == "Who wrote Hamlet ?"
    reader = InputReader("pair", clf.config.replace(text_col="hypothesis", pair_col="premise"), clf.tokens, 0)
    (ex,) = reader.examples([{"hypothesis": "a man sings", "premise": "a man sings a song"}])
    assert (ex.text, ex.pair) == ("a man sings", "a man sings a song")
    with pytest.raises(DataError, match=r"a pair model needs .* \(or the run's fields: 'hypothesis', 'premise'\)"):
        reader.examples([{"sentence": "x"}])
    t = tmp_path / "p.tsv"
    t.write_text('text\tpair\tlabel\na man sings\t"a man" sings a song\tyes\n')
    reader = InputReader("pair", clf.config.replace(text_col="text", pair_col=None), clf.tokens, 0)  # a named pair set
    assert reader.read(str(t)) == [{"text": "a man sings", "pair": '"a man" sings a song'}]
    with pytest.raises(DataError, match="a .csv / .tsv file feeds text or pair models"):
        InputReader("contexts", clf.config, clf.tokens, 0).read(str(t))
    f = tmp_path / "q.csv"
    f.write_text('text,label\nWho wrote Hamlet ?,HUM\n"Where is Rome, then ?",LOC\n')
    assert main(["predict", str(out), str(f)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2                # the rows, not the header
    import io
    monkeypatch.setattr(sys, "stdin", io.StringIO("{braces} open this question ?\n{\"text\": \"Why ?\"}\n"))
    assert main(["predict", str(out)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2
    piped = subprocess.run(f"yes 'what is it ?' | head -5000 | {sys.executable} -m adaptext.cli predict {out} | head -1",
                           shell=True, capture_output=True, text=True)
    assert piped.stdout.count("\n") == 1 and "Traceback" not in piped.stderr, piped.stderr


def test_resume_evaluate_and_serve_keep_the_run_s_own_settings(demo_run, tmp_path, monkeypatch, capsys):
    """--resume refuses options it would ignore; evaluate re-reads the run's data with the run's
    --on-bad-line; config.json names its files absolutely (so --config works from any folder);
    serve without uvicorn is one error line."""
    out, _ = demo_run
    assert main(["train", "--resume", str(out), "--lr", "0.001"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --resume continues the run as it was configured; --lr 0.001 differs from its 1.0")
    assert f"--config {out / 'config.json'} --lr 0.001 --out NEW_DIR" in err
    monkeypatch.chdir(tmp_path)
    Path("train.txt").write_text("".join(f"{'pos' if i % 2 else 'neg'} text number {i} here\n" for i in range(40))
                                 + "pos\n")                                    # line 41: no text
    Path("test.txt").write_text("pos a text\nneg another text\n")
    assert main(["train", "--data", "train.txt", "--test", "test.txt", "--on-bad-line", "skip", "--epochs", "1", "--filters", "4",
                 "--embed-dim", "8", "--no-progress", "--out", "run"]) == 0
    capsys.readouterr()
    assert json.loads(Path("run/config.json").read_text())["data"]["data"] == str(tmp_path / "train.txt")
    assert not Path("run/checkpoints").exists() and Path("run/model.safetensors").exists()   # resume state removed
    assert main(["train", "--resume", "run", "--epochs", "2"]) == 2                 # not a silent retrain
    assert "the run has finished and its resume state was removed" in capsys.readouterr().err
    cmd = ["train", "--data", "train.txt", "--test", "test.txt", "--on-bad-line", "skip", "--filters", "4",
           "--embed-dim", "8", "--no-progress", "--out", "kept/", "--keep-checkpoints"]
    assert main([*cmd, "--epochs", "1"]) == 0
    assert main([*cmd, "--epochs", "2", "--resume", "kept"]) == 0          # the same command line, relative paths
    assert json.loads(Path("kept/metrics.json").read_text())["info"]["epochs_run"] == 2
    capsys.readouterr()
    assert main(["evaluate", "run", "--split", "dev"]) == 0                       # not stopped at line 41
    assert json.loads(capsys.readouterr().out)["bad_lines_skipped"] == 1
    assert main(["train", "--data", "nosuch.csv", "--test", "train.txt"]) == 2
    assert capsys.readouterr().err.strip() == "error: nosuch.csv: no such file"
    monkeypatch.setitem(sys.modules, "uvicorn", None)                            # the [serve] extra missing
    assert main(["serve", "run"]) == 2
    assert capsys.readouterr().err.strip() == "error: serving needs uvicorn: pip install 'adaptext[serve]'"


def test_a_students_teacher_logits_are_computed_where_the_student_trains(tmp_path, monkeypatch):
    """On the CPU here; ``tests/test_cuda.py`` trains a student on a GPU and checks the logits there."""
    from adaptext.training.prepare import prepare_device
    from adaptext.data.examples import TextExample
    from adaptext.training.distill import as_the_teacher_reads
    devices, teacher, m = distil_small(tmp_path, monkeypatch, "auto")
    gpu = "cuda" if torch.cuda.is_available() else "cpu"
    assert devices == [gpu] and m["test"]["accuracy"] > 20
    masked = [TextExample("what is <unk> ?")]
    assert as_the_teacher_reads(adaptext.load(teacher), masked) == masked     # a word-level teacher's own <unk>
    from adaptext.config import RunConfig
    assert [prepare_device(RunConfig(accelerator=a)) for a in ("cpu", "auto", "gpu")] == ["cpu", gpu, gpu]


def test_a_student_knows_the_words_of_its_unlabelled_transfer_texts(tmp_path, monkeypatch):
    """The words of ``--unlabeled`` texts join the student's vocabulary: the teacher's logits on
    those texts are where the student learns them, so they are not read as the unknown word."""
    unlabeled = tmp_path / "more.txt"
    unlabeled.write_text("Who founded zorblatt industries ?\nWhere is quaxiford castle ?\n")
    _, teacher, m = distil_small(tmp_path, monkeypatch, "cpu", unlabeled=str(unlabeled))
    tokens = json.loads((tmp_path / "student" / "vocab.json").read_text())["tokens"]
    assert {"zorblatt", "quaxiford"} <= set(tokens)
    assert "zorblatt" not in json.loads((teacher / "vocab.json").read_text())["tokens"]   # not a demo word
    clf = adaptext.load(tmp_path / "student")
    assert clf.model.embedding.embed.num_embeddings == len(tokens)
    assert m["info"]["train_examples"] == json.loads((teacher / "metrics.json").read_text())["info"]["train_examples"] + 2
