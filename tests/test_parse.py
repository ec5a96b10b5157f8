"""Tree models on plain text: the shipped bracketer (CKY over span scores), the baselines, the
parse cache, and training / predicting / evaluating tree models on files of plain texts."""
import csv
import json

import numpy as np
import pytest

import adaptext
from adaptext.cli import main
from adaptext.data.readers import read_trec_raw
from adaptext.data.trees import leaf_tree, tree_from_brackets
from adaptext.parse import MAX_WORDS, left_tree, parse_token_lists
from adaptext.parse.bracketer import cky, tree_from_splits
from adaptext.parse.spans import bracket_f1, spans_of

from conftest import BUNDLED_TREC, DATA, needs_data


def _binary_trees(i, j):
    """Every binary tree over words i..j-1, as its set of inner spans."""
    if j - i == 1:
        return [frozenset()]
    return [a | b | {(i, j)} for k in range(i + 1, j) for a in _binary_trees(i, k) for b in _binary_trees(k, j)]


@pytest.mark.parametrize("n", [2, 3, 5, 7])
def test_cky_finds_the_best_scoring_binary_tree(n):
    rng = np.random.default_rng(n)
    for _ in range(5):
        scores = rng.normal(size=(n + 1, n + 1))
        tree = tree_from_splits([f"w{k}" for k in range(n)], cky(scores[None], [n])[0])
        best = max(sum(scores[s] for s in spans) for spans in _binary_trees(0, n))
        assert sum(scores[s] for s in spans_of(tree)) == pytest.approx(best)
        assert tree.leaves() == [f"w{k}" for k in range(n)]


def test_bracket_f1_against_known_trees():
    gold = tree_from_brackets("(X (X (X (X a) (X b)) (X c)) (X d))")          # ((a b) c) d
    words = gold.leaves()
    assert bracket_f1([gold], [gold]) == bracket_f1([gold], [left_tree(words)]) == 100
    assert bracket_f1([gold], [leaf_tree(words)]) == 0                       # (b c d), (c d)
    balanced = tree_from_brackets("(X (X (X a) (X b)) (X (X c) (X d)))")
    assert bracket_f1([gold], [balanced]) == 50                              # (a b) found, (c d) not gold


def test_long_empty_and_foreign_inputs_parse_without_failing():
    long = [f"w{k % 50}" for k in range(5000)]
    long[39::40] = ["."] * len(long[39::40])
    trees = parse_token_lists([long, [], ["東京", "は", "大きい"], ["Привет", "мир", "!"]], "right-branching")
    assert trees[0].leaves() == long and trees[1].leaves() == ["<unk>"]
    assert trees[2].leaves() == ["東京", "は", "大きい"]
    spans = set(spans_of(trees[0]))
    assert (0, 40) in spans and (40, 80) in spans and (0, 80) not in spans       # a sentence a piece
    assert (40, 5000) in spans and not any(j - i > MAX_WORDS for i, j in spans if (i, j) != (0, 5000) and j != 5000)


def test_parses_are_cached_by_parser_and_tokens(monkeypatch):
    import adaptext.parse as P
    texts = [[f"w{k}", "and", f"v{k}", "."] for k in range(100)]
    first = parse_token_lists(texts, "left-branching")
    calls, parse = [], P._parse_batch
    monkeypatch.setattr(P, "_parse_batch", lambda name, s: calls.append(name) or parse(name, s))
    again = parse_token_lists(texts, "left-branching")
    assert calls == [] and [t.left for t in again] == [t.left for t in first]
    assert [t.leaves() for t in again] == texts
    other = parse_token_lists(texts, "right-branching")       # another parser is not read from that cache
    assert calls == ["right-branching"] and other[0].left != first[0].left


@needs_data
def test_the_shipped_bracketer_parses_sst_dev_far_better_than_right_branching():
    from adaptext.parse.train import read_trees
    gold = read_trees(DATA / "sst_ptb" / "dev.txt")[:300]
    parsed = parse_token_lists([t.leaves() for t in gold], "bracketer", cache=False)
    assert [t.leaves() for t in parsed] == [t.leaves() for t in gold]
    f1 = bracket_f1(gold, parsed)
    assert f1 > 75 and f1 > 3 * bracket_f1(gold, [leaf_tree(t.leaves()) for t in gold])


