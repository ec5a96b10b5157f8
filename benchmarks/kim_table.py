"""Kim (2014) Table 2: CNN-rand, -static, -non-static and -multichannel on MR (10-fold CV), SST-1, SST-2 (trained
on phrases from the SST trees), SUBJ (10-fold CV) and TREC, mean and std over seeds, beside
the paper's figures; fastText (supervised, word bigrams) on the same splits as the peer row;
and kim_cnn's training throughput on SST-2 against a plain PyTorch loop over the same model.

    python benchmarks/kim_table.py --seeds 3                       # everything (a GPU helps)
    python benchmarks/kim_table.py --parts fasttext,throughput     # the CPU parts
    python benchmarks/kim_table.py --merge a.json b.json           # combine partial runs
"""
from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path

import numpy as np

import common  # noqa: E402

PAPER = {  # Kim 2014, Table 2 (accuracy %)
    "rand": {"mr": 76.1, "sst1": 45.0, "sst2": 82.7, "subj": 89.6, "trec": 91.2},
    "static": {"mr": 81.0, "sst1": 45.5, "sst2": 86.8, "subj": 93.0, "trec": 92.8},
    "non-static": {"mr": 81.5, "sst1": 48.0, "sst2": 87.2, "subj": 93.4, "trec": 93.6},
    "multichannel": {"mr": 81.1, "sst1": 47.4, "sst2": 88.1, "subj": 93.2, "trec": 92.2},
}
DATA_NAME = {"mr": "mr", "sst1": "sst1-phrases", "sst2": "sst2-phrases", "subj": "subj", "trec": "trec"}
DATASETS = ("mr", "sst1", "sst2", "subj", "trec")
PARTS = "rand,static,non-static,multichannel,fasttext,throughput"


VECTORS = {"glove": str(common.GLOVE), "transformer": "transformer"}   # --vectors: the file, or derived ones


def run_cnn(variant: str, dataset: str, seed: int, epochs: int, patience: int, accelerator: str,
            wide: bool = False, vectors: str = "glove", pca_dim: int = 0) -> tuple[float, float]:
    opts = {"model": "kim_cnn", "data": DATA_NAME[dataset], "seed": seed, "epochs": epochs, "patience": patience,
            "accelerator": accelerator, "wide": wide}
    if variant != "rand":
        opts.update(embeddings=VECTORS[vectors], embedding_mode=variant, pca_dim=pca_dim)
    t = time.perf_counter()
    m = common.train_cell(opts)
    return m["test"]["accuracy"], time.perf_counter() - t


def row_label(variant: str, a) -> str:
    """The table's variant column: the embedding mode, then what this command changed."""
    pretrained = variant != "rand"
    return variant + "".join(part for part, on in (
        (", MiniLM vectors", pretrained and a.vectors == "transformer"),
        (f", PCA {a.pca_dim}", pretrained and a.pca_dim),
        (", wide", a.wide),
        (f", {a.epochs} epochs", a.patience >= a.epochs)) if on)


# ------------------------------------------------------------------ fastText peer
def fasttext_splits(dataset: str, seed: int):
    """The same splits the CNN runs use: official (SST with phrases, TREC) or the CV folds."""
    from adaptext.data.datasets import holdout, load_named
    s = load_named(DATA_NAME[dataset], str(common.DATA))
    if s.folds:
        for tr, te in s.folds:
            train, _ = holdout([s.train[i] for i in tr])
            yield train, [s.train[i] for i in te]
    else:
        yield s.train, s.test


def run_fasttext(dataset: str, seed: int) -> tuple[float, float]:
    import fasttext
    from adaptext.data.text import Tokenizer
    tok = Tokenizer()
    accs, t0 = [], time.perf_counter()
    for train, test in fasttext_splits(dataset, seed):
        # fastText's SGD reads the file in order: MR and SUBJ are sorted by label, so unshuffled
        # the last thousands of updates see one class only
        train = random.Random(seed).sample(train, len(train))
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            for ex in train:
                f.write(f"__label__{ex.label.replace(' ', '_')} {' '.join(tok(ex.text))}\n")
        model = fasttext.train_supervised(f.name, wordNgrams=2, epoch=10, lr=0.5, dim=100, seed=seed, thread=2,
                                          verbose=0)
        Path(f.name).unlink()
        pred = [model.predict(" ".join(tok(ex.text)))[0][0][len("__label__"):] for ex in test]
        accs.append(100 * np.mean([p == ex.label.replace(" ", "_") for p, ex in zip(pred, test)]))
    return float(np.mean(accs)), time.perf_counter() - t0


