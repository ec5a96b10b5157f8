"""Bradbury et al. (2017), Section 3.1 on IMDB: a densely connected 4-layer QRNN (256 units,
window 2, dropout 0.3, L2 4e-6, batches of 24) against the same-size densely connected LSTM.
The lecture's slide: QRNN 91.4 / LSTM 90.9 test accuracy, 150 s / 480 s per epoch (on a GPU).

    python benchmarks/qrnn_imdb.py                      # speed and accuracy, 3 seeds
    python benchmarks/qrnn_imdb.py --parts speed        # seconds per epoch only
    python benchmarks/qrnn_imdb.py --parts accuracy --models qrnn --seed 2 --vectors glove --out S.json
    python benchmarks/qrnn_imdb.py --merge a.json b.json ...      # pool slices (one seed, one model each)

speed: training seconds per step over ``--steps`` steps after ``--warmup`` (both models in this
process, one after the other), times the steps of an IMDB epoch (25,000 / 24): seconds per
epoch and the LSTM / QRNN ratio. accuracy: each model trained ``--epochs`` epochs per seed (dev
held out of train, best dev epoch), IMDB test accuracy; ``--vectors glove`` starts from the 50-d
GloVe subset (fine-tuned) instead of random 300-d embeddings, ``--vectors minilm`` from the
packaged MiniLM's word vectors (``--embeddings transformer --pca-dim 300``)."""
from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path

import common  # noqa: E402

MODELS = ("qrnn", "lstm")
PARTS = "speed,accuracy"
PAPER = {"qrnn": {"accuracy": 91.4, "seconds_per_epoch": 150}, "lstm": {"accuracy": 90.9, "seconds_per_epoch": 480}}
SIZE = {"layers": 4, "hidden": 256, "dense": True, "embed_dim": 300, "max_length": 400}


def seconds_per_step(model: str, steps: int, warmup: int, device: str) -> float:
    """Mean seconds of training steps ``warmup + 1 .. warmup + steps`` on IMDB train batches (the
    run is stopped there: its evaluation is not what is timed)."""
    import processes
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        flags = [f"--{k.replace('_', '-')}" if v is True else f"--{k.replace('_', '-')}={v}" for k, v in SIZE.items()]
        cmd = [*processes.ADAPTEXT, "train", "--model", model, "--data", "imdb", "--data-dir", str(common.DATA), *flags,
               "--max-vocab", "50000", "--accelerator", device, "--log-every", "1", "--no-progress",
               "--max-steps", str(warmup + steps + 1), "--out", str(run)]
        processes.run_measured(cmd, dict(os.environ), until=lambda: len(processes.steps(run)) >= warmup + steps)
        rows = processes.steps(run)
    at = {int(r["step"]): float(r["seconds"]) for r in rows}
    return (at[warmup + steps] - at[warmup]) / steps


def speed_rows(steps: int, warmup: int, device: str) -> list[dict]:
    per_epoch = math.ceil(22_500 / 24)                       # 25,000 less the 10% held out as dev
    measured = {m: seconds_per_step(m, steps, warmup, device) * per_epoch for m in MODELS}
    return [{"model": m, "variant": "dense, 4 x 256", "dataset": "imdb", "metric": "seconds_per_epoch",
             "mean": round(measured[m], 1), "paper": PAPER[m]["seconds_per_epoch"], "baseline": "qrnn",
             "ratio": round(measured[m] / measured["qrnn"], 2), "n": steps} for m in MODELS]


# --vectors: the first layer's start. minilm: the packaged MiniLM's contextual means over the training texts,
# PCA to the paper's 300 dimensions (where the encoder is not installed: --vectors-from, a file of them written
# by derived_vectors.py)
VECTORS = {"random": {}, "glove": {"embeddings": str(common.GLOVE)},
           "minilm": {"embeddings": "transformer", "pca_dim": 300}}