def _questions_csv(tmp_path, n=150):
    path = tmp_path / "questions.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["question", "type"])
        w.writerows([q.text, q.label] for q in read_trec_raw(BUNDLED_TREC)[:n])
    return path


TINY_TG = ["--embed-dim", "8", "--hidden", "6", "--tag-dim", "4", "--hyper-hidden", "5", "--hyper-input", "6",
           "--z-dim", "3", "--epochs", "1"]


def test_a_tag_guided_tree_model_trains_and_predicts_on_a_plain_csv(tmp_path, capsys):
    pytest.importorskip("nltk")
    data = _questions_csv(tmp_path)
    out = tmp_path / "tg"
    assert main(["train", "--model", "tg_htreelstm", "--data", str(data), "--text-col", "question",
                 "--label-col", "type", "--test", str(data), "--out", str(out), *TINY_TG]) == 0
    capsys.readouterr()
    config = json.loads((out / "config.json").read_text())
    assert config["text"]["parser"] == "bracketer"
    inputs = tmp_path / "in.txt"
    inputs.write_text("Who wrote Hamlet ?\n\n" + " ".join(["very"] * 5000) + "\n東京はどこですか\n")
    assert main(["predict", str(out), str(inputs)]) == 0
    lines = [json.loads(l) for l in capsys.readouterr().out.splitlines()]
    assert len(lines) == 4 and all(l["label"] for l in lines)
    assert lines[2].get("truncated") is True                  # cut at max_length like any text
    clf = adaptext.load(out)
    (ex,) = clf.as_examples(["What is the capital of Peru ?"])
    assert ex.tree.leaves() == clf.tokens("What is the capital of Peru ?")
    assert ex.tree.tags[-1] is not None                        # tagged: POS at leaves, phrase tags inside


def test_a_tree_model_evaluates_a_plain_file_and_keeps_its_parser(tmp_path, capsys):
    data = _questions_csv(tmp_path)
    out = tmp_path / "tl"
    assert main(["train", "--model", "treelstm", "--data", str(data), "--text-col", "question", "--label-col", "type",
                 "--parser", "right-branching", "--test", str(data), "--out", str(out), "--embed-dim", "8", "--hidden", "6",
                 "--epochs", "1"]) == 0
    capsys.readouterr()
    (ex,) = adaptext.load(out).as_examples(["Who is it ?"])
    assert set(spans_of(ex.tree)) == set(spans_of(leaf_tree(["who", "is", "it", "?"])))
    assert main(["evaluate", str(out), "--data", str(data)]) == 0
    assert json.loads(capsys.readouterr().out)["n"] == 150
    with pytest.raises(SystemExit):
        main(["train", "--model", "treelstm", "--data", str(data), "--parser", "cyk", "--out", str(tmp_path / "bad")])
    assert "--parser: invalid choice: 'cyk'" in capsys.readouterr().err


def test_a_tree_model_cross_validates_on_plain_pairs_and_predicts_pairs(tmp_path, capsys):
    from conftest import bundled_examples
    data = tmp_path / "pairs.csv"
    with open(data, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "pair", "label"])
        w.writerows([e.text, e.pair, e.label] for e in bundled_examples("pair", 80))
    out = tmp_path / "pairs"
    assert main(["train", "--model", "treelstm", "--data", str(data), "--pair-col", "pair", "--cv", "2",
                 "--out", str(out), "--embed-dim", "8", "--hidden", "6", "--epochs", "1"]) == 0
    capsys.readouterr()
    assert len(json.loads((out / "metrics.json").read_text())["cv"]["test_accuracy"]) == 2
    clf = adaptext.load(out / "fold-1")
    assert clf.kind == "tree_pair"
    (ex,) = clf.as_examples([{"text": "Who wrote Hamlet ?", "pair": "Shakespeare did ."}])
    assert ex.tree.leaves() == ["who", "wrote", "hamlet", "?"] and ex.pair.leaves() == ["shakespeare", "did", "."]
    assert len(clf.predict([{"text": "Who wrote Hamlet ?", "pair": "Shakespeare did ."}])) == 1


