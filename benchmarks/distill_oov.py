"""Where a distilled student loses to its teacher: test accuracy of kept runs (`distill_table.py
--keep`) on the test texts holding a word outside the word-level students' vocabulary (a word
never seen in training, read as <unk>) and on the rest. The teacher reads word pieces, so it
reads every word; a word-level student knows only the words of its training texts.

    K=~/.cache/adaptext/runs/distill
    python benchmarks/distill_oov.py $K/transformer-trec-seed{1,2,3} $K/bilstm-distilled-a10-trec-seed{1,2,3}

Runs whose names differ only in their ``-DATASET-seedN`` ending are one row, a value per seed. The
vocabulary that splits the texts is the first word-level run's (runs of one dataset share it).

``--neighbours VECTORS`` (a GloVe file) adds a row per word-level run whose unseen words are each
replaced by the run's training word nearest to it in those vectors (cosine), as a student that
borrowed a known word's meaning for an unknown one would read them.
"""
from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np

import common  # noqa: E402

SEED = re.compile(r"-seed(\d+)$")


def args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="kept run directories (teacher and students, any seeds)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--split", default="test", choices=("dev", "test"))
    ap.add_argument("--neighbours", metavar="VECTORS", help="also read each unseen word as its nearest training "
                                                         "word in these vectors")
    ap.add_argument("--out", default=None)
    return ap.parse_args()


def unseen_mask(clf, texts: list[str]) -> np.ndarray:
    """True where a text holds a token the run's vocabulary lacks (read as <unk>)."""
    vocab = clf.pipeline.spec.vocab
    return np.array([any(t not in vocab.stoi for t in clf.tokens(x)) for x in texts])


def nearest_known(clf, vectors: dict):
    """A text's tokens with each one the run's vocabulary lacks (and ``vectors`` has) replaced by
    the vocabulary word nearest to it there (cosine), joined by spaces."""
    vocab = clf.pipeline.spec.vocab
    known = [w for w in vocab.itos[2:] if w in vectors]
    table = np.stack([vectors[w] for w in known])
    table /= np.linalg.norm(table, axis=1, keepdims=True)

    def swap(word: str) -> str:
        if word in vocab.stoi or word not in vectors:
            return word
        return known[int(np.argmax(table @ vectors[word]))]
    return lambda text: " ".join(map(swap, clf.tokens(text)))


def main() -> None:
    a = args()
    import torch
    import adaptext
    from adaptext.data.datasets import load_named
    from adaptext.data.embeddings import read_vectors
    torch.set_num_threads(a.threads)
    runs = [Path(r) for r in a.runs]
    clfs = {r: adaptext.load(r) for r in runs}
    datasets = {clf.config.data for clf in clfs.values()}
    if len(datasets) != 1:
        raise SystemExit(f"the runs read different data ({', '.join(sorted(map(str, datasets)))}): one dataset a call")
    dataset = datasets.pop()
    test = getattr(load_named(dataset, str(common.DATA)), a.split)
    texts, gold = [ex.text for ex in test], [ex.label for ex in test]
    words = [clf for clf in clfs.values() if clf.pipeline.spec.tokenizer.config.level == "word"]
    if not words:
        raise SystemExit("no word-level run among the runs: nothing defines the unseen words")
    unseen = unseen_mask(words[0], texts)
    vectors = read_vectors(a.neighbours)[0] if a.neighbours else None
    values: dict = {}
    for clf, name, read in readers(clfs, dataset, vectors):
        right = np.array([p["label"] == g for p, g in zip(clf.predict(list(map(read, texts)), batch_size=256), gold)])
        for part, mask in ((f"all {len(texts)} texts", np.ones_like(unseen)),
                           (f"the {unseen.sum()} with an unseen word", unseen),
                           (f"the {(~unseen).sum()} without", ~unseen)):
            values.setdefault((name, part), []).append(100 * right[mask].mean())
    rows = [{"model": name, "variant": part, "dataset": dataset, "split": a.split, "metric": "accuracy",
             **common.stats(v)} for (name, part), v in values.items()]
    notes = (f"{int(unseen.sum())} of the {len(texts)} {a.split} texts hold a word outside the vocabulary of "
             f"{words[0].config.model} (its training texts' words), "
             f"which a word-level student reads as <unk>. Runs: {', '.join(str(r) for r in runs)}." +
             (f" Rows ending 'nearest known word': each unseen word the vectors have ({a.neighbours}) read as the "
              f"run's training word nearest to it there (cosine)." if a.neighbours else ""))
    print(common.write("distill_oov", rows, notes, a.out))


def readers(clfs: dict, dataset: str, vectors: dict | None):
    """(classifier, row name, how it reads a text) of each run, and with ``vectors`` of each
    word-level run once more, reading unseen words as their nearest known ones."""
    for run, clf in clfs.items():
        name = SEED.sub("", run.name).removesuffix(f"-{dataset}")
        yield clf, name, lambda text: text
        if vectors is not None and clf.pipeline.spec.tokenizer.config.level == "word":
            yield clf, f"{name}, nearest known word", nearest_known(clf, vectors)


if __name__ == "__main__":
    main()
