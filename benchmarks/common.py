"""Shared by the benchmark scripts: the result file of ../shared/BENCHMARKS.md (JSON and a
markdown table with the same rows), machine description, mean / std over seeds, the test
sentences speed rows time, and the command line of an accuracy table (``script_main``; a table of
cells: ``table_main``)."""
from __future__ import annotations

import datetime
import json
import os
import platform
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
DATA = Path(os.environ.get("ADAPTEXT_DATA", ROOT.parent / "shared" / "data")).resolve()
GLOVE = DATA / "glove" / "glove.6B.50d.subset.txt.gz"


def commit(root: Path = ROOT, short: bool = False) -> str:
    """The commit checked out at ``root`` (this checkout by default; ``short``: its abbreviation)."""
    if root == ROOT and os.environ.get("ADAPTEXT_COMMIT"):     # runs on a copy of the tree without .git
        return os.environ["ADAPTEXT_COMMIT"]
    try:
        return subprocess.run(["git", "rev-parse", *(["--short"] if short else []), "HEAD"], cwd=root,
                              capture_output=True, text=True).stdout.strip() or "unknown"   # not a git checkout
    except OSError:
        return "unknown"


START_COMMIT = commit()     # the code measured: a long run outlives later commits


def machine(device=None) -> str:
    """Cores, memory, the accelerator measured (``device``: a torch device; default the GPU if
    there is one), torch version and threads."""
    import torch
    dev = "CPU only"
    if device is None and torch.cuda.is_available():
        device = torch.device("cuda", 0)
    if device is not None and torch.device(device).type == "cuda":
        dev = f"GPU {torch.cuda.get_device_name(device)}"
    cores = os.cpu_count()
    mem = ""
    try:
        mem = f", {round(os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30)} GiB"
    except (ValueError, OSError):
        pass
    return f"{cores} cores{mem}, {dev} ({platform.machine()}, torch {torch.__version__}, {torch.get_num_threads()} threads)"


def command() -> str:
    return "python " + " ".join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:])


def require_out(a, partial) -> None:
    """Only a whole run (every cell, every seed) writes the published benchmarks/results file: a
    slice or a --quick check names its own --out (a --merge of slices writes the table)."""
    if partial and not a.out and not getattr(a, "merge", None):
        raise SystemExit("a slice (--seed / --models / --datasets / --quick) writes its own file: pass --out "
                         "SLICE.json, then pool the slices with --merge")


def stats(values) -> dict:
    """mean, std and n of per-seed values; std is the population standard deviation (numpy's
    default, ddof 0) as every result file and README table reports it."""
    v = np.asarray(values, dtype=float)
    return {"mean": round(float(v.mean()), 2), "std": round(float(v.std()), 2), "n": int(len(v)),
            "values": [round(float(x), 2) for x in v]}


def write(name: str, rows: list[dict], notes: str = "", out: str | Path | None = None,
          where: str | None = None) -> Path:
    """benchmarks/results/<name>.json and .md; ``where``: the machine that measured, when that
    is not this one (a merge of slices run elsewhere)."""
    path = Path(out) if out else RESULTS / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"benchmark": name, "command": command(), "commit": START_COMMIT,
           "date": datetime.date.today().isoformat(), "machine": where or machine(), "rows": rows, "notes": notes}
    path.write_text(json.dumps(doc, indent=2) + "\n")
    path.with_suffix(".md").write_text(markdown(doc))
    return path


def markdown(doc: dict) -> str:
    rows = doc["rows"]
    cols = [c for c in ("model", "variant", "dataset", "budget", "condition", "split", "length", "metric", "mean",
                        "std", "n", "min", "max", "median", "dev", "paper", "baseline", "ratio", "target", "seconds",
                        "said")
            if any(c in r for r in rows)]
    from adaptext.tables import markdown_table
    lines = [f"# {doc['benchmark']}", "", f"- command: `{doc['command']}`", f"- commit: `{doc['commit']}`",
             f"- date: {doc['date']}", f"- machine: {doc['machine']}", "",
             markdown_table(cols, ([_fmt(r.get(c, "")) for c in cols] for r in rows)).rstrip("\n")]
    if doc.get("notes"):
        lines += ["", doc["notes"]]
    return "\n".join(lines) + "\n"


def _fmt(v):
    if isinstance(v, float):
        return f"{v:.2e}" if 0 < abs(v) < 0.005 else f"{v:.2f}"
    return str(v)


