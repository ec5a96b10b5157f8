"""Accuracy against CPU throughput: every registered text model (and the tree models, which
now read plain text through the shipped parser), the fine-tuned transformer, the students distilled
from it, and fastText, on SST-2 and TREC, as a plot and a table.

    python benchmarks/frontier.py                  # benchmarks/results/frontier.{json,md,png}
    python benchmarks/frontier.py --quick --out /tmp/f.json
    python benchmarks/frontier.py --replot benchmarks/results/frontier.json    # the plot only, again

Accuracy is each model's test accuracy as its own table measured it (mean over that table's
seeds; the source file is named in each row), so every model keeps the training its paper
prescribes. Throughput is measured here, in one run: a model's speed does not depend on its
weights, so each configuration is built with its table's options, trained one step on the
dataset (its vocabulary, its vectors), and timed in a process of its own beside the teacher, as
``adaptext auto`` times its candidates: both predicting the first 1,000 test sentences (TREC: its
500), batch 64, one torch thread, by the process's CPU time, in 3 interleaved rounds, the median.
Each point's ratio is to the teacher timed in its own process, so a slow spell of the machine moves
a point and its teacher alike (timed apart, by wall clock at 2 threads, the same 64-unit BiLSTM once
read 29.8x and 46.6x the teacher in one run). A tree model's time includes parsing each sentence (the
parse cache emptied before every pass). fastText is trained on the shuffled training file and timed
on the same sentences.

A whole run takes more than an hour: each point's speeds are appended to OUT.progress.jsonl once timed,
and the same command started again after a cut goes on from the next point.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import tempfile
from functools import partial
from pathlib import Path

import cells  # noqa: E402
import common  # noqa: E402

KIM = {"embeddings": str(common.GLOVE), "embedding_mode": "non-static"}
TREE_DATA = {"sst2": "sst2-trees", "trec": "trec"}      # tree models train on trees, TREC parsed
ROUNDS = 3                                               # interleaved passes of a point and the teacher
BASELINE = "transformer (MiniLM-L6)"                     # the teacher every point is timed beside
# the phrase teachers, their ensemble and its students (benchmarks/logits_students.py --teacher RUN1,RUN2,RUN3)
PHRASES = "distill_phrases"
PIECES = "logits_students_pieces"      # the same ensemble's students over MiniLM's word pieces
PIECES_IMDB = "logits_students_pieces_imdb"     # the seed-1 teacher's over the same and 50,000 IMDB sentences
# distilled students: (distill_table's student name, label, the table holding its SST-2 rows, its TREC
# rows); the convolutional students' TREC rows are distill_trec_mask's, distilled with the teacher
# reading its own mask token, as every recurrent student was; the recurrent students' TREC rows are
# distill_a40's, over 40 augmented copies of each question
DISTILLED = (("kim_cnn", "kim_cnn distilled", "distill_table", "distill_trec_mask"),
             ("ac_cnn", "ac_cnn distilled", "distill_students", "distill_trec_mask"),
             ("ac_cnn-attention", "ac_cnn (attention-only) distilled", "distill_students", "distill_trec_mask"),
             ("attconv", "attconv (light) distilled", "distill_students_seed1", "distill_trec_mask"),
             ("bilstm", "BiLSTM (1 layer) distilled", "distill_recurrent", "distill_a40"),
             ("biqrnn", "QRNN (1 layer, bidirectional) distilled", "distill_recurrent", "distill_a40"),
             ("bilstm-64", "BiLSTM (1 layer, 64 units) distilled", "distill_sst2_a40", "distill_a40"))


def distilled_note() -> str:
    """Where the distilled students' accuracies come from, as ``DISTILLED`` says."""
    def sources(column: int) -> str:
        tables: dict = {}
        for row in DISTILLED:
            tables.setdefault(row[column], []).append(row[0])
        return "; ".join(f"{t} ({', '.join(s)})" for t, s in tables.items())
    return (f"Distilled students: SST-2 from {sources(2)}; TREC from {sources(3)}. The convolutional and "
            f"attentive students' SST-2 rows were distilled before the masking fix (the teacher reading its own "
            f"[MASK]), the others after it; the recurrent students' SST-2 rows are one seed (the 64-unit "
            f"BiLSTM's over 40 augmented copies of each sentence, the others over 10); their TREC rows over 40 "
            f"copies of each question (the other students': 10).")


def cell(table: list[dict], model: str, label: str) -> dict:
    """The options a table trains ``model`` / ``label`` with (``table``: its cells, from cells.py)."""
    (found,) = [c for c in table if c["model"] == model and c["label"] == label]
    return {k: v for k, v in found.items() if k not in ("label", "datasets")}


