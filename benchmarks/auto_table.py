"""``adaptext auto`` on MR (one stratified fold), SUBJ (one fold), TREC and SST-2 sentences at
``--time 30m --min-speed 25x`` (SST-2 and MR also at 2h), beside the two peers a user tries first,
in the same run: TF-IDF (word 1-2-grams, sublinear tf) with logistic regression, C chosen on dev;
and fastText's autotune (``fasttext-numpy2-wheel``), given the wall time auto's baselines took.
One row per (dataset, budget, candidate): test accuracy, the teacher's, and every candidate's
sentences/s with its ratio to the teacher's, as auto's throughput pass measured them.

    python benchmarks/auto_table.py                                   # every cell: hours of CPU
    python benchmarks/auto_table.py --datasets trec --budgets 3m --out /tmp/auto_smoke.json   # a smoke run
    python benchmarks/auto_table.py --merge trec.json sst2.json ...     # pool cells run apart

With ``--unlabeled FILE`` auto is also given a file of unlabelled in-domain texts (one a line): its
rows carry a ``condition`` naming the file, beside the rows of the cells run without one.
"""
from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common  # noqa: E402

CELLS = {"mr": ("30m", "2h"), "subj": ("30m",), "trec": ("30m",), "sst2": ("30m", "2h")}
C_GRID = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
BASELINES = ("baseline",)                # auto's roles whose training time fastText autotune is given


def args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default=",".join(CELLS), help="comma-separated, of " + ", ".join(CELLS))
    ap.add_argument("--budgets", default=None, help="comma-separated budgets for every dataset (default: the table's)")
    ap.add_argument("--min-speed", default="25x")
    ap.add_argument("--threads", default=None, help="auto's --threads (default: as adaptext train chooses)")
    ap.add_argument("--keep", default=None, help="a folder to keep auto's runs in (default: a temporary one)")
    ap.add_argument("--unlabeled", default=None, help="auto's --unlabeled for every cell: unlabelled in-domain texts")
    ap.add_argument("--out", default=None)
    ap.add_argument("--merge", nargs="*", help="pool result files of this script (cells run apart) into --out instead")
    a = ap.parse_args()
    common.require_out(a, a.datasets != ",".join(CELLS) or a.budgets)
    return a


# ------------------------------------------------------------------ the splits, as files auto and the peers read
def auto_data(dataset: str, train, dev, test, folder: Path) -> list[str]:
    """auto's data options: a named set as it is; a folded one as its fold's files."""
    if dataset not in common.FOLDED:
        return ["--data", dataset, "--data-dir", str(common.DATA)]
    return [arg for key, path in common.split_files((train, dev, test), folder).items() for arg in (f"--{key}", path)]


# ------------------------------------------------------------------ the peers
def tfidf_lr(train, dev, test) -> tuple[float, float, float]:
    """(test accuracy, the C chosen on dev, seconds) of TF-IDF word 1-2-grams + logistic regression."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    started = time.perf_counter()
    vec = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=1)
    x = vec.fit_transform([ex.text for ex in train])
    fits = {c: LogisticRegression(C=c, max_iter=2000).fit(x, [ex.label for ex in train]) for c in C_GRID}
    score = {c: m.score(vec.transform([ex.text for ex in dev]), [ex.label for ex in dev]) for c, m in fits.items()}
    best = max(C_GRID, key=lambda c: (score[c], -c))
    acc = fits[best].score(vec.transform([ex.text for ex in test]), [ex.label for ex in test])
    return 100 * acc, best, time.perf_counter() - started


def fasttext_autotune(train, dev, test, seconds: float, folder: Path) -> tuple[float, float]:
    """(test accuracy, seconds) of fastText's autotune on dev within ``seconds``."""
    import fasttext
    from adaptext.data.text import Tokenizer
    tok = Tokenizer()

    def write(examples, name):
        path = folder / name
        # fastText's SGD reads the file in order: MR and SUBJ are sorted by label
        rows = random.Random(1).sample(examples, len(examples))
        path.write_text("".join(f"__label__{str(ex.label).replace(' ', '_')} {' '.join(tok(ex.text))}\n"
                                for ex in rows))
        return str(path)
    started = time.perf_counter()
    model = fasttext.train_supervised(input=write(train, "ft.train"), autotuneValidationFile=write(dev, "ft.dev"),
                                      autotuneDuration=max(int(seconds), 10), thread=2, verbose=0)
    pred = [model.predict(" ".join(tok(ex.text)))[0][0][len("__label__"):] for ex in test]
    acc = sum(p == str(ex.label).replace(" ", "_") for p, ex in zip(pred, test)) / len(test)
    return 100 * acc, time.perf_counter() - started