# ---------------------------------------------------------------------------- accuracy tables
def speed_args(doc: str):
    """The command line of a speed script: ``--quick`` (tiny sizes: checks the script runs),
    ``--threads`` (set for torch here; default 2, the reference machine's cores), ``--out``."""
    import argparse

    import torch
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes: checks the script runs")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    require_out(a, a.quick)
    torch.set_num_threads(a.threads)
    return a


def sentences_per_s(predict, texts: list, repeats: int = 3) -> float:
    """Sentences per second of ``predict(texts)``, best of ``repeats`` passes after a warm-up."""
    import time
    predict(texts[:64])
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        predict(texts)
        best = min(best, time.perf_counter() - t)
    return len(texts) / best


# the named dataset of each dataset the distillation table and the speed scripts read test sentences of
DATA_NAME = {"sst2": "sst2", "sst1": "sst1", "trec": "trec", "mr": "mr", "subj": "subj"}
FOLDED = ("mr", "subj")         # no test split: 10 stratified folds, each the test split of its own runs


def test_texts(dataset: str, n: int = 1000) -> list[str]:
    """The first ``n`` test sentences of ``dataset`` (a key of ``DATA_NAME``; a folded one's fold 1):
    what the speed rows time."""
    return [ex.text for ex in fold_split(dataset)[2][:n]]


def fold_split(dataset: str, fold: int = 1) -> tuple[list, list, list]:
    """(train, dev, test) examples of ``dataset``: its named splits, or for a folded one (MR, SUBJ)
    fold ``fold`` of the 10 stratified folds as test and a dev held out of the rest, as a
    cross-validated adaptext run holds them."""
    from adaptext.data.datasets import load_named
    from adaptext.runs.splits import fold_splits
    s = load_named(DATA_NAME.get(dataset, dataset), str(DATA))
    train, dev, test = fold_splits(s, fold) if s.folds else (s.train, s.dev, s.test)
    return list(train), list(dev), list(test)


def fold_files(dataset: str, fold: int, folder: Path) -> dict:
    """A folded dataset's fold as the data options of a run (see ``split_files``)."""
    return split_files(fold_split(dataset, fold), folder)


