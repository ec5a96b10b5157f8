"""Faults a user (or a client of the service) can cause are answered with one clear line and
exit code 2, or a 422, never a traceback or a wrong answer: the service's limits on bodies and
addresses, sweeps on a folder made by another sweep or with values that cannot train, failed
trials and damaged study journals, export options out of range, explanation steps past the
limit, and models too large to allocate."""
from __future__ import annotations

import csv
import json
import select
import socket
import urllib.error
import urllib.request

import pytest

from adaptext.cli import main
from adaptext.errors import UsageError
from adaptext.training.run import train_run

from conftest import bundled_examples, serving

QUESTION = "Who wrote Hamlet ?"


def one_line_error(capsys, *said) -> str:
    """The single line a refused command wrote on stderr, which holds every one of ``said``."""
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert all(s in lines[0] for s in said), lines[0]
    return lines[0]


def _write_csv(path, rows) -> str:
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([("text", "label")] + [(q.text, q.label) for q in rows])
    return str(path)


@pytest.fixture(scope="module")
def questions(tmp_path_factory) -> tuple[str, str]:
    """300 bundled questions to train on, 100 to test on (CSV files)."""
    folder, qs = tmp_path_factory.mktemp("questions"), bundled_examples("text", 400)
    return _write_csv(folder / "train.csv", qs[:300]), _write_csv(folder / "test.csv", qs[300:])


@pytest.fixture(scope="module")
def kim_run(tmp_path_factory, questions):
    """A tiny kim_cnn run (1 epoch, 10 filters, 300-wide word vectors)."""
    out = tmp_path_factory.mktemp("runs") / "kim"
    train_run({"out": str(out), "data": questions[0], "test": questions[1], "epochs": 1, "progress": False,
               "filters": 10, "max_length": 20, "seed": 1}, log=lambda m: None)
    return out


@pytest.fixture(scope="module")
def sweep_data(questions):
    return ["--data", questions[0], "--test", questions[1]]


SHARED = ["--filters", "8", "--embed-dim", "16", "--max-length", "12", "--epochs", "1", "--seed", "3",
          "--optimizer", "adadelta"]


@pytest.fixture(scope="module")
def swept(tmp_path_factory, sweep_data):
    """A finished grid of two points: its folder and the command that made it."""
    out = tmp_path_factory.mktemp("sweeps") / "grid"
    argv = ["sweep", "--grid", "lr=0.5,1.0", "--out", str(out), *SHARED, *sweep_data]
    assert main(argv) == 0
    return out, argv


# ----------------------------------------------------------------------- service
def test_a_body_nested_past_the_parser_or_into_an_input_is_a_422(kim_run):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from adaptext.serve import create_app
    client = TestClient(create_app(kim_run))
    deep = b'{"inputs": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    for path in ("/predict", "/explain"):
        r = client.post(path, content=deep, headers={"content-type": "application/json"})
        assert r.status_code == 422 and "nests lists or objects too deeply" in r.json()["detail"]
    inside = b'{"inputs": ' + b"[" * 500 + b'"a"' + b"]" * 500 + b"}"     # parses; an input of lists
    r = client.post("/predict", content=inside, headers={"content-type": "application/json"})
    assert r.status_code == 422 and "cannot read a list" in r.json()["detail"]
    r = client.post("/predict", json={"inputs": [QUESTION]})
    assert r.status_code == 200 and len(r.json()["predictions"]) == 1


@pytest.fixture(scope="module")
def served(kim_run):
    """`adaptext serve` on a free loopback port: its URL and the line it printed at start-up."""
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    with serving(kim_run) as (url, proc):
        said = select.select([proc.stderr], [], [], 5)[0]     # written before the socket answered
        yield url, proc.stderr.readline() if said else ""


def test_serve_says_where_it_listens(served, kim_run):
    url, first = served
    assert first.strip() == (f"serving {kim_run} on {url} (GET / a page to try it; POST /predict, /explain; "
                             "GET /health, /info)")