# ------------------------------------------------------------------ one cell
def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_auto(dataset: str, budget: str, a, folder: Path, data: list[str]) -> tuple[dict, dict, float]:
    out = folder / f"auto-{budget}"
    command = [sys.executable, "-m", "adaptext.cli", "auto", *data, "--time", budget, "--min-speed", a.min_speed,
               "--out", str(out)] + (["--threads", a.threads] if a.threads else []) + \
        (["--unlabeled", a.unlabeled] if a.unlabeled else [])
    started = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    wall = time.perf_counter() - started
    return json.loads(done.stdout), json.loads((out / "auto.json").read_text()), wall


def cell_rows(dataset: str, budget: str, state: dict, peers: dict, given: dict) -> list[dict]:
    """The rows of one (dataset, budget): test accuracy by role, and every candidate's speed
    (``given``: what auto was given beyond the labelled data, on every row)."""
    base = {"dataset": dataset, "budget": budget, **given, "split": "test", "metric": "accuracy", "n": 1}
    rows, done = [], [c for c in state["candidates"] if c["status"] == "done"]
    for c in done:
        role = "auto winner" if c["name"] == state["winner"] else "teacher" if c["name"] == "transformer" else c["name"]
        rows.append({**base, "model": c["model"], "variant": role, "candidate": c["name"], "mean": round(c["test"], 2),
                     "dev": round(c["dev"], 2), "seconds": c["train_s"]})
        if c["name"] == state["winner"] and c["name"] == "transformer":
            rows.append({**rows[-1], "variant": "teacher"})
    for variant, (acc, seconds) in peers.items():
        rows.append({**base, "model": variant.split(" ")[0].lower(), "variant": variant, "mean": round(acc, 2),
                     "seconds": round(seconds, 1)})
    for c in done:
        if c.get("speed"):
            against = {"baseline": "transformer", "ratio": c["ratio"]} if c.get("ratio") else {}
            rows.append({"model": c["model"], "variant": "auto winner" if c["name"] == state["winner"] else c["name"],
                         "candidate": c["name"], "dataset": dataset, "budget": budget, **given,
                         "metric": "sentences_per_s",
                         "mean": c["speed"], "n": 1, **against})
    return rows


def cell(dataset: str, budget: str, a, root: Path) -> tuple[list[dict], str]:
    folder = root / dataset
    folder.mkdir(parents=True, exist_ok=True)
    train, dev, test = common.fold_split(dataset)          # MR and SUBJ: fold 1 of 10 as the test split
    result, state, wall = run_auto(dataset, budget, a, folder, auto_data(dataset, train, dev, test, folder))
    baselines = sum(c["train_s"] or 0 for c in state["candidates"] if c["status"] == "done" and c["role"] in BASELINES)
    say(f"{dataset} {budget}: auto chose {result['winner']} in {wall:.0f} s; TF-IDF + logistic regression next")
    acc, c_best, lr_s = tfidf_lr(train, dev, test)
    say(f"{dataset} {budget}: TF-IDF + logistic regression {acc:.2f} in {lr_s:.0f} s; fastText autotune for "
        f"{baselines:.0f} s next")
    peers = {"tf-idf + logistic regression": (acc, lr_s),
             "fastText autotune": fasttext_autotune(train, dev, test, baselines, folder)}
    say(f"{dataset} {budget}: fastText autotune {peers['fastText autotune'][0]:.2f} in "
        f"{peers['fastText autotune'][1]:.0f} s")
    # the count auto read of the file, as its summary of the data keeps it
    given = {"condition": f"--unlabeled {Path(a.unlabeled).name} ({state['data']['unlabeled']:,} texts)"} \
        if a.unlabeled else {}
    rows = cell_rows(dataset, budget, state, peers, given)
    ratio = f"{result['ratio_to_teacher']}x the teacher" if result.get("ratio_to_teacher") else "no teacher trained"
    note = (f"{dataset} {budget}: winner {result['winner']} ({ratio}, floor met: {result['floor_met']}), auto's wall time {wall:.0f} s of {state['budget_s']:.0f} s; logistic "
            f"regression C={c_best:g}; fastText autotune given {baselines:.0f} s (auto's baselines' training).")
    return rows, note


def main() -> None:
    a = args()
    if a.merge:
        print(common.write_merged("auto_table", a.merge, out=a.out))
        return
    rows, notes = [], []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(a.keep or tmp)
        for dataset in a.datasets.split(","):
            for budget in (a.budgets.split(",") if a.budgets else CELLS[dataset]):
                got, note = cell(dataset, budget, a, root)
                rows += got
                notes.append(note)
    threads = f"--threads {a.threads}" if a.threads else "the default threads"
    notes.append(f"adaptext auto --min-speed {a.min_speed} {threads} in a fresh process per cell; throughput is auto's own pass (every finished run and the teacher together, "
                 f"interleaved rounds, one thread, CPU time); ratio: over the teacher's in that pass. MR and SUBJ: "
                 f"fold 1 of 10 stratified folds (seed 0) as test, 10% of the rest as dev.")
    print(common.write("auto_table", rows, " ".join(notes), a.out))


if __name__ == "__main__":
    main()
