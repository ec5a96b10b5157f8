"""Students distilled from a file of teacher logits (``adaptext logits``), on a machine that need
not run the teacher: test accuracy of each student recipe over seeds, and the throughput of every
student beside the teacher's in one interleaved pass (the teacher run is needed only for that
row; CPU time per pass at one torch thread, the median of five rounds).

    adaptext logits RUN --data sst2 --unlabeled sst-train-phrases.txt --out benchmarks/logits/x.safetensors
    python benchmarks/logits_students.py --logits benchmarks/logits/x.safetensors --teacher RUN \\
        --students bilstm-64,bilstm-128 --seeds 1,2,3 --keep ~/runs/students

Several teacher runs (``--teacher RUN1,RUN2,RUN3``, the runs an ensemble's file was made from) each
give a test-accuracy row, and their ensemble one more: the mean of their logits over the test split,
as a student learns them; the first run is the throughput baseline.

The student runs are kept under --keep: a killed run resumes, a finished one is read back, and
the result file is rewritten after every run.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import common  # noqa: E402
from adaptext.auto.plan import PIECES as AUTO_PIECES

BILSTM = {"model": "lstm", "layers": 1, "bidirectional": True, "batch_size": 64, "alpha": 0.0, "epochs": 5}
# the encoder's word pieces through its own input vectors, kept fixed, as adaptext auto's first student
# reads them: a word the transfer set lacks still reaches the student as the teacher's encoder knows it
PIECES = {**AUTO_PIECES, "lr_schedule": "linear"}
STUDENTS = {
    "bilstm-64": ({**BILSTM, "hidden": 64}, "one-layer BiLSTM (64 a direction)"),
    "bilstm-128": ({**BILSTM, "hidden": 128}, "one-layer BiLSTM (128 a direction)"),
    "bilstm-64-2ep": ({**BILSTM, "hidden": 64, "epochs": 2}, "one-layer BiLSTM (64 a direction), 2 epochs"),
    "bilstm-64-8ep": ({**BILSTM, "hidden": 64, "epochs": 8}, "one-layer BiLSTM (64 a direction), 8 epochs"),
    "bilstm-64-linear": ({**BILSTM, "hidden": 64, "lr_schedule": "linear"},
                         "one-layer BiLSTM (64 a direction), learning rate decayed linearly to 0"),
    "bilstm-64-8ep-linear": ({**BILSTM, "hidden": 64, "epochs": 8, "lr_schedule": "linear"},
                             "one-layer BiLSTM (64 a direction), 8 epochs, learning rate decayed linearly to 0"),
    "bilstm-128-linear": ({**BILSTM, "hidden": 128, "lr_schedule": "linear"},
                          "one-layer BiLSTM (128 a direction), learning rate decayed linearly to 0"),
    "bilstm-128-kl2-linear": ({**BILSTM, "hidden": 128, "lr_schedule": "linear", "distill_loss": "kl",
                               "temperature": 2.0},
                              "one-layer BiLSTM (128 a direction), KL at temperature 2, learning rate decayed "
                              "linearly to 0"),
    # every GloVe word in the vocabulary: a test word the transfer set lacks keeps its vector
    "bilstm-64-glove-linear": ({**BILSTM, "hidden": 64, "lr_schedule": "linear", "embeddings": str(common.GLOVE),
                                "embedding_mode": "multichannel", "embedding_words": 400_000},
                               "one-layer BiLSTM (64 a direction) over GloVe 50-d multichannel with all its words, "
                               "learning rate decayed linearly to 0"),
    "pieces-64": ({**BILSTM, **PIECES, "hidden": 64},
                  "one-layer BiLSTM (64 a direction) over MiniLM's word pieces and fixed input vectors, learning "
                  "rate decayed linearly to 0"),
    "pieces-64-tuned": ({**BILSTM, **PIECES, "hidden": 64, "embedding_mode": "non-static"},
                        "one-layer BiLSTM (64 a direction) over MiniLM's word pieces, its input vectors tuned, "
                        "learning rate decayed linearly to 0"),
    "pieces-96": ({**BILSTM, **PIECES, "hidden": 96},
                  "one-layer BiLSTM (96 a direction) over MiniLM's word pieces and fixed input vectors, learning "
                  "rate decayed linearly to 0"),
    "pieces-128": ({**BILSTM, **PIECES, "hidden": 128},
                   "one-layer BiLSTM (128 a direction) over MiniLM's word pieces and fixed input vectors, learning "
                   "rate decayed linearly to 0"),
    # a small set's transfer set (TREC's 40 copies) is read for more epochs, as auto's richer recipes do
    "pieces-64-8ep": ({**BILSTM, **PIECES, "hidden": 64, "epochs": 8},
                      "one-layer BiLSTM (64 a direction) over MiniLM's word pieces and fixed input vectors, 8 epochs, "
                      "learning rate decayed linearly to 0"),
    "pieces-128-8ep": ({**BILSTM, **PIECES, "hidden": 128, "epochs": 8},
                       "one-layer BiLSTM (128 a direction) over MiniLM's word pieces and fixed input vectors, 8 "
                       "epochs, learning rate decayed linearly to 0"),
}


def args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--logits", help="a file of teacher logits (adaptext logits)")
    ap.add_argument("--merge", nargs="*", help="pool result files of this script (other files, students or seeds) "
                                               "into --out instead")
    ap.add_argument("--teacher", help="the teacher run, or the ensemble's runs comma-separated: their test accuracy "
                                      "and the first one's throughput as the baseline (else no teacher rows)")
    ap.add_argument("--students", default="bilstm-64")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--threads", type=int, default=1, help="torch threads of each student's training")
    ap.add_argument("--accelerator", default="cpu", help="where the students train (throughput is always measured "
                                                       "on the CPU, where --teacher is given)")
    ap.add_argument("--keep", type=Path, default=Path.home() / ".cache" / "adaptext" / "runs" / "logits_students")
    ap.add_argument("--unlabeled", default=None, help="the file of the transfer set's unlabelled texts, where it "
                    "lies elsewhere than the path the logits file names")
    ap.add_argument("--out", default=None)
    ap.add_argument("--note", default="", help="a sentence added to the notes (what the transfer set's files are)")
    return ap.parse_args()


def student(name: str, seed: int, a) -> dict:
    from adaptext.runs.rundir import RunDir, RunState
    from adaptext.training.run import distill_run, trained
    options, _ = STUDENTS[name]
    run = RunDir(a.keep / f"{name}-seed{seed}")
    opts = {**options, "teacher_logits": str(Path(a.logits).resolve()), "seed": seed, "threads": a.threads,
            "accelerator": a.accelerator, "progress": False, "out": str(run.path)}
    if a.unlabeled:
        opts["unlabeled"] = a.unlabeled
    if run.state is not RunState.NEW:          # finished: read back; cut short: resumed
        return trained(run, opts, log=lambda m: None)
    return distill_run([], opts, log=lambda m: print(m, file=sys.stderr, flush=True))


def teacher_rows(teacher: str | None, data: str) -> list[dict]:
    """Test accuracy on the named dataset ``data`` of each run of ``teacher`` (comma-separated;
    as the run recorded it) and of their ensemble (the mean of their logits over the test split,
    as a student learns them; the cached ones reused)."""
    from adaptext.data.datasets import load_named
    from adaptext.training.distill import teacher_logits, teachers_of
    runs = teachers_of(teacher or "")
    if not runs:
        return []
    dataset = Path(data).stem
    accs = [json.loads((Path(r) / "metrics.json").read_text())["test"]["accuracy"] for r in runs]
    model = json.loads((Path(runs[0]) / "config.json").read_text())["model"]["name"]
    rows = [{"model": model, "variant": "teacher", "dataset": dataset, "split": "test", "metric": "accuracy",
             **common.stats(accs)}]
    if len(runs) > 1:
        test = load_named(data, str(common.DATA)).test
        labels = json.loads((Path(runs[0]) / "labels.json").read_text())["labels"]
        logits = teacher_logits(",".join(runs), test, labels, log=lambda m: None)
        right = [labels[int(i)] == ex.label for i, ex in zip(logits.argmax(1), test)]
        rows.append({"model": model, "variant": f"teacher ensemble ({len(runs)} runs)", "dataset": dataset,
                     "split": "test", "metric": "accuracy", **common.stats([100 * sum(right) / len(right)])})
    return rows


def rows_of(results: dict, a, speeds: dict, teachers: list[dict]) -> list[dict]:
    """The teachers' rows, then each student's test accuracy over its seeds, then the speeds."""
    data = file_options(a.logits)[1].get("data", "-")
    rows = list(teachers)
    for name, metrics in results.items():
        accs = [m["test"]["accuracy"] for m in metrics]
        rows.append({"model": STUDENTS[name][0]["model"], "variant": f"from {Path(a.logits).stem}, {STUDENTS[name][1]}",
                     "dataset": Path(str(data)).stem, "split": "test", "metric": "accuracy", **common.stats(accs)})
    for name, value in speeds.items():
        model = "transformer" if name == "teacher" else STUDENTS[name][0]["model"]
        rows.append({"model": model, "variant": "teacher" if name == "teacher" else STUDENTS[name][1],
                     "dataset": "-", "metric": "sentences_per_s", "mean": round(value, 1), "n": 1,
                     "baseline": "transformer", "ratio": round(value / speeds["teacher"], 2)})
    return rows


def file_options(path) -> tuple[dict, dict]:
    """A logits file's metadata, and the data and transfer options it was made with."""
    from adaptext.training.distill import logits_file_meta
    meta = logits_file_meta(path)
    return meta, json.loads(meta["data_options"])


