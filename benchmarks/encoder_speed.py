"""Speed and memory of the comparison encoders against their usual alternatives:

- ``qrnn`` (one layer, window 2; fo-pooling by the default scan, a loop over time steps on
  CPU) and ``qrnn_parallel`` (the same with the Hillis-Steele prefix scan) vs
  ``torch.nn.LSTM`` of the same width;
- ``lightconv`` and ``dynamicconv`` blocks (GLU input map, convolution of width 31 with 8
  heads, output map, residual + LayerNorm) vs a multi-head self-attention block
  (``nn.MultiheadAttention``, 8 heads, the same residual + LayerNorm);

at lengths 64, 256, 1024 and 4096 with the same number of tokens per batch (so a linear-cost
layer keeps a constant token rate and a quadratic one slows down as texts get longer).
Training = forward + backward of a squared-output loss; inference = forward under
``torch.inference_mode``; examples/s = batch size / the median step time. One run per
cell; ratios are this row's value over the baseline's, measured in the same run. Run it
on an otherwise idle machine: with 2 threads on 2 busy cores every parallel op waits for
a time slice (seen here: an 8 ms elementwise multiply that takes 0.2 ms on 1 thread).

Peak memory is the resident set size (RSS) as the kernel counts it: each cell runs in a
fresh process, which builds the layer and its input and runs one warm-up step; then the
RSS high-water mark is reset (``/proc/self/clear_refs`` = 5) and the cell's peak is
VmHWM after one more step minus VmRSS just before it (``/proc/self/status``). It counts
everything the step allocates (activations, saved tensors, gradients, workspaces,
allocator overhead), not torch's own accounting.

    python benchmarks/encoder_speed.py                 # the full table (tens of minutes on 2 cores)
    python benchmarks/encoder_speed.py --quick --out /tmp/encoder_speed_quick.json
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import multiprocessing as mp
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
THREADS = 2
PAIRS = [("qrnn", "lstm"), ("qrnn_parallel", "lstm"), ("lightconv", "mha"), ("dynamicconv", "mha")]
BASELINES = ("lstm", "mha")


# ------------------------------------------------------------------ the layers measured
def build(name: str, dim: int, heads: int, kernel: int):
    import torch
    from torch import nn

    from adaptext.nn.lightconv import LightConvBlock
    from adaptext.nn.qrnn import QRNN

    class LSTM(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(dim, dim, batch_first=True)

        def forward(self, x, mask):
            return self.rnn(x)[0]

    class QRNNLayer(nn.Module):
        def __init__(self, scan="auto"):
            super().__init__()
            self.qrnn = QRNN(dim, dim, layers=1, window=2, scan=scan)

        def forward(self, x, mask):
            return self.qrnn(x, mask)

    class AttentionBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.att = nn.MultiheadAttention(dim, heads, batch_first=True)
            self.norm = nn.LayerNorm(dim)

        def forward(self, x, mask):
            y, _ = self.att(x, x, x, key_padding_mask=~mask, need_weights=False)
            return self.norm(x + y)

    class ConvBlock(nn.Module):
        def __init__(self, dynamic):
            super().__init__()
            self.block = LightConvBlock(dim, kernel, heads, dynamic=dynamic, ffn_dim=0, dropout=0.0)

        def forward(self, x, mask):
            return self.block(x, mask)

    torch.manual_seed(0)
    return {"qrnn": QRNNLayer, "qrnn_parallel": lambda: QRNNLayer("parallel"), "lstm": LSTM, "mha": AttentionBlock,
            "lightconv": lambda: ConvBlock(False), "dynamicconv": lambda: ConvBlock(True)}[name]()


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise OSError(f"no {field} in /proc/self/status")


def _reset_peak() -> bool:
    """Reset the process's RSS high-water mark (VmHWM; Linux >= 4.0). False if not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def measure(task: dict) -> dict:
    """One cell in a fresh process: peak RSS of one step after a warm-up step, then examples/s."""
    import torch
    torch.set_num_threads(THREADS)
    name, mode, L, B = task["name"], task["mode"], task["length"], task["batch"]
    model = build(name, task["dim"], task["heads"], task["kernel"])
    x = torch.randn(B, L, task["dim"])
    mask = torch.ones(B, L, dtype=torch.bool)

    def step(x, mask):
        if mode == "train":
            model.zero_grad(set_to_none=True)
            model(x, mask).pow(2).mean().backward()
        else:
            with torch.inference_mode():
                model(x, mask)

    model.eval()                      # none of the measured layers has dropout; eval for both modes
    step(x, mask)                     # warm-up: one-time library set-up, kernels chosen for these shapes
    if not _reset_peak():
        raise SystemExit("cannot reset VmHWM (/proc/self/clear_refs); peak memory would be wrong")
    before = _status_kib("VmRSS")
    step(x, mask)
    peak = max(0, _status_kib("VmHWM") - before) * 1024
    times = []
    while sum(times) < task["min_time"] or len(times) < task["min_reps"]:
        start = time.perf_counter()
        step(x, mask)
        times.append(time.perf_counter() - start)
    # the median step: a shared machine's occasional stall does not set the rate
    median = statistics.median(times)
    return {**task, "examples_per_s": B / median, "peak_mib": peak / 2 ** 20, "reps": len(times)}