# ------------------------------------------------------------------ throughput
def throughput(epochs: int = 3) -> list[dict]:
    """Examples/s of kim_cnn training on SST-2: the engine (Lightning, cached encoding, length
    buckets) against a plain PyTorch loop (DataLoader, pad to the longest in the batch,
    no buckets) over the same model, optimiser and batch size, in this process."""
    import torch
    from adaptext.data.datasets import load_named
    from adaptext.data.text import LabelMap, Tokenizer, Vocab
    from adaptext.registry import create_model
    from adaptext.optim.rows import Adadelta, param_groups

    torch.set_num_threads(2)
    s = load_named("sst2", str(common.DATA))
    tok = Tokenizer()
    vocab = Vocab.build(tok(e.text) for e in s.train)
    labels = LabelMap.from_examples(s.train)

    def plain(seed):
        torch.manual_seed(seed)
        model = create_model("kim_cnn", num_classes=2, vocab_size=len(vocab))
        opt = Adadelta(param_groups(model), lr=1.0, rho=0.95, eps=1e-6)      # the engine's optimiser
        data = [(torch.tensor(vocab.encode(tok(e.text))), labels.index[e.label]) for e in s.train]

        def collate(b):
            x = torch.nn.utils.rnn.pad_sequence([t for t, _ in b], batch_first=True)
            if x.shape[1] < 5:
                x = torch.nn.functional.pad(x, (0, 5 - x.shape[1]))
            return x, torch.tensor([len(t) for t, _ in b]), torch.tensor([y for _, y in b])
        loader = torch.utils.data.DataLoader(data, batch_size=50, shuffle=True, collate_fn=collate)

        class B:  # the model reads batch.text / batch.lengths
            def __init__(self, x, n):
                self.text, self.lengths = x, n
        n, t0 = 0, time.perf_counter()
        model.train()
        for _ in range(epochs):
            for x, lens, y in loader:
                loss = torch.nn.functional.cross_entropy(model(B(x, lens)), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                model.apply_constraints()
                n += len(y)
        return n / (time.perf_counter() - t0)

    def engine(seed):
        m = common.train_cell({"model": "kim_cnn", "data": "sst2", "epochs": epochs, "patience": epochs, "seed": seed,
                               "threads": 2})
        return m["info"]["train_examples_per_s"]
    p = [plain(s) for s in (1, 2, 3)]
    e = [engine(s) for s in (1, 2, 3)]
    base = common.stats(p)
    eng = common.stats(e)
    return [
        {"model": "kim_cnn", "variant": "plain PyTorch loop", "dataset": "sst2", "metric": "train_examples_per_s", **base},
        {"model": "kim_cnn", "variant": "adaptext engine", "dataset": "sst2", "metric": "train_examples_per_s", **eng,
         "baseline": "plain PyTorch loop", "ratio": round(eng["mean"] / base["mean"], 3)},
    ]


def add_arguments(ap):
    """This table's options (common.script_main adds --out, --merge, --note and --notes)."""
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0, help="run this one seed only (for parallel runs, then --merge)")
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--parts", default=PARTS)
    ap.add_argument("--epochs", type=int, default=25)
    ap.add_argument("--patience", type=int, default=5)
    ap.add_argument("--accelerator", default="auto")
    ap.add_argument("--wide", action="store_true",
                    help="wide convolution: windows overlapping the sentence edges, as Kim's released code pads "
                         "every sentence with zeros (rows labelled 'rand, wide')")
    ap.add_argument("--vectors", choices=sorted(VECTORS), default="glove",
                    help="static / non-static / multichannel vectors: the 50-d GloVe subset, or 384-d vectors "
                         "derived from the packaged all-MiniLM-L6-v2 (rows labelled 'MiniLM vectors')")
    ap.add_argument("--pca-dim", type=int, default=0,
                    help="keep this many principal components of the vectors (rows labelled 'PCA N')")
    ap.add_argument("--merge", nargs="*", help="combine partial result files into kim_table.json")
    ap.add_argument("--note", default="", help="with --merge: a sentence added after the slices' provenance")


def is_slice(a):
    return a.seed or a.datasets != ",".join(DATASETS) or a.parts != PARTS or a.vectors != "glove" or a.pca_dim