def transfer_of(path) -> str:
    """What a logits file's transfer set holds, in words, from its metadata."""
    meta, options = file_options(path)
    parts = [f"the teacher's logits over {int(meta['count']):,} texts: the training texts of {options.get('data')}"]
    if options.get("augment"):
        parts.append(f"{options['augment']} augmented copies of each (seed {options.get('augment_seed')})")
    if options.get("spans"):
        parts.append(f"up to {options['spans']} distinct word spans of each")
    if options.get("unlabeled"):
        parts.append(f"the lines of {Path(options['unlabeled']).name}")
    return ", ".join(parts)


def throughput(a, names: list[str], seed: int) -> dict:
    from adaptext.auto.speed import measure_runs
    from adaptext.training.distill import teachers_of
    from adaptext.data.datasets import load_named
    test = [ex.text for ex in load_named(file_options(a.logits)[1]["data"], str(common.DATA)).test[:1000]]
    runs = {"teacher": teachers_of(a.teacher)[0], **{n: a.keep / f"{n}-seed{seed}" for n in names}}
    return measure_runs(runs, test)


def main() -> None:
    a = args()
    if a.merge:
        common.write_merged("logits_students", a.merge, None, extra=a.note, out=a.out)
        return
    if not a.logits:
        raise SystemExit("logits_students: --logits FILE (or --merge FILES) is needed")
    names, seeds = a.students.split(","), [int(s) for s in a.seeds.split(",")]
    results: dict = {n: [] for n in names}
    notes = (f"Students distilled from `{Path(a.logits).name}` (adaptext logits: {transfer_of(a.logits)}), MSE "
             f"on the logits only (alpha 0) unless the student names KL, batch 64, random word vectors unless it "
             f"names others, trained on {a.accelerator} at {a.threads} torch thread(s); test accuracy over seeds "
             f"{a.seeds}.")
    if a.teacher:
        notes += (f" Throughput: adaptext.auto.speed (every model and the teacher loaded in one process, the first "
                  f"1,000 test sentences, batch 64, one torch thread, CPU time, five rounds interleaved, the "
                  f"median), seed {seeds[0]}'s runs.")
    notes = f"{notes} {a.note}".rstrip()
    teachers = teacher_rows(a.teacher, file_options(a.logits)[1]["data"])
    for seed in seeds:
        for name in names:
            results[name].append(student(name, seed, a))
            common.write("logits_students", rows_of({k: v for k, v in results.items() if v}, a, {}, teachers), notes,
                         a.out)
    speeds = throughput(a, names, seeds[0]) if a.teacher else {}
    common.write("logits_students", rows_of(results, a, speeds, teachers), notes, a.out)


if __name__ == "__main__":
    main()
