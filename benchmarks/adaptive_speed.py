"""Training speed of adaptive convolution (Choi et al. 2019) against Kim's CNN and against the
naive per-sample forms of both generations, in one run.

Examples per second of a full training step (forward, backward, Adam step) on one batch
shape: batch 128, lengths 50 and 300 (every text full length), at the paper's sizes (300-d
embeddings, widths 3/4/5 x 100 filters, g = 600, b = 20, n = 5). Rows:

- kim_cnn: static filters.
- ac_cnn hashed / ac_cnn full: the batched fast paths of adaptext.nn.adaptive.
- ac_cnn hashed-naive / full-naive: the same models (same weights) with every adaptive
  convolution replaced by the straightforward form: for each sample of the batch, build its
  filters one sample at a time (full: W c_b; hashed: sum_j p_ij E_D_j(i)), then one F.conv1d
  with them. The context vectors (the GRU) are computed batched in both forms: the fast paths
  are about generation + convolution.
- ac_cnn hashed-attention-only: hashed generation with the "w/o GRU" context of Table 4,
  which shows what the bidirectional GRU (g = 600) costs on its own.
- layer rows (metric layer_examples_per_s): forward + backward of the three adaptive
  convolutions alone, from a given input and context vector, fast against naive: the fast
  paths without the GRU that both forms share; and against layer-static, Kim's three static
  convolutions alone from the same input: what generating the filters costs, GRU aside.

Targets: hashed >= 0.5x kim_cnn (not reachable with the paper's GRU context, see the README); each fast path >= 5x its naive form.

    python benchmarks/adaptive_speed.py --out benchmarks/results/adaptive_speed.json
    python benchmarks/adaptive_speed.py --quick --out /tmp/adaptive_speed.json   # checks it works
    python benchmarks/adaptive_speed.py --rows kim,hashed,layer-hashed --lengths 50   # a subset
    python benchmarks/adaptive_speed.py --device cuda --out benchmarks/results/adaptive_speed_gpu.json
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent

from adaptext.data.batching import Batch  # noqa: E402
from adaptext.nn.adaptive import AdaptiveConv1d  # noqa: E402
from adaptext.registry import create_model  # noqa: E402
from common import machine, quick_note, write  # noqa: E402

PAPER = dict(embed_dim=300, filters=100, vocab=20000, batch=128, lengths=(50, 300), context_dim=600,
             pool_size=20, num_importance=5, steps=3, repeats=3, naive_steps=1)
QUICK = dict(embed_dim=32, filters=8, vocab=300, batch=8, lengths=(12, 20), context_dim=16,
             pool_size=5, num_importance=2, steps=1, repeats=2, naive_steps=1)


ROWS = ("kim", "hashed", "full", "hashed-naive", "full-naive", "hashed-attention-only", "layer-static",
        "layer-hashed", "layer-full")


class NaiveAdaptiveConv1d(AdaptiveConv1d):
    """The per-sample reference: a Python loop over the batch, each sample's filters
    materialised on their own, then an ordinary convolution."""

    def forward(self, x, mask=None, context=None):
        if context is None:
            context = self.context_of(x, mask)
        C, k = self.in_channels, self.kernel_size
        ys = []
        for b in range(x.shape[0]):
            c = context[b]
            if self.generation == "full":
                f = (self.W @ c).view(self.out_channels, C, k)                       # Eq. 5
            else:
                p = (self.P @ c).view(self.out_channels, self.num_importance)        # Eq. 6
                f = (p[:, :, None, None] * self.E[self.hash_index]).sum(1)            # Eq. 7
            ys.append(F.conv1d(x[b:b + 1], f, self.bias, padding=self.padding))
        return torch.cat(ys, 0)


def make_naive(model):
    for m in model.modules():
        if type(m) is AdaptiveConv1d:
            m.__class__ = NaiveAdaptiveConv1d
    return model


def build(name, variant, S, num_classes):
    """variant: - | hashed | full | hashed-naive | full-naive | hashed-attention-only"""
    kw = dict(num_classes=num_classes, vocab_size=S["vocab"], embed_dim=S["embed_dim"], filters=S["filters"])
    if name == "ac_cnn":
        kw.update(generation=variant.split("-")[0], context_dim=S["context_dim"], pool_size=S["pool_size"],
                  num_importance=S["num_importance"])
        if variant.endswith("attention-only"):
            kw["context"] = "attention-only"
    torch.manual_seed(0)
    model = create_model(name, **kw)
    return make_naive(model) if variant.endswith("naive") else model


def sync(device) -> None:
    """Wait for queued GPU work: a timer read before the kernels finish measures nothing."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def layer_examples_per_s(model, B, T, steps, repeats, device) -> list[float]:
    """Forward + backward of the model's three convolutions alone (widths 3/4/5), from a given
    input x [B, D, T] and, for adaptive ones, context c [B, g]: the fast path without the GRU
    (kim_cnn's static convolutions ignore c)."""
    convs = list(model.features.convs)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(B, convs[0].in_channels, T, generator=g).to(device).requires_grad_(True)
    c = (torch.randn(B, getattr(convs[0], "context_dim", 1), generator=g) * 0.1).to(device).requires_grad_(True)

    def step():
        model.zero_grad(set_to_none=True)
        x.grad = c.grad = None
        sum(conv(x, context=c).square().mean() for conv in convs).backward()

    return timed(step, B, steps, repeats, device)


def timed(step, B, steps, repeats, device) -> list[float]:
    step()                                                    # warm-up (allocations, Adam state, kernels)
    out = []
    for _ in range(repeats):
        sync(device)
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        sync(device)
        out.append(steps * B / (time.perf_counter() - t0))
    return out