def points() -> list[dict]:
    """label, train options, and where its accuracy was measured: [(result file, model, variant)]."""
    def both(name, model, variant):
        return {"sst2": [(name, model, variant)], "trec": [(name, model, variant)]}
    pts = [{"label": "kim_cnn (rand)", "options": {"model": "kim_cnn"}, "acc": both("kim_table", "kim_cnn", "rand")},
           {"label": "kim_cnn (non-static)", "options": {"model": "kim_cnn", **KIM},
            "acc": both("kim_table", "kim_cnn", "non-static")}]
    for model, label in (("ac_cnn", "hashed"), ("ac_cnn", "full"), ("dpcnn", "-"), ("ac_dpcnn", "hashed"),
                         ("densecnn", "-"), ("ac_densecnn", "hashed")):
        pts.append({"label": model + (f" ({label})" if label != "-" else ""),
                    "options": cell(cells.ADAPTIVE_CELLS, model, label), "acc": both("adaptive_table", model, label)})
    for model in ("bov", "dcnn", "qrnn", "gated_cnn", "lightconv", "dynamicconv", "fcn"):
        pts.append({"label": model, "options": cell(cells.ENCODER_CELLS, model, "-"),
                    "acc": both("encoder_table", model, "-")})
    for variant in ("light", "advanced"):
        pts.append({"label": f"attconv ({variant})", "options": cell(cells.ATTCONV_CELLS, "attconv", variant),
                    "acc": {"sst2": [("attconv_table", "attconv", variant)]}})
    for model, label in (("recnn", "-"), ("treelstm", "-"), ("tg_hrecnn", "concat"), ("tg_hrecnn", "multi"),
                         ("tg_htreelstm", "concat"), ("tg_htreelstm", "multi")):
        pts.append({"label": model + (f" ({label})" if label != "-" else ""), "tree": True,
                    "options": cell(cells.TREE_CELLS, model, label), "acc": both("tree_table", model, label)})
    pts.append({"label": BASELINE, "options": dict(cells.TEACHER),
                "acc": both("distill_table", "transformer", "teacher")})
    for student, label, sst2, trec in DISTILLED:
        options, suffix = cells.STUDENTS[student]
        model, variant = options.get("model", student), "distilled" + suffix
        pts.append({"label": label, "options": {"model": model, **options},
                    "acc": {"sst2": [(sst2, model, variant)], "trec": [(trec, model, variant)]}})
    # the BiLSTM-64 distilled from three phrase-trained teachers over the training trees' phrases (SST-2 only)
    options, _ = cells.STUDENTS["bilstm-64"]
    pts.append({"label": "BiLSTM (1 layer, 64 units) distilled, phrases, 3 teachers", "options": dict(options),
                "acc": {"sst2": [("distill_ensemble", "lstm", "distilled, + SST phrases, 3-teacher ensemble, "
                                                               "one-layer BiLSTM (64 a direction)")]}})
    return pts + phrase_points() + [
        {"label": "fastText (bigrams)", "fasttext": True, "acc": both("kim_table", "fasttext", "bigrams")}]


def phrase_points() -> list[dict]:
    """SST-2's phrase teachers (trained on the training trees' labelled phrases), their 3-teacher
    ensemble (timed as three teachers reading every sentence) and the BiLSTMs distilled from the
    seed-1 teacher's and the ensemble's logits files, as ``PHRASES`` recorded them, and over MiniLM's
    word pieces, as ``PIECES`` did, and the seed-1 teacher's with 50,000 IMDB sentences, as ``PIECES_IMDB`` did."""
    pts = [{"label": "transformer (MiniLM-L6), SST phrases", "options": dict(cells.TEACHER),
            "acc": {"sst2": [(PHRASES, "transformer", "teacher")]}},
           {"label": "3 phrase teachers (ensemble)", "options": dict(cells.TEACHER), "members": 3,
            "acc": {"sst2": [(PHRASES, "transformer", "teacher ensemble (3 runs)")]}}]
    options, _ = cells.STUDENTS["bilstm-64"]
    for hidden, logits, teachers in ((64, "seed1", "1 teacher"), (128, "seed1", "1 teacher"),
                                     (64, "ensemble3", "3 teachers")):
        variant = (f"from sst2-phrases-aug10-{logits}, one-layer BiLSTM ({hidden} a direction), learning rate "
                   f"decayed linearly to 0")
        pts.append({"label": f"BiLSTM (1 layer, {hidden} units) distilled, phrases and copies, {teachers}",
                    "options": {**options, "hidden": hidden}, "acc": {"sst2": [(PHRASES, "lstm", variant)]}})
    # the same student reading MiniLM's word pieces through its fixed input vectors (adaptext auto's first student)
    variant = ("from sst2-phrases-aug10-ensemble3, one-layer BiLSTM (64 a direction) over MiniLM's word pieces and "
               "fixed input vectors, learning rate decayed linearly to 0")
    pts.append({"label": "BiLSTM (1 layer, 64 units) over word pieces distilled, phrases and copies, 3 teachers",
                "options": dict(cells.STUDENTS["bilstm-64-minilm"][0]), "acc": {"sst2": [(PIECES, "lstm", variant)]}})
    imdb = variant.replace("sst2-phrases-aug10-ensemble3", "sst2-phrases-imdb50k-aug10-seed1")
    pts.append({"label": "BiLSTM (1 layer, 64 units) over word pieces distilled, phrases, copies and IMDB, 1 teacher",
                "options": dict(cells.STUDENTS["bilstm-64-minilm"][0]), "acc": {"sst2": [(PIECES_IMDB, "lstm", imdb)]}})
    return pts


