"""What DenseCNN's fixed input length costs, with and without adaptive convolution, and what
stopping at the batch's longest text saves.

DenseCNN reads every text padded to 300 words, so on sentence benchmarks most positions are
padding, and in ``ac_densecnn`` each block's context GRUs (g = 600) read it all. DenseCNN now
stops at the batch's longest text (``DenseCNN.trim_padding``; the fixed length still truncates
long texts; the same logits, tests/test_adaptive.py). Rows, training examples/s (forward +
backward + Adam step) at the paper's sizes (300-d embeddings, 7 blocks x 75 filters, g = 600,
b = 20, n = 5), batch 64 with the lengths of real TREC training questions drawn at random (no
length bucketing, so each batch holds its longest question), each model over all 300
positions (baseline) and stopping at the longest text (the default).

    python benchmarks/padding_speed.py
    python benchmarks/padding_speed.py --quick --out /tmp/padding_speed.json   # checks it works
"""
from __future__ import annotations

import statistics
import time

import torch
import torch.nn.functional as F

from common import DATA, quick_note, speed_args, stats, write  # noqa: E402

from adaptext.data.batching import Batch  # noqa: E402
from adaptext.data.readers import read_trec_raw  # noqa: E402
from adaptext.data.text import Tokenizer  # noqa: E402
from adaptext.models.densecnn import DenseCNN  # noqa: E402
from adaptext.registry import create_model  # noqa: E402

PAPER = dict(embed_dim=300, filters=75, blocks=7, fixed_length=300, batch=64, steps=3, repeats=3)
QUICK = dict(embed_dim=16, filters=6, blocks=3, fixed_length=60, batch=8, steps=1, repeats=2,
             context_dim=16, pool_size=4, num_importance=2)


def batches(S, count, vocab=5000):
    tok = Tokenizer(level="word", lower=True)
    lengths = torch.tensor([min(len(tok(ex.text)), S["fixed_length"])
                            for ex in read_trec_raw(DATA / "trec/raw/TREC.train")])
    g = torch.Generator().manual_seed(0)
    out = []
    T = S["fixed_length"]
    for _ in range(count):
        L = lengths[torch.randint(0, len(lengths), (S["batch"],), generator=g)].clamp_min(1)
        ids = torch.randint(2, vocab, (S["batch"], T), generator=g) * (torch.arange(T)[None] < L[:, None])
        out.append(Batch(index=torch.arange(S["batch"]), labels=torch.randint(0, 6, (S["batch"],), generator=g),
                         text=ids, lengths=L))
    return out


def examples_per_s(model, data, steps, repeats) -> list[float]:
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model.train()

    def step(b):
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(b), b.labels).backward()
        opt.step()

    step(data[0])                                      # warm-up
    vals = []
    for r in range(repeats):
        t0 = time.perf_counter()
        for s in range(steps):
            step(data[(r * steps + s) % len(data)])
        vals.append(steps * data[0].size / (time.perf_counter() - t0))
    return vals


def main() -> None:
    a = speed_args(__doc__)
    S = QUICK if a.quick else PAPER
    base = {k: S[k] for k in ("embed_dim", "filters", "blocks", "fixed_length")}
    adaptive = {"generation": "hashed", **{k: S[k] for k in ("context_dim", "pool_size", "num_importance") if k in S}}
    data = batches(S, S["steps"] * S["repeats"])
    rows, means = [], {}
    for name in ("ac_densecnn", "densecnn"):
        for trim, label in ((False, f"all {S['fixed_length']} positions"), (True, "stops at the longest text")):
            DenseCNN.trim_padding = trim
            torch.manual_seed(0)
            model = create_model(name, num_classes=6, vocab_size=5000, **base,
                                 **(adaptive if name == "ac_densecnn" else {}))
            vals = examples_per_s(model, data, S["steps"], S["repeats"])
            means[trim] = statistics.fmean(vals)
            row = {"model": name, "variant": ("hashed, " if name == "ac_densecnn" else "") + label,
                   "dataset": "trec lengths", "metric": "train_examples_per_s", **stats(vals)}
            if trim:
                row.update(baseline=f"{name} over all {S['fixed_length']} positions",
                           ratio=round(means[True] / means[False], 3))
            rows.append(row)
            print(f"{name:12s} {row['variant']:34s} {row['mean']:9.1f} ex/s"
                  + (f"  ratio {row['ratio']}" if trim else ""), flush=True)
    DenseCNN.trim_padding = True
    mean_len = float(torch.cat([b.lengths for b in data]).float().mean())
    write("padding_speed", rows,
          f"Batch {S['batch']} of {S['fixed_length']} positions holding TREC training questions drawn at random "
          f"(mean length {mean_len:.1f} words); {S['repeats']} repeats of {S['steps']} training steps after one "
          "warm-up, examples/s per repeat; ratios against the same model over all positions, in the same run."
          + quick_note(a.quick), a.out)


if __name__ == "__main__":
    main()