def examples_per_s(model, batch, steps, repeats, device) -> list[float]:
    model.train()
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-3)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(batch), batch.labels)
        loss.backward()
        opt.step()

    return timed(step, batch.size, steps, repeats, device)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes, to check the script works")
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/adaptive_speed.json"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu", help="cpu or cuda (TF32 off: the same float32 arithmetic)")
    ap.add_argument("--steps", type=int, help="timed steps per repeat (fast forms)")
    ap.add_argument("--repeats", type=int, help="timed repeats (each gives one examples/s value)")
    ap.add_argument("--lengths", help="comma-separated text lengths (default 50,300)")
    ap.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated subset of {','.join(ROWS)}")
    args = ap.parse_args(argv)
    if args.quick and args.out == ap.get_default("out"):
        raise SystemExit("--quick is a check, not a measurement: pass --out, e.g. --out /tmp/check.json")
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    S = dict(QUICK if args.quick else PAPER)
    if args.steps:
        S["steps"] = args.steps
    if args.repeats:
        S["repeats"] = args.repeats
    num_classes = 5
    rows_wanted = args.rows.split(",")
    unknown = sorted(set(rows_wanted) - set(ROWS))
    if unknown:
        ap.error(f"unknown rows {', '.join(unknown)}; known: {', '.join(ROWS)}")
    lengths = [int(t) for t in args.lengths.split(",")] if args.lengths else S["lengths"]
    rows = []
    for T in lengths:
        g = torch.Generator().manual_seed(T)
        B = S["batch"]
        batch = Batch(index=torch.arange(B), labels=torch.randint(0, num_classes, (B,), generator=g),
                      text=torch.randint(2, S["vocab"], (B, T), generator=g),
                      lengths=torch.full((B,), T, dtype=torch.int64))
        if device.type != "cpu":
            batch = dataclasses.replace(batch, **{k: getattr(batch, k).to(device)
                                                  for k in ("index", "labels", "text", "lengths")})
        speed = {}
        for key in ROWS:
            if key not in rows_wanted:
                continue
            layer = key.startswith("layer-")
            name, variant = {"kim": ("kim_cnn", "-"), "layer-static": ("kim_cnn", "static")}.get(
                key, ("ac_cnn", key.removeprefix("layer-")))
            forms = [variant, variant + "-naive"] if layer and name == "ac_cnn" else [variant]
            for form in forms:
                model = build(name, form, S, num_classes).to(device)
                naive = form.endswith("naive")
                steps = S["naive_steps"] if naive else S["steps"]
                vals = (layer_examples_per_s(model, B, T, steps, S["repeats"], device) if layer
                        else examples_per_s(model, batch, steps, S["repeats"], device))
                del model
                mean = statistics.fmean(vals)
                speed[(layer, form)] = mean
                row = {"model": name, "variant": form, "dataset": "-",
                       "metric": "layer_examples_per_s" if layer else "train_examples_per_s",
                       "mean": round(mean, 2), "std": round(statistics.stdev(vals), 2) if len(vals) > 1 else 0.0,
                       "n": len(vals), "values": [round(v, 2) for v in vals], "batch_size": B, "length": T}
                base = (layer, form.removesuffix("-naive"))
                if naive and base in speed:
                    row.update(baseline=f"ac_cnn {base[1]}" + (" (layer)" if layer else ""),
                               ratio=round(mean / speed[base], 4), target="<= 0.2 (fast >= 5x naive)")
                    for r in rows:
                        if (r["length"], r["metric"], r["variant"]) == (T, row["metric"], base[1]):
                            r["speedup_over_naive"] = round(speed[base] / mean, 2)
                elif name == "ac_cnn" and layer and (True, "static") in speed:
                    row.update(baseline="kim_cnn static (layer)", ratio=round(mean / speed[(True, "static")], 4))
                elif name == "ac_cnn" and not layer and (False, "-") in speed:
                    row.update(baseline="kim_cnn", ratio=round(mean / speed[(False, "-")], 4))
                    if form == "hashed":
                        row["target"] = ">= 0.5"
                rows.append(row)
                print(f"T={T:4d} {row['metric']:22s} {name:8s} {form:22s} {mean:10.1f} ex/s"
                      + (f"  ratio {row['ratio']:.3f} vs {row['baseline']}" if "ratio" in row else ""), flush=True)
    notes = ("Training examples/s (forward + backward + Adam step), batch "
             f"{S['batch']}, every text full length, {S['embed_dim']}-d random embeddings over a "
             f"{S['vocab']}-word vocabulary, widths 3/4/5 x {S['filters']} filters, g = {S['context_dim']}, "
             f"b = {S['pool_size']}, n = {S['num_importance']}; {S['repeats']} repeats of {S['steps']} steps "
             f"({S['naive_steps']} for the naive forms) after one warm-up step. ac_cnn rows: ratio to kim_cnn "
             "measured in the same run. Naive rows: ratio = naive / fast path of the same generation (the "
             "fast path's speedup_over_naive is its inverse); the naive form loops over the samples, builds "
             "each sample's filters alone and convolves with F.conv1d; both forms compute the GRU context "
             "batched. layer_examples_per_s rows: the three adaptive convolutions alone (forward + backward "
             "from a given input and context), fast against naive, and the fast paths against kim_cnn's "
             "three static convolutions alone (static) from the same input. hashed-attention-only: the w/o-GRU context "
             "of Table 4." + quick_note(args.quick))
    path = write("adaptive_speed", rows, notes, args.out, where=machine(device))
    print(f"wrote {path} and {path.with_suffix('.md')}")


if __name__ == "__main__":
    main()
