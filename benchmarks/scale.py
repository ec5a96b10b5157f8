"""Scale: training and predicting on a corpus larger than this machine would hold as Python
objects, and serving concurrent load. Every figure is measured on the processes themselves
(memory: proportional set size summed over a process and its children, sampled every 0.2 s).

    python benchmarks/scale.py                       # 2,000,000 reviews, about 2.7 GB
    python benchmarks/scale.py --copies 4 --quick    # a check that the script runs

1. The corpus: ../shared/data IMDB train repeated (``--copies`` times 25,000 reviews), each line
   made unique by a suffix; a 200,000-review slice of it. Both are deleted at the end.
2. Encoding: reading the slice into memory (``--store off``, the reader before the token store)
   against building its token store, each until training starts: seconds, MB/s, peak memory.
3. kim_cnn on the whole corpus for ``--steps`` steps (its store built first, in worker
   processes): encoding MB/s, peak memory, memory at step 100 and at the last step.
4. The same command again: seconds from launch to the first training step (the store reused).
5. ``adaptext predict`` of that run over the whole corpus (stopped after ``--predict-seconds``):
   peak memory and memory over time.
6. The service on a kim_cnn trained on the bundled TREC questions, under serve_load.py's load
   (``processes.measure``, benchmarks/processes.py, which also measures the commands above).
"""
from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import shutil
import subprocess
from pathlib import Path

import common  # noqa: E402
from processes import ADAPTEXT, measure, run_measured, steps  # noqa: E402

IMDB = common.DATA / "imdb"


def encoded_mb_per_s(text: str):
    for line in text.splitlines():
        if "examples encoded in" in line:
            return float(line.split("(")[1].split(" MB/s")[0])
    return None


# ------------------------------------------------------------------ the corpus
def make_corpus(work: Path, copies: int, slice_size: int) -> tuple[Path, Path, Path, Path]:
    reviews = [json.loads(line) for line in gzip.open(IMDB / "train.jsonl.gz", "rt", encoding="utf-8")]
    test = [json.loads(line) for line in gzip.open(IMDB / "test.jsonl.gz", "rt", encoding="utf-8")]
    big, part = work / "big.csv", work / "slice.csv"
    with open(big, "w", newline="", encoding="utf-8") as f, open(part, "w", newline="", encoding="utf-8") as g:
        wf, wg = csv.writer(f), csv.writer(g)
        wf.writerow(["text", "label"])
        wg.writerow(["text", "label"])
        n = 0
        for k in range(copies):
            for r in reviews:
                row = [f"{r['text']} (copy {k})", r["label"]]
                wf.writerow(row)
                if n < slice_size:
                    wg.writerow(row)
                n += 1
    dev, tst = work / "dev.csv", work / "test.csv"
    for path, rows in ((dev, test[:12500:5]), (tst, test[12500::5])):        # 2,500 each, both labels
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["text", "label"])
            w.writerows([r["text"], r["label"]] for r in rows)
    return big, part, dev, tst


# ------------------------------------------------------------------ parts
def train_cmd(data: Path, dev: Path, test: Path, out: Path, *extra) -> list:
    return [*ADAPTEXT, "train", "--model", "kim_cnn", "--data", str(data), "--dev", str(dev), "--test", str(test),
            "--out", str(out), "--max-vocab", "50000", "--no-progress", "--threads", "2", *extra]


def until_first_step(run: Path):
    return lambda: bool(steps(run))


