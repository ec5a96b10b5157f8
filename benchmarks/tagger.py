"""Accuracy of the tags the tag-guided tree models read: NLTK's POS tagger and the shipped
phrase labeller, on held-out Penn Treebank sample sentences (wsj_0180-0199; the labeller
was learned from wsj_0001-0179).

    python benchmarks/tagger.py
"""
from __future__ import annotations


import common  # noqa: E402


def main():
    from adaptext.data.tags import evaluate_on_treebank
    r = evaluate_on_treebank(common.DATA / "ptb_sample" / "treebank.zip")
    rows = [
        {"model": "nltk averaged perceptron", "variant": "POS", "dataset": "ptb_sample wsj_0180-0199", "split": "test",
         "metric": "accuracy", "mean": round(r["tagger"], 2), "n": 1, "tokens": r["tokens"]},
        {"model": "phrase labeller", "variant": "gold children tags", "dataset": "ptb_sample wsj_0180-0199",
         "split": "test", "metric": "accuracy", "mean": round(r["labeller_gold_children_right_first"], 2), "n": 1},
        {"model": "phrase labeller", "variant": "predicted POS tags", "dataset": "ptb_sample wsj_0180-0199",
         "split": "test", "metric": "accuracy", "mean": round(r["labeller_end_to_end"], 2), "n": 1},
        {"model": "most frequent phrase tag", "variant": "-", "dataset": "ptb_sample wsj_0180-0199", "split": "test",
         "metric": "accuracy", "mean": round(r["majority_baseline"], 2), "n": 1},
    ]
    common.write("tagger", rows, f"{r['test_trees']} held-out trees, {r['tokens']} tokens, {r['inner_nodes']} inner "
                 "nodes of the binarised trees (-NONE- and function tags removed). NLTK's tagger was probably trained "
                 "on WSJ text, so its figure may be optimistic for other text.")


if __name__ == "__main__":
    main()