def split_files(splits: tuple[list, list, list], folder: Path) -> dict:
    """(train, dev, test) examples as the data options of a run: their CSV files under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    return {key: write_split(part, folder / f"{name}.csv")
            for key, name, part in zip(("data", "dev", "test"), ("train", "dev", "test"), splits)}


def write_split(examples: list, path: Path) -> str:
    """``examples`` as a CSV file with a text and a label column; its path."""
    import csv
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        w.writerows([ex.text, ex.label] for ex in examples)
    return str(path)


def quick_note(quick: bool) -> str:
    """The sentence a ``--quick`` run adds to its notes, so nobody quotes it."""
    return " QUICK RUN: tiny sizes, not a measurement." if quick else ""


def train_cell(opts: dict, keep: Path | None = None) -> dict:
    """Train one (model, options, dataset, seed) run; its metrics. The run directory is ``keep``
    when given (for scripts that read its predictions later), else a temporary one. A kept run that
    finished is read back, one that was cut short (a killed slice) is resumed from its checkpoint."""
    import contextlib
    import tempfile
    from adaptext.contract import RESUME_MAY_CHANGE
    from adaptext.runs.rundir import RunDir
    from adaptext.training.run import trained
    opts = {"progress": False, "data_dir": str(DATA), **opts}
    # what a resume may change comes from this cell: a slice on another machine has its own data folder,
    # device and checkpoint interval (no device asked: whichever this machine has)
    again = {"accelerator": "auto", **{k: v for k, v in opts.items() if k in RESUME_MAY_CHANGE}}
    with contextlib.nullcontext() if keep else tempfile.TemporaryDirectory() as tmp:
        return trained(RunDir(keep or Path(tmp) / "run"), opts, log=lambda *_: None, resume_options=again)


def run_name(model: str, label: str, dataset: str, seed: int) -> str:
    """The directory name of a kept run: ``attconv-light-imdb-seed1``."""
    slug = "".join(ch if ch.isalnum() else "_" for ch in label).strip("_") or "default"
    return f"{model}-{slug}-{dataset}-seed{seed}"


# the provenance list a merge appends to its notes (the last "Merged from: ..." outside backquotes)
MERGED_FROM = re.compile(r"Merged from(?: \d+ slices)?: (.*?)\.(?: |$)(?=[^`]*$)")


def write_merged(name: str, files: list, notes: str | None = None, extra: str = "", out=None) -> Path:
    """Pool the slices in ``files`` (result files of one benchmark) into one result file. Its notes:
    ``notes``, or else every sentence of the slices' notes once, then each slice's command,
    machine and commit, then ``extra``."""
    docs = [json.loads(Path(f).read_text()) for f in files]
    if notes is None:
        own = [MERGED_FROM.sub("", d.get("notes", "")) for d in docs]   # a merged slice's list is kept below
        sentences = [x.strip() for n in own for x in re.split(r"(?<=\.) ", n) if x.strip()]
        notes = " ".join(dict.fromkeys(sentences))
    generic = [_provenance(d, generic=True) for d in docs]      # slices differing only in seed / output
    counts = Counter(generic)
    cmds = "; ".join(dict.fromkeys(f"{g} (x{counts[g]} slices)" if counts[g] > 1 else _provenance(d)
                                   for d, g in zip(docs, generic)))
    rows = merge_docs(docs)
    machines = list(dict.fromkeys(m for r in rows for m in r["machine"].split(MACHINES_SEP)))
    where = machines[0] if len(machines) == 1 else "several (each row's machine field): " + "; ".join(machines)
    return write(name, rows, f"{notes} Merged from: {cmds}. {extra}".rstrip(), out, where)


def _provenance(doc: dict, generic: bool = False) -> str:
    """A slice's command, machine and commit; for a slice that is itself a merge, its own list.
    ``generic``: the seed and output file written as S and SLICE (one line for slices that differ
    only in those)."""
    m = MERGED_FROM.search(doc.get("notes", ""))
    if m:
        return m.group(1)
    cmd = doc["command"]
    if generic:
        cmd = re.sub(r"--out \S+", "--out SLICE.json", re.sub(r"--seed \d+", "--seed S", cmd))
    return f"`{cmd}` ({doc['machine']}, commit {doc['commit'][:7]})"


MACHINES_SEP = " + "   # a merged row measured on several machines names each once, in this order


def merge_docs(docs: list[dict]) -> list[dict]:
    """Rows of the same (model, variant, dataset, split, metric, budget, condition) from several runs, values pooled
    (parallel single-seed runs merged into one table); each row keeps its machine. A seed (a seed
    and fold, where a row has ``folds``) that two slices both hold for one row, or a speed row (its
    ratio measured within one run) in two slices, is an error rather than counted twice. Seconds
    are averaged over slices of one machine; a row measured on several has none."""
    groups: dict = {}
    for d in docs:
        for r in d["rows"]:
            key = (r["model"], r.get("variant"), r.get("dataset"), r.get("split"), r["metric"], r.get("budget"),
                   r.get("condition"))
            if key in groups and "ratio" in r:
                raise ValueError(f"speed row {key} is in two slices; its ratio pools nothing: keep it in one")
            g = groups.setdefault(key, dict(r, values=[], _secs=[], machine=[], seeds=[], folds=[]))
            twice = set(_units(g)) & set(_units(r))
            if twice:
                raise ValueError(f"seed(s) {sorted(twice)} of {key} are in two slices")
            g["seeds"] += r.get("seeds", [])
            g["folds"] += r.get("folds", [])
            g["values"] += r.get("values", [r.get("mean")])
            if r.get("seconds") is not None:
                g["_secs"].append(r["seconds"])
            for where in r.get("machine", d["machine"]).split(MACHINES_SEP):   # a merged row lists several
                if where not in g["machine"]:                   # seeds measured on several machines
                    g["machine"].append(where)
    rows = []
    for r in groups.values():
        r["machine"] = MACHINES_SEP.join(r["machine"])
        if not r["seeds"] or len(r["seeds"]) != len(r["values"]):      # rows written before seeds were kept
            r.pop("seeds")
        if not r["folds"]:
            r.pop("folds")
        secs = r.pop("_secs")
        if "ratio" not in r and all(isinstance(v, (int, float)) for v in r["values"]):   # not status codes
            r.update(stats(r["values"]))
            r["min"], r["max"] = min(r["values"]), max(r["values"])
        r.pop("seconds", None)
        if secs and MACHINES_SEP not in r["machine"]:           # times of two machines make no mean
            r["seconds"] = round(float(np.mean(secs)), 1)
        rows.append(r)
    return rows


def _units(row: dict) -> list:
    """What each of a row's values was measured on: its seeds, or (seed, fold) where it has folds."""
    seeds = row.get("seeds", [])
    return list(zip(seeds, row["folds"])) if row.get("folds") else list(seeds)


