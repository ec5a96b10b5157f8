"""Where a distilled student loses to its teacher: test accuracy of kept runs (`distill_table.py
--keep`) on the test texts holding a word outside the word-level students' vocabulary (a word
never seen in training, read as <unk>) and on the rest. The teacher reads word pieces, so it
reads every word; a word-level student knows only the words of its training texts.

    K=~/.cache/adaptext/runs/distill
    python benchmarks/distill_oov.py $K/transformer-trec-seed{1,2,3} $K/bilstm-distilled-a10-trec-seed{1,2,3}

Runs whose names differ only in their ``-DATASET-seedN`` ending are one row, a value per seed. The
vocabulary that splits the texts is the first word-level run's (runs of one dataset share it).
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
    ap.add_argument("--out", default=None)
    return ap.parse_args()


def unseen_mask(clf, texts: list[str]) -> np.ndarray:
    """True where a text holds a token the run's vocabulary lacks (read as <unk>)."""
    vocab = clf.pipeline.spec.vocab
    return np.array([any(t not in vocab.stoi for t in clf.tokens(x)) for x in texts])


def main() -> None:
    a = args()
    import torch
    import adaptext
    from adaptext.data.datasets import load_named
    torch.set_num_threads(a.threads)
    runs = [Path(r) for r in a.runs]
    clfs = {r: adaptext.load(r) for r in runs}
    datasets = {clf.config.data for clf in clfs.values()}
    if len(datasets) != 1:
        raise SystemExit(f"the runs read different data ({', '.join(sorted(map(str, datasets)))}): one dataset a call")
    dataset = datasets.pop()
    test = load_named(dataset, str(common.DATA)).test
    texts, gold = [ex.text for ex in test], [ex.label for ex in test]
    words = [clf for clf in clfs.values() if clf.pipeline.spec.tokenizer.config.level == "word"]
    if not words:
        raise SystemExit("no word-level run among the runs: nothing defines the unseen words")
    unseen = unseen_mask(words[0], texts)
    values: dict = {}
    for run, clf in clfs.items():
        right = np.array([p["label"] == g for p, g in zip(clf.predict(texts, batch_size=256), gold)])
        name = SEED.sub("", run.name).removesuffix(f"-{dataset}")
        for part, mask in ((f"all {len(texts)} texts", np.ones_like(unseen)),
                           (f"the {unseen.sum()} with an unseen word", unseen),
                           (f"the {(~unseen).sum()} without", ~unseen)):
            values.setdefault((name, part), []).append(100 * right[mask].mean())
    rows = [{"model": name, "variant": part, "dataset": dataset, "split": "test", "metric": "accuracy",
             **common.stats(v)} for (name, part), v in values.items()]
    notes = (f"{int(unseen.sum())} of the {len(texts)} test texts hold a word outside the vocabulary of "
             f"{words[0].config.model} (its training texts' words), "
             f"which a word-level student reads as <unk>. Runs: {', '.join(str(r) for r in runs)}.")
    print(common.write("distill_oov", rows, notes, a.out))


if __name__ == "__main__":
    main()
