"""Distillation: the fine-tuned transformer (the teacher, all-MiniLM-L6-v2), and fast students
undistilled and distilled from it (Tang et al. 2019: MSE on the teacher's logits over the
training texts and augmented copies), test accuracy over seeds, with each model's CPU
prediction throughput (sentences/s, batch 64) measured in the same run beside the teacher's.

    python benchmarks/distill_table.py --datasets sst2,trec --students kim_cnn --seeds 3
    python benchmarks/distill_table.py --datasets trec --students kim_cnn --seeds 1 --augment 2 \\
        --out /tmp/distill.json                    # a slice
    python benchmarks/distill_table.py --datasets sst2 --students ac_cnn --seed 3 --out s3.json   # one seed
    python benchmarks/distill_table.py --merge a.json b.json
    python benchmarks/distill_table.py --datasets sst2 --teacher-data sst2-phrases --seed 2 --teachers-only
    python benchmarks/distill_table.py --datasets sst2 --students bilstm-64 --seed 1 --ensemble --out s1.json

MR and SUBJ have no test split: each of their 10 stratified folds (the folds of every cross-validated
table) gets a teacher and students of its own, trained on the other nine (a tenth of them held out
as dev), and a row's values are the folds' test accuracies (``--fold K``: fold K alone, a slice).

    python benchmarks/distill_table.py --datasets mr --students bilstm-64,kim_cnn --seeds 1 --out mr.json
    python benchmarks/distill_table.py --datasets mr --students bilstm-64 --seeds 1 --fold 3 --out mr3.json

With --ensemble every student learns the mean logits of the teachers of all --seeds (trained, or
read back from --keep, first: --teachers-only trains them alone, e.g. in parallel slices), and the
ensemble's own test accuracy is a row (written by the slice that holds seed 1).

Teachers and students are kept under --keep (default ~/.cache/adaptext/runs/distill), so a killed
slice resumes and students reuse their teacher. Their options (``TEACHER``, ``STUDENTS``) are in
cells.py, where frontier.py reads them too.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import common  # noqa: E402
from cells import STUDENTS, TEACHER  # noqa: E402

FOLDS = 10                      # MR's and SUBJ's stratified folds, as every cross-validated table reads them


def add_arguments(ap):
    """This table's options (common.script_main adds --out, --merge, --note and --notes)."""
    ap.add_argument("--datasets", default="sst2,trec")
    ap.add_argument("--students", default="kim_cnn")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0,
                    help="run this one seed only (a slice to --merge; throughput is measured on seed 1's runs)")
    ap.add_argument("--augment", type=int, default=10, help="augmented copies of each training text")
    ap.add_argument("--student-epochs", type=int, default=10)
    ap.add_argument("--vectors", action="store_true",
                    help="also distil each student given word vectors derived from the teacher's encoder")
    ap.add_argument("--phrases", action="store_true",
                    help="on SST, also distil each student with every distinct phrase of the SST training trees "
                         "added to the transfer set as unlabelled texts (the teacher labels them)")
    ap.add_argument("--imdb", type=int, default=0, metavar="N",
                    help="on SST, also distil each student with N sentences drawn from the IMDB training reviews "
                         "added to the transfer set as unlabelled texts (in-domain words the training texts lack)")
    ap.add_argument("--teacher-data", default=None, metavar="NAME",
                    help="the named dataset the teachers train on, with the same dev and test sentences (e.g. "
                         "sst2-phrases: every labelled phrase of the training trees); default the dataset's own")
    ap.add_argument("--ensemble", action="store_true",
                    help="distil every student from the mean logits of the teachers of all --seeds")
    ap.add_argument("--ensemble-seeds", type=int, default=None, metavar="N",
                    help="with --seed (a slice): the ensemble's teachers are seeds 1..N (default --seeds)")
    ap.add_argument("--teachers-only", action="store_true",
                    help="train the teachers of the seeds and stop (their rows only, written when --out is given)")
    ap.add_argument("--where", default=None, metavar="TEXT",
                    help="the machine that trained the runs this slice reads back from --keep, when not this one")
    ap.add_argument("--no-throughput", action="store_true",
                    help="no sentences/s rows (a slice run on a machine other than the one the table reports)")
    ap.add_argument("--fold", type=int, default=0, help="MR and SUBJ: run this one of the 10 stratified folds only "
                    "(a slice to --merge; throughput is measured on fold 1's runs); default every fold")
    ap.add_argument("--keep", default=str(Path.home() / ".cache" / "adaptext" / "runs" / "distill"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--accelerator", default="auto", help="where teachers and students train (throughput is "
                    "always measured on the CPU)")
    ap.add_argument("--note", default="", help="with --merge: a sentence added to the notes (what the slices "
                    "reused, what was left out and why)")


def is_slice(a):
    unknown = sorted(set(a.students.split(",")) - set(STUDENTS))
    if unknown and not a.merge:
        raise argparse.ArgumentTypeError(f"unknown student(s) {', '.join(unknown)}; students: {', '.join(STUDENTS)}")
    folded = sorted(set(a.datasets.split(",")) & set(common.FOLDED))
    if folded and (a.ensemble or a.teacher_data) and not a.merge:
        raise argparse.ArgumentTypeError(f"{', '.join(folded)}: each fold has its own teacher; --ensemble and "
                                         "--teacher-data read named splits")
    if not 0 <= a.fold <= FOLDS:
        raise argparse.ArgumentTypeError(f"--fold is 1 to {FOLDS} (0: every fold)")
    return a.seed or a.fold or a.seeds < 3 or a.datasets != "sst2,trec" or a.students != ",".join(STUDENTS)


def throughput(run: Path, texts: list[str], repeats: int = 3) -> float:
    """Sentences per second of ``adaptext.load(run).predict`` over ``texts`` (batch 64), best of
    ``repeats`` passes after a warm-up."""
    import adaptext
    clf = adaptext.load(run)
    return common.sentences_per_s(lambda xs: clf.predict(xs, batch_size=64), texts, repeats=repeats)


def sst_phrases(keep: Path) -> Path:
    """A file of the distinct phrases of the SST training trees, one per line, as the trees write
    them (cased, brackets as -LRB-; whole sentences included, except the few identical to an SST-2
    training text): in-domain unlabelled texts for the transfer set."""
    from adaptext.data.datasets import load_named
    path = keep / "sst-train-phrases.txt"
    if not path.is_file():
        sentences = {ex.text for ex in load_named("sst2", str(common.DATA)).train}
        phrases = sorted({ex.text for ex in load_named("sst1-phrases", str(common.DATA)).train} - sentences)
        keep.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(phrases) + "\n", encoding="utf-8")
    return path


def imdb_sentences(keep: Path, count: int) -> Path:
    """A file of ``count`` distinct sentences drawn at random (seed 1) from the IMDB training
    reviews, 4 to 50 words each, one per line, as runs tokenise them (cased)."""
    from adaptext.parse.silver import sentences_of
    path = keep / f"imdb-sentences-{count}.txt"
    if not path.is_file():
        drawn = sentences_of([common.DATA / "imdb" / "train.jsonl.gz"], set(), count, 1)
        keep.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(" ".join(s) for s in drawn) + "\n", encoding="utf-8")
    return path