def test_a_body_over_the_limit_with_a_content_length_is_answered_422_not_reset(served):
    url, _ = served
    body = b'{"inputs": ["' + b"a" * (11 * 2 ** 20) + b'"]}'
    # urllib sends Connection: close, so the server closes once it has answered: a body it left
    # unread would reset the connection while the client still sends it
    request = urllib.request.Request(url + "/predict", body, {"content-type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(request, timeout=60)
    assert e.value.code == 422 and "larger than 10,485,760 bytes" in json.loads(e.value.read())["detail"]
    ok = urllib.request.Request(url + "/predict", json.dumps({"inputs": [QUESTION]}).encode(),
                                {"content-type": "application/json"})
    with urllib.request.urlopen(ok, timeout=60) as r:
        assert r.status == 200 and len(json.loads(r.read())["predictions"]) == 1


@pytest.mark.parametrize("flags,said", [(["--port", "99999"], "--port must be a whole number from 1 to 65535"),
                                        (["--port", "-1"], "--port must be a whole number from 1 to 65535"),
                                        (["--host", "nohost"], "--host 'nohost' is not an address")])
def test_serve_refuses_a_port_or_host_it_cannot_listen_on_before_loading(flags, said, kim_run, capsys, monkeypatch):
    uvicorn = pytest.importorskip("uvicorn")

    def started(*args, **kwargs):
        raise AssertionError("the server started")
    monkeypatch.setattr(uvicorn, "run", started)
    monkeypatch.setattr(uvicorn.Server, "run", started)
    monkeypatch.setattr("adaptext.serve.app_from_environment", started)     # nothing loads either
    assert main(["serve", str(kim_run), *flags]) == 2
    one_line_error(capsys, said)


def test_serve_refuses_a_port_in_use(kim_run, capsys):
    pytest.importorskip("uvicorn")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert main(["serve", str(kim_run), "--port", str(port)]) == 2
    one_line_error(capsys, f"cannot listen on 127.0.0.1 port {port}")


# ----------------------------------------------------------------------- sweeps
def test_a_sweep_on_the_folder_of_another_sweep_says_what_differs(swept, sweep_data, capsys):
    out, argv = swept
    capsys.readouterr()
    assert main([*argv, "--epochs", "2"]) == 2
    one_line_error(capsys, f"{out} holds a sweep made with other options", "--epochs 1, not 2", "another --out")
    assert main(["sweep", "--grid", "lr=0.5,1.0,2.0", "--out", str(out), *SHARED, *sweep_data]) == 2
    one_line_error(capsys, "--grid lr=0.5,1.0, not --grid lr=0.5,1.0,2.0")
    assert main(["sweep", "--search", "lr=0.5:1", "--trials", "2", "--out", str(out), *SHARED, *sweep_data]) == 2
    one_line_error(capsys, "--grid lr=0.5,1.0, not --search lr=0.5:1")
    assert main(["sweep", "--grid", "lr=0.5,1.0", "--out", str(out), "--model", "bov", "--epochs", "1",
                 *sweep_data]) == 2
    one_line_error(capsys, "--model kim_cnn, not bov")
    assert main(argv) == 0                                   # the study is as it was: nothing to train
    summary = json.loads(capsys.readouterr().out)
    assert summary["trials"] == 2 and summary["complete"] == 2 and summary["failed"] == 0


def test_failed_trials_are_rows_with_their_error_and_the_sweep_exits_non_zero(sweep_data, tmp_path, capsys):
    out = tmp_path / "fails"
    assert main(["sweep", "--grid", "lr=0.5,1.0", "--out", str(out), *SHARED, *sweep_data[:2]]) == 1   # no --test
    captured = capsys.readouterr()
    assert "2 trial(s) failed" in captured.err and "no test file" in captured.err
    assert str(out / "trial-0" / "error.txt") in captured.err and "Traceback" not in captured.err
    assert json.loads(captured.out)["failed"] == 2
    rows = list(csv.DictReader(open(out / "trials.csv")))
    assert [(r["trial"], r["lr"], r["state"]) for r in rows] == [("0", "0.5", "fail"), ("1", "1.0", "fail")]
    assert all("no test file: pass --test FILE" in r["error"] for r in rows)
    assert (out / "trials.md").read_text().count("| fail |") == 2
    assert "DataError" in (out / "trial-1" / "error.txt").read_text()      # the traceback, kept


def test_every_swept_value_is_checked_before_the_first_trial(sweep_data, tmp_path, capsys):
    out = tmp_path / "bad"
    assert main(["sweep", "--grid", "lr=0.5,-1", "--out", str(out), *SHARED, *sweep_data]) == 2
    one_line_error(capsys, "lr=-1: lr must be above 0, not -1.0")
    assert main(["sweep", "--search", "dropout=0.2:1.5", "--trials", "2", "--out", str(out), *SHARED,
                 *sweep_data]) == 2
    one_line_error(capsys, "dropout=1.5: dropout must be in [0, 1), not 1.5")
    assert not out.exists()                                  # no trial trained, no study made


@pytest.mark.parametrize("budget", ["nan", "-5", "inf"])
def test_a_time_budget_that_never_ends_or_is_spent_already_is_refused(budget, sweep_data, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["sweep", "--search", "lr=0.5:1", "--time", budget, "--trials", "2", "--out", str(tmp_path / "s"),
              *SHARED, *sweep_data])
    assert exit_.value.code == 2
    assert f"argument --time: expected a duration above 0 and at most a year (90s, 30m, 2h), not '{budget}'" \
        in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


def test_a_sweep_into_a_file_is_refused(sweep_data, tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine\n")
    assert main(["sweep", "--grid", "lr=0.5", "--out", str(tmp_path / "notes.txt"), *SHARED, *sweep_data]) == 2
    one_line_error(capsys, "notes.txt: --out is a file")
    assert (tmp_path / "notes.txt").read_text() == "mine\n"


def test_a_journal_cut_by_a_kill_resumes_with_its_trials_and_garbage_in_it_is_named(swept, capsys):
    out, argv = swept
    journal = out / "study.log"
    finished = {k: (out / f"trial-{k}" / "metrics.json").stat().st_mtime_ns for k in (0, 1)}
    whole = journal.read_bytes()
    journal.write_bytes(whole[:-25])                  # the last line (trial 1 complete) cut mid-write
    capsys.readouterr()
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["complete"] == 2 and summary["failed"] == 0
    assert journal.read_bytes().endswith(b"\n") and all(json.loads(line) for line in journal.read_bytes().splitlines())
    rows = list(csv.DictReader(open(out / "trials.csv")))
    # the trial run again is listed by its folder's number (Optuna numbers it 2), and nothing trained again
    assert sorted((r["trial"], r["run"], r["state"]) for r in rows) == [
        ("0", str(out / "trial-0"), "complete"), ("1", str(out / "trial-1"), "complete")]
    assert not (out / "trial-2").exists()
    assert {k: (out / f"trial-{k}" / "metrics.json").stat().st_mtime_ns for k in (0, 1)} == finished

    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join(lines[:3]) + b"\x00garbage\n" + b"".join(lines[3:]))
    assert main(argv) == 2
    one_line_error(capsys, f"{journal}:4: not a line of the sweep's journal")


# ----------------------------------------------------------------------- export
@pytest.mark.parametrize("opset", ["1", "99"])
def test_export_refuses_an_opset_the_exporter_cannot_write(opset, kim_run, tmp_path, capsys):
    pytest.importorskip("onnxscript")
    assert main(["export", str(kim_run), "--out", str(tmp_path / "onnx"), "--opset", opset]) == 2
    one_line_error(capsys, "--opset must be from 7 to", f"not {opset}")
    assert not (tmp_path / "onnx").exists()


def test_export_refuses_a_length_whose_check_needs_more_memory_than_there_is(kim_run, tmp_path, capsys):
    pytest.importorskip("onnxscript")
    assert main(["export", str(kim_run), "--out", str(tmp_path / "onnx"), "--length", "2000000000"]) == 2
    line = one_line_error(capsys, "--length 2,000,000,000 needs at least", "TiB", "of memory")
    assert "300-wide word vectors" in line                  # kim_cnn's default vectors
    assert not (tmp_path / "onnx").exists()


def test_the_transformer_exports_without_a_graph_listing_on_the_terminal(tmp_path, capfd):
    pytest.importorskip("transformers")
    pytest.importorskip("onnxscript")
    qs = bundled_examples("text", 120)
    run = tmp_path / "transformer"
    train_run({"model": "transformer", "layers": 1, "epochs": 1, "max_length": 16, "progress": False,
               "data": _write_csv(tmp_path / "train.csv", qs[:90]), "test": _write_csv(tmp_path / "test.csv", qs[90:]),
               "out": str(run)}, log=lambda m: None)
    capfd.readouterr()
    assert main(["export", str(run), "--out", str(tmp_path / "onnx")]) == 0
    out, err = capfd.readouterr()
    assert err.strip() == "" and "def forward" not in out
    assert out.strip().startswith("exported transformer to") and len(out.strip().splitlines()) == 1
    assert json.loads((tmp_path / "onnx" / "export.json").read_text())["check"]["max_abs_diff_probs"] < 1e-4


# ----------------------------------------------------------------------- explain, train
def test_explain_refuses_steps_past_the_limit_and_an_out_that_is_a_file(kim_run, tmp_path, capsys):
    pytest.importorskip("captum")
    from adaptext.explain.words import MAX_STEPS
    for steps in (str(MAX_STEPS + 1), "0", "1000000"):
        assert main(["explain", "words", str(kim_run), "--text", QUESTION, "--steps", steps]) == 2
        one_line_error(capsys, f"--steps must be a whole number from 1 to {MAX_STEPS}, not {steps}")
    (tmp_path / "report").write_text("")
    for what in (["words", "--text", QUESTION], ["filters"]):
        assert main(["explain", *what, str(kim_run), "--out", str(tmp_path / "report")]) == 2
        one_line_error(capsys, "report: --out is a file, not a folder")


def test_explain_words_refuses_a_second_input_the_model_does_not_read(kim_run, capsys):
    assert main(["explain", "words", str(kim_run), "--text", QUESTION, "--pair", "x"]) == 2
    one_line_error(capsys, "reads text input: --pair is for pair and contexts models; drop it")
    assert main(["explain", "words", str(kim_run), "--text", QUESTION, "--context", "x"]) == 2
    one_line_error(capsys, "reads text input: --context is for pair and contexts models; drop it")


@pytest.mark.parametrize("kind,flags,said", [("pair", {}, "give --pair TEXT"),
                                             ("tree_pair", {}, "give --pair TEXT"),
                                             ("contexts", {"pair": "x"}, "give --context TEXT"),
                                             ("contexts", {}, "give --context TEXT")])
def test_a_pair_or_contexts_model_asks_for_its_own_second_input(kind, flags, said):
    from argparse import Namespace
    from adaptext.cli import check_second_input
    from adaptext.data.examples import ExampleKind
    with pytest.raises(UsageError, match=said):
        check_second_input(ExampleKind(kind), Namespace(run_dir="RUN", pair=flags.get("pair"), context=[]))
    check_second_input(ExampleKind.PAIR, Namespace(run_dir="RUN", pair="x", context=[]))        # no error


def test_a_model_too_large_to_allocate_says_its_size_and_the_memory_it_needs(tmp_path, capsys):
    # a billion hidden units: 1.1 TiB of weights, more than any machine this runs on can allocate
    assert main(["train", "--model", "bov", "--hidden", "1000000000", "--epochs", "1", "--no-progress",
                 "--out", str(tmp_path / "bov")]) == 2
    line = one_line_error(capsys, "model bov with --hidden 1000000000 is too large", "parameters",
                          "TiB for its weights")
    assert "this machine has" in line
    from adaptext import create_model
    with pytest.raises(UsageError, match=r"model bov with --hidden 1000000000 is too large: [\d,]+ parameters"):
        create_model("bov", num_classes=2, vocab_size=5000, hidden=1_000_000_000)


# ----------------------------------------------------------------------- messages
def test_config_files_with_a_key_twice_or_a_folder_are_named(tmp_path, capsys):
    yaml_file = tmp_path / "c.yaml"
    yaml_file.write_text("epochs: 1\nlr: 0.1\nepochs: 3\n")
    assert main(["train", "--config", str(yaml_file), "--out", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err.strip() == f"error: {yaml_file}:3: 'epochs' is set twice"
    json_file = tmp_path / "c.json"
    json_file.write_text('{\n "lr": 0.1,\n "lr": 0.2\n}\n')
    assert main(["train", "--config", str(json_file), "--out", str(tmp_path / "r")]) == 2
    assert "'lr' is set twice" in capsys.readouterr().err
    assert main(["train", "--config", str(tmp_path), "--out", str(tmp_path / "r")]) == 2
    assert "a folder, not a config file" in capsys.readouterr().err


def test_a_tree_student_is_refused_by_its_own_name(kim_run, tmp_path, capsys):
    assert main(["distill", str(kim_run), "--model", "treelstm", "--out", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert "--model treelstm reads tree/tree_pair examples" in err and str(kim_run) not in err


def test_unlabelled_texts_in_cp1252_are_read(tmp_path):
    from adaptext.training.distill import unlabeled_texts
    f = tmp_path / "more.txt"
    f.write_bytes("a caf\xe9 scene\nanother one\n".encode("cp1252"))
    assert [t.text for t in unlabeled_texts(f)] == ["a café scene", "another one"]


def test_a_sample_of_the_unlabelled_texts_is_drawn_with_the_copies_seed_in_the_file_s_order(tmp_path):
    from adaptext.config import RunConfig
    from adaptext.training.distill import unlabeled_of
    f = tmp_path / "more.txt"
    f.write_text("".join(f"text {k}\n" for k in range(100)))
    def drawn(**kw):
        return [int(t.text.split()[1]) for t in unlabeled_of(RunConfig(unlabeled=str(f), **kw))]
    one = drawn(unlabeled_sample=30, seed=1)
    assert len(set(one)) == 30 and one == sorted(one)
    assert drawn(unlabeled_sample=30, seed=2, augment_seed=1) == one        # the copies' seed, not the run's
    assert drawn(unlabeled_sample=30, seed=2) != one
    assert drawn(unlabeled_sample=0, seed=1) == drawn(unlabeled_sample=500, seed=1) == list(range(100))
    assert unlabeled_of(RunConfig()) == []
