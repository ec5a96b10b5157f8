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

import tempfile
from pathlib import Path

import numpy as np

import common  # noqa: E402
import distill_table  # noqa: E402

GLOVE = {"embeddings": str(common.GLOVE)}
CONFIGS = [("trec", "rand", {}), ("sst2", "rand", {}),
           ("sst2", "non-static, GloVe 50d", {**GLOVE, "embedding_mode": "non-static"}),
           ("sst2", "multichannel, GloVe 50d", {**GLOVE, "embedding_mode": "multichannel"})]


QUICK = {"kim_cnn": {"embed_dim": 16, "filters": 4}, "qrnn": {"embed_dim": 16, "hidden": 4}}


def trained(dataset: str, options: dict, out: Path, quick: bool, model: str = "kim_cnn"):
    import adaptext
    from adaptext.training.run import train_run
    size = QUICK[model] if quick else {}
    train_run({"model": model, "data": dataset, "data_dir": str(common.DATA), "max_steps": 1, "out": str(out),
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


def config_rows(dataset: str, label: str, options: dict, work: Path, quick: bool, model: str = "kim_cnn") -> list[dict]:
    """The rows of one configuration: predicting through the word-projection table(s) against
    through the model's first layer, in batches of 64 and in calls of 16; the tables' size; the
    largest difference of the two paths' probabilities."""
    from adaptext.nn import embedding
    texts = distill_table.test_texts(dataset)[: 64 if quick else 1000]
    clf = trained(dataset, options, work / f"{model}-{dataset}-{label.split(',')[0]}", quick, model)
    tables = clf.model.projections()
    table = timed(clf, texts)
    budget, embedding.TABLE_BYTES = embedding.TABLE_BYTES, 0
    try:
        convolved = timed(clf, texts)
    finally:
        embedding.TABLE_BYTES = budget
    base = {"model": model, "dataset": dataset}
    mb = sum(t.nbytes for t in (tables if isinstance(tables, list) else [tables])) / 2 ** 20
    rows = [{**base, "variant": label, "metric": "table_mb", "mean": round(mb, 1)},
            {**base, "variant": label, "metric": "max_probability_difference",
             "mean": float(np.abs(table["probs"] - convolved["probs"]).max())}]
    for how in ("batch 64", "calls of 16"):
        rows += [{**base, "variant": f"{label}, convolutions, {how}", "metric": "sentences_per_s",
                  "mean": round(convolved[how], 1)},
                 {**base, "variant": f"{label}, table, {how}", "metric": "sentences_per_s", "mean": round(table[how], 1),
                  "baseline": "convolutions", "ratio": round(table[how] / convolved[how], 2)}]
        print(f"{model} {dataset} {label} {how}: table {table[how]:.0f}, convolutions {convolved[how]:.0f} sentences/s",
              flush=True)
    return rows


def table_main(name: str, doc: str, model: str, configs: list, notes: str) -> None:
    """A projection-table speed script: ``config_rows`` of each (dataset, label, options) of
    ``configs`` (the first only with --quick), written as benchmarks/results/``name``."""
    a = common.speed_args(doc)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for dataset, label, options in configs[:1] if a.quick else configs:
            rows += config_rows(dataset, label, options, Path(tmp), a.quick, model)
    common.write(name, rows, notes + common.quick_note(a.quick), a.out)


def main() -> None:
    table_main("kim_speed", __doc__, "kim_cnn", CONFIGS,
               "kim_cnn at Kim's sizes (widths 3, 4, 5 x 100 filters; rand: 300-d vectors), each trained one "
               "step on the dataset; the first 1,000 test sentences (TREC: 500), 2 threads, best of 3 passes; "
               "ratios against the same run predicting through its convolutions, in the same process.")


if __name__ == "__main__":
    main()