def newsgroup_questions(keep: Path) -> Path:
    """Every distinct question of 4 to 25 words in the bodies of the 20 Newsgroups posts (both
    splits; headers and quoted lines left out) that opens as TREC's do (a wh-word, how, name, or an
    auxiliary), one per line, as runs tokenise them: unlabelled questions for TREC's students."""
    import gzip
    import json
    import re

    from adaptext.data.text import Tokenizer
    path = keep / "newsgroup-questions.txt"
    if path.is_file():
        return path
    opening = re.compile(r"(what|who|whom|whose|where|when|which|why|how|name|is|are|was|were|does|do|did|can)\b", re.I)
    tokenize, found = Tokenizer(lower=False), {}
    for split in ("train", "test"):
        for line in gzip.open(common.DATA / "20news" / f"{split}.jsonl.gz", "rt", encoding="latin-1"):
            body = json.loads(line)["text"].split("\n\n", 1)[-1]
            text = " ".join(row for row in body.splitlines() if not row.lstrip().startswith((">", "|", ":")))
            for sentence in re.split(r"(?<=[.!?])\s+", " ".join(text.split())):
                if not (sentence.endswith("?") and opening.match(sentence)) or "@" in sentence:
                    continue                     # tokenised only once it is a question
                words = tokenize(sentence)
                if 4 <= len(words) <= 25:
                    found.setdefault(" ".join(words).lower(), " ".join(words))
    keep.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(found.values()) + "\n", encoding="utf-8")
    return path


def cell(keep: Path, name: str, opts: dict) -> tuple[dict, Path]:
    run = keep / name
    m = common.train_cell(opts, keep=run)
    print(f"{name}: test accuracy {m['test']['accuracy']:.2f}, {m['info']['train_seconds']:.0f} s", flush=True)
    return m, run


