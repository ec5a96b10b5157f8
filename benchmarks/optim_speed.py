"""Training steps per second of kim_cnn on real MR batches with torch.optim's Adadelta / Adagrad
against adaptext.optim's, which update only the embedding rows a batch uses; in one
process, the same model, initial weights and batches for both, as ratios.

Rows: kim_cnn with 300-d word vectors (CNN-rand, Kim's size) and 50-d (the GloVe subset's
size, CNN-non-static), Adadelta (rho 0.95, eps 1e-6, lr 1, Kim 2014) and Adagrad (lr 0.01).
Each measurement: ``--steps`` full training steps (forward, backward, optimiser step, max-norm),
repeated ``--repeats`` times alternating the two optimisers. As a check, the same 20 steps (same
batches and dropout masks) from the same weights with both optimisers in float64: the largest
weight difference.

    python benchmarks/optim_speed.py --out benchmarks/results/optim_speed.json
"""
from __future__ import annotations

import argparse
import copy
import random
import time

import torch

import common  # noqa: E402
from adaptext.data.datasets import load_named  # noqa: E402
from adaptext.data.text import Tokenizer, Vocab  # noqa: E402
from adaptext.registry import create_model  # noqa: E402
from adaptext.optim.rows import Adadelta, Adagrad, param_groups  # noqa: E402

OPTIMIZERS = {
    "adadelta": (lambda p: torch.optim.Adadelta(p, lr=1.0, rho=0.95, eps=1e-6),
                 lambda p: Adadelta(p, lr=1.0, rho=0.95, eps=1e-6)),
    "adagrad": (lambda p: torch.optim.Adagrad(p, lr=0.01), lambda p: Adagrad(p, lr=0.01)),
}


class B:
    def __init__(self, x, n):
        self.text, self.lengths = x, n


def mr_batches(n_batches: int, batch: int = 50):
    s = load_named("mr", str(common.DATA))
    tok = Tokenizer()
    texts = [tok(e.text) for e in s.train]
    vocab = Vocab.build(texts)
    labels = sorted({e.label for e in s.train})
    pairs = list(zip(texts, (labels.index(e.label) for e in s.train)))
    random.Random(0).shuffle(pairs)
    out = []
    for i in range(n_batches):
        chunk = pairs[i * batch:(i + 1) * batch]
        ids = [torch.tensor(vocab.encode(t) or [1]) for t, _ in chunk]
        x = torch.nn.utils.rnn.pad_sequence(ids, batch_first=True)
        if x.shape[1] < 5:
            x = torch.nn.functional.pad(x, (0, 5 - x.shape[1]))
        out.append((B(x, torch.tensor([len(t) for t in ids])), torch.tensor([y for _, y in chunk])))
    return out, len(vocab)


def run(model, opt, batches, seed: int) -> float:
    torch.manual_seed(seed)                                        # the same dropout masks for both
    model.train()
    t = time.perf_counter()
    for b, y in batches:
        loss = torch.nn.functional.cross_entropy(model(b), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        model.apply_constraints()
    return len(batches) / (time.perf_counter() - t)


def float64_difference(model, make_ref, make_ours, batches) -> float:
    """The largest weight difference between the two optimisers after the same steps from the same
    weights, in float64: float32 rounding differences grow (Adagrad's first step on a row is about
    lr * sign(g), so a tiny gradient's sign decides it), and float64 shows what the arithmetic does."""
    models = [copy.deepcopy(model).double(), copy.deepcopy(model).double()]
    opts = [make_ref([p for p in models[0].parameters() if p.requires_grad]), make_ours(param_groups(models[1]))]
    for m, o in zip(models, opts):
        run(m, o, batches, 0)
    return max((p - q).abs().max().item() for p, q in zip(models[0].parameters(), models[1].parameters()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    batches, V = mr_batches(a.steps)
    rows = []
    for dim, opt_name in ((300, "adadelta"), (50, "adadelta"), (300, "adagrad")):
        torch.manual_seed(0)
        base = create_model("kim_cnn", num_classes=2, vocab_size=V, embed_dim=dim)
        models = [base, copy.deepcopy(base)]
        make_ref, make_ours = OPTIMIZERS[opt_name]
        opts = [make_ref([p for p in models[0].parameters() if p.requires_grad]), make_ours(param_groups(models[1]))]
        diff = float64_difference(base, make_ref, make_ours, batches[:20])
        run(models[0], opts[0], batches[:5], 0)                    # warm-up
        run(models[1], opts[1], batches[:5], 0)
        speed = [[], []]
        for r in range(a.repeats):
            for i in (0, 1):
                speed[i].append(run(models[i], opts[i], batches, r + 1))
        print(f"{dim}-d {opt_name}: torch {common.stats(speed[0])['mean']:.1f} steps/s, "
              f"adaptext {common.stats(speed[1])['mean']:.1f} steps/s, max |weight difference| {diff:.2e}", flush=True)
        ref, ours = common.stats(speed[0]), common.stats(speed[1])
        variant = f"{dim}-d words, vocabulary {V}"
        rows += [
            {"model": "kim_cnn", "variant": f"{variant}, torch.optim.{opt_name.capitalize()}", "dataset": "mr",
             "metric": "train_steps_per_s", **ref},
            {"model": "kim_cnn", "variant": f"{variant}, adaptext {opt_name.capitalize()} (used rows)", "dataset": "mr",
             "metric": "train_steps_per_s", **ours, "baseline": f"torch.optim.{opt_name.capitalize()}",
             "ratio": round(ours["mean"] / ref["mean"], 3)},
            {"model": "kim_cnn", "variant": f"{variant}, {opt_name}, float64, 20 steps", "dataset": "mr",
             "metric": "max_abs_weight_difference", "mean": float(f"{diff:.3g}"), "n": 1},
        ]
    common.write("optim_speed", rows,
                 f"Batches of 50 MR sentences (vocabulary of all MR sentences), {a.steps} steps per measurement, "
                 f"{a.repeats} measurements per optimiser alternating, {a.threads} threads; steps/s of "
                 "forward + backward + optimiser step + max-norm. The weight difference row: both optimisers from the "
                 "same initial weights, the same 20 batches and dropout masks, in float64 (in float32 rounding "
                 "differences grow: Adagrad's first step on a row is about lr * sign(g)).", a.out)


if __name__ == "__main__":
    main()