def table_rows(a) -> tuple[list[dict], str]:
    """The rows of the parts asked for, and their notes."""
    seeds = [a.seed] if a.seed else list(range(1, a.seeds + 1))
    notes = ("CNN-static, -non-static and -multichannel use the 50-d GloVe 6B subset in ../shared/data (the paper: 300-d word2vec), OOV words "
             "uniform(-0.25, 0.25). SST-1/SST-2 train on every distinct labelled phrase of the SST train trees "
             "(sentences from the trees), dev/test are sentences. MR and SUBJ: stratified 10-fold CV (fixed folds), "
             "10% of each training part held out as dev. Kim's settings: widths 3,4,5 x 100, dropout 0.5, max-norm 3, "
             f"Adadelta, batch 50; at most {a.epochs} epochs, early stopping on dev with patience {a.patience}, "
             "best dev epoch's weights tested. CNN-static keeps the GloVe vectors fixed; CNN-multichannel has a "
             "fixed and a fine-tuned copy, each filter applied to both. fastText: supervised, wordNgrams 2, 10 "
             "epochs, lr 0.5, dim 100, same splits (the CNN's dev part unused), each training file shuffled with "
             "the seed. Seconds: wall time of all folds of one seed. Throughput rows: "
             "3 runs of each loop, 3 epochs each, 2 CPU threads, examples/s over the training passes only. "
             "Variant 'rand, wide' (--wide): every filter also slides over windows that overlap the sentence edges "
             "(zero padding of width - 1 on both sides), as Kim's released code pads each sentence with zeros; the "
             "other rows use the paper's narrow convolution (Eq. 2). Variants ending 'N epochs' (--patience >= --epochs) "
             "follow Kim's released code: N epochs with no early stopping, the best dev epoch's weights tested. "
             "A second reference for the paper column: Kim's group's Torch reimplementation (harvardnlp/sent-conv-torch, "
             "README, Kim's settings, 25 epochs, one run per cell) reports CNN-rand MR 75.9, SST-1 42.2, SST-2 83.5, "
             "SUBJ 89.2, TREC 88.2 and CNN-non-static (300-d word2vec) SST-1 46.7 (std 1.69 over 5 runs).")
    if a.vectors == "transformer":
        notes += (" Rows labelled 'MiniLM vectors' (--vectors transformer): 384-d word vectors derived from the packaged "
                  "all-MiniLM-L6-v2 (--embeddings transformer: each word's contextual states averaged over the "
                  "training texts, a word not seen there encoded alone) instead of GloVe.")
    if a.pca_dim:
        notes += (f" Rows labelled 'PCA {a.pca_dim}' (--pca-dim): the vectors reduced to their first {a.pca_dim} "
                  "principal components over the run's vocabulary before training.")
    parts = a.parts.split(",")
    rows = []

    def keep_so_far():
        """A slice (--out) writes its file after every cell, so one stopped midway keeps its finished cells."""
        if a.out:
            common.write("kim_table", rows, notes + " INCOMPLETE: written after each cell; the slice may have "
                                                     "stopped before its other cells.", a.out)
    for variant in PAPER:
        if variant not in parts:
            continue
        for ds in a.datasets.split(","):
            accs, secs = [], []
            for seed in seeds:
                acc, sec = run_cnn(variant, ds, seed, a.epochs, a.patience, a.accelerator, a.wide, a.vectors,
                                   a.pca_dim)
                accs.append(acc); secs.append(sec)
                print(f"kim_cnn {variant} {ds} seed {seed}: {acc:.2f} ({sec:.0f}s)", flush=True)
            rows.append({"model": "kim_cnn", "variant": row_label(variant, a), "dataset": ds,
                         "split": "test" if ds not in ("mr", "subj") else "10-fold CV", "metric": "accuracy", **common.stats(accs), "paper": PAPER[variant][ds],
                         "seeds": seeds, "seconds": round(float(np.mean(secs)), 1)})
            keep_so_far()
    if "fasttext" in parts:
        for ds in a.datasets.split(","):
            accs, secs = zip(*[run_fasttext(ds, seed) for seed in seeds])
            print(f"fasttext {ds}: {np.mean(accs):.2f}", flush=True)
            rows.append({"model": "fasttext", "variant": "bigrams", "dataset": ds, "split": "test" if ds not in ("mr", "subj")
                         else "10-fold CV", "metric": "accuracy", **common.stats(accs), "seeds": seeds, "seconds": round(float(np.mean(secs)), 1)})
    if "throughput" in parts and not a.seed:      # its 3 runs per loop belong in one slice, not in each
        rows += throughput()
    return rows, notes


def main():
    # a --merge keeps the slices' own notes (each says the epochs and patience it ran with), not this command's
    common.script_main("kim_table", add_arguments, table_rows, is_slice)


if __name__ == "__main__":
    main()