def teacher_run(a, keep: Path, dataset: str, seed: int, fold: int | None = None,
                data: dict | None = None) -> tuple[dict, Path]:
    """The teacher of (seed, fold), on ``data`` (the unit's data options; default the named dataset's)."""
    base = {**(data or data_of(a, keep, dataset, fold)), "accelerator": a.accelerator}
    if a.teacher_data:
        base["data"] = a.teacher_data
    name = f"transformer-{a.teacher_data or dataset}-seed{seed}" + (f"-fold{fold}" if fold else "")
    return cell(keep, name, {**TEACHER, **base, "seed": seed})


def data_of(a, keep: Path, dataset: str, fold: int | None) -> dict:
    """A run's data options: the named dataset, or a folded one's fold as files (kept under ``keep``)."""
    if fold is None:
        return {"data": common.DATA_NAME[dataset]}
    return common.fold_files(dataset, fold, keep / f"{dataset}-fold{fold}")


def units(a, dataset: str) -> list[tuple[int, int | None]]:
    """(seed, fold) of every teacher and its students: a folded dataset's (MR, SUBJ) each seed over
    every fold (or --fold), each fold's test split its own; another's each seed once."""
    seeds = [a.seed] if a.seed else list(range(1, a.seeds + 1))
    folds: list[int | None] = [None]
    if dataset in common.FOLDED:
        folds = [a.fold] if a.fold else list(range(1, FOLDS + 1))
    return [(s, k) for s in seeds for k in folds]


def ensemble_accuracy(teachers: list[Path], dataset: str) -> float | None:
    """Test accuracy of the mean of the teachers' logits (the soft targets their students learn);
    None when the teachers' weights are not on this machine (kept runs trained elsewhere)."""
    import numpy as np
    if not all((t / "model.safetensors").is_file() for t in teachers):
        print("teacher ensemble: its weights are not here; no ensemble row from this slice", flush=True)
        return None
    from adaptext.data.datasets import load_named
    from adaptext.training.distill import teacher_logits
    test = load_named(common.DATA_NAME[dataset], str(common.DATA)).test
    labels = sorted({ex.label for ex in test})
    logits = teacher_logits(",".join(map(str, teachers)), test, labels, log=lambda *_: None)
    return 100.0 * float(np.mean([labels[i] == ex.label for i, ex in zip(logits.argmax(1), test)]))


def dataset_rows(a, dataset: str) -> list[dict]:
    keep = Path(a.keep)
    rows, texts = [], common.test_texts(dataset)
    accs, speed = {}, {}
    todo = units(a, dataset)
    data = {unit: data_of(a, keep, dataset, unit[1]) for unit in todo}     # a fold's files written once
    timed = (1, 1 if dataset in common.FOLDED else None)      # the unit whose runs are timed
    teachers, teacher_label = {}, "teacher"
    for unit in todo:
        m, teachers[unit] = teacher_run(a, keep, dataset, *unit, data=data[unit])
        accs.setdefault(("transformer", teacher_label), []).append(m["test"]["accuracy"])
    ensemble = []
    if a.ensemble and not a.teachers_only:
        ensemble = [teachers[(s, None)] if (s, None) in teachers else teacher_run(a, keep, dataset, s)[1]
                    for s in range(1, (a.ensemble_seeds or a.seeds) + 1)]
        acc = ensemble_accuracy(ensemble, dataset) if timed in teachers else None
        if acc is not None:
            accs[("transformer", f"teacher ensemble ({len(ensemble)} seeds)")] = [acc]
    measure = not (a.no_throughput or a.teachers_only)
    if measure and timed in teachers:
        speed[("transformer", teacher_label)] = throughput(teachers[timed], texts)
    for unit in todo if not a.teachers_only else ():
        seed, fold = unit
        base = {**data[unit], "accelerator": a.accelerator}
        where = f"{dataset}-seed{seed}" + (f"-fold{fold}" if fold else "")
        teacher = ",".join(map(str, ensemble)) if ensemble else str(teachers[unit])
        for student in a.students.split(","):
            options, label = STUDENTS[student]
            opts = {"model": student, **options, **base, "seed": seed, "epochs": a.student_epochs}
            model = opts["model"]
            m, run = cell(keep, f"{student}-{where}", opts)
            accs.setdefault((model, "undistilled" + label), []).append(m["test"]["accuracy"])
            for variant, slug, o in variants(a, dataset, keep, {**opts, "teacher": teacher, "augment": a.augment,
                                                                "alpha": 0.0}, len(ensemble)):
                m, run = cell(keep, f"{student}-{slug}-a{a.augment}-{where}", o)
                accs.setdefault((model, variant + label), []).append(m["test"]["accuracy"])
                if measure and unit == timed:
                    speed[(model, variant + label)] = throughput(run, texts)
    for (model, variant), values in accs.items():
        seeds_of = list(range(1, len(ensemble) + 1)) if "ensemble (" in variant else [s for s, _ in todo]
        folds = {"split": f"{FOLDS}-fold CV", "folds": [k for _, k in todo]} if dataset in common.FOLDED else {}
        rows.append({"model": model, "variant": variant, "dataset": dataset, "split": "test", "metric": "accuracy",
                     **common.stats(values), "seeds": seeds_of, **folds})
    for (model, variant), v in speed.items():
        rows.append({"model": model, "variant": variant, "dataset": dataset, "metric": "sentences_per_s",
                     "mean": round(v, 1), "n": 1, "baseline": "transformer",
                     "ratio": round(v / speed[("transformer", teacher_label)], 2)})
    return rows


