"""Readers on real lines of every upstream format, and the one-line errors of bad input."""
import gzip
import json
from functools import partial

import pytest

from adaptext.data import readers as R
from adaptext.data import tree_readers as T
from adaptext.data.datasets import holdout, load_named
from adaptext.errors import BadLines, DataError
from adaptext.data.examples import ContextsExample, PairExample, TextExample
from adaptext.data.trees import tree_from_brackets

from conftest import DATA, needs_data



@needs_data
def test_kim_files_keep_cp1252_lines_whole():
    mr = R.read_kim(DATA / "mr/rt-polarity.all")
    assert len(mr) == 10662                          # not split at U+0085
    assert mr[473].text.startswith("\u2026the maudlin way")   # 0x85 is cp1252's ellipsis
    assert {e.label for e in mr} == {"0", "1"}
    assert [e.label for e in mr[:5331]] == ["0"] * 5331  # label-sorted on disk
    assert len(R.read_kim(DATA / "subj/subj.all")) == 10000


@needs_data
def test_trec_raw_gives_coarse_and_fine_labels():
    coarse = R.read_trec_raw(DATA / "trec/raw/TREC.train")
    fine = R.read_trec_raw(DATA / "trec/raw/TREC.train", fine=True)
    assert len(coarse) == len(fine) == 5452
    assert coarse[0].label == "DESC" and fine[0].label == "DESC:manner"
    assert coarse[0].text == "How did serfdom develop in and then leave Russia ?"
    assert len({e.label for e in coarse}) == 6 and len({e.label for e in fine}) == 50


@needs_data
def test_zhang_csv_ag_news():
    ag = R.read_zhang_csv(DATA / "ag_news/test.csv")
    assert len(ag) == 7600
    assert ag[0].label == "Business"                 # class 3 named from classes.txt
    assert ag[0].text.startswith("Fears for T N pension after talks Unions representing")
    assert all("\\" not in e.text for e in ag)       # line-break escapes undone


def test_zhang_csv_gzip_quotes_and_escapes(tmp_path):
    p = tmp_path / "train.csv.gz"
    with gzip.open(p, "wt", encoding="utf-8") as f:
        f.write('"1","Title ""quoted""","first\\nsecond"\n"2","x","y"\n')
    ex = R.read_zhang_csv(p)
    assert ex[0].text == 'Title "quoted" first\nsecond' and ex[0].label == "1"


@needs_data
def test_sick_pairs_hypothesis_is_the_text():
    sick = R.read_sick(DATA / "sick/SICK_train.txt")
    assert len(sick) == 4500 and isinstance(sick[0], PairExample)
    assert sick[0].pair.startswith("A group of kids is playing in a yard and an old man")   # sentence_A, premise
    assert sick[0].text.startswith("A group of boys in a yard is playing")                 # sentence_B
    assert sick[0].label == "NEUTRAL"
    assert len(R.read_sick(DATA / "sick/SICK_test_annotated.txt")) == 4927   # CRLF file
    assert len(R.read_sick(DATA / "sick/SICK.txt")) == 9840                  # full release columns


@needs_data
def test_sst_trees_sentences_and_phrases():
    trees = T.read_sst_trees(DATA / "sst_ptb/train.txt")
    assert len(trees) == 8544
    assert trees[0].label == "positive" and trees[0].tree.leaves()[:3] == ["The", "Rock", "is"]
    assert sum(len(t.tree) for t in trees) == 318582            # every node labelled
    binary = T.read_sst_trees(DATA / "sst_ptb/train.txt", binary=True)
    assert len(binary) == 6920                                  # neutral sentences dropped (= stsa.binary.train)
    phrases = T.sst_phrases(binary)
    assert all(p.label in ("negative", "positive") for p in phrases)
    assert len(phrases) > 60000
    sentences = {e.text.lower() for e in R.read_kim(DATA / "sst2/stsa.binary.train")}
    assert " ".join(binary[5].tree.leaves()).lower() in sentences


@needs_data
def test_jsonl_long_documents_and_multilabel_hierarchy():
    imdb = R.read_jsonl(DATA / "imdb/test.jsonl.gz")
    assert len(imdb) == 25000 and {e.label for e in imdb} == {"neg", "pos"}
    splits = load_named("20news-hier", cv=0)
    labels = {e.label for e in splits.test}
    assert ("comp", "comp.sys", "comp.sys.mac.hardware") in labels
    assert ("alt.atheism",) in labels
    assert splits.multilabel and len(splits.test) == 7532


