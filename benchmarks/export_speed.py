"""What the ONNX export buys at prediction time: examples/s of a model's graph in onnxruntime
against the same model in PyTorch (eval mode, no_grad), same process, same threads.

Models at the paper's sizes (random weights: speed does not depend on them): kim_cnn,
hashed ac_cnn (its context GRU, g = 600) and light intra-context attconv. Inputs: TREC test
questions' lengths (real, tokenised), random ids, batches of 64 padded to their longest
question (as ``adaptext predict`` batches them), and single questions (batch 1: the latency of a
web service answering one request). Each graph first passes the export's own check against
PyTorch.

    python benchmarks/export_speed.py
    python benchmarks/export_speed.py --quick --out /tmp/export_speed.json   # checks it works
"""
from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import torch

from common import DATA, quick_note, speed_args, stats, write  # noqa: E402

from adaptext.data.readers import read_trec_raw  # noqa: E402
from adaptext.data.text import Tokenizer  # noqa: E402
from adaptext.export import ExportGraph, export_model  # noqa: E402
from adaptext.registry import create_model  # noqa: E402

MODELS = {"kim_cnn": {}, "ac_cnn": {"generation": "hashed"}, "attconv": {"variant": "light"}}
QUICK_SIZES = {"kim_cnn": {"embed_dim": 16, "filters": 8}, "ac_cnn": {"embed_dim": 16, "filters": 8, "context_dim": 8},
               "attconv": {"embed_dim": 16, "hidden": 8}}
VOCAB = 20000


def batches(size: int, count: int, min_length: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    tok = Tokenizer(level="word", lower=True)
    lengths = torch.tensor([max(1, len(tok(ex.text))) for ex in read_trec_raw(DATA / "trec/raw/TREC.test")])
    g = torch.Generator().manual_seed(0)
    out = []
    for _ in range(count):
        L = lengths[torch.randint(0, len(lengths), (size,), generator=g)]
        T = max(int(L.max()), min_length, 2)
        ids = torch.randint(2, VOCAB, (size, T), generator=g) * (torch.arange(T)[None] < L[:, None])
        out.append((ids, L))
    return out


def rate(run, data, repeats: int) -> list[float]:
    run(*data[0])                                                     # warm-up
    vals = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for ids, lengths in data:
            run(ids, lengths)
        vals.append(sum(len(x) for x, _ in data) / (time.perf_counter() - t0))
    return vals


def main() -> None:
    import onnxruntime as ort
    a = speed_args(__doc__)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.inter_op_num_threads = a.threads, 1
    repeats = 2 if a.quick else 5
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, options in MODELS.items():
            torch.manual_seed(0)
            model = create_model(name, num_classes=6, vocab_size=VOCAB, **options,
                                 **(QUICK_SIZES[name] if a.quick else {})).eval()
            path = Path(tmp) / f"{name}.onnx"
            done = export_model(model, "text", False, VOCAB, path)
            session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
            graph = ExportGraph(model, "text", False).eval()

            def torch_run(ids, lengths):
                with torch.no_grad():
                    return graph(ids, lengths)[1]

            def onnx_run(ids, lengths):
                return session.run(["probs"], {"text": ids.numpy(), "lengths": lengths.numpy()})[0]

            for size, count in ((64, 2 if a.quick else 40), (1, 8 if a.quick else 500)):
                data = batches(size, count, done["min_length"])
                base = rate(torch_run, data, repeats)
                fast = rate(onnx_run, data, repeats)
                ratio = statistics.fmean(fast) / statistics.fmean(base)
                common = {"model": name, "dataset": f"trec test lengths, batch {size}", "metric": "examples_per_s"}
                rows.append({**common, "variant": "pytorch", **stats(base)})
                rows.append({**common, "variant": "onnxruntime", **stats(fast), "baseline": "pytorch",
                             "ratio": round(ratio, 3)})
                print(f"{name:8s} batch {size:3d}: pytorch {statistics.fmean(base):9.1f}  onnxruntime "
                      f"{statistics.fmean(fast):9.1f} ex/s  ratio {ratio:.2f}  (check {done['check']['max_abs_diff_probs']:.1e})",
                      flush=True)
    write("export_speed", rows,
          f"Prediction examples/s, {a.threads} threads for both (torch.set_num_threads; onnxruntime intra-op "
          f"threads), {repeats} repeats after one warm-up batch; paper sizes, random weights, vocabulary {VOCAB}; "
          "ratios against PyTorch in the same run. Each graph passed the export's check first."
          + quick_note(a.quick), a.out)


if __name__ == "__main__":
    main()
