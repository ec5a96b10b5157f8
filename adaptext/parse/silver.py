"""Silver trees for training the bracketer: an ensemble of trained bracketers (their span scores
summed, one CKY) parses sentences of unlabelled text, and a single bracketer trained on the gold
SST trees plus these trees (``python -m adaptext.parse.train --silver FILE``) learns the
ensemble's better trees at one model's parsing speed: uptraining (Petrov et al. 2010).

    python -m adaptext.parse.silver --teachers A B C --texts ../shared/data/imdb/train.jsonl.gz --out silver.txt

Sentences of the SST dev and test trees are left out, so the bracketer's selection and its test
never see a sentence it was trained on.
"""
from __future__ import annotations

import argparse
import random
from pathlib import Path

from ..errors import UsageError
from ..data.readers import stream_file
from ..data.text import Tokenizer
from . import pieces
from .bracketer import Bracketer, parse_batched
from .train import read_trees, renamed_words

# words that would read as brackets in the tree file, written as the SST trees write them
ESCAPED = {"(": "-LRB-", ")": "-RRB-"}


def sentences_of(paths, exclude: set, count: int, seed: int, shortest: int = 4, longest: int = 50) -> list[list[str]]:
    """``count`` sentences drawn at random from the texts of ``paths`` (any format the package
    reads; a tree file's sentences too), tokenised as runs tokenise, cased (the tagging head's
    silver tags read case), each ``shortest``..``longest`` words and not in ``exclude``
    (lower-cased token tuples)."""
    tokenize, seen, found = Tokenizer(lower=False), set(), []
    for path in paths:
        for example in stream_file(path):
            for s in pieces(tokenize(example.text)):
                key = tuple(w.lower() for w in s)
                if shortest <= len(s) <= longest and key not in exclude and key not in seen:
                    seen.add(key)
                    found.append(s)
    if len(found) < count:
        raise UsageError(f"only {len(found)} sentences of {shortest}-{longest} words in {', '.join(map(str, paths))}")
    return random.Random(seed).sample(found, count)


def ensemble_parse(members: list[Bracketer], sentences: list[list[str]]) -> list:
    """The trees whose spans score best under the members' summed span scores."""
    def scores(chunk):
        return sum(m.scores(chunk) for m in members)
    return parse_batched(scores, sentences)


def write_trees(trees, path) -> None:
    """One bracketed tree per line, in the SST trees' form (every node labelled X)."""
    Path(path).write_text("".join(renamed_words(t, ESCAPED).to_ptb() + "\n" for t in trees))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--teachers", nargs="+", required=True, help="folders of trained bracketers")
    ap.add_argument("--texts", nargs="+", required=True, help="files of unlabelled (or labelled) texts")
    ap.add_argument("--sst", default=str(Path(__file__).resolve().parents[2].parent / "shared" / "data" / "sst_ptb"),
                    help="the SST trees folder whose dev and test sentences are left out")
    ap.add_argument("--sentences", type=int, default=60_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    members = [Bracketer.load(folder) for folder in a.teachers]     # a wrong folder fails before the reading
    held_out = {tuple(w.lower() for w in t.leaves())
                for split in ("dev", "test") for t in read_trees(Path(a.sst) / f"{split}.txt")}
    sentences = sentences_of(a.texts, held_out, a.sentences, a.seed)
    write_trees(ensemble_parse(members, sentences), a.out)
    print(f"{len(sentences)} silver trees from {len(members)} bracketers written to {a.out}")


if __name__ == "__main__":
    main()
