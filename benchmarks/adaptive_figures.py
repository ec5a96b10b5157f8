"""Choi et al. (2019) Figures 2 and 3: validation accuracy against filter size (kim_cnn and
hashed ac_cnn), against depth (dpcnn and hashed ac_dpcnn), against the number of importance
parameters and against the hash pool size (hashed ac_cnn), each grid run by ``adaptext sweep``
with 3 seeds per point.

    python benchmarks/adaptive_figures.py                         # every figure, 3 seeds
    python benchmarks/adaptive_figures.py --figures pool_size --out S.json   # one figure
    python benchmarks/adaptive_figures.py --merge a.json b.json   # pool figures run apart
    python benchmarks/adaptive_figures.py --quick --out /tmp/q.json

Data: the paper's figures are on Yahoo Answers (topics); the topic sets here are 20 Newsgroups
(documents of about 300 words: a filter of width 100 over them is about 200 s an epoch on this
machine's 2 cores, so about 40 hours for the grid) and AG News, of which only the 7,600-text
test split is in ../shared/data. The figures use AG News: that split cut once (seed 0,
stratified) into 5,600 training, 1,000 validation and 1,000 test texts. Sweeps are kept in
``--work`` (rerun the command to resume one that was killed).
"""
from __future__ import annotations

import argparse
import csv
import json
import random
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import common  # noqa: E402

EMB = ["--embeddings", str(common.GLOVE), "--embedding-mode", "non-static", "--min-freq", "2"]
HASHED = ["--generation", "hashed"]
FIGURES = {  # name -> (swept option, grid, [(model, label, options)])
    "filter_size": ("widths", (2, 3, 5, 10, 20, 50, 100),
                    [("kim_cnn", "CNN", []), ("ac_cnn", "AC-CNN (hashed)", HASHED)]),
    "depth": ("depth", (3, 5, 7, 9, 11), [("dpcnn", "DPCNN", []), ("ac_dpcnn", "AC-DPCNN (hashed)", HASHED)]),
    "importance": ("num_importance", (2, 3, 5, 7, 9), [("ac_cnn", "AC-CNN (hashed)", HASHED)]),
    "pool_size": ("pool_size", (10, 20, 50, 100), [("ac_cnn", "AC-CNN (hashed)", HASHED)]),
}
AXIS = {"filter_size": "filter size", "depth": "depth (weight layers)", "importance": "importance parameters",
        "pool_size": "hash pool size"}


