"""What Kim CNN's word-projection table saves at prediction: the same run predicting through the
table (the default) and through its convolutions (the table switched off), in one process.

Each configuration is trained one step on its dataset (its vocabulary and vectors: speed does not
depend on the weights), then timed with ``adaptext.load(run).predict`` on the first 1,000 test
sentences (TREC: its 500): in batches of 64 (sorted by length, as ``predict`` does) and in calls of
16 sentences in test order (what a service's small requests look like), 2 threads, best of 3
passes after a warm-up. The outputs of the two paths are compared too.

    python benchmarks/kim_speed.py
    python benchmarks/kim_speed.py --quick --out /tmp/kim_speed.json   # checks it works
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
import distill_table  # noqa: E402

GLOVE = {"embeddings": str(common.GLOVE)}
CONFIGS = [("trec", "rand", {}), ("sst2", "rand", {}),
           ("sst2", "non-static, GloVe 50d", {**GLOVE, "embedding_mode": "non-static"}),
           ("sst2", "multichannel, GloVe 50d", {**GLOVE, "embedding_mode": "multichannel"})]


def trained(dataset: str, options: dict, out: Path, quick: bool):
    import adaptext
    from adaptext.training.run import train_run
    size = {"embed_dim": 16, "filters": 4} if quick else {}
    train_run({"model": "kim_cnn", "data": dataset, "data_dir": str(common.DATA), "max_steps": 1, "out": str(out),
               "progress": False, **options, **size}, log=lambda *_: None)
    return adaptext.load(out)


def timed(clf, texts: list[str]) -> dict:
    """sentences/s in batches of 64 and in calls of 16, and the probabilities."""
    def calls_of_16(xs):
        for k in range(0, len(xs), 16):
            clf.predict(xs[k:k + 16])
    return {"batch 64": common.sentences_per_s(lambda xs: clf.predict(xs, batch_size=64), texts),
            "calls of 16": common.sentences_per_s(calls_of_16, texts),
            "probs": clf.predict_proba(texts)}


def config_rows(dataset: str, label: str, options: dict, work: Path, quick: bool) -> list[dict]:
    from adaptext.models import kim_cnn
    texts = distill_table.test_texts(dataset)[: 64 if quick else 1000]
    clf = trained(dataset, options, work / f"{dataset}-{label.split(',')[0]}", quick)
    table = timed(clf, texts)
    budget, kim_cnn.TABLE_BYTES = kim_cnn.TABLE_BYTES, 0
    try:
        convolved = timed(clf, texts)
    finally:
        kim_cnn.TABLE_BYTES = budget
    base = {"model": "kim_cnn", "dataset": dataset}
    rows = [{**base, "variant": label, "metric": "table_mb", "mean": round(clf.model.projections().nbytes / 2 ** 20, 1)},
            {**base, "variant": label, "metric": "max_probability_difference",
             "mean": float(np.abs(table["probs"] - convolved["probs"]).max())}]
    for how in ("batch 64", "calls of 16"):
        rows += [{**base, "variant": f"{label}, convolutions, {how}", "metric": "sentences_per_s",
                  "mean": round(convolved[how], 1)},
                 {**base, "variant": f"{label}, table, {how}", "metric": "sentences_per_s", "mean": round(table[how], 1),
                  "baseline": "convolutions", "ratio": round(table[how] / convolved[how], 2)}]
        print(f"{dataset} {label} {how}: table {table[how]:.0f}, convolutions {convolved[how]:.0f} sentences/s",
              flush=True)
    return rows


def main() -> None:
    a = common.speed_args(__doc__)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for dataset, label, options in CONFIGS[:1] if a.quick else CONFIGS:
            rows += config_rows(dataset, label, options, Path(tmp), a.quick)
    common.write("kim_speed", rows,
                 "kim_cnn at Kim's sizes (widths 3, 4, 5 x 100 filters; rand: 300-d vectors), each trained one "
                 "step on the dataset; the first 1,000 test sentences (TREC: 500), 2 threads, best of 3 passes; "
                 "ratios against the same run predicting through its convolutions, in the same process."
                 + common.quick_note(a.quick), a.out)


if __name__ == "__main__":
    main()
