"""Inputs a user gets wrong are refused with one clear line (exit 2, or a 422) before any work,
and no command removes what is not its own: the cache's --clear takes only the cache's kinds,
options out of range name themselves, damaged weights are refused at load, a tree input gives
a text or a tree, a run directory being written names the process writing it."""
from __future__ import annotations

import os
import shutil
import struct

import pytest

from adaptext.cli import main
from adaptext.data import cache
from adaptext.runs.files import writer_lock

from conftest import bundled_examples, needs_data
from test_hardening import kim_run, one_line_error, questions  # noqa: F401  (fixtures)


# ----------------------------------------------------------------------- the cache
@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    """A cache root with one entry of each kind, beside a folder of the user's own."""
    root = tmp_path / "cache"
    for kind in cache.KINDS:
        (root / kind / "entry").mkdir(parents=True)
        (root / kind / "entry" / "data").write_bytes(b"x" * 1000)
    (root / "notes").mkdir()                              # the user's, under the same root
    (root / "notes" / "keep.txt").write_text("mine")
    (tmp_path / "keep").mkdir()
    (tmp_path / "keep" / "keep.txt").write_text("mine")
    monkeypatch.setenv("ADAPTEXT_CACHE", str(root))
    return root


@pytest.mark.parametrize("kind", ["../keep", "..", "/", "notes", "bogus", "stores/../../keep", ""])
def test_cache_clear_takes_only_the_cache_s_kinds(cache_home, kind, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["cache", "--clear", kind])
    assert exit_.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
    assert (cache_home.parent / "keep" / "keep.txt").read_text() == "mine"
    assert all((cache_home / k / "entry" / "data").is_file() for k in cache.KINDS)


def test_cache_clear_all_leaves_what_is_not_a_kind_and_a_link_s_target(cache_home, capsys):
    shutil.rmtree(cache_home / "vectors")
    (cache_home / "vectors").symlink_to(cache_home.parent / "keep")      # a kind folder that is a link
    assert main(["cache", "--clear"]) == 0
    assert "removed 3.0KB" in capsys.readouterr().out
    assert sorted(p.name for p in cache_home.iterdir()) == ["notes"]
    assert (cache_home / "notes" / "keep.txt").read_text() == "mine"
    assert (cache_home.parent / "keep" / "keep.txt").read_text() == "mine"


def test_cache_clear_one_kind_and_the_library_refuses_a_path(cache_home):
    assert main(["cache", "--clear", "parses"]) == 0
    assert not (cache_home / "parses").exists() and (cache_home / "stores" / "entry").is_dir()
    for bad in ("../keep", "notes", "stores/../../keep"):
        with pytest.raises(Exception, match="not a kind of the cache"):
            cache.clear(bad)
    assert (cache_home.parent / "keep" / "keep.txt").is_file()