# ------------------------------------------------------------------ result files
def _commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "adaptext", "benchmarks/encoder_speed.py"],
                               cwd=ROOT, capture_output=True, text=True).stdout.strip()
        return head + ("-dirty" if dirty else "")
    except OSError:
        return "unknown"


def _machine() -> str:
    import torch
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
    except (ValueError, OSError):
        mem = float("nan")
    return (f"{os.cpu_count()} cores, {mem:.0f} GiB, CPU only ({platform.machine()}, torch {torch.__version__}, "
            f"threads {THREADS})")


def _rows(results: list[dict]) -> list[dict]:
    cell = {(r["name"], r["mode"], r["length"]): r for r in results}
    rows = []
    for r in results:
        base = dict(PAIRS).get(r["name"])
        for metric, key in (("examples_per_s", "examples_per_s"), ("peak_rss_mib", "peak_mib")):
            v = round(r[key], 3)
            row = {"model": r["name"], "variant": f"L={r['length']}", "dataset": "-",
                   "metric": f"{r['mode']}_{metric}", "mean": v, "std": 0.0, "n": 1, "values": [v],
                   "length": r["length"], "batch_size": r["batch"], "dim": r["dim"]}
            if base is not None and (base, r["mode"], r["length"]) in cell:
                b = cell[(base, r["mode"], r["length"])][key]
                row["baseline"] = base
                row["ratio"] = round(r[key] / b, 3) if b > 0 else None
            rows.append(row)
    return rows


def _markdown(doc: dict) -> str:
    by = {(r["model"], r["metric"], r["length"]): r for r in doc["rows"]}
    lengths = sorted({r["length"] for r in doc["rows"]})
    metrics = [("train_examples_per_s", "train ex/s"), ("infer_examples_per_s", "infer ex/s"),
               ("train_peak_rss_mib", "train peak MiB"), ("infer_peak_rss_mib", "infer peak MiB")]
    out = [f"# {doc['benchmark']}", "", f"command: `{doc['command']}`  ", f"commit: {doc['commit']}  ",
           f"date: {doc['date']}  ", f"machine: {doc['machine']}", ""]
    from adaptext.tables import markdown_table
    header = ["model", "baseline", "length", *(h for _, m in metrics for h in (m, "ratio"))]
    table = []
    for model, base in PAIRS + [(b, None) for b in BASELINES]:
        for L in lengths:
            cells = []
            for key, _ in metrics:
                r = by.get((model, key, L))
                if r is None:
                    cells += ["-", "-"]
                else:
                    cells += [f"{r['mean']:.1f}", f"{r['ratio']:.2f}" if r.get("ratio") is not None else "-"]
            if any(c != "-" for c in cells):
                table.append([model, base or "-", L, *cells])
    out += [markdown_table(header, table), doc["notes"], ""]
    return "\n".join(out)


