"""Training from code: ``adaptext.fit`` on examples in memory writes the same run directory as
``adaptext train``; one run directory has one writer at a time."""
from __future__ import annotations

import json
import os

import pytest
from conftest import bundled_examples

import adaptext
from adaptext.cli import main
from adaptext.errors import DataError, UsageError
from adaptext.runs.files import writer_lock

TINY = {"filters": 8, "embed_dim": 16, "epochs": 2, "seed": 3, "threads": 1}


def test_fit_on_tuples_in_memory_writes_a_run_that_loads_and_predicts(tmp_path):
    questions = bundled_examples("text", 400)
    train = [(q.text, q.label) for q in questions[:300]]
    test = [(q.text, q.label) for q in questions[300:]]
    clf = adaptext.fit(train, test=test, out=str(tmp_path / "run"), **TINY)
    assert set(clf.metrics) >= {"dev", "test", "info"}
    assert clf.metrics["info"]["train_examples"] == 270 and clf.metrics["info"]["dev_examples"] == 30   # 10% held out
    assert clf.metrics["info"]["test_examples"] == 100
    again = adaptext.load(tmp_path / "run")
    texts = [t for t, _ in test[:5]]
    assert [p["label"] for p in again.predict(texts)] == [p["label"] for p in clf.predict(texts)]
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["data"]["data"] == "in-memory" and config["model"]["filters"] == 8


def test_fit_refuses_what_is_not_an_example(tmp_path):
    with pytest.raises(UsageError, match="example 2: expected an example"):
        adaptext.fit([("a", "x"), ["b", "y"]], out=str(tmp_path / "r"))
    with pytest.raises(UsageError, match="unknown option"):
        adaptext.fit([("a", "x"), ("b", "y")], out=str(tmp_path / "r"), no_such_option=1)


def test_a_second_writer_of_a_run_directory_is_refused_and_the_first_keeps_it(tmp_path, capsys):
    out = tmp_path / "run"
    with writer_lock(out):                        # another process training into it right now
        assert main(["train", "--out", str(out), "--epochs", "1", "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert f"process {os.getpid()} (" in err and "is writing this run directory now; wait" in err
        assert not (out / "config.json").exists()
    with pytest.raises(DataError, match="is writing this run directory"):
        with writer_lock(out), writer_lock(out):
            pass