# ----------------------------------------------------------------------- options out of range
@pytest.mark.parametrize("argv, named", [
    (["explain", "filters", "RUN", "--out", "o", "--per-class", "-3"], "--per-class"),
    (["explain", "filters", "RUN", "--out", "o", "--per-class", "0"], "--per-class"),
    (["explain", "tree", "RUN", "--out", "o", "--tree", "(1 a)", "--top", "-5"], "--top"),
    (["explain", "tree", "RUN", "--out", "o", "--tree", "(1 a)", "--dim", "-1"], "--dim"),
    (["predict", "RUN", "--batch-size", "0"], "--batch-size"),
])
def test_a_number_out_of_range_names_its_option(argv, named, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and f"argument {named}: expected a whole number of at least" in err
    assert "Traceback" not in err


def test_an_unknown_encoding_is_refused_for_a_named_dataset_too(tmp_path, capsys):
    assert main(["train", "--data", "trec-demo", "--encoding", "bogus", "--out", str(tmp_path / "r")]) == 2
    one_line_error(capsys, "unknown encoding 'bogus'")
    assert not (tmp_path / "r").exists()


def test_a_swept_option_that_does_not_exist_is_said_by_the_sweep(tmp_path, capsys):
    assert main(["sweep", "--grid", "nonexistent_option=1,2", "--out", str(tmp_path / "s")]) == 2
    one_line_error(capsys, "adaptext sweep:", "nonexistent_option is not an option of adaptext train")
    assert not (tmp_path / "s").exists()


# ----------------------------------------------------------------------- run directories
def _poison(weights) -> None:
    """Overwrite every data byte of a safetensors file with NaN, keeping its size and header."""
    raw = bytearray(weights.read_bytes())
    start = 8 + struct.unpack("<Q", raw[:8])[0]
    raw[start:] = b"\xff" * (len(raw) - start)                # 0xffffffff is a float32 NaN
    weights.write_bytes(bytes(raw))


def test_weights_that_are_not_finite_are_refused_at_load(kim_run, tmp_path, capsys):
    run = tmp_path / "damaged"
    shutil.copytree(kim_run, run)
    _poison(run / "model.safetensors")
    assert main(["predict", str(run)]) == 2
    one_line_error(capsys, str(run / "model.safetensors"), "not finite (NaN or inf)")


def test_a_run_being_trained_names_its_writer_not_resume(kim_run, tmp_path, capsys):
    run = tmp_path / "busy"
    shutil.copytree(kim_run, run)
    (run / "metrics.json").unlink()                       # a run that has begun and is training now
    with writer_lock(run):
        assert main(["train", "--out", str(run), "--epochs", "1"]) == 2
        line = one_line_error(capsys, f"process {os.getpid()} (", "is writing this run directory now", "wait")
        assert "--resume" not in line
        assert main(["train", "--resume", str(run)]) == 2
        one_line_error(capsys, f"process {os.getpid()} (")
    assert main(["train", "--out", str(run), "--epochs", "1"]) == 2         # once it is free: resume it
    one_line_error(capsys, "already holds a run (resumable: use --resume")


@needs_data
def test_evaluating_on_a_dataset_split_by_folds_says_so(kim_run, capsys):
    assert main(["evaluate", str(kim_run), "--data", "mr", "--split", "test"]) == 2
    one_line_error(capsys, "mr", "the dataset has no test split (it is split into cross-validation folds)")


# ----------------------------------------------------------------------- a tree input
def test_a_tree_input_gives_a_text_or_a_tree_not_both(tmp_path):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    import adaptext
    from adaptext.serve import create_app
    trees = bundled_examples("tree", 40)
    adaptext.fit(trees[:30], trees[30:], model="recnn", epochs=1, out=str(tmp_path / "tree"), threads=1)
    client = TestClient(create_app(tmp_path / "tree"))
    both = client.post("/predict", json={"inputs": [{"tree": "(3 (2 a) (3 good))", "text": "x"}]})
    assert both.status_code == 422 and "give 'text' or 'tree', not both" in both.json()["detail"]
    for one in ({"tree": "(3 (2 a) (3 good))"}, {"text": "a good film"}):
        assert client.post("/predict", json={"inputs": [one]}).status_code == 200


# ----------------------------------------------------------------------- one declaration of a flag
@pytest.mark.parametrize("command", [["evaluate", "RUN"], ["auto", "--data", "x", "--out", "o"]])
def test_commands_that_read_data_take_the_contract_s_flags(command, capsys):
    """evaluate and auto declare no data or column flag of their own: they take train's, with its
    choices (--label-sep among them)."""
    from adaptext.contract import READER_KEYS
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    said = capsys.readouterr().out
    assert all(f"--{k.replace('_', '-')}" in said for k in ("format", "on_bad_line", *READER_KEYS))
    with pytest.raises(SystemExit) as exit_:
        main([*command, "--on-bad-line", "sometimes"])
    assert exit_.value.code == 2 and "invalid choice: 'sometimes'" in capsys.readouterr().err