def write(doc: dict, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    out.with_suffix(".md").write_text(_markdown(doc))


# ------------------------------------------------------------------ main
def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes, to check the script runs")
    p.add_argument("--out", default=str(ROOT / "benchmarks/results/encoder_speed.json"))
    p.add_argument("--lengths", type=int, nargs="+", default=None)
    p.add_argument("--dim", type=int, default=None)
    p.add_argument("--tokens", type=int, default=None, help="tokens per batch (batch size = tokens // length)")
    p.add_argument("--min-time", type=float, default=None, help="seconds of timed steps per cell")
    args = p.parse_args(argv)
    if args.quick and args.out == p.get_default("out"):
        raise SystemExit("--quick is a check, not a measurement: pass --out, e.g. --out /tmp/check.json")
    if args.quick:
        lengths, dim, tokens, min_time, min_reps, heads, kernel = [16, 64], 16, 128, 0.05, 2, 2, 7
    else:
        lengths, dim, tokens, min_time, min_reps, heads, kernel = [64, 256, 1024, 4096], 256, 8192, 3.0, 3, 8, 31
    lengths = args.lengths or lengths
    dim = args.dim or dim
    tokens = args.tokens or tokens
    min_time = args.min_time if args.min_time is not None else min_time

    names = [n for pair in PAIRS for n in pair]
    names = list(dict.fromkeys(names))
    tasks = [{"name": n, "mode": m, "length": L, "batch": max(1, tokens // L), "dim": dim, "heads": heads,
              "kernel": kernel, "min_time": min_time, "min_reps": min_reps}
             for L in lengths for n in names for m in ("train", "infer")]
    ctx = mp.get_context("spawn")
    results, t0 = [], time.time()
    with ctx.Pool(1, maxtasksperchild=1) as pool:                     # a fresh process per cell
        for r in pool.imap(measure, tasks):
            results.append(r)
            print(f"{r['name']:>11} {r['mode']:>5} L={r['length']:<5} B={r['batch']:<4} "
                  f"{r['examples_per_s']:10.1f} ex/s  peak {r['peak_mib']:8.1f} MiB", flush=True)
    command = " ".join(["python benchmarks/encoder_speed.py"] + list(sys.argv[1:] if argv is None else argv))
    doc = {
        "benchmark": "encoder_speed",
        "command": command,
        "commit": _commit(),
        "date": _dt.date.today().isoformat(),
        "machine": _machine(),
        "rows": _rows(results),
        "notes": (f"Width {dim}, {tokens} tokens per batch (batch size = tokens // length), {heads} heads, "
                  f"conv width {kernel}; one run per cell: examples/s = batch size / median step time over "
                  f"{min_time:g}+ s of timed steps after two untimed steps; all tokens real (no padding). "
                  "ratio = this row / baseline (examples/s: > 1 is faster; peak MiB: < 1 is less memory). "
                  "Peak memory: the RSS high-water mark of one step (VmHWM, reset "
                  "after a warm-up step) minus VmRSS before it, a fresh process per cell (/proc/self/status, "
                  "/proc/self/clear_refs). nn.MultiheadAttention calls scaled_dot_product_attention, whose CPU "
                  "kernel may avoid materialising the T x T weights, so its memory can grow less than "
                  f"quadratically. Total {time.time() - t0:.0f} s."
                  + (" QUICK settings: a smoke test, not a result." if args.quick else "")),
    }
    out = Path(args.out)
    write(doc, out)
    print(f"wrote {out} and {out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
