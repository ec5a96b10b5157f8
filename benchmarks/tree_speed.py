"""Batched tree engine against the recursive reference: sentences/s on real SST dev trees.

For ``treelstm`` and ``tg_htreelstm`` (paper sizes: hidden 150, hyper 50, 300-d random word
vectors, batch 50), in the same run and on the same batches:

- training: forward + backward over every labelled node (SST phrase-level loss) + AdaGrad step;
- inference: no-grad forward to the root logits;

once with the level-by-level engine (``adaptext.nn.tree``) and once with the one-node-at-a-time
recursive reference (``adaptext.nn.tree_reference``) computing the same function with the same
parameters. Speed rows carry ``baseline`` (the recursive row) and ``ratio``.

    python benchmarks/tree_speed.py --out benchmarks/results/tree_speed.json
    python benchmarks/tree_speed.py --quick      # a tiny run to check the script works
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent

from common import DATA, stats, write  # noqa: E402

from adaptext.data.batching import Collator, Encoder  # noqa: E402
from adaptext.data.tree_readers import read_sst_trees  # noqa: E402
from adaptext.data.tags import PhraseLabeller, get_tagger, tag_examples  # noqa: E402
from adaptext.data.text import LabelMap, Tokenizer, Vocab  # noqa: E402
from adaptext.nn.tree_reference import recursive_encode  # noqa: E402
from adaptext.registry import create_model  # noqa: E402

MODELS = ("treelstm", "tg_htreelstm")


def reference_node_logits(model, tree):
    """The model's node logits with its encoder replaced by the recursive reference."""
    x = model.drop(model.embedding(tree.words))
    t = model.drop(model.tag_embedding(tree.tags)) if model.hyper else None
    return model.head(recursive_encode(model.encoder, x, t, tree)["h"])


def node_loss(node_logits, tree):
    keep = tree.node_labels >= 0
    return F.cross_entropy(node_logits[keep], tree.node_labels[keep])


def fresh(b):
    """Drop the engine's cached index plan so every pass pays for it, as a new batch does."""
    b.tree.__dict__.pop("_level_plan", None)
    return b


def train_pass(model, batches, recursive: bool) -> float:
    opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
    model.train()
    t0 = time.perf_counter()
    for b in map(fresh, batches):
        opt.zero_grad()
        logits = reference_node_logits(model, b.tree) if recursive else model(b)["node_logits"]
        node_loss(logits, b.tree).backward()
        opt.step()
    return time.perf_counter() - t0


def infer_pass(model, batches, recursive: bool) -> float:
    model.eval()
    t0 = time.perf_counter()
    with torch.no_grad():
        for b in map(fresh, batches):
            if recursive:
                reference_node_logits(model, b.tree)[b.tree.roots]
            else:
                model(b)
    return time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default=str(DATA))
    ap.add_argument("--quick", action="store_true", help="a few batches only, to check the script runs")
    ap.add_argument("--sentences", type=int, default=0, help="dev sentences for the batched passes (0: all)")
    ap.add_argument("--recursive-sentences", type=int, default=200,
                    help="sentences (whole batches) for the slow recursive passes; rates are per sentence")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=50)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "tree_speed.json"))
    args = ap.parse_args(argv)
    if args.quick and args.out == ap.get_default("out"):
        raise SystemExit("--quick is a check, not a measurement: pass --out, e.g. --out /tmp/check.json")
    torch.set_num_threads(2)
    if args.quick:
        args.sentences, args.recursive_sentences, args.repeats = 100, 50, 1

    data = Path(args.data_dir)
    examples = read_sst_trees(data / "sst_ptb" / "dev.txt")
    examples = tag_examples(examples, get_tagger("nltk"), PhraseLabeller.load())
    tok = Tokenizer(level="word")
    vocab = Vocab.build([[w.lower() for w in ex.tree.leaves()] for ex in examples])
    tags = Vocab(sorted({t for ex in examples for t in ex.tree.tags}))
    labels = LabelMap.from_examples(examples)
    items = Encoder(tok, vocab, labels, tags).encode(examples)
    collate = Collator(len(labels))
    bs = args.batch_size

    def batches(n):
        chosen = items[:n] if n else items
        return [collate(chosen[s:s + bs]) for s in range(0, len(chosen), bs)]

    fast_batches = batches(args.sentences)
    # the recursive passes take whole batches spread evenly over the batched passes' batches,
    # so both see the same sentence lengths and the same optimizer steps per sentence
    n_slow_batches = max(1, min(len(fast_batches), round(args.recursive_sentences / bs)))
    step = len(fast_batches) / n_slow_batches
    slow_batches = [fast_batches[int(i * step)] for i in range(n_slow_batches)]
    n_fast = sum(b.size for b in fast_batches)
    n_slow = sum(b.size for b in slow_batches)
    rows = []
    for name in MODELS:
        torch.manual_seed(0)
        model = create_model(name, num_classes=len(labels), vocab_size=len(vocab), tag_vocab_size=len(tags))
        train_pass(model, fast_batches[:1], False)                  # warm-up
        rates = {}
        for phase, fn in (("train", train_pass), ("inference", infer_pass)):
            for variant, bl, n in (("batched", fast_batches, n_fast), ("recursive", slow_batches, n_slow)):
                vals = [n / fn(model, bl, variant == "recursive") for _ in range(args.repeats)]
                rates[(phase, variant)] = vals
                print(f"{name:13s} {phase:9s} {variant:9s} {statistics.mean(vals):9.1f} sentences/s", flush=True)
        for phase in ("train", "inference"):
            base = statistics.mean(rates[(phase, "recursive")])
            for variant in ("batched", "recursive"):
                st = stats(rates[(phase, variant)])
                rows.append({"model": name, "variant": variant, "dataset": "sst_ptb dev", "split": "dev",
                             "metric": f"{phase}_sentences_per_s", **st, "baseline": f"{name} recursive",
                             "ratio": round(st["mean"] / base, 2)})

    notes = (f"batched passes over {n_fast} SST dev sentences, recursive passes over {n_slow} of them "
             f"(whole batches spread evenly; rates are per sentence); batch {bs}; paper sizes (hidden 150, hyper "
             "hidden 50, hyper input 100, tags 50, 300-d random word vectors); training = forward + backward of the "
             "loss over every labelled node + AdaGrad step; tags from the NLTK tagger and the shipped phrase "
             "labeller (tagging time not counted)" + ("; --quick: a smoke run, not a measurement" if args.quick else ""))
    path = write("tree_speed", rows, notes, args.out)
    print(path.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