@needs_data
def test_the_bracketer_can_start_from_vectors_derived_from_the_encoder(tmp_path, monkeypatch):
    """``--vectors transformer``: every training word gets a vector of the asked size from the
    packaged MiniLM, read in the training sentences' own contexts."""
    pytest.importorskip("transformers")
    from adaptext.parse.train import read_trees, word_vectors
    monkeypatch.setenv("ADAPTEXT_CACHE", str(tmp_path))
    trees = read_trees(DATA / "sst_ptb" / "dev.txt")[:40]
    vectors = word_vectors(DATA, trees, "transformer", 16)
    words = {w.lower() for t in trees for w in t.leaves()}
    assert set(vectors) == words and all(v.shape == (16,) for v in vectors.values())
    glove = word_vectors(DATA, trees, "glove", 50)
    assert 0.8 * len(words) < len(glove) < len(words)          # GloVe misses some words; the encoder none


@needs_data
def test_the_margin_loss_is_zero_only_when_gold_wins_by_the_hamming_margin():
    import torch
    from adaptext.parse.train import gold_matrix, margin_loss, read_trees, tree_spans, valid_mask
    trees = read_trees(DATA / "sst_ptb" / "dev.txt")[:8]
    n = [len(t.leaves()) for t in trees]
    T = max(n)
    gold = torch.stack([gold_matrix(t, T) for t in trees])
    mask = valid_mask(torch.tensor(n), T)
    assert margin_loss(2 * gold - 1 + 0.01, gold, mask, n).item() == 0        # gold ahead by more than 1 a span
    zero = torch.zeros_like(gold, requires_grad=True)
    loss = margin_loss(zero, gold, mask, n)
    # with no scores, the loss is the mean count of non-gold spans in the tree CKY finds, at most n - 2
    assert 0 < loss.item() <= np.mean([k - 2 for k in n])
    loss.backward()
    assert (zero.grad[gold.bool()] <= 0).all() and zero.grad.sum() >= 0       # pushes gold spans up
    split = cky(np.random.default_rng(0).normal(size=(1, 8, 8)), [7])[0]
    assert sorted(tree_spans(split, 7)) == sorted(spans_of(tree_from_splits(list("abcdefg"), split)))


@needs_data
def test_a_bracketer_with_char_features_learns_from_trees_and_round_trips(tmp_path):
    """A few margin-loss steps with the auxiliary tagging head fit a small slice of SST trees
    better than the untrained model, and the saved model parses as the trained one does."""
    pytest.importorskip("nltk")
    import torch
    from adaptext.parse.bracketer import Bracketer, BracketerConfig
    from adaptext.parse.train import PTB_TAGS, SPECIALS, build, read_trees, silver_tags, step
    torch.manual_seed(0)
    trees = read_trees(DATA / "sst_ptb" / "dev.txt")[:24]
    cfg = BracketerConfig(embed_dim=16, suffix_dim=4, hidden=32, layers=1, mlp=32, dropout=0.0, char_dim=8)
    bracketer, counts = build(trees, {}, cfg)
    head = torch.nn.Linear(64, len(SPECIALS[:2] + PTB_TAGS))
    tagging = (head, silver_tags(trees, SPECIALS[:2] + PTB_TAGS), 0.5)
    opt = torch.optim.Adam(list(bracketer.model.parameters()) + list(head.parameters()), lr=1e-2)
    sentences = [t.leaves() for t in trees]
    before = bracket_f1(trees, bracketer.parse(sentences))
    for _ in range(40):
        bracketer.model.train()
        step(bracketer, trees, counts, opt, 0.0, "margin", tagging)
    bracketer.model.eval()
    after = bracketer.parse(sentences)
    assert bracket_f1(trees, after) > before + 20
    bracketer.save(tmp_path)
    again = Bracketer.load(tmp_path).parse(sentences)
    assert bracket_f1(after, again) > 99        # float16 weights: the same trees, up to ties


