"""The examples every reader yields: their kinds, their texts and where each comes from."""
from __future__ import annotations

import json

import pytest

from adaptext.data import readers as R
from adaptext.data.batching import Encoder
from adaptext.errors import BadLines, DataError
from adaptext.data.examples import (ContextsExample, ExampleKind, Location, PairExample, TextExample, TreeExample,
                                    TreePairExample, as_examples)
from adaptext.data.text import LabelMap, Tokenizer, Vocab
from adaptext.data.trees import tree_from_brackets

TREE = tree_from_brackets("(3 (2 a) (3 (2 fine) (3 film)))")
PAIR_TREE = tree_from_brackets("(2 (2 it) (2 rains))")


# ----------------------------------------------------------------------- kinds
def test_a_kind_is_its_name_in_files_and_answers_what_callers_ask():
    assert [k.value for k in ExampleKind] == ["text", "pair", "contexts", "tree", "tree_pair"]
    for kind in ExampleKind:
        assert kind == kind.value and json.dumps(kind) == f'"{kind.value}"' and f"{kind}" == kind.value
        assert ExampleKind(json.loads(json.dumps(kind))) is kind          # read back from a run or a store
    assert [k for k in ExampleKind if k.is_tree] == [ExampleKind.TREE, ExampleKind.TREE_PAIR]
    assert {k: k.second for k in ExampleKind} == {
        ExampleKind.TEXT: None, ExampleKind.PAIR: "pair", ExampleKind.CONTEXTS: "contexts",
        ExampleKind.TREE: None, ExampleKind.TREE_PAIR: "pair"}
    assert {k: k.parses_to for k in ExampleKind if k.parses_to} == {
        ExampleKind.TEXT: ExampleKind.TREE, ExampleKind.PAIR: ExampleKind.TREE_PAIR}


def test_each_example_class_is_of_its_kind():
    examples = [TextExample("a"), PairExample("a", "b"), ContextsExample("a", ("b",)), TreeExample(TREE),
                TreePairExample(TREE, PAIR_TREE)]
    assert [ex.kind for ex in examples] == list(ExampleKind)


# ----------------------------------------------------------------------- texts
@pytest.mark.parametrize("example,texts", [
    (TextExample("a fine film", "pos"), ("a fine film",)),
    (PairExample("it rains", "the sky is grey", "entailment"), ("it rains", "the sky is grey")),
    (ContextsExample("a claim", ("evidence one", "evidence two")), ("a claim", "evidence one", "evidence two")),
    (TreeExample(TREE), ("a fine film",)),
    (TreePairExample(TREE, PAIR_TREE), ("a fine film", "it rains")),
])
def test_the_texts_of_an_example_are_its_plain_texts_in_order(example, texts):
    assert example.texts() == texts


# ----------------------------------------------------------------------- locations
def test_a_location_renders_as_the_file_and_line_errors_name():
    assert str(Location("data/train.tsv", 12)) == "data/train.tsv:12"
    assert str(Location("data/SICK.txt", 3, "1234")) == "data/SICK.txt:3#pair_ID=1234"
    assert str(Location("example 3")) == "example 3"
    assert str(TextExample("a").where) == "" and TextExample("a").where.source == "<input>"


def test_a_where_given_as_a_string_is_the_location_of_that_label():
    ex = TextExample("a", "pos", "my corpus, item 7")
    assert ex.where == Location("my corpus, item 7") and ex.where.line is None
    assert TextExample("a", "pos", "x.txt:3") == TextExample("a", "pos", Location("x.txt", 3))   # where is not compared
    assert [str(x.where) for x in as_examples([("a", "pos"), ("b", "neg")])] == ["example 1", "example 2"]


@pytest.mark.parametrize("where,named", [(Location("train.txt", 3), "train.txt:3"), ("train.txt:3", "train.txt:3"),
                                         ("example 2", "example 2"), (None, "<input>")])
def test_an_error_about_an_example_names_where_it_comes_from(where, named):
    labels = LabelMap(["neg", "pos"])
    encoder = Encoder(Tokenizer(), Vocab(["<pad>", "<unk>", "a"]), labels)
    ex = TextExample("a", "odd") if where is None else TextExample("a", "odd", where)
    with pytest.raises(DataError) as e:
        encoder.encode([ex], BadLines())
    assert str(e.value) == f"{named}: label 'odd' does not occur in the training data (known: neg, pos)"


def test_a_sick_pair_keeps_its_id_in_its_location(tmp_path):
    p = tmp_path / "SICK_trial.txt"
    p.write_text("pair_ID\tsentence_A\tsentence_B\tentailment_judgment\n"
                 "17\tA man plays\tSomeone plays\tENTAILMENT\n")
    (ex,) = R.read_sick(p)
    assert ex.where == Location(str(p), 2, "17") and str(ex.where) == f"{p}:2#pair_ID=17"