def test_fasttext_lines_and_multilabel(tmp_path):
    p = tmp_path / "ft.txt"
    p.write_text("__label__a __label__b some text\n__label__c other\n", encoding="utf-8")
    ex = R.read_fasttext(p)
    assert ex[0].label == ("a", "b") and ex[0].text == "some text" and ex[1].label == "c"


def test_nli_jsonl_skips_no_consensus(tmp_path):
    p = tmp_path / "snli.jsonl"
    rows = [{"sentence1": "A man sleeps.", "sentence2": "A person rests.", "gold_label": "entailment"},
            {"sentence1": "A dog.", "sentence2": "A cat.", "gold_label": "-"}]
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    bad = BadLines()
    ex = R.read_nli_jsonl(p, bad)
    assert len(ex) == 1 and ex[0].text == "A person rests." and ex[0].pair == "A man sleeps."
    assert bad.filtered == {"label '-'": 1} and bad.count == 0


def test_jsonl_contexts_and_generic_table(tmp_path):
    p = tmp_path / "claims.jsonl"
    p.write_text(json.dumps({"text": "claim", "contexts": ["e1", "e2"], "label": "SUPPORTS"}) + "\n")
    ex = R.read_jsonl(p, contexts_col="contexts")
    assert ex == [ContextsExample("claim", ("e1", "e2"), "SUPPORTS")]
    t = tmp_path / "d.tsv"
    t.write_text("id\tsentence\tother\ttags\n1\thello there\tx\ta|b\n", encoding="utf-8")
    ex = R.read_table(t, text_col="sentence", pair_col="other", label_col="tags", label_sep="|")
    assert ex == [PairExample("hello there", "x", ("a", "b"))]


@needs_data
def test_named_splits_dev_holdout_and_cv():
    trec = load_named("trec")
    assert len(trec.train) + len(trec.dev) == 5452 and trec.dev_from_train
    assert abs(len(trec.dev) - 545) <= 6
    assert load_named("trec").dev == trec.dev                  # fixed seed
    mr = load_named("mr")
    assert len(mr.folds) == 10 and mr.test is None
    te = sorted(i for _, t in mr.folds for i in t)
    assert te == list(range(10662))                           # every example tested once
    first = [mr.train[i].label for i in mr.folds[0][1]]
    assert 0.45 < first.count("negative") / len(first) < 0.55   # stratified despite label-sorted file
    with pytest.raises(DataError, match="missing"):
        load_named("ag_news")                                  # only the test split is present
    with pytest.raises(DataError, match="^sst3: unknown dataset; named datasets: trec-demo, mr"):
        load_named("sst3")
    with pytest.raises(DataError, match="^data/train.csv: no such file$"):   # a path, not a name
        load_named("data/train.csv")


def test_holdout_is_stratified():
    ex = [TextExample(f"t{i}", "a" if i < 90 else "b") for i in range(100)]
    rest, held = holdout(ex)
    assert len(held) == 10 and sum(e.label == "b" for e in held) == 1


# ---------------------------------------------------------------- bad input
def run_cli(capsys, *argv):
    from adaptext.cli import main
    code = main(list(argv))
    err = capsys.readouterr().err.strip()
    return code, err


TINY = ["--epochs", "1", "--filters", "4", "--embed-dim", "8", "--no-progress"]


def write(tmp_path, name, text, mode="w"):
    p = tmp_path / name
    if mode == "wb":
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return p


@pytest.mark.parametrize("case", ["csv_row", "label_col", "empty_text", "bytes", "tree", "unseen_label"])
def test_bad_input_is_one_line_naming_file_and_line(tmp_path, capsys, case):
    good = "text,label\n" + "".join(f"sentence number {i} here,{'ab'[i % 2]}\n" for i in range(30))
    if case == "csv_row":
        train = write(tmp_path, "train.csv", good + "only one field\n")
        expect = f"{train}:32: expected at least 2 fields, found 1"
    elif case == "label_col":
        train = write(tmp_path, "train.csv", "text,klass\nhello,a\n")
        expect = f"{train}:1: no label column 'label' in the header"
    elif case == "empty_text":
        train = write(tmp_path, "train.csv", good + '"   ",a\n')
        expect = f"{train}:32: empty text"
    elif case == "bytes":
        train = write(tmp_path, "train.csv", (good + "caf\xe9 au lait,a\n").encode("latin-1"), "wb")
        expect = f"{train}:32: byte 0xe9"
    elif case == "tree":
        train = write(tmp_path, "train.txt", "(3 (2 good) (2 movie))\n(1 (2 bad) (2 film)\n")
        expect = f"{train}:2: bad tree: unbalanced brackets"
    else:
        train = write(tmp_path, "train.csv", good)
        test = write(tmp_path, "test.csv", "text,label\nfine,a\nnew one,zzz\n")
        expect = f"{test}:3: label 'zzz' does not occur in the training data"
    extra = ["--test", str(test)] if case == "unseen_label" else ["--test", str(train)]
    code, err = run_cli(capsys, "train", "--data", str(train), "--out", str(tmp_path / "run"), *extra, *TINY)
    assert code == 2
    assert err.startswith("error: " + expect), err
    assert "\n" not in err and "Traceback" not in err


