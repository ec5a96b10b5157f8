"""Teacher ensembles: a student learns the mean of several teachers' logits, each teacher's
cached alone; the student's run names every teacher."""
from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import bundled_examples

from adaptext.cli import main
from adaptext.training.distill import teacher_logits
from adaptext.training.run import train_run

SMALL = {"epochs": 1, "filters": 12, "embed_dim": 24, "progress": False, "threads": 1}


@pytest.fixture(scope="module")
def teachers(tmp_path_factory):
    root = tmp_path_factory.mktemp("teachers")
    for seed in (1, 2):
        train_run({**SMALL, "seed": seed, "out": str(root / f"t{seed}")})
    return root / "t1", root / "t2"


def test_an_ensemble_of_one_teacher_listed_twice_equals_that_teacher(teachers, tmp_path, monkeypatch):
    monkeypatch.setenv("ADAPTEXT_CACHE", str(tmp_path / "cache"))
    one, other = teachers
    examples = bundled_examples("text", 40)
    labels = sorted({q.label for q in bundled_examples("text", 5452)})
    alone = teacher_logits(one, examples, labels, log=lambda *_: None)
    twice = teacher_logits(f"{one},{one}", examples, labels, log=lambda *_: None)
    np.testing.assert_allclose(twice, alone, atol=1e-6)
    second = teacher_logits(other, examples, labels, log=lambda *_: None)
    assert not np.allclose(second, alone, atol=1e-3)            # two seeds: two teachers
    both = teacher_logits(f"{one},{other}", examples, labels, log=lambda *_: None)
    np.testing.assert_allclose(both, (alone + second) / 2, atol=1e-6)


def test_distill_takes_several_teachers_and_the_student_names_them(teachers, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ADAPTEXT_CACHE", str(tmp_path / "cache"))
    one, other = teachers
    out = tmp_path / "student"
    assert main(["distill", str(one), str(other), "--model", "bov", "--epochs", "1", "--threads", "1",
                 "--no-progress", "--out", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["test"]["accuracy"] > 0
    config = json.loads((out / "config.json").read_text())
    assert config["distillation"]["teacher"].split(",") == [str(one.resolve()), str(other.resolve())]


def test_a_killed_distillation_resumes_as_a_training_does(teachers, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ADAPTEXT_CACHE", str(tmp_path / "cache"))
    one, _ = teachers
    out = tmp_path / "student"
    argv = ["distill", str(one), "--model", "bov", "--epochs", "1", "--threads", "1", "--no-progress",
            "--keep-checkpoints", "--out", str(out)]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    assert main(["distill", str(one), "--resume", str(out), "--epochs", "2", "--no-progress"]) == 0
    resumed = json.loads((out / "metrics.json").read_text())
    assert resumed["info"]["epochs_run"] == 2 and first["test"]["accuracy"] > 0
    assert "drop --config" not in capsys.readouterr().err


def test_a_student_told_its_data_does_not_inherit_the_teachers_splits(tmp_path, monkeypatch):
    """A teacher trained on files with --dev/--test; a student told --data trec-demo reads that
    dataset's own splits (the teacher's --dev/--test were once carried over and blamed)."""
    monkeypatch.setenv("ADAPTEXT_CACHE", str(tmp_path / "cache"))
    questions = bundled_examples("text", 5452)
    for name, part in (("train", questions[:600]), ("dev", questions[600:700]), ("test", questions[700:800])):
        (tmp_path / f"{name}.tsv").write_text("label\ttext\n" + "".join(f"{q.label}\t{q.text}\n" for q in part))
    teacher = tmp_path / "teacher"
    train_run({**SMALL, "data": str(tmp_path / "train.tsv"), "dev": str(tmp_path / "dev.tsv"),
               "test": str(tmp_path / "test.tsv"), "out": str(teacher)})
    out = tmp_path / "student"
    assert main(["distill", str(teacher), "--data", "trec-demo", "--model", "bov", "--epochs", "1",
                 "--threads", "1", "--no-progress", "--out", str(out)]) == 0
    config = json.loads((out / "config.json").read_text())["data"]
    assert (config["data"], config["dev"], config["test"]) == ("trec-demo", None, None)
    assert json.loads((out / "metrics.json").read_text())["test"]["n"] == 500     # the demo's own test split