def recorded_accuracy(sources: list, dataset: str) -> dict | None:
    """The test accuracies the sources recorded on ``dataset``, pooled over their seeds."""
    values, files = [], []
    for name, model, variant in sources:
        doc = json.loads((common.RESULTS / f"{name}.json").read_text())
        for r in doc["rows"]:
            if (r["model"], r.get("variant"), r["metric"]) == (model, variant, "accuracy") and \
                    r.get("split", "test") == "test" and r["dataset"] == dataset:
                values += r.get("values", [r["mean"]])
                files.append(f"{name}.json")
    return {**common.stats(values), "source": ", ".join(dict.fromkeys(files))} if values else None


def build(point: dict, dataset: str, work: Path) -> Path:
    """The point's configuration trained one step on ``dataset`` (its vocabulary, its vectors): a run to time."""
    from adaptext.training.run import train_run
    data = TREE_DATA[dataset] if point.get("tree") else dataset
    run = work / f"{point['label']}-{dataset}".replace(" ", "_").replace("(", "").replace(")", "")
    if not (run / "model.safetensors").is_file():
        train_run({**point["options"], "data": data, "data_dir": str(common.DATA), "max_steps": 1, "out": str(run),
                   "progress": False, "threads": 2}, log=lambda *_: None)
    return run


class Passes:
    """A point as ``adaptext.auto.speed.measure`` times it: ``predict`` makes the point's whole pass over
    the texts (an ensemble's members each, a tree model's parses afresh: the cache emptied first)."""

    def __init__(self, predict, members: int = 1, forget=lambda: None):
        self.one, self.members, self.forget = predict, members, forget

    def predict(self, texts: list[str], batch_size: int) -> None:
        self.forget()
        for _ in range(self.members):
            self.one(texts, batch_size=batch_size)


def model_speed(point: dict, dataset: str, texts: list[str], work: Path, teacher: Path) -> tuple[float, float]:
    """(the point's sentences/s, the teacher's), timed interleaved in this process."""
    import adaptext
    run = build(point, dataset, work)
    clf = adaptext.load(run)
    parses = Path(os.environ["ADAPTEXT_CACHE"]) / "parses"
    forget = (lambda: shutil.rmtree(parses, ignore_errors=True)) if point.get("tree") else (lambda: None)
    speeds = beside_teacher(Passes(clf.predict, point.get("members", 1), forget), texts, teacher)
    if run != teacher:                   # a teacher's folder is 90 MB: only the one every point is timed beside stays
        shutil.rmtree(run, ignore_errors=True)
    return speeds


def beside_teacher(model: Passes, texts: list[str], teacher: Path) -> tuple[float, float]:
    """The model's sentences/s and the teacher's, timed as ``adaptext auto`` times its candidates: one
    torch thread, the process's CPU time, ``ROUNDS`` rounds interleaved, the median."""
    import torch

    import adaptext
    from adaptext.auto.speed import measure
    torch.set_num_threads(1)
    got = measure({"point": model, "teacher": adaptext.load(teacher)}, texts, ROUNDS)
    return got["point"], got["teacher"]