def test_bad_lines_skipped_are_counted(tmp_path, capsys):
    good = "text,label\n" + "".join(f"sentence number {i} here,{'ab'[i % 2]}\n" for i in range(40))
    train = write(tmp_path, "train.csv", good + "only one field\n" + '"  ",b\n')
    code, _ = run_cli(capsys, "train", "--data", str(train), "--test", str(train), "--out", str(tmp_path / "run"),
                      "--on-bad-line", "skip", *TINY)
    assert code == 0
    m = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert m["info"]["bad_lines_skipped"] == 4      # 2 bad lines, read as train and as test


@pytest.mark.parametrize("fmt", ["header", "no_header", "zhang"])
def test_malformed_csv_row_is_skipped_and_the_rest_read(tmp_path, fmt):
    """A row the csv module rejects (a quote inside a field) is reported at the line it starts on;
    the rows after it are all read, each named by its own line, also after a quoted field that
    spans two lines."""
    if fmt == "zhang":
        p = write(tmp_path, "train.csv", '"1","a question","its body"\n"2","two\nlines","x"\n'
                                         '"1","bro"ken,"y"\n"2","after it","z"\n"1","last","w"\n')
        read, first = R.read_zhang_csv, 1
    else:
        body = 'a question,1\n"two\nlines",2\nbro"ken,"y"z\nafter it,2\nlast,1\n'
        p = write(tmp_path, "train.csv", ("text,label\n" if fmt == "header" else "") + body)
        first = 2 if fmt == "header" else 1
        read = R.read_table if fmt == "header" else partial(R.read_table, header=False, text_col=0, label_col=1)
    bad = BadLines("skip")
    ex = read(p, bad)
    assert [(e.text.split()[0], e.label, str(e.where)) for e in ex] == [
        ("a", "1", f"{p}:{first}"), ("two", "2", f"{p}:{first + 1}"),
        ("after", "2", f"{p}:{first + 4}"), ("last", "1", f"{p}:{first + 5}")]
    assert bad.skipped == [f"{p}:{first + 3}: malformed CSV row (',' expected after '\"')"]
    with pytest.raises(DataError, match=rf"train.csv:{first + 3}: malformed CSV row"):
        read(p, BadLines())


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "fasttext"])
def test_undecodable_line_is_skipped_and_counted(tmp_path, fmt):
    """A line that is not UTF-8 is an error naming its line, or under skip left out while every
    other line is read with its own line number."""
    texts = ["first one", "caf\xe9 au lait", "third one", "fourth one"]
    line = {"csv": lambda t: f"{t},a", "jsonl": lambda t: json.dumps({"text": t, "label": "a"}, ensure_ascii=False),
            "fasttext": lambda t: f"__label__a {t}"}[fmt]
    head = "text,label\n" if fmt == "csv" else ""
    p = write(tmp_path, f"train.{fmt}", (head + "".join(line(t) + "\n" for t in texts)).encode("latin-1"), "wb")
    first = 2 if fmt == "csv" else 1
    with pytest.raises(DataError, match=rf"train.{fmt}:{first + 1}: byte 0xe9"):
        R.read_file(p, fmt, BadLines())
    bad = BadLines("skip")
    ex = R.read_file(p, fmt, bad)
    assert [(e.text, str(e.where)) for e in ex] == [(t, f"{p}:{first + k}") for k, t in enumerate(texts) if k != 1]
    assert bad.count == 1 and bad.skipped[0].startswith(f"{p}:{first + 1}: byte 0xe9")


def test_jsonl_text_that_is_not_a_string_is_reported(tmp_path):
    p = write(tmp_path, "d.jsonl", '{"text": "fine", "label": "a"}\n{"text": 42, "label": "b"}\n')
    with pytest.raises(DataError, match=r"d.jsonl:2: 'text' must be a string, found int"):
        R.read_jsonl(p)