def encoding_rows(part: Path, dev: Path, test: Path, work: Path, env: dict) -> list[dict]:
    mb = part.stat().st_size / 1e6
    rows = []
    for variant, store in (("in memory (before the store)", "off"), ("token store, built", "auto")):
        out = work / f"slice-{store}"
        r = run_measured(train_cmd(part, dev, test, out, "--store", store, "--max-steps", "2", "--log-every", "1"),
                         env, until=until_first_step(out))
        rows += [{"model": "kim_cnn", "variant": variant, "dataset": f"slice ({mb:.0f} MB)",
                  "metric": "seconds_to_first_step", "mean": round(r["seconds"], 1)},
                 {"model": "kim_cnn", "variant": variant, "dataset": f"slice ({mb:.0f} MB)",
                  "metric": "MB_per_s_to_first_step", "mean": round(mb / r["seconds"], 1)},
                 {"model": "kim_cnn", "variant": variant, "dataset": f"slice ({mb:.0f} MB)",
                  "metric": "peak_memory_mb", "mean": r["peak_mb"]}]
    for k in (3, 4, 5):                       # this row over the same row read into memory
        rows[k].update(baseline="in memory", ratio=round(rows[k]["mean"] / rows[k - 3]["mean"], 3))
    return rows


def big_rows(big: Path, dev: Path, test: Path, work: Path, env: dict, n_steps: int) -> tuple[list, Path]:
    gb, out = big.stat().st_size / 1e9, work / "big"
    r = run_measured(train_cmd(big, dev, test, out, "--max-steps", str(n_steps), "--log-every", "25"), env)
    log = steps(out)
    at = {int(s["step"]): float(s["rss_mb"]) for s in log}
    first_step = float(log[0]["seconds"]) if log else None
    label = f"corpus ({gb:.2f} GB)"
    rows = [{"model": "kim_cnn", "variant": "token store, built", "dataset": label, "metric": "encode_MB_per_s",
             "mean": encoded_mb_per_s(r["stdout"] + r["stderr"])},
            {"model": "kim_cnn", "variant": "-", "dataset": label, "metric": "peak_memory_mb", "mean": r["peak_mb"],
             "target": "< 3000"},
            {"model": "kim_cnn", "variant": "-", "dataset": label, "metric": "rss_mb_step_100", "mean": at.get(100)},
            {"model": "kim_cnn", "variant": "-", "dataset": label, "metric": f"rss_mb_step_{max(at) if at else '-'}",
             "mean": at.get(max(at)) if at else None, "baseline": "step 100",
             "ratio": round(at[max(at)] / at[100], 3) if 100 in at else None, "target": "ratio <= 1.10"},
            {"model": "kim_cnn", "variant": "-", "dataset": label, "metric": "seconds_total", "mean": round(r["seconds"], 1)}]
    if first_step is not None:
        rows.append({"model": "kim_cnn", "variant": "-", "dataset": label, "metric": "train_seconds_per_step",
                     "mean": round((float(log[-1]["seconds"]) - first_step) / max(1, int(log[-1]["step"]) - int(log[0]["step"])), 3)})
    return rows, out


def reuse_rows(big: Path, dev: Path, test: Path, work: Path, env: dict) -> list[dict]:
    out = work / "big-again"
    r = run_measured(train_cmd(big, dev, test, out, "--max-steps", "3", "--log-every", "1"), env,
                     until=until_first_step(out))
    return [{"model": "kim_cnn", "variant": "token store, reused", "dataset": "corpus", "metric": "seconds_to_first_step",
             "mean": round(r["seconds"], 1), "target": "< 10"}]


def predict_rows(run: Path, big: Path, work: Path, env: dict, seconds: float) -> list[dict]:
    with open(work / "predictions.jsonl", "w") as sink:
        r = run_measured([*ADAPTEXT, "predict", str(run), str(big), "--batch-size", "64"], env, limit=seconds,
                         stdout=sink)
    done = sum(1 for _ in open(work / "predictions.jsonl"))
    mid = [mb for t, mb in r["samples"] if t >= r["seconds"] / 2]
    return [{"model": "kim_cnn", "variant": "adaptext predict", "dataset": "corpus", "metric": "peak_memory_mb",
             "mean": r["peak_mb"], "target": "< 2000"},
            {"model": "kim_cnn", "variant": "adaptext predict", "dataset": "corpus",
             "metric": "rss_mb_second_half_max", "mean": max(mid) if mid else None},
            {"model": "kim_cnn", "variant": "adaptext predict", "dataset": "corpus", "metric": "texts_predicted",
             "mean": done, "seconds": round(r["seconds"], 1)},
            {"model": "kim_cnn", "variant": "adaptext predict", "dataset": "corpus", "metric": "texts_per_s",
             "mean": round(done / r["seconds"], 1)}]