def script_main(name: str, add_arguments, rows_of, partial, argv: list | None = None,
                description: str | None = None) -> None:
    """The command line every accuracy table shares. ``add_arguments(ap)`` adds the script's own
    options to the parser, after the shared ``--out``, ``--merge FILES...``, ``--note`` and
    ``--notes`` (a script may redefine one of those for its own help text). ``partial(a)``: whether
    the options ask for a slice (part of the table), which needs ``--out`` (``require_out``); it may
    refuse a bad command line (``sys.exit``, or ``argparse.ArgumentTypeError``: a usage error). Then
    ``--merge`` pools the slices into ``name``'s result file, or else ``rows_of(a)`` runs the table:
    ``(rows, notes)``, written with ``write``, or None when it wrote its file itself or has nothing
    to write. ``argv``: the options to read (default sys.argv[1:]; the recorded command is always
    sys.argv)."""
    import argparse
    ap = argparse.ArgumentParser(description=description, conflict_handler="resolve")
    ap.add_argument("--out", default=None)
    ap.add_argument("--merge", nargs="*")
    ap.add_argument("--note", default="", help="a sentence added to the notes (what was left out and why)")
    ap.add_argument("--notes", default=None, help="with --merge: the notes, in place of the slices' sentences "
                    "(re-merging a merged table whose notes went stale)")
    add_arguments(ap)
    a = ap.parse_args(argv)
    try:
        require_out(a, partial(a))
    except argparse.ArgumentTypeError as e:
        ap.error(str(e))
    if a.merge:
        write_merged(name, a.merge, a.notes, extra=a.note, out=a.out)
        return
    table = rows_of(a)
    if table is not None:
        rows, notes = table
        write(name, rows, notes, a.out)


def table_main(name: str, cells: list[dict], datasets: dict, metrics=("accuracy",), paper: dict | None = None,
               notes: str = "", default_epochs: int = 20, argv: list | None = None) -> None:
    """The command line of an accuracy table: every cell (``{"model", "label", **model options}``,
    optionally ``"datasets": (...)`` to restrict it) on every dataset (name -> data options), ``--seeds`` seeds, mean / std / min / max of each metric
    on the test split (or over CV folds). ``--seed S --models a,b --datasets x`` run a slice (for
    parallel runs), ``--merge files`` pools slices, ``--quick`` checks the script in a minute.
    ``argv``: the options to read (default sys.argv[1:]; the recorded command is always sys.argv)."""
    def add_arguments(ap):
        ap.add_argument("--seeds", type=int, default=3)
        ap.add_argument("--seed", type=int, default=0)
        ap.add_argument("--models", default="",
                        help="comma-separated cell names (model or model:variant; a comma and a space stay inside a name)")
        ap.add_argument("--datasets", default=",".join(datasets))
        ap.add_argument("--epochs", type=int, default=None,
                        help=f"at most N epochs (default: the dataset's own, else {default_epochs})")
        ap.add_argument("--patience", type=int, default=None,
                        help="early-stopping patience (default: the dataset's own, else 4)")
        ap.add_argument("--accelerator", default="auto")
        ap.add_argument("--quick", action="store_true", help="1 seed, 1 epoch, at most 2 cells: checks the script runs")
        ap.add_argument("--keep", default=None, help="keep every run directory under this folder")
        ap.add_argument("--checkpoint-every", type=int, default=0,
                        help="with --keep: also checkpoint every N training steps, so a slice killed mid-epoch "
                             "(a machine's time limit) resumes there")

    def is_slice(a):
        if a.seeds < 1:
            sys.exit(f"{name}: --seeds {a.seeds}: at least one seed is needed")
        return a.seed or a.quick or a.models or a.datasets != ",".join(datasets)

    def rows_of(a):
        return table_rows(a, name, cells, datasets, metrics, paper or {}, notes, default_epochs)

    script_main(name, add_arguments, rows_of, is_slice, argv, description=f"{name}: see the module docstring")


