"""A teacher's logits kept as a file: ``adaptext logits`` writes them over the transfer set a
student would be shown, and a student distilled from the file (no teacher run) is the student
distilled from the teacher itself; a file made for other texts, or that is no such file, is one
line of error."""
from __future__ import annotations

import json

import pytest
from safetensors.numpy import load_file

from adaptext.cli import main
from adaptext.training.distill import logits_file_meta

from test_hardening import one_line_error, questions  # noqa: F401  (fixtures)

STUDENT = ["--model", "kim_cnn", "--filters", "8", "--embed-dim", "16", "--epochs", "2", "--seed", "1",
           "--threads", "1", "--no-progress", "--augment", "1"]


@pytest.fixture(scope="module")
def teacher(tmp_path_factory, questions):
    out = tmp_path_factory.mktemp("teacher") / "run"
    assert main(["train", "--data", questions[0], "--test", questions[1], "--filters", "10", "--epochs", "1",
                 "--seed", "2", "--threads", "1", "--no-progress", "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def logits_file(teacher, tmp_path_factory):
    path = tmp_path_factory.mktemp("logits") / "teacher.safetensors"
    assert main(["logits", str(teacher), "--augment", "1", "--seed", "1", "--out", str(path)]) == 0
    return path


def test_the_file_keeps_the_transfer_set_s_logits_and_identity(logits_file, teacher):
    meta = logits_file_meta(logits_file)
    logits = load_file(str(logits_file))["logits"]
    labels = json.loads(meta["labels"])
    # the training texts (270 after a tenth is held out as dev) and one augmented copy of each
    assert logits.shape == (int(meta["count"]), len(labels)) and int(meta["count"]) == 2 * 270
    assert json.loads(meta["teachers"])[0]["run"] == teacher.name
    assert json.loads(meta["data_options"])["data"].endswith("train.csv")


def test_a_student_of_the_file_is_the_student_of_the_teacher(teacher, logits_file, tmp_path, capsys):
    assert main(["distill", str(teacher), *STUDENT, "--out", str(tmp_path / "of-teacher")]) == 0
    assert main(["distill", "--teacher-logits", str(logits_file), *STUDENT, "--out", str(tmp_path / "of-file")]) == 0
    capsys.readouterr()
    a, b = (load_file(str(tmp_path / r / "model.safetensors")) for r in ("of-teacher", "of-file"))
    assert a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a)
    metrics = [json.loads((tmp_path / r / "metrics.json").read_text()) for r in ("of-teacher", "of-file")]
    assert metrics[0]["test"]["accuracy"] == metrics[1]["test"]["accuracy"]
    config = json.loads((tmp_path / "of-file" / "config.json").read_text())
    assert config["distillation"]["teacher_logits"] == str(logits_file)


def test_students_of_other_seeds_share_the_file_s_augmented_copies(logits_file, tmp_path, capsys):
    # the file was made with --seed 1: a student of seed 3 builds the same copies from it
    student = [*STUDENT[:STUDENT.index("--seed")], "--seed", "3", *STUDENT[STUDENT.index("--seed") + 2:]]
    assert main(["distill", "--teacher-logits", str(logits_file), *student, "--out", str(tmp_path / "s3")]) == 0
    capsys.readouterr()
    config = json.loads((tmp_path / "s3" / "config.json").read_text())
    assert config["engine"]["seed"] == 3 and config["distillation"]["augment_seed"] == 1
    assert json.loads(logits_file_meta(logits_file)["data_options"])["augment_seed"] == 1


def test_a_file_of_other_texts_or_no_logits_is_one_line(logits_file, tmp_path, capsys):
    assert main(["distill", "--teacher-logits", str(logits_file), *STUDENT[:-1], "2",
                 "--out", str(tmp_path / "other")]) == 2
    said = capsys.readouterr().err.strip().splitlines()      # the transfer set it built, then why it stops
    assert said[-1].startswith(f"error: {logits_file}: logits of another transfer set (540 texts) than this "
                               f"run's (810 texts")
    not_logits = tmp_path / "weights.safetensors"
    not_logits.write_bytes(b"not a safetensors file")
    assert main(["distill", "--teacher-logits", str(not_logits), *STUDENT, "--out", str(tmp_path / "x")]) == 2
    one_line_error(capsys, str(not_logits), "not a file of teacher logits")


def test_a_sample_of_the_unlabelled_texts_travels_with_the_file(teacher, tmp_path, capsys):
    """``--unlabeled-sample N`` takes N of the file's texts (drawn with the copies' seed): the logits
    file keeps the number, and its student draws the same N; another number is another transfer set."""
    unlabeled = tmp_path / "more.txt"
    unlabeled.write_text("".join(f"what is the capital of place {k} ?\n" for k in range(40)))
    path = tmp_path / "sampled.safetensors"
    assert main(["logits", str(teacher), "--augment", "1", "--seed", "1", "--unlabeled", str(unlabeled),
                 "--unlabeled-sample", "10", "--out", str(path)]) == 0
    meta = logits_file_meta(path)
    assert int(meta["count"]) == 2 * 270 + 10 and json.loads(meta["data_options"])["unlabeled_sample"] == 10
    assert main(["distill", "--teacher-logits", str(path), *STUDENT, "--out", str(tmp_path / "student")]) == 0
    assert main(["distill", "--teacher-logits", str(path), *STUDENT, "--unlabeled-sample", "20",
                 "--out", str(tmp_path / "other")]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith(
        f"error: {path}: logits of another transfer set (550 texts) than this run's (560 texts")


def test_help_names_the_transfer_options_it_takes(capsys):
    """--help says which of train's options shape the transfer set, and reads no teacher."""
    assert main(["logits", "--help"]) == 0
    said = capsys.readouterr().out
    assert said.startswith("usage: adaptext logits TEACHER_RUN")
    assert all(flag in said for flag in ("--augment", "--spans", "--unlabeled", "--unlabeled-sample", "--seed",
                                         "--threads"))
    assert main(["logits"]) == 2


def test_out_naming_a_folder_is_one_line_before_any_teacher(tmp_path, capsys):
    """A folder, or a path ending in a separator, is not a file to write: refused before a teacher is read."""
    for out in (str(tmp_path), str(tmp_path / "new") + "/"):
        assert main(["logits", str(tmp_path / "no-teacher"), "--out", out]) == 2
        one_line_error(capsys, out, "a folder: --out is the file the logits are written to")
        assert not (tmp_path / "new").exists()