def variants(a, dataset: str, keep: Path, dist: dict, ensemble: int) -> list[tuple[str, str, dict]]:
    """The distilled students of one student and unit: (row label, run-name slug, options)."""
    of = f", {ensemble}-teacher ensemble" if ensemble else ""
    slug_teacher = (f"-t{a.teacher_data}" if a.teacher_data else "") + (f"-ens{ensemble}" if ensemble else "")
    found = [("distilled" + of, "distilled", dist)]
    if a.vectors:
        found.append(("distilled, transformer vectors" + of, "distilled-vectors",
                      {**dist, "embeddings": "transformer"}))
    if a.phrases and dataset.startswith("sst"):
        found.append(("distilled, + SST phrases" + of, "distilled-phrases",
                      {**dist, "unlabeled": str(sst_phrases(keep))}))
    if a.imdb and dataset.startswith("sst"):
        found.append((f"distilled, + {a.imdb:,} IMDB sentences" + of, f"distilled-imdb{a.imdb}",
                      {**dist, "unlabeled": str(imdb_sentences(keep, a.imdb))}))
    return [(label, slug + slug_teacher, o) for label, slug, o in found]


def folded_note(a) -> str:
    folded = [d for d in a.datasets.split(",") if d in common.FOLDED]
    if not folded:
        return ""
    which = f"fold {a.fold} of the {FOLDS}" if a.fold else f"the {FOLDS}"
    return (f"{' and '.join(d.upper() for d in folded)}: a teacher and students per fold ({which} stratified folds), "
            f"each tested on its fold; a row's values are its folds' test accuracies, its "
            f"speed fold 1's runs on fold 1's test sentences. ")


def table_rows(a) -> None:
    """Train the teachers and students the options ``a`` ask for, then write the table here and
    print its path (common.write is given ``--where``, the machine that trained the runs read back)."""
    import torch
    torch.set_num_threads(a.threads)
    rows = [r for d in a.datasets.split(",") for r in dataset_rows(a, d)]
    if a.teachers_only and not a.out:
        return
    notes = (f"Teacher: transformer (all-MiniLM-L6-v2) fine-tuned {TEACHER['epochs']} epochs, lr {TEACHER['lr']}"
             f"{f', on {a.teacher_data}' if a.teacher_data else ''}. "
             f"Students: their own training defaults, {a.student_epochs} epochs at most, undistilled, and distilled "
             f"with alpha 0 (the teacher's logits only, MSE) on the training texts plus {a.augment} augmented "
             f"copies of each ('transformer vectors': also given word vectors averaged from the teacher's "
             f"pretrained encoder over the training texts, non-static; '+ SST phrases': the 156,658 distinct "
             f"phrases of the SST training trees, as the trees write them, added to the transfer set as unlabelled "
             f"texts; '+ N IMDB sentences': N sentences of the IMDB training reviews, 4-50 words, drawn with seed 1, "
             f"added likewise, their words joining the student's vocabulary; 'N-teacher ensemble': distilled from the mean "
             f"logits of the teachers of seeds 1..N, whose own row is 'teacher ensemble'). " + folded_note(a) + (
                 "No throughput rows (benchmarks/frontier.py measures speed)." if a.no_throughput else
                 f"Throughput: adaptext.load(run).predict on the first 1,000 test sentences, batch 64, "
                 f"{a.threads} threads, best of 3 passes, seed 1's run."))
    print(common.write("distill_table", rows, notes, a.out, where=a.where))


def main() -> None:
    common.script_main("distill_table", add_arguments, table_rows, is_slice, description=__doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