def serve_rows(work: Path, env: dict, requests: int) -> list[dict]:
    run = work / "trec"
    subprocess.run([*ADAPTEXT, "train", "--out", str(run), "--no-progress"], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    rows = []
    for options in ((), ("--in-process",), ("--in-process", "--workers", "2")):
        m = measure(run, clients=8, requests=requests, texts_per_request=4, time_limit=90, options=options)
        how = " ".join(options) or "(the model in a process of its own)"
        base = {"model": "kim_cnn", "variant": f"serve {how}, 8 clients x 4 texts", "dataset": "trec-demo"}
        rows += [{**base, "metric": "requests_per_s", "mean": m["requests_per_s"], "n": m["requests"]},
                 {**base, "metric": "texts_per_s", "mean": m["texts_per_s"], "baseline": "offline predict (batch 64)",
                  "ratio": m["ratio_to_offline"], "target": "ratio >= 0.5"},
                 {**base, "metric": "offline_texts_per_s", "mean": m["offline_texts_per_s"]},
                 {**base, "metric": "mean_batch", "mean": m["mean_batch"]},
                 {**base, "metric": "p50_ms", "mean": m["p50_ms"]},
                 {**base, "metric": "p99_ms", "mean": m["p99_ms"], "target": "< 100"},
                 {**base, "metric": "status_codes", "mean": json.dumps(m["statuses"])}]
        rows += [{**base, "metric": f"cpu_us_per_request_{name}", "mean": us} for name, us in m["cpu_us_per_request"].items()]
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", type=int, default=80, help="copies of IMDB train (80: 2,000,000 reviews)")
    ap.add_argument("--slice", type=int, default=200_000, help="reviews of the slice read both ways")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--predict-seconds", type=float, default=300)
    ap.add_argument("--requests", type=int, default=4000)
    ap.add_argument("--work", default="/tmp/adaptext-scale")
    ap.add_argument("--parts", default="encode,train,reuse,predict,serve")
    ap.add_argument("--out", default=None)
    ap.add_argument("--quick", action="store_true", help="tiny sizes: checks the script runs")
    a = ap.parse_args()
    if a.quick:
        a.copies, a.slice, a.steps, a.predict_seconds, a.requests = 2, 20_000, 30, 20, 300
    common.require_out(a, a.quick or a.parts != ap.get_default("parts"))
    work = Path(a.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    env = {**os.environ, "ADAPTEXT_CACHE": str(work / "cache"), "PYTHONPATH": str(common.ROOT)}
    parts, rows = a.parts.split(","), []
    try:
        if set(parts) - {"serve"}:
            big, part, dev, test = make_corpus(work, a.copies, a.slice)
        if "encode" in parts:
            rows += encoding_rows(part, dev, test, work, env)
        run = work / "big"
        if "train" in parts:
            found, run = big_rows(big, dev, test, work, env, a.steps)
            rows += found
        if "reuse" in parts:
            rows += reuse_rows(big, dev, test, work, env)
        if "predict" in parts and (run / "model.safetensors").exists():
            rows += predict_rows(run, big, work, env, a.predict_seconds)
        if "serve" in parts:
            rows += serve_rows(work, env, a.requests)
    finally:
        shutil.rmtree(work, ignore_errors=True)                # the corpus and its stores
    notes = (f"Corpus: IMDB train x {a.copies} ({a.copies * 25_000:,} reviews), each line unique by a '(copy k)' "
             "suffix; dev and test: 2,500 IMDB test reviews each. Memory (peak_memory_mb): proportional set size "
             "summed over the process and its children (pages shared with forked encoding workers count once), "
             "sampled every 0.2 s; rss_mb_step_N: the training process's own resident memory from its steps.csv. "
             f"predict is stopped after {a.predict_seconds:.0f} s: texts_predicted says how far it got."
             + common.quick_note(a.quick))
    print(common.write("scale", rows, notes, a.out).with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