def accuracy_rows(models: list[str], seeds: list[int], epochs: int, device: str, vectors: str,
                  keep: Path | None = None, vectors_from: Path | None = None) -> list[dict]:
    """``keep``: the folder of the run directories (a killed slice resumes its runs), else temporary ones.
    ``vectors_from``: the ``vectors`` read from this file instead."""
    rows = []
    start = {"embeddings": str(vectors_from)} if vectors_from else VECTORS[vectors]
    size = SIZE if vectors == "random" else {k: v for k, v in SIZE.items() if k != "embed_dim"}   # the vectors' dim
    for m in models:
        values, seconds = [], []
        for seed in seeds:
            # an epoch is most of an hour on a CPU: checkpoints every 100 steps let a killed slice lose little
            metrics = common.train_cell({"model": m, "data": "imdb", **size, **start, "epochs": epochs,
                                         "seed": seed, "accelerator": device, "max_vocab": 50000,
                                         "checkpoint_every": 100},
                                        keep=keep / common.run_name(m, vectors, "imdb", seed) if keep else None)
            values.append(metrics["test"]["accuracy"])
            seconds.append(metrics["info"]["train_seconds"])     # summed over a killed run's resumes
        rows.append({"model": m, "variant": f"dense, 4 x 256, {vectors} vectors", "dataset": "imdb", "split": "test",
                     "metric": "accuracy", **common.stats(values), "seeds": seeds, "paper": PAPER[m]["accuracy"],
                     "seconds": round(sum(seconds) / len(seconds), 1)})
    return rows


def add_arguments(ap):
    """This table's options (common.script_main adds --out, --merge, --note and --notes)."""
    ap.add_argument("--parts", default=PARTS)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0, help="run this one seed only (for parallel runs, then --merge)")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--vectors", choices=sorted(VECTORS), default="random")
    ap.add_argument("--vectors-from", type=Path, default=None,
                    help="a file of the --vectors (derived_vectors.py) for a machine without their encoder")
    ap.add_argument("--keep", type=Path, default=None, help="keep the accuracy runs here (a rerun resumes them)")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--steps", type=int, default=40, help="timed training steps per model")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--merge", nargs="*", help="pool result files of slices into one")


def is_slice(a):
    return a.quick or a.seed or a.parts != PARTS or a.models != ",".join(MODELS)


def table_rows(a) -> None:
    """Measure the parts the options ``a`` ask for and write the table, printing its markdown."""
    if a.quick:
        a.seeds, a.epochs, a.steps, a.warmup = 1, 1, 3, 1
    rows = []
    if "speed" in a.parts:
        rows += speed_rows(a.steps, a.warmup, a.device)
    if "accuracy" in a.parts:
        seeds = [a.seed] if a.seed else list(range(1, a.seeds + 1))
        rows += accuracy_rows(a.models.split(","), seeds, a.epochs, a.device, a.vectors, a.keep, a.vectors_from)
    notes = (f"Texts cut at {SIZE['max_length']} tokens, vocabulary the 50,000 most frequent training words, Adam "
             f"1e-3. Speed rows: random 300-d embeddings. Accuracy rows: random 300-d embeddings ('random vectors') "
             f"or the 50-d GloVe subset ('glove vectors') or the packaged MiniLM's contextual word means over the "
             f"training texts, PCA to 300 dimensions ('minilm vectors'), fine-tuned; at most {a.epochs} epochs, the "
             f"best dev epoch's weights tested. Seconds of an accuracy row: training time per seed, dev passes "
             f"included. Paper columns: the lecture slide's figures (a GPU); ours on {a.device}."
             + common.quick_note(a.quick))
    notes = f"{notes} {a.note}".rstrip()
    print(common.write("qrnn_imdb", rows, notes, a.out).with_suffix(".md").read_text())


def main() -> None:
    common.script_main("qrnn_imdb", add_arguments, table_rows, is_slice, description=__doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
