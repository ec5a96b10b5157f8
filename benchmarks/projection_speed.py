"""What a model's word-projection table(s) save at prediction, shared by kim_speed.py, qrnn_speed.py
(``speed_table_main``: the whole script) and predict_ab.py (``trained``, ``timed``): the same run
predicting through the tables and through the model's first layer (the tables switched off), in
one process.

Each configuration is trained one step on its dataset (its vocabulary and vectors: speed does not
depend on the weights), then timed with ``adaptext.load(run).predict``: in batches of 64 (sorted by
length, as ``predict`` does) and in calls of 16 sentences in test order (what a service's small
requests look like), best of 3 passes after a warm-up. The outputs of the two paths are compared too."""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

import common  # noqa: E402

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
    texts = common.test_texts(dataset)[: 64 if quick else 1000]
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


def speed_table_main(name: str, doc: str, model: str, configs: list, notes: str) -> None:
    """A projection-table speed script: ``config_rows`` of each (dataset, label, options) of
    ``configs`` (the first only with --quick), written as benchmarks/results/``name``."""
    a = common.speed_args(doc)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for dataset, label, options in configs[:1] if a.quick else configs:
            rows += config_rows(dataset, label, options, Path(tmp), a.quick, model)
    common.write(name, rows, notes + common.quick_note(a.quick), a.out)
