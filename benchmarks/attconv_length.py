"""Yin & Schütze (2018) Figure 5: test accuracy by text-length decile on IMDB (standing in for
their Yelp set) for light and advanced ATTCONV and kim_cnn. Reads the runs that
``attconv_table.py --datasets imdb --keep DIR`` kept, predicts the test split with each, and
writes benchmarks/results/attconv_length.{json,md,png} (``--dataset sst2``: attconv_length_sst2.*).

    python benchmarks/attconv_table.py --datasets imdb --keep runs/attconv-imdb
    python benchmarks/attconv_length.py runs/attconv-imdb

Runs kept on another machine (a GPU lent for one session) are gone with it, but their
decile rows are not: ``--add benchmarks/results/attconv_length.json`` takes the rows of every
model that has no kept run here from that earlier result (its per-seed values), after
checking that its deciles are the same.
"""
import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from common import DATA, RESULTS, write  # noqa: E402

from adaptext.api import Classifier  # noqa: E402
from adaptext.runs.options import flatten  # noqa: E402
from adaptext.data.datasets import read_split  # noqa: E402
from adaptext.data.text import Tokenizer, TokenizerConfig  # noqa: E402
from adaptext.runs.metrics import by_length  # noqa: E402


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", help="folder of kept runs (<model>-<variant>-imdb-seed<N>)")
    ap.add_argument("--dataset", default="imdb")
    ap.add_argument("--bins", type=int, default=10)
    ap.add_argument("--note", default="", help="a sentence added to the notes (what is missing and why)")
    ap.add_argument("--device", default="cpu", help="where the kept runs predict (cuda on a GPU machine)")
    ap.add_argument("--add", metavar="RESULT.json",
                    help="an earlier result of this script: its rows for models with no kept run here join the table")
    ap.add_argument("--out", help="result file (default: benchmarks/results/<name>.json; the PNG beside it)")
    a = ap.parse_args(argv)
    test = read_split(a.dataset, "test", str(DATA))
    runs = sorted(p for p in Path(a.runs).iterdir() if re.search(rf"-{a.dataset}-seed\d+$", p.name))
    if not runs:
        sys.exit(f"error: {a.runs}: no kept {a.dataset} runs (run attconv_table.py with --keep first)")
    per_model: dict = defaultdict(list)
    lengths = None
    for run in runs:
        model, tok, correct = outcomes(run, test, a.device)
        if lengths is None:            # words of the whole review, before the run's truncation
            lengths = np.array([len(tok(ex.text)) for ex in test])
        key = (model, run.name.rsplit(f"-{a.dataset}-", 1)[0].split("-", 1)[1])
        per_model[key].append(by_length(lengths, correct, a.bins))
        print(f"{run.name}: accuracy {100 * correct.mean():.2f}", flush=True)

    added = []
    if a.add:
        for key, seeds in earlier(Path(a.add), a.dataset, a.bins).items():
            if key in per_model:
                continue
            if [(b["min_len"], b["max_len"]) for b in seeds[0]] != [(b["min_len"], b["max_len"]) for b in
                                                                    next(iter(per_model.values()))[0]]:
                sys.exit(f"error: {a.add}: the deciles of {key[0]} {key[1]} differ from this test split's")
            per_model[key] = seeds
            added.append(f"{key[0]} {key[1]}")
            print(f"{a.add}: {key[0]} {key[1]}, {len(seeds)} seeds", flush=True)

    rows = []
    for (model, variant), seeds in per_model.items():
        for b in range(len(seeds[0])):
            acc = np.array([s[b]["accuracy"] for s in seeds])
            lo, hi = seeds[0][b]["min_len"], seeds[0][b]["max_len"]
            rows.append({"model": model, "variant": variant, "dataset": a.dataset, "split": "test",
                         "metric": f"accuracy, length decile {b + 1} ({lo}-{hi} words)",
                         "mean": round(float(acc.mean()), 2), "std": round(float(acc.std()), 2), "n": len(acc),
                         "values": [round(float(x), 2) for x in acc], "min": round(float(acc.min()), 2),
                         "max": round(float(acc.max()), 2)})
    name = "attconv_length" if a.dataset == "imdb" else f"attconv_length_{a.dataset}"
    out = Path(a.out).with_suffix(".json") if a.out else RESULTS / f"{name}.json"
    plot(per_model, out.with_suffix(".png"), a.dataset)
    write(name, rows, out=out, notes=
          (f"Test texts split into {a.bins} buckets at the deciles of their length in words (the whole text, "
          "before truncation); accuracy in each bucket, mean / std over the seeds of attconv_table.py's kept runs "
          f"(same training runs as its {a.dataset} rows; read from each run's test_predictions.jsonl where it has "
          f"one). Plot: {out.with_suffix('.png').name}. "
          + (f"Rows of {', '.join(added)} taken from {a.add} (their runs were kept on another machine). "
             if added else "") + a.note).rstrip())


