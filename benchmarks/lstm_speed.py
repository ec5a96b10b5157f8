"""What the LSTM's word-projection tables save at prediction: the same run predicting through the
tables (the first layer's input projections W_ih x looked up per word, its recurrence run step by
step from them: ``adaptext.nn.lstm``) and through nn.LSTM (the tables switched off), in one
process, as `kim_speed.py` and `qrnn_speed.py` do for Kim's CNN and the QRNN.

Configurations: the one-layer bidirectional student of `distill_table.py` at 64 and at 150 units a
direction over random 300-d word vectors (the table path is the default for both), and at 64 units
over 50-d GloVe vectors (where the table path is not the default: more units than vector
dimensions; forced here to show why). Each is trained one step on SST-2 (speed does not depend on
the weights), then timed on all 1,821 SST-2 test sentences (``sst2/stsa.binary.test``) in batches
of 64, with 1 and with 2 threads: ``adaptext.load(run).predict`` (tokenising and batching
included), and the model's forward pass alone on the same batches made beforehand. The two paths
alternate pass by pass, best of 5 passes each after a warm-up; the outputs of the two paths are
compared too.

    nice python benchmarks/lstm_speed.py
    python benchmarks/lstm_speed.py --quick --out /tmp/lstm_speed.json   # checks it works
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

import common  # noqa: E402

STUDENT = {"layers": 1, "bidirectional": True}
CONFIGS = [("1 layer, bidirectional, 64", {**STUDENT, "hidden": 64}),
           ("1 layer, bidirectional, 150", {**STUDENT, "hidden": 150}),
           ("1 layer, bidirectional, 64, non-static GloVe 50d",
            {**STUDENT, "hidden": 64, "embeddings": str(common.GLOVE), "embedding_mode": "non-static"})]
QUICK = {"embed_dim": 16, "hidden": 4}
PATHS = {"nn.LSTM": False, "table": True}          # the model's use_tables for each path


def args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes: checks the script runs")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--repeats", type=int, default=5, help="timed passes of each path (best kept)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    common.require_out(a, a.quick)
    return a


def trained(options: dict, out: Path, quick: bool):
    import adaptext
    from adaptext.training.run import train_run
    size = QUICK if quick else {}
    train_run({"model": "lstm", "data": "sst2", "data_dir": str(common.DATA), "max_steps": 1, "out": str(out),
               "progress": False, **options, **size}, log=lambda *_: None)
    return adaptext.load(out)


def best_of(passes: dict, repeats: int, n: int) -> dict:
    """Sentences/s of each of ``passes`` (name -> (prepare, run)), best of ``repeats`` passes, the
    passes of all of them alternating so that a busy spell of the machine falls on each alike."""
    import torch
    best = {name: float("inf") for name in passes}
    for prepare, run in passes.values():          # warm-up: tables built, allocator primed
        prepare()
        with torch.no_grad():
            run()
    for _ in range(repeats):
        for name, (prepare, run) in passes.items():
            prepare()
            with torch.no_grad():
                t = time.perf_counter()
                run()
                best[name] = min(best[name], time.perf_counter() - t)
    return {name: n / s for name, s in best.items()}


def config_rows(label: str, options: dict, run_dir: Path, a) -> list[dict]:
    import torch
    from adaptext.data.loading import batch_loader
    texts = common.test_texts("sst2", 64 if a.quick else 100_000)
    clf = trained(options, run_dir, a.quick)
    model = clf.model.eval()
    default = model.projections() is not None      # what the model does by itself
    model.use_tables = True
    tables = model.projections()
    batches = list(batch_loader(clf.pipeline.items(texts), 64, clf.collate))

    def use(tables_on: bool):
        return lambda: setattr(model, "use_tables", tables_on)

    def forward_all():
        for batch in batches:
            model(batch)

    probs = {}
    for name, on in PATHS.items():
        use(on)()
        probs[name] = clf.predict_proba(texts)
    model.use_tables = None
    base = {"model": "lstm", "dataset": "sst2", "split": "test"}
    mb = sum(t.nbytes for t in tables) / 2 ** 20
    rows = [{**base, "variant": f"{label} (table path by default: {'yes' if default else 'no'})",
             "metric": "table_mb", "mean": round(mb, 1)},
            {**base, "variant": label, "metric": "max_probability_difference",
             "mean": float(np.abs(probs["table"] - probs["nn.LSTM"]).max())}]
    for threads in [int(t) for t in a.threads.split(",")]:
        torch.set_num_threads(threads)
        for what, run in (("predict", lambda: clf.predict(texts, batch_size=64)), ("model forward", forward_all)):
            speed = best_of({name: (use(on), run) for name, on in PATHS.items()}, 2 if a.quick else a.repeats,
                            len(texts))
            where = f"{what}, batch 64, {threads} thread{'s' if threads > 1 else ''}"
            rows += [{**base, "variant": f"{label}, nn.LSTM, {where}", "metric": "sentences_per_s",
                      "mean": round(speed["nn.LSTM"], 1)},
                     {**base, "variant": f"{label}, table, {where}", "metric": "sentences_per_s",
                      "mean": round(speed["table"], 1), "baseline": "nn.LSTM",
                      "ratio": round(speed["table"] / speed["nn.LSTM"], 2)}]
            print(f"lstm {label}, {where}: table {speed['table']:.0f}, nn.LSTM {speed['nn.LSTM']:.0f} sentences/s",
                  flush=True)
    model.use_tables = None
    return rows


def main() -> None:
    a = args()
    start, rows = os.getloadavg(), []
    with tempfile.TemporaryDirectory() as tmp:
        for k, (label, options) in enumerate(CONFIGS[:1] if a.quick else CONFIGS):
            rows += config_rows(label, options, Path(tmp) / f"lstm-{k}", a)
    load = f"{start[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    common.write("lstm_speed", rows,
                 "lstm (one bidirectional layer), trained one step on SST-2; all 1,821 SST-2 test sentences in "
                 "batches of 64 (sorted by length, as predict makes them); best of 5 passes, the two paths "
                 "alternating pass by pass; ratios against the same run predicting through nn.LSTM in the same "
                 "process ('nn.LSTM' rows). 'predict' includes tokenising and batching; 'model forward' times the "
                 "model alone on the batches made beforehand. The machine (2 cores) was shared with other jobs "
                 f"(1-minute load average {load}; the script ran under nice), so absolute speeds are low and "
                 "noisy, and with 2 threads (both cores contended) lower than with 1 and noisiest: the ratios are "
                 "the measurement. The GloVe 50d configuration does not use the table by default (64 units > 50 "
                 "dimensions); its table rows force it." + common.quick_note(a.quick), a.out)


if __name__ == "__main__":
    main()
