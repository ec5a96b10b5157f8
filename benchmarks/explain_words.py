"""Word attributions (``adaptext explain words``): how complete, how faithful, how costly.

On the 500 TREC test questions of the bundled demo, for runs trained on the demo's training
questions:
- completeness: |sum of a question's attributions - (logit - baseline logit)| as % of the
  logit difference, at a fixed 16 and 50 integration steps, and with the default doubling
  (from 50 steps until within 1%, at most 800);
- faithfulness (deletion): the drop of the predicted label's probability when the word with
  the highest attribution is deleted from the question, against deleting a word drawn at
  random (questions of two words or more);
- cost: seconds per explained question against seconds per predicted question, same process.

    python benchmarks/explain_words.py
"""
from __future__ import annotations

import argparse
import math
import random
import tempfile
import time
from pathlib import Path

import numpy as np

import common  # noqa: E402

MODELS = {"kim_cnn": {}}          # name -> train options beside the demo's


def questions() -> list[str]:
    from adaptext.data.datasets import RESOURCES
    from adaptext.data.readers import read_trec_raw
    return [q.text for q in read_trec_raw(RESOURCES / "trec" / "test.txt.gz")]


def gaps(clf, texts, steps, tolerance) -> tuple[list[float], list[int]]:
    from adaptext.explain.word_report import explain_inputs
    recs = explain_inputs(clf, texts, steps=steps, tolerance=tolerance)
    return [100 * r["gap"] for r in recs], [r["steps"] for r in recs]


def deletion(clf, texts, records, seed: int = 1) -> tuple[list[float], list[float]]:
    """Probability drops of the predicted label: the top-attributed word deleted, a random one."""
    rng = random.Random(seed)
    top, rand, base = [], [], []
    for text, rec in zip(texts, records):
        toks, scores = rec["segments"][0]["tokens"], rec["segments"][0]["scores"]
        if len(toks) < 2:
            continue
        k, j = int(np.argmax(scores)), rng.randrange(len(toks))
        top.append(" ".join(toks[:k] + toks[k + 1:]))
        rand.append(" ".join(toks[:j] + toks[j + 1:]))
        base.append((" ".join(toks), rec["label"]))
    p = lambda ts, labels: [d["probs"][l] for d, l in zip(clf.predict(ts), labels)]
    labels = [l for _, l in base]
    p0 = np.asarray(p([t for t, _ in base], labels))
    return list(100 * (p0 - p(top, labels))), list(100 * (p0 - p(rand, labels)))


def measure(name: str, opts: dict, texts: list[str]) -> list[dict]:
    import adaptext
    from adaptext.training.run import train_run
    out = Path(tempfile.mkdtemp()) / name
    train_run({"model": name, "out": str(out), "progress": False, "seed": 1, **opts})
    clf = adaptext.load(out)
    rows = []
    for steps in (16, 50):
        g, _ = gaps(clf, texts, steps, math.inf)
        rows.append({"model": name, "variant": f"{steps} steps", "dataset": "trec-demo", "split": "test",
                     "metric": "completeness_gap_pct", **common.stats(g), "max": round(max(g), 3)})
    t = time.perf_counter()
    records = clf.explain(texts)
    explain_s = (time.perf_counter() - t) / len(texts)
    g = [100 * r["gap"] for r in records]
    steps = [r["steps"] for r in records]
    rows.append({"model": name, "variant": "doubled from 50 steps to 1%", "dataset": "trec-demo", "split": "test",
                 "metric": "completeness_gap_pct", **common.stats(g), "max": round(max(g), 3),
                 "steps_mean": round(float(np.mean(steps)), 1), "steps_max": int(max(steps))})
    top, rand = deletion(clf, texts, records)
    rows.append({"model": name, "variant": "random word deleted", "dataset": "trec-demo", "split": "test",
                 "metric": "prob_drop_pct", **common.stats(rand)})
    rows.append({"model": name, "variant": "top-attributed word deleted", "dataset": "trec-demo", "split": "test",
                 "metric": "prob_drop_pct", **common.stats(top), "baseline": "random word deleted",
                 "ratio": round(float(np.mean(top) / max(np.mean(rand), 1e-9)), 2)})
    t = time.perf_counter()
    clf.predict(texts)
    predict_s = (time.perf_counter() - t) / len(texts)
    rows.append({"model": name, "variant": "predict", "dataset": "trec-demo", "metric": "ms_per_text",
                 **common.stats([1000 * predict_s])})
    rows.append({"model": name, "variant": "explain words", "dataset": "trec-demo", "metric": "ms_per_text",
                 **common.stats([1000 * explain_s]), "baseline": "predict", "ratio": round(explain_s / predict_s, 1)})
    for r in rows:
        if r["n"] > 10:                  # 500 per-question values: the summary says enough
            r.pop("values")
        print(r, flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    common.require_out(a, a.models != ",".join(MODELS))
    import torch
    torch.set_num_threads(2)
    texts = questions()
    rows = [r for name in a.models.split(",") for r in measure(name, MODELS[name], texts)]
    notes = ("Runs trained on the bundled TREC demo with the quick start's settings, seed 1; "
             "every row over the 500 test questions (mean, std over questions; max). Completeness gap: |sum of "
             "attributions - (logit - baseline logit)| as % of |logit - baseline logit|, explained label = the "
             "predicted one, baseline = every word vector zero, Gauss-Legendre steps (Captum). Deletion: the "
             "question re-read without one word (tokens joined by spaces), drop of the predicted label's "
             "probability in points; questions of one word left out. ms_per_text: the 500 questions explained "
             "16 at a time, predicted 64 at a time, 2 threads; ratio against predict in the same process.")
    common.write("explain_words", rows, notes, a.out)


if __name__ == "__main__":
    main()