def earlier(path: Path, dataset: str, bins: int) -> dict:
    """{(model, variant): per seed, the decile dicts} from an earlier result file's rows."""
    try:
        rows = [r for r in json.loads(path.read_text())["rows"] if r["dataset"] == dataset]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"error: {path}: not a result file of this script ({e})")
    out: dict = defaultdict(lambda: None)
    for r in rows:
        m = re.fullmatch(r"accuracy, length decile (\d+) \((\d+)-(\d+) words\)", r["metric"])
        if not m:
            continue
        key = (r["model"], r["variant"])
        if out[key] is None:
            out[key] = [[None] * bins for _ in r["values"]]
        for s, v in enumerate(r["values"]):
            out[key][s][int(m[1]) - 1] = {"accuracy": v, "min_len": int(m[2]), "max_len": int(m[3])}
    bad = [k for k, seeds in out.items() if any(b is None for s in seeds for b in s)]
    if bad:
        sys.exit(f"error: {path}: {bad[0][0]} {bad[0][1]} does not have {bins} deciles for every seed")
    return dict(out)


def outcomes(run: Path, test, device: str):
    """(model name, the run's tokenizer, correct flag per test example): from the run's
    test_predictions.jsonl where it has one (no model needed), else by predicting again."""
    preds = run / "test_predictions.jsonl"
    if preds.exists():
        vocab = json.loads((run / "vocab.json").read_text())
        correct = np.zeros(len(test), dtype=bool)
        for line in preds.read_text().splitlines():
            r = json.loads(line)
            correct[r["index"]] = r["pred"] == r["gold"]
        model = flatten(json.loads((run / "config.json").read_text()))["model"]
        return model, Tokenizer(TokenizerConfig(**vocab["tokenizer"])), correct
    clf = Classifier.load(run, device=device)
    pred = [p["label"] for p in clf.predict(test, batch_size=100)]
    return clf.config.model, clf.encoder.tokenizer, np.array([p == ex.label for p, ex in zip(pred, test)])


def plot(per_model: dict, path: Path, dataset: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4.2))
    ticks = None
    for (model, variant), seeds in sorted(per_model.items()):
        acc = np.array([[b["accuracy"] for b in s] for s in seeds])
        x = np.arange(1, acc.shape[1] + 1)
        name = model if variant in ("-", "rand", "default") else f"{model} {variant}"
        ax.plot(x, acc.mean(0), marker="o", label=f"{name} ({len(seeds)} seed{'' if len(seeds) == 1 else 's'})")
        ax.fill_between(x, acc.min(0), acc.max(0), alpha=0.15)
        ticks = [f"{b['min_len']}-{b['max_len']}" for b in seeds[0]]
    ax.set_xticks(range(1, len(ticks) + 1), ticks, rotation=35, ha="right", fontsize=8)
    ax.set_xlabel("text length in words (test deciles)")
    ax.set_ylabel("test accuracy %")
    ax.set_title(f"Accuracy by text length on {dataset} (band: min-max over seeds)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