@needs_data
def test_a_bracketer_saved_before_characters_were_read_still_loads(tmp_path):
    import torch
    from adaptext.parse.bracketer import Bracketer, BracketerConfig
    from adaptext.parse.train import build, read_trees
    torch.manual_seed(0)
    trees = read_trees(DATA / "sst_ptb" / "dev.txt")[:12]
    bracketer, _ = build(trees, {}, BracketerConfig(embed_dim=8, suffix_dim=4, hidden=8, layers=2, mlp=8, char_dim=0))
    bracketer.save(tmp_path)
    meta = json.loads((tmp_path / "bracketer.json").read_text())
    del meta["config"]["char_dim"]                       # as the first shipped bracketer wrote its config
    (tmp_path / "bracketer.json").write_text(json.dumps(meta))
    loaded = Bracketer.load(tmp_path)
    assert loaded.model.chars is None
    sentences = [t.leaves() for t in trees]
    assert bracket_f1(bracketer.parse(sentences), loaded.parse(sentences)) > 99


def test_silver_trees_come_from_the_summed_scores_and_read_back_as_written(tmp_path):
    """An ensemble of one bracketer twice parses as that bracketer; the silver file reads back
    into the same trees (brackets among the words included); the sentences drawn for it keep out
    the held-out ones and the ones too short or too long."""
    from adaptext.parse import shipped_bracketer
    from adaptext.parse.silver import ensemble_parse, sentences_of, write_trees
    from adaptext.parse.train import read_trees
    texts = tmp_path / "texts.txt"
    texts.write_text("1 a quiet film ( at best ) that drags on and on .\n0 i hated it . too short\n"
                     "1 the cast is superb , the script is not ; go anyway !\n")
    held_out = {("go", "anyway", "!")}
    drawn = sentences_of([texts], held_out, 3, seed=0)
    assert sorted(map(tuple, drawn)) == [("a", "quiet", "film", "(", "at", "best", ")", "that", "drags", "on",
                                          "and", "on", "."), ("i", "hated", "it", "."),
                                         ("the", "cast", "is", "superb", ",", "the", "script", "is", "not", ";")]
    with pytest.raises(ValueError, match="only 3 sentences"):
        sentences_of([texts], held_out, 4, seed=0)
    one = shipped_bracketer()
    single = one.parse(drawn)
    assert [spans_of(t) for t in ensemble_parse([one, one], drawn)] == [spans_of(t) for t in single]
    write_trees(single, tmp_path / "silver.txt")
    again = read_trees(tmp_path / "silver.txt")
    assert [t.leaves() for t in again] == drawn and [spans_of(t) for t in again] == [spans_of(t) for t in single]


def test_a_bracketer_trained_with_silver_trees_keeps_their_repeated_words_only():
    """Every gold word enters the vocabulary; a silver word only when seen twice in all, so the
    silver trees' one-off words do not swell the shipped file."""
    from adaptext.parse.bracketer import BracketerConfig
    from adaptext.parse.train import build
    gold = [leaf_tree(["A", "rare", "film", "."])]
    silver = [leaf_tree(["a", "Twice", "seen", "."]), leaf_tree(["twice", "once", "film"])]
    cfg = BracketerConfig(embed_dim=4, suffix_dim=2, hidden=4, layers=1, mlp=4, dropout=0.0)
    bracketer, counts = build(gold, {}, cfg)
    assert {"a", "rare", "film", "."} <= set(bracketer.vocab) and "twice" not in bracketer.vocab
    bracketer, counts = build(gold, {}, cfg, silver)
    assert set(bracketer.vocab[4:]) == {"a", "rare", "film", ".", "twice"}
    assert counts["rare"] == 1 and counts["twice"] == 2 and counts["once"] == 1


def test_bad_silver_inputs_name_the_file_and_line_or_folder(tmp_path):
    """A malformed silver tree names its file and line; a teacher folder without a bracketer, and
    a text file with too few usable sentences, are named too."""
    from adaptext.errors import DataError, UsageError
    from adaptext.parse.bracketer import Bracketer
    from adaptext.parse.silver import sentences_of
    from adaptext.parse.train import read_trees
    trees = tmp_path / "silver.txt"
    trees.write_text("(X (X a) (X b))\n(X (X a) (X b)\n")
    with pytest.raises(DataError, match=r"silver\.txt:2: bad tree"):
        read_trees(trees)
    with pytest.raises(UsageError, match="no bracketer here"):
        Bracketer.load(tmp_path)
    texts = tmp_path / "texts.txt"
    texts.write_text("1 too short .\n")
    with pytest.raises(UsageError, match=r"only 0 sentences of 4-50 words in .*texts\.txt"):
        sentences_of([texts], set(), 1, seed=0)