def test_embeddings_with_varying_dimension(tmp_path):
    from adaptext.data.embeddings import read_vectors
    p = write(tmp_path, "vec.txt", "the 0.1 0.2 0.3\ncat 0.1 0.2\n. . . 0.5 0.6 0.7\ndog 1 x 3\nend 1 2 3\n")
    with pytest.raises(DataError, match=r"vec.txt:2: vector has 2 numbers, expected 3"):
        read_vectors(p)
    bad = BadLines("skip")
    vecs, dim = read_vectors(p, bad=bad)
    assert dim == 3 and sorted(vecs) == ["end", "the"] and vecs["end"].tolist() == [1, 2, 3]
    assert [m.split(": ", 1)[1] for m in bad.skipped] == [
        "vector has 2 numbers, expected 3 as on the lines before",
        "vector has 5 numbers, expected 3 as on the lines before",      # GloVe 840B: a word with spaces
        "vector holds a value that is not a number"]


def test_unbalanced_tree_error_names_problem():
    with pytest.raises(ValueError, match="unbalanced"):
        tree_from_brackets("(1 (2 a) (3 b)")


def test_unclosed_quote_loses_only_its_row(tmp_path):
    """A quote never closed would make the csv module read the rest of the file as one field:
    the row is reported where it starts and the lines after it are read with their own numbers."""
    p = write(tmp_path, "t.csv", 'text,label\n"unclosed,pos\nline three,neg\nline four,pos\n')
    bad = BadLines("skip")
    ex = R.read_table(p, bad)
    assert [(e.text, e.label, str(e.where)) for e in ex] == [("line three", "neg", f"{p}:3"),
                                                             ("line four", "pos", f"{p}:4")]
    assert bad.skipped == [f"{p}:2: unclosed quote: this row's quoted field runs to the end of the file"]
    with pytest.raises(DataError, match=r"t.csv:2: unclosed quote"):
        R.read_table(p)


def test_byte_order_mark_long_fields_tab_txt_and_label_separators(tmp_path):
    """Files as spreadsheets and editors write them: a UTF-8 byte-order mark is not part of the
    first column name or label; a document longer than the csv module's default field limit is
    read; a tab-separated .txt is read as TSV, not as 'label text' lines; labels split by
    --label-sep are stripped in JSONL as in CSV."""
    bom = "\ufeff"
    assert [e.label for e in R.read_file(write(tmp_path, "a.csv", bom + "text,label\nhi there,x\n"))] == ["x"]
    assert [e.label for e in R.read_file(write(tmp_path, "k.txt", bom + "pos good film\nneg bad film\n"))] == ["pos", "neg"]
    assert [e.text for e in R.read_file(write(tmp_path, "j.jsonl", bom + '{"text": "hi", "label": "x"}\n'))] == ["hi"]
    long = "word " * 40_000
    assert len(R.read_file(write(tmp_path, "long.csv", f"text,label\n{long},x\n"))[0].text) == len(long)
    tsv = write(tmp_path, "tab.txt", "text\tlabel\ngood film\tpos\nbad film\tneg\n")
    assert R.detect_format(tsv) == "tsv"
    assert [(e.text, e.label) for e in R.read_file(tsv)] == [("good film", "pos"), ("bad film", "neg")]
    ml = write(tmp_path, "m.jsonl", '{"text": "hi", "label": "a, b"}\n')
    assert R.read_file(ml, label_sep=",")[0].label == ("a", "b")
    with pytest.raises(ValueError, match="unknown encoding 'utf8x'"):
        R.read_file(ml, encoding="utf8x")


