"""A fresh offline machine: no NLTK data anywhere, an empty home. What needs a POS tagger (the
tag-guided tree models, the bracketer that parses their plain text, POS-guided augmentation)
reads the tagger the package ships."""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import pytest
from conftest import DATA, bundled_examples

from adaptext.data.tags import get_tagger


def _offline_env(tmp_path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "NLTK_DATA"}
    home = tmp_path / "home"
    home.mkdir()
    return env | {"HOME": str(home), "ADAPTEXT_CACHE": str(tmp_path / "cache"), "ADAPTEXT_DATA": str(tmp_path / "none")}


def _adaptext(args: list[str], env: dict) -> dict:
    done = subprocess.run([sys.executable, "-m", "adaptext.cli", *args, "--no-progress", "--threads", "1"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _questions_csv(path, n: int):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        w.writerows([q.text, q.label] for q in bundled_examples("text", n))
    return path


@pytest.mark.slow
def test_tag_guided_training_and_augmented_distillation_need_no_downloaded_data(tmp_path):
    env = _offline_env(tmp_path)
    data = _questions_csv(tmp_path / "questions.csv", 80)
    tree = _adaptext(["train", "--model", "tg_htreelstm", "--data", str(data), "--test", str(data), "--epochs", "1",
                      "--out", str(tmp_path / "tg")], env)
    assert 0 <= tree["test"]["accuracy"] <= 100
    _adaptext(["train", "--data", str(data), "--test", str(data), "--epochs", "1", "--filters", "10", "--out", str(tmp_path / "teacher")], env)
    student = _adaptext(["distill", str(tmp_path / "teacher"), "--model", "bov", "--augment", "2", "--epochs", "1",
                         "--out", str(tmp_path / "student")], env)
    assert 0 <= student["test"]["accuracy"] <= 100


def test_the_shipped_tagger_tags_as_nltk_pos_tag_does():
    tagger = get_tagger("nltk")
    assert tagger("It is a very good movie".split()) == ["PRP", "VBZ", "DT", "RB", "JJ", "NN"]
    nltk_data = DATA / "nltk_data"
    if not nltk_data.is_dir():
        pytest.skip("NLTK's own copy of the tagger data is not beside the repository")
    import nltk
    from nltk.tag.perceptron import PerceptronTagger
    nltk.data.path.insert(0, str(nltk_data))
    try:
        reference = PerceptronTagger()
    finally:
        nltk.data.path.remove(str(nltk_data))
    for q in bundled_examples("text", 200):
        words = q.text.split()
        assert tagger(words) == [t for _, t in reference.tag(words)]