def ag_news_split(work: Path, seed: int = 0) -> tuple[Path, Path, Path]:
    """AG News test.csv cut into train / dev / test CSV files (text,label), stratified."""
    from adaptext.data.readers import read_zhang_csv
    by_label = defaultdict(list)
    for ex in read_zhang_csv(common.DATA / "ag_news" / "test.csv"):
        by_label[ex.label].append(ex.text)
    parts = {"train": [], "dev": [], "test": []}
    rng = random.Random(seed)
    for label, texts in sorted(by_label.items()):
        rng.shuffle(texts)
        n_held = len(texts) * 1000 // 7600
        parts["dev"] += [(t, label) for t in texts[:n_held]]
        parts["test"] += [(t, label) for t in texts[n_held:2 * n_held]]
        parts["train"] += [(t, label) for t in texts[2 * n_held:]]
    paths = []
    work.mkdir(parents=True, exist_ok=True)
    for name, rows in parts.items():
        rng.shuffle(rows)
        path = work / f"ag_{name}.csv"
        with open(path, "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows([("text", "label"), *rows])
        paths.append(path)
    return tuple(paths)


def sweep(model: str, options: list, option: str, grid, seeds: int, data: tuple, out: Path, epochs: int,
          patience: int) -> list[dict]:
    """One ``adaptext sweep`` over ``option`` x seeds; its trials (rerun: finished trials kept)."""
    train, dev, test = data
    cmd = [sys.executable, "-m", "adaptext.cli", "sweep", "--grid", f"{option}={','.join(map(str, grid))}",
           f"seed={','.join(str(s) for s in range(1, seeds + 1))}", "--out", str(out),
           "--model", model, *options, *EMB, "--data", str(train), "--dev", str(dev), "--test", str(test),
           "--epochs", str(epochs), "--patience", str(patience), "--no-progress"]
    subprocess.run(cmd, check=True, cwd=common.ROOT, stdout=subprocess.DEVNULL)
    return json.loads((out / "trials.json").read_text())


def figure_rows(name: str, seeds: int, data: tuple, work: Path, epochs: int, patience: int) -> list[dict]:
    option, grid, models = FIGURES[name]
    rows = []
    for model, label, options in models:
        trials = sweep(model, options, option, grid, seeds, data, work / f"{name}-{model}", epochs, patience)
        for x in grid:
            accs = [t["dev_accuracy"] for t in trials
                    if t["state"] == "complete" and str(t[option]) == str(x)]
            rows.append({"model": model, "variant": f"{label}, {AXIS[name]} {x}", "dataset": "ag_news (test split cut)",
                         "split": "validation", "metric": "accuracy", "figure": name, "x": x, "label": label,
                         **common.stats(accs)})
    return rows


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = [n for n in FIGURES if any(r["figure"] == n for r in rows)]
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.4), squeeze=False)
    for ax, name in zip(axes[0], names):
        for label in dict.fromkeys(r["label"] for r in rows if r["figure"] == name):
            pts = [r for r in rows if r["figure"] == name and r["label"] == label]
            ax.errorbar([r["x"] for r in pts], [r["mean"] for r in pts], yerr=[r["std"] for r in pts],
                        marker="o", capsize=3, label=label)
        if name == "filter_size":
            ax.set_xscale("log")
        ax.set_xlabel(AXIS[name])
        ax.set_ylabel("validation accuracy (%)")
        ax.legend(fontsize=8)
    fig.suptitle("AG News (7,600-text split), 3 seeds: mean and std", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def spread_rows(rows: list[dict]) -> list[dict]:
    """The paper's headline of Figure 2: how much accuracy a model loses from its best filter size
    to its worst (the paper: CNN 8.4 points between sizes 100 and 2, AC-CNN 0.6)."""
    out = []
    for label in dict.fromkeys(r["label"] for r in rows if r["figure"] == "filter_size"):
        pts = [r for r in rows if r["figure"] == "filter_size" and r["label"] == label]
        means = [r["mean"] for r in pts]
        out.append({"model": pts[0]["model"], "variant": f"{label}: best - worst filter size",
                    "dataset": "ag_news (test split cut)", "split": "validation", "metric": "accuracy_spread",
                    "mean": round(max(means) - min(means), 2),
                    "paper": {"CNN": 8.4, "AC-CNN (hashed)": 0.6}.get(label)})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--figures", default=",".join(FIGURES))
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--patience", type=int, default=3)
    ap.add_argument("--work", default="/tmp/adaptive_figures", help="the sweeps' folders (kept to resume)")
    ap.add_argument("--quick", action="store_true", help="one seed, one epoch, two points a figure")
    ap.add_argument("--out", default=None)
    ap.add_argument("--merge", nargs="*", help="pool figures run apart into adaptive_figures.json")
    a = ap.parse_args()
    if a.merge:
        path = common.write_merged("adaptive_figures", a.merge, out=a.out)
        doc = json.loads(path.read_text())
        plot([r for r in doc["rows"] if "figure" in r], path.with_suffix(".png"))
        return
    common.require_out(a, a.quick or a.figures != ap.get_default("figures"))
    if a.quick:
        a.seeds, a.epochs = 1, 1
        for name, (option, grid, models) in FIGURES.items():
            FIGURES[name] = (option, grid[:2], models)
    work = Path(a.work) / ("quick" if a.quick else "full")
    work.mkdir(parents=True, exist_ok=True)
    data = ag_news_split(work)
    rows = []
    for name in a.figures.split(","):
        rows += figure_rows(name, a.seeds, data, work, a.epochs, a.patience)
    rows += spread_rows(rows)
    notes = ("Validation accuracy (best epoch) of each trial of `adaptext sweep --grid OPTION=... seed=1,2,3`; "
             f"at most {a.epochs} epochs, patience {a.patience}; 50-d GloVe subset non-static, words seen once "
             "dropped; every other option the model's registry default (ac_* hashed: pool 20, 5 importance "
             "parameters, GRU context). AG News: its 7,600-text test split cut into 5,600 / 1,000 / 1,000 "
             "(stratified, seed 0); the paper uses Yahoo Answers." + common.quick_note(a.quick))
    path = common.write("adaptive_figures", rows, notes, a.out)
    plot([r for r in rows if "figure" in r], path.with_suffix(".png"))
    print(path.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