def table_rows(a, name: str, cells: list[dict], datasets: dict, metrics, paper: dict, notes: str,
               default_epochs: int) -> tuple[list[dict], str]:
    """``table_main``'s rows and notes: the cells chosen by the options ``a``, trained."""
    # names are split at commas that no space follows: labels such as "multi, right-branching" hold one
    wanted = {n.strip() for n in re.split(r",(?! )", a.models) if n.strip()}
    full = [f"{c['model']}:{c['label']}" for c in cells]
    unknown = wanted - {c["model"] for c in cells} - set(full)
    if unknown:
        sys.exit(f"{name}: --models {a.models!r} names no cell as {', '.join(sorted(unknown))}; the cells: "
                 + ", ".join(full))
    chosen = [c for c, f in zip(cells, full) if not wanted or {c["model"], f} & wanted]
    names = a.datasets.split(",")
    unknown = [ds for ds in names if ds not in datasets]
    if unknown:
        sys.exit(f"{name}: --datasets {a.datasets!r} names no dataset of this table as {', '.join(unknown)}; "
                 f"its datasets: {', '.join(datasets)}")
    seeds = [a.seed] if a.seed else list(range(1, a.seeds + 1))
    if a.quick:
        chosen, seeds, a.epochs = chosen[:2], [1], 1
    rows, skipped, stopping = [], [], {}
    from adaptext.data.datasets import split_status
    for ds in names:
        # the command line's epochs / patience, else the dataset's (a table may train sets differently)
        epochs = a.epochs if a.epochs is not None else datasets[ds].get("epochs", default_epochs)
        patience = a.patience if a.patience is not None else datasets[ds].get("patience", 4)
        dopts = {k: v for k, v in datasets[ds].items() if k not in ("epochs", "patience")}
        status = split_status(dopts["data"], str(DATA)) if "/" not in dopts["data"] else {}
        if status and (status.get("train") is None):
            skipped.append(f"{ds}: its training split is not in {DATA}")
            continue
        for cell in chosen:
            if ds not in cell.get("datasets", (ds,)):
                continue
            opts = {k: v for k, v in cell.items() if k not in ("label", "datasets")}
            vals: dict = {m: [] for m in metrics}
            secs = []
            for seed in seeds:
                keep = Path(a.keep) / run_name(cell["model"], cell["label"], ds, seed) if a.keep else None
                m = train_cell({**opts, **dopts, "seed": seed, "epochs": epochs, "patience": patience,
                                "accelerator": a.accelerator, "checkpoint_every": a.checkpoint_every}, keep)
                for k in metrics:
                    vals[k].append(m["test"][k])
                secs.append(m["info"]["train_seconds"])
                print(f"{cell['model']} {cell['label']} {ds} seed {seed}: "
                      + " ".join(f"{k} {m['test'][k]:.2f}" for k in metrics), flush=True)
            stopping.setdefault((epochs, patience), {})[ds] = None     # datasets in order, each once
            for k in metrics:
                row = {"model": cell["model"], "variant": cell["label"], "dataset": ds,
                       "split": "10-fold CV" if dopts.get("cv") else "test", "metric": k, **stats(vals[k]),
                       "min": round(min(vals[k]), 2), "max": round(max(vals[k]), 2), "seeds": seeds,
                       "seconds": round(float(np.mean(secs)), 1)}
                p = paper.get((cell["model"], cell["label"], ds, k))
                if p is not None:
                    row["paper"] = p
                rows.append(row)
    if skipped and not rows:      # a table of nothing would look like a finished run
        sys.exit(f"{name}: nothing was run: " + "; ".join(skipped)
                 + " (set ADAPTEXT_DATA to the folder holding the datasets)")
    extra = (" Skipped: " + "; ".join(skipped) + ".") if skipped else ""
    quick = " --quick: a smoke run (1 seed, 1 epoch), not a measurement." if a.quick else ""
    return rows, f"{notes} {stopping_sentence(stopping)}{extra}{quick} {a.note}".rstrip()


def stopping_sentence(stopping: dict) -> str:
    """How long each dataset trained, ``{(epochs, patience): {dataset: None}}`` (datasets in run
    order), in a sentence."""
    parts = [f"at most {e} epochs, patience {p}" + (f" ({', '.join(ds)})" if len(stopping) > 1 else "")
             for (e, p), ds in stopping.items()]
    text = "; ".join(parts) + ": early stopping on dev, best dev epoch's weights tested."
    return text[0].upper() + text[1:] if parts else ""