def test_rows_are_never_lost_or_invented(tmp_path):
    """Malformed rows a user meets: a row with too many fields became a made-up class, a stray quote
    also swallowed the good row after it, a JSONL label '-' vanished from any file, a quoted TSV
    field lost its quotes, and a fastText file whose first line lacked its label was read as
    'label text' lines."""
    # too many fields: an error naming the line, or skipped and counted; never the label "many"
    p = write(tmp_path, "extra.csv", "text,label\ngood film,pos\ntoo,many,fields,pos\nbad film,neg\n")
    with pytest.raises(DataError, match=r"extra.csv:3: expected 2 fields \(as the header\), found 4 \(an unquoted"):
        R.read_table(p)
    bad = BadLines("skip")
    assert [e.label for e in R.read_table(p, bad)] == ["pos", "neg"] and bad.count == 1
    # a stray quote: its own row is reported, the next good row is still read
    p = write(tmp_path, "stray.csv", 'text,label\nfine,pos\nsays "hi" then,neg\n"half "quoted,pos\nkept,neg\nlast,pos\n')
    bad = BadLines("skip")
    ex = R.read_table(p, bad)
    assert [e.where.line for e in ex] == [2, 3, 5, 6]                         # a quote inside a field is text
    assert ex[1].text == 'says "hi" then' and [s.split(": ", 1)[0] for s in bad.skipped] == [f"{p}:4"]
    p = write(tmp_path, "open.csv", 'text,label\n"an unclosed quote here ,neg\n"each scene drags , on top .",neg\nok,pos\n')
    bad = BadLines("skip")
    assert [(e.text, e.where.line) for e in R.read_table(p, bad)] == [
        ("each scene drags , on top .", 3), ("ok", 4)]                      # line 3 was swallowed before
    assert [s.split(": ", 1)[0] for s in bad.skipped] == [f"{p}:2"]
    # '-' is an ordinary label outside SNLI-style files, which are recognised by their fields
    p = write(tmp_path, "signs.jsonl", '{"text": "up", "label": "+"}\n{"text": "down", "label": "-"}\n'
                                       '{"text": "flat", "label": "0"}\n')
    assert [e.label for e in R.read_file(p)] == ["+", "-", "0"]
    nli = write(tmp_path, "snli.jsonl", '{"sentence1": "a b", "sentence2": "a", "gold_label": "-"}\n'
                                        '{"sentence1": "a b", "sentence2": "b", "gold_label": "entailment"}\n')
    bad = BadLines()
    assert R.detect_format(nli) == "nli" and [e.label for e in R.read_file(nli, bad=bad)] == ["entailment"]
    assert bad.filtered == {"label '-'": 1}
    bad = BadLines()
    assert [(e.text, e.pair, e.label) for e in R.read_file(nli, bad=bad, text_col="sentence1", pair_col="sentence2",
                                                           label_col="gold_label")] == [("a b", "b", "entailment")]
    assert bad.filtered == {"label '-'": 1}                                   # the user's columns win
    # TSV: quoted fields as pandas writes them; a line that does not parse so keeps its quotes
    p = write(tmp_path, "q.tsv", 'label\ttext\npos\t"Spirited Away" is a masterpiece\nneg\tsay "no"\n'
                                 'pos\t"He said ""hi"""\nneg\t"two\nlines"\n')
    assert [e.text for e in R.read_file(p)] == ['"Spirited Away" is a masterpiece', 'say "no"', 'He said "hi"',
                                                "two\nlines"]
    # trailing empty fields and short rows missing only unused columns are fine
    p = write(tmp_path, "trail.csv", "text,label,source\ngood film,pos,\nbad film,neg,,\nfine film,pos\n")
    assert [e.label for e in R.read_file(p)] == ["pos", "neg", "pos"]
    # a real multi-line field with a bad quote inside is one bad row, its pieces are not rows
    p = write(tmp_path, "multi.csv", 'text,label\n"first line\nsecond "bad" part",pos\nok,neg\n')
    bad = BadLines("skip")
    assert [(e.text, e.label) for e in R.read_table(p, bad)] == [("ok", "neg")] and bad.count == 1
    # a headerless Zhang CSV read as a generic one says which format it is
    p = write(tmp_path, "ag.csv", '"3","Wall St. Bears","Short-sellers are back."\n')
    with pytest.raises(DataError, match=r"no text column 'text' in the header .*: --format zhang"):
        R.read_file(p)
    # fastText is recognised from any of the first lines; the unlabelled line is reported
    p = write(tmp_path, "ft.txt", "no label here\n__label__pos good film\n__label__neg bad film\n")
    bad = BadLines("skip")
    assert R.detect_format(p) == "fasttext" and [e.label for e in R.read_file(p, bad=bad)] == ["pos", "neg"]
    assert bad.skipped == [f"{p}:1: no __label__ label at the start of the line"]


@needs_data
@pytest.mark.parametrize("name", ["sst2", "sst1"])
def test_phrase_training_reads_the_same_dev_and_test_sentences(name):
    """``--data sst2-phrases`` trains on every labelled phrase of the training trees, and is
    judged on the very dev and test sentences that ``--data sst2`` is."""
    from adaptext.data.datasets import load_named
    sentences, phrases = load_named(name), load_named(f"{name}-phrases")
    for split in ("dev", "test"):
        a, b = getattr(sentences, split), getattr(phrases, split)
        assert [(e.text, e.label) for e in a] == [(e.text, e.label) for e in b]
    assert len(phrases.train) > 5 * len(sentences.train)
    assert {e.label for e in phrases.train} == {e.label for e in sentences.train}
