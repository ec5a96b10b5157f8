"""The explain commands write real plots from trained runs (adaptive filters, attention, trees)."""
import gzip
import json
from pathlib import Path

import adaptext
from adaptext.cli import main
from adaptext.training.run import train_run

from conftest import DATA, needs_data

FAST = {"epochs": 1, "progress": False, "max_length": 40}
DEMO_TREC = Path(adaptext.__file__).parent / "resources" / "trec" / "train.txt.gz"


def _slice(tmp_path, src, name, n, header=False):
    """The first n lines (after a header) of a real data file, as a small training file; ``src``
    under the shared data, or a Path (a file the package bundles, gzipped)."""
    path = src if isinstance(src, Path) else DATA / src
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="latin-1") as f:
        lines = f.read().splitlines()
    keep = lines[: n + 1] if header else lines[:n]
    p = tmp_path / name
    p.write_text("\n".join(keep) + "\n", encoding="latin-1")
    return str(p)


def _png(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000, path


def test_explain_filters_of_an_adaptive_cnn(tmp_path, capsys):
    data = _slice(tmp_path, DEMO_TREC, "trec.txt", 600)        # the bundled demo: runs without the shared data
    common = {"data": data, "test": data, "embed_dim": 16, "filters": 10, **FAST}
    train_run({"model": "ac_cnn", "out": str(tmp_path / "ac"), "context_dim": 16, **common})
    train_run({"model": "kim_cnn", "out": str(tmp_path / "cnn"), **common})
    code = main(["explain", "filters", str(tmp_path / "ac"), "--per-class", "6", "--baseline", str(tmp_path / "cnn"),
                 "--out", str(tmp_path / "x")])
    assert code == 0
    _png(tmp_path / "x" / "filters_tsne.png")
    assert main(["explain", "filters", str(tmp_path / "cnn"), "--out", str(tmp_path / "y")]) == 2   # static model
    assert "not an adaptive" in capsys.readouterr().err
    other = tmp_path / "other.txt"
    other.write_text("pos a fine film\nneg a dull film\n")
    assert main(["explain", "filters", str(tmp_path / "ac"), "--data", str(other), "--out", str(tmp_path / "z")]) == 2
    assert "no example carries one of the run's labels" in capsys.readouterr().err


@needs_data
def test_explain_attention_of_a_pair_model(tmp_path, capsys):
    data = _slice(tmp_path, "sick/SICK_train.txt", "SICK_small.txt", 300, header=True)
    train_run({"model": "attconv", "data": data, "test": data, "out": str(tmp_path / "att"), "embed_dim": 16,
               "hidden": 16, **FAST})
    code = main(["explain", "attention", str(tmp_path / "att"), "--text", "A man is playing a guitar",
                 "--context", "A person plays an instrument", "--out", str(tmp_path / "x")])
    assert code == 0
    _png(tmp_path / "x" / "attention.png")
    _png(tmp_path / "x" / "activations.png")
    assert main(["explain", "attention", str(tmp_path / "att"), "--text", " ", "--context", "A person plays",
                 "--out", str(tmp_path / "y")]) == 2
    assert "--text is empty after tokenisation" in capsys.readouterr().err
    assert main(["explain", "attention", str(tmp_path / "att"), "--text", "A man plays", "--context", "A person plays",
                 "--context", "Someone sings", "--out", str(tmp_path / "z")]) == 2
    assert "a pair model reads one --context, not 2" in capsys.readouterr().err


@needs_data
def test_explain_tree_of_a_tag_guided_model(tmp_path):
    data = _slice(tmp_path, "sst_ptb/dev.txt", "trees.txt", 200)
    train_run({"model": "tg_htreelstm", "data": data, "test": data, "out": str(tmp_path / "tg"), "hidden": 16, **FAST})
    code = main(["explain", "tree", str(tmp_path / "tg"), "--tree", "(3 (2 a) (3 (3 (3 lovely) (2 film)) (2 .)))",
                 "--data", data, "--top", "3", "--out", str(tmp_path / "x")])
    assert code == 0
    _png(tmp_path / "x" / "tree.png")
    top = json.loads((tmp_path / "x" / "node_types.json").read_text())
    assert len(top) >= 1 and all(len(v) <= 3 for v in top.values())


@needs_data
def test_explain_tree_of_a_plain_tree_lstm_draws_its_hidden_state(tmp_path, capsys):
    data = _slice(tmp_path, "sst_ptb/dev.txt", "trees.txt", 120)
    train_run({"model": "treelstm", "data": data, "test": data, "out": str(tmp_path / "t"), "hidden": 8, **FAST})
    code = main(["explain", "tree", str(tmp_path / "t"), "--tree", "(3 (2 a) (3 (3 lovely) (2 film)))",
                 "--out", str(tmp_path / "x")])
    assert code == 0
    _png(tmp_path / "x" / "tree.png")
    capsys.readouterr()
    assert main(["explain", "tree", str(tmp_path / "t"), "--text", "a film", "--data", data,
                 "--out", str(tmp_path / "y")]) == 2
    assert "no tag-guided hypernetwork" in capsys.readouterr().err


def _demo_questions(tmp_path, n, bad_line=None):
    """The first n questions of the TREC demo bundled in the package (with a bad line put in)."""
    import gzip
    from importlib.resources import files
    lines = gzip.decompress(files("adaptext").joinpath("resources/trec/train.txt.gz").read_bytes()).decode(
        "latin-1").splitlines()[:n]
    if bad_line:
        lines.insert(5, bad_line)
    p = tmp_path / "questions.txt"
    p.write_text("\n".join(lines) + "\n", encoding="latin-1")
    return str(p)


def test_explain_filters_reads_a_fold_as_evaluate_does(tmp_path, capsys):
    """A fold-k directory is explained on its own fold's test texts, and the bad line its
    training skipped is skipped again (explain read all the data, and stopped at that line)."""
    data = _demo_questions(tmp_path, 300, bad_line="a question without its label")
    train_run({"model": "ac_cnn", "data": data, "format": "trec", "cv": 2, "on_bad_line": "skip",
               "out": str(tmp_path / "cv"), "embed_dim": 16, "filters": 10, "context_dim": 16, **FAST})
    assert main(["explain", "filters", str(tmp_path / "cv" / "fold-2"), "--per-class", "4",
                 "--out", str(tmp_path / "x")]) == 0
    _png(tmp_path / "x" / "filters_tsne.png")
    capsys.readouterr()
    assert main(["evaluate", str(tmp_path / "cv" / "fold-2")]) == 0
    assert json.loads(capsys.readouterr().out)["n"] == 150                     # one fold's texts, not 300


def test_explain_attention_of_a_text_model_refuses_a_context(tmp_path, capsys):
    data = _demo_questions(tmp_path, 200)
    train_run({"model": "attconv", "data": data, "format": "trec", "test": data, "out": str(tmp_path / "att"),
               "embed_dim": 16, "hidden": 16, **FAST})
    assert main(["explain", "attention", str(tmp_path / "att"), "--text", "Who wrote Hamlet ?",
                 "--out", str(tmp_path / "x")]) == 0
    _png(tmp_path / "x" / "attention.png")
    assert main(["explain", "attention", str(tmp_path / "att"), "--text", "Who wrote Hamlet ?",
                 "--context", "Shakespeare", "--out", str(tmp_path / "y")]) == 2
    assert "this model reads single texts and attends within the text: drop --context" in capsys.readouterr().err