def isolated(measure, *args) -> tuple[float, float]:
    """``measure(*args)`` in a fresh process: a point's speed must not depend on the models timed
    before it (in one long process the one-layer QRNN once read 4,836 sentences/s on SST-2, in a
    fresh one 10,500, the same configuration)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(measure, *args).result()


def fasttext_speed(dataset: str, texts: list[str], work: Path, teacher: Path) -> tuple[float, float]:
    import fasttext
    from adaptext.data.datasets import load_named
    from adaptext.data.text import Tokenizer
    tok = Tokenizer()
    train = load_named(dataset, str(common.DATA)).train
    train = random.Random(1).sample(train, len(train))
    path = work / "fasttext.txt"
    path.write_text("".join(f"__label__{ex.label.replace(' ', '_')} {' '.join(tok(ex.text))}\n" for ex in train))
    model = fasttext.train_supervised(str(path), wordNgrams=2, epoch=10, lr=0.5, dim=100, seed=1, thread=2, verbose=0)

    def predict(xs, batch_size):      # as adaptext's predict does: from raw text, tokenised, to a label per sentence
        return [model.predict(" ".join(tok(x))) for x in xs]
    return beside_teacher(Passes(predict), texts, teacher)


# a point further than this below the best accuracy of its panel sits on the panel's floor, its value
# in its label, so that one weak model does not squeeze the others together
FLOOR = 12.0


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    fig, axes = plt.subplots(1, len(datasets), figsize=(8 * len(datasets), 6), squeeze=False)
    for ax, ds in zip(axes[0], datasets):
        acc = {r["variant"]: r["mean"] for r in rows if r["dataset"] == ds and r["metric"] == "accuracy"}
        speed = {r["variant"]: r["mean"] for r in rows if r["dataset"] == ds and r["metric"] == "sentences_per_s"}
        names = [n for n in acc if n in speed]
        front = pareto(names, speed, acc)
        floor, y, texts = on_scale(acc)
        others = [n for n in names if n not in front]
        for members, style in ((others, dict(s=16, color="0.55")), (front, dict(s=30, color="tab:red"))):
            for marker, low in (("o", False), ("v", True)):
                sel = [n for n in members if (acc[n] < floor) == low]
                ax.scatter([speed[n] for n in sel], [y[n] for n in sel], marker=marker, zorder=3, **style)
        ax.plot([speed[n] for n in front], [y[n] for n in front], "--", lw=1, color="tab:red", label="frontier")
        ax.set_xscale("log")
        ax.set_ylim(floor - 1, max(acc.values()) + 2)
        ax.set_xlim(min(speed.values()) / 1.5, max(speed.values()) * 3)
        ax.set_xlabel("sentences per CPU second, one thread (batch 64, log scale)")
        ax.set_ylabel("test accuracy (%)")
        ax.set_title(ds)
        ax.legend(fontsize=8, loc="upper right")
        label_points(ax, names, speed, y, texts, set(front))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def on_scale(acc: dict) -> tuple[float, dict, dict]:
    """A panel's floor (``FLOOR`` below its best accuracy), each point's height (a point below the
    floor drawn on it) and its label (a point below the floor names its accuracy)."""
    floor = max(acc.values()) - FLOOR
    return (floor, {n: max(a, floor) for n, a in acc.items()},
            {n: n + (f" ({a:.1f}, off the scale)" if a < floor else "") for n, a in acc.items()})


def label_points(ax, names: list[str], speed: dict, y: dict, texts: dict, front: set) -> None:
    """Labels every point, moved by adjustText until no two labels and no label and marker overlap
    (a moved label keeps a line to its marker)."""
    from adjustText import adjust_text
    labels = [ax.text(speed[n], y[n], texts[n], **(dict(fontsize=8, fontweight="bold", color="tab:red")
                                                   if n in front else dict(fontsize=7, color="0.25")))
              for n in names]
    adjust_text(labels, x=[speed[n] for n in names], y=[y[n] for n in names], ax=ax,
                arrowprops=dict(arrowstyle="-", lw=0.5, color="0.6"))


def pareto(names: list[str], speed: dict, acc: dict) -> list[str]:
    """The models no other beats on both accuracy and speed, fastest first."""
    front, best = [], -1.0
    for n in sorted(names, key=lambda n: (-speed[n], -acc[n])):
        if acc[n] > best:
            front.append(n)
            best = acc[n]
    return front


def timed_so_far(progress: Path) -> dict:
    """The points a cut-short run already timed at this commit, as it wrote them to ``progress``:
    {(dataset, label): speeds} (a point timed at another commit is timed again: one run, one commit)."""
    lines = progress.read_text().splitlines() if progress.is_file() else []
    return {(d["dataset"], d["label"]): tuple(d["speeds"]) for d in map(json.loads, lines)
            if d.get("commit") == common.START_COMMIT}


def dataset_rows(dataset: str, pts: list[dict], work: Path, progress: Path) -> list[dict]:
    """The dataset's accuracy and speed rows; each point's speeds are appended to ``progress`` once timed,
    so a run cut short (an hour and more) goes on from the next point when started again."""
    texts = common.test_texts(dataset)
    rows, speeds, done = [], {}, timed_so_far(progress)
    for p in pts:
        acc = recorded_accuracy(p["acc"].get(dataset, []), dataset)
        if acc is None:
            continue
        if (dataset, p["label"]) not in done:
            teacher = build(next(t for t in pts if t["label"] == BASELINE), dataset, work)
            got = isolated(fasttext_speed if p.get("fasttext") else partial(model_speed, p),
                           dataset, texts, work, teacher)
            with progress.open("a") as f:
                f.write(json.dumps({"dataset": dataset, "label": p["label"], "speeds": got,
                                    "commit": common.START_COMMIT}) + "\n")
            done[dataset, p["label"]] = got
        speeds[p["label"]] = done[dataset, p["label"]]
        print(f"{dataset} {p['label']}: {acc['mean']:.2f}, {speeds[p['label']][0]:.0f} sentences/s, "
              f"{speeds[p['label']][0] / speeds[p['label']][1]:.1f}x the teacher", flush=True)
        rows.append({"model": p["options"]["model"] if "options" in p else "fasttext", "variant": p["label"],
                     "dataset": dataset, "split": "test", "metric": "accuracy", **acc})
    for r in [r for r in rows if r["metric"] == "accuracy"]:
        speed, beside = speeds[r["variant"]]
        rows.append({"model": r["model"], "variant": r["variant"], "dataset": dataset, "metric": "sentences_per_s",
                     "mean": round(speed, 1), "baseline": BASELINE, "ratio": round(speed / beside, 2)})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default="sst2,trec")
    ap.add_argument("--quick", action="store_true", help="three points on TREC: a check that the script runs")
    ap.add_argument("--out", default=None)
    ap.add_argument("--replot", metavar="JSON", help="draw the plot of a recorded frontier.json again (next to it, "
                    ".png), measuring nothing")
    a = ap.parse_args()
    if a.replot:
        plot(json.loads(Path(a.replot).read_text())["rows"], Path(a.replot).with_suffix(".png"))
        return
    common.require_out(a, a.quick or a.datasets != ap.get_default("datasets"))
    pts = points()
    if a.quick:
        a.datasets = "trec"
        pts = [p for p in pts if p["label"] in ("kim_cnn (rand)", "treelstm", BASELINE)]
    rows = []
    progress = Path(a.out or common.RESULTS / "frontier.json").with_suffix(".progress.jsonl")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["ADAPTEXT_CACHE"] = str(Path(tmp) / "cache")      # parses and stores of this run only
        for dataset in a.datasets.split(","):
            rows += dataset_rows(dataset, pts, Path(tmp), progress)
    notes = ("Accuracy: as recorded by each source table (its seeds; SST-2 tree rows from gold trees, kim_cnn "
             "non-static and rand from phrase-level training as Kim's table does); throughput: this run, one "
             "configuration per point as its table trains it, each in a fresh process beside the teacher, the first "
             "1,000 test sentences (TREC: 500), batch 64, one torch thread, CPU time, 3 rounds interleaved with the "
             "teacher's, the median; ratio: over the teacher's in the same process; tree models parse each sentence "
             "with the shipped bracketer inside the timing. Not placed: acnn (no SST-2 or TREC row in any table "
             "yet), the lstm undistilled, attconv on TREC (its table has no TREC column). " + distilled_note() +
             " SST-2's phrase teachers (3 seeds, trained on the training trees' labelled phrases), their ensemble "
             "(timed as three teacher passes over each sentence) and the BiLSTMs distilled from the seed-1 "
             "teacher's and the ensemble's logits over the sentences, 10 copies of each and the phrases: "
             f"{PHRASES}.json; from the ensemble's over MiniLM's word pieces and its fixed input vectors: "
             f"{PIECES}.json; from the seed-1 teacher's over the same texts and 50,000 IMDB training sentences: "
             f"{PIECES_IMDB}.json." + common.quick_note(a.quick))
    path = common.write("frontier", rows, notes, a.out)
    progress.unlink(missing_ok=True)
    plot(rows, path.with_suffix(".png"))
    print(path.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
