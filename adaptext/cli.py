"""The ``adaptext`` command: train, evaluate, predict, models, datasets, explain, serve, export.

Each command parses its arguments and calls the library. A problem the user can fix (a
``UsageError``: bad input, a bad option, a damaged run directory) ends with one line
``error: file:line: problem`` and exit code 2; anything else is a bug and keeps its traceback.
Results go to stdout, progress and notes to stderr.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

from .errors import DataError, MissingResource, UsageError
from .data.examples import ExampleKind
from .contract import DEFAULT_MODEL


def at_least(lowest: int):
    """An argparse type: a whole number of at least ``lowest`` (argparse names the option)."""
    def whole(s: str) -> int:
        try:
            n = int(s)
        except ValueError:
            n = lowest - 1
        if n < lowest:
            raise argparse.ArgumentTypeError(f"expected a whole number of at least {lowest}, not {s!r}")
        return n
    return whole


positive_int = at_least(1)


def rounded(value, digits: int = 2):
    """Metrics as printed: floats rounded, a number that is not finite as null (JSON has no NaN)."""
    if isinstance(value, float):
        return round(value, digits) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: rounded(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [rounded(v, digits) for v in value]
    return value


def print_json(value) -> None:
    print(json.dumps(rounded(value), indent=2, allow_nan=False))


# ----------------------------------------------------------------------- train
def train_parser(model: str, prog: str = "adaptext train") -> argparse.ArgumentParser:
    from .runs.options import add_arguments
    p = argparse.ArgumentParser(prog=prog, description="Train and evaluate a model; writes a run "
                                "directory and prints its metrics (JSON) on stdout.")
    p.add_argument("--config", help="JSON or YAML file of options (e.g. a run's config.json)")
    p.add_argument("--model", help=f"a registered model (`adaptext models`) [default: {DEFAULT_MODEL}]")
    add_arguments(p, model)
    return p


def cmd_train(argv) -> int:
    from .runs.files import read_json
    from .runs.options import check_run_arguments, flatten, load_config_file
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--model"); pre.add_argument("--config"); pre.add_argument("--resume")
    known, _ = pre.parse_known_args(argv)
    check_run_arguments(argv, "adaptext train")
    file_opts = load_config_file(known.config) if known.config else {}
    model = known.model or file_opts.get("model")
    if known.resume and not model and (Path(known.resume) / "config.json").is_file():
        model = flatten(read_json(Path(known.resume) / "config.json")).get("model")
    args = train_parser(model or DEFAULT_MODEL).parse_args(argv)
    opts = {k: v for k, v in vars(args).items() if k != "config" and v is not None}
    from .training import train_run
    metrics = train_run(opts, file_opts, log=lambda m: print(m, file=sys.stderr), config_file=known.config)
    if metrics:
        print_json(summary(metrics))
    return 0


def cmd_distill(argv) -> int:
    """train a fast student on a trained teacher run's logits (Tang et al. 2019)"""
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: adaptext distill TEACHER_RUN [TEACHER_RUN ...] --model STUDENT [train options] --out RUN\n"
              "       adaptext distill --teacher-logits FILE --model STUDENT [train options] --out RUN\n\n"
              "Several teachers are an ensemble: the student learns the mean of their logits. The student reads\n"
              "the first teacher's data unless --data says otherwise; see adaptext train --help. A file of\n"
              "logits (adaptext logits) stands in for the teachers.")
        return 0 if argv else 2
    split = next((k for k, a in enumerate(argv) if a.startswith("-")), len(argv))
    teacher, rest = argv[:split], argv[split:]
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--model")
    known, _ = pre.parse_known_args(rest)
    from .runs.options import check_run_arguments
    check_run_arguments(rest, "adaptext distill")
    args = train_parser(known.model or DEFAULT_MODEL, prog="adaptext distill").parse_args(rest)
    opts = {k: v for k, v in vars(args).items() if k != "config" and v is not None}
    from .training import distill_run
    metrics = distill_run(teacher, opts, log=lambda m: print(m, file=sys.stderr))
    if metrics:
        print_json(summary(metrics))
    return 0


def cmd_logits(argv) -> int:
    """write teacher runs' logits over a student's transfer set to a file, for distill --teacher-logits"""
    if not argv or argv[0].startswith("-"):
        print("usage: adaptext logits TEACHER_RUN [TEACHER_RUN ...] --out FILE.safetensors [--data ... --augment N "
              "--unlabeled FILE --seed S]\n\n"
              "The transfer set is the one adaptext distill builds from the same options (the teacher's data unless\n"
              "--data says otherwise); several teachers: their mean logits. It takes adaptext train's data and\n"
              "transfer options (--data, --dev, --augment, --spans, --unlabeled, --unlabeled-sample, --seed) and\n"
              "--threads; see "
              "adaptext train --help. A student then learns from the file:\n"
              "adaptext distill --teacher-logits FILE --model lstm ...")
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    split = next((k for k, a in enumerate(argv) if a.startswith("-")), len(argv))
    teachers, rest = argv[:split], argv[split:]
    from .runs.options import check_run_arguments
    given = check_run_arguments(rest, "adaptext logits", out_is_run=False)
    if not given.get("out"):
        raise UsageError("adaptext logits needs --out FILE: where the logits are written")
    if given["out"].endswith(("/", os.sep)) or Path(given["out"]).is_dir():      # out/ means a folder, made or not
        raise DataError(given["out"], None, "a folder: --out is the file the logits are written to")
    args = train_parser(DEFAULT_MODEL, prog="adaptext logits").parse_args(rest)
    opts = {k: v for k, v in vars(args).items() if k not in ("config", "out") and v is not None}
    from .training import logits_run
    path = logits_run(teachers, opts, given["out"], log=lambda m: print(m, file=sys.stderr))
    print(path)
    return 0


def cmd_sweep(argv) -> int:
    """train a grid or a search of option values (Optuna), each trial a run; a killed sweep resumes"""
    p = argparse.ArgumentParser(prog="adaptext sweep", description="Train one run per trial over a grid "
                                "(--grid lr=1e-3,3e-3 filters=50,100) or a search (--search lr=log:1e-4:1e-2 "
                                "dropout=0.2:0.6 filters=int:50:300 --trials 20 | --time 30m); any other option is "
                                "a train option every trial shares (adaptext train --help). Writes trials.csv / .md "
                                "/ .json, sweep.png and best.json into --out; rerun the command to resume.")
    way = p.add_mutually_exclusive_group(required=True)
    way.add_argument("--grid", nargs="+", metavar="NAME=V1,V2")
    way.add_argument("--search", nargs="+", metavar="NAME=SPACE")
    p.add_argument("--trials", type=positive_int, help="trials of a search, in all (finished ones count)")
    p.add_argument("--time", type=duration, help="stop starting trials after this long (90s, 30m, 2h)")
    p.add_argument("--retrain", type=positive_int, metavar="N", help="train the best options again with seeds 1..N")
    p.add_argument("--jobs", type=positive_int, default=1, help="trials trained at once, in processes")
    p.add_argument("--out", required=True, help="the sweep's folder (its trials are run directories inside)")
    a, rest = p.parse_known_args(argv)
    from .runs.options import check_run_arguments
    check_run_arguments(rest, "adaptext sweep")
    model = next((rest[i + 1] for i, x in enumerate(rest[:-1]) if x == "--model"), DEFAULT_MODEL)
    monitor = next((rest[i + 1] for i, x in enumerate(rest[:-1]) if x == "--monitor"), None)
    trial_parser = train_parser(model, prog="adaptext sweep")
    trial_parser.parse_args([*rest, "--no-progress"])           # the shared options, before any trial
    check_swept(a.grid or a.search, model)

    def options(params: dict, run: str) -> dict:
        flags = [f for k, v in params.items() for f in _flag(k, v)]
        args = trial_parser.parse_args([*rest, *flags, "--out", run, "--no-progress"])
        return {k: v for k, v in vars(args).items() if k != "config" and v is not None}

    from .training import sweep_run
    found = sweep_run(a.grid or a.search, bool(a.search), options, a.out, a.trials, a.time,
                      list(range(1, a.retrain + 1)) if a.retrain else None, monitor,
                      log=lambda m: print(m, file=sys.stderr), jobs=a.jobs)
    print_json(found)
    return 1 if found.get("failed") else 0         # trials that failed are said on stderr, with their errors


def check_swept(specs: list[str], model: str) -> None:
    """Each swept NAME is an option of the run contract or of the model, said before any trial."""
    import dataclasses
    from .registry import get_entry
    from .contract import OPTIONS
    known = set(OPTIONS) | {f.name for f in dataclasses.fields(get_entry(model).config)}
    for spec in specs:
        name = spec.partition("=")[0].strip().lstrip("-").replace("-", "_")
        if name and name not in known:
            raise UsageError(f"adaptext sweep: {name} is not an option of adaptext train --model {model} "
                             f"(adaptext train --model {model} --help lists them)")


def auto_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="adaptext auto", description="Train a linear baseline, fast baselines, the "
                                "transformer teacher and students distilled from it within --time; the winner is the "
                                "best on dev among those predicting at least --min-speed texts/s here. Writes each "
                                "run, auto.json, best (a link to the winner's run), report.md / .html and "
                                "frontier.png into --out; run it again to resume.")
    p.add_argument("--data", required=True, help="named dataset or training file")
    from .contract import READER_KEYS
    from .runs.options import add_option_flags
    add_option_flags(p, ("dev", "test", "data_dir", "format", "on_bad_line", *READER_KEYS), "(as adaptext train)")
    p.add_argument("--unlabeled", help="a file of unlabelled in-domain texts, one per line, for the students to learn "
                                       "from when the budget allows")
    p.add_argument("--min-speed", help="the fewest sentences/s the winner must predict (3000), or a multiple of the "
                                       "teacher's measured in the same pass (25x)")
    p.add_argument("--time", type=duration, default=3600.0, help="the budget, all steps and resumes (90s, 20m, 2h; 1h)")
    p.add_argument("--dry-run", action="store_true", help="print the plan with each step's estimated minutes")
    p.add_argument("--export", choices=("onnx",), help="export the winner to OUT/export")
    p.add_argument("--threads", type=positive_int, help="torch threads of training and of the speed measurement")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", required=True, help="auto's folder: a run directory per candidate and the report")
    return p


def cmd_auto(argv) -> int:
    """train baselines, a teacher and distilled students within --time; report the best above --min-speed"""
    opts = {k: v for k, v in vars(auto_parser().parse_args(argv)).items() if v is not None}
    from .auto import run_auto
    from .auto.runner import RESUME_HINT, Interrupted
    try:
        result = run_auto(opts, log=lambda m: print(m, file=sys.stderr, flush=True))
    except (Interrupted, KeyboardInterrupt):
        print(RESUME_HINT, file=sys.stderr, flush=True)
        return 130                                  # as a shell reports a command Ctrl-C stopped
    if result.get("dry_run"):
        print(result["text"])
        return 0
    print_json(result)
    return 0 if result["winner"] else 1            # no candidate finished: said in the report and on stderr


def _flag(name: str, value) -> list[str]:
    flag = "--" + name.replace("_", "-")
    if str(value).lower() in ("true", "false"):
        return [flag] if str(value).lower() == "true" else ["--no-" + name.replace("_", "-")]
    return [flag, str(value)]


def duration(s: str) -> float:
    """90, 90s, 30m, 2h -> seconds; a time that is not above 0, or not finite, is refused."""
    units = {"s": 1, "m": 60, "h": 3600}
    try:
        seconds = float(s[:-1]) * units[s[-1]] if s and s[-1] in units else float(s)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and 0 < seconds <= 365 * 24 * 3600):
        raise argparse.ArgumentTypeError(f"expected a duration above 0 and at most a year (90s, 30m, 2h), not {s!r}")
    return seconds


def summary(m: dict) -> dict:
    keep = ("accuracy", "macro_f1", "micro_f1", "example_f1", "accuracy_std", "macro_f1_std")
    out = {s: {k: v for k, v in m[s].items() if k in keep} for s in ("dev", "test") if s in m}
    out["info"] = {k: m["info"][k] for k in ("model", "parameters", "train_seconds", "best_epoch") if k in m.get("info", {})}
    return out


# ----------------------------------------------------------------------- evaluate, predict
def cmd_evaluate(argv) -> int:
    p = argparse.ArgumentParser(prog="adaptext evaluate", description="Metrics of a run on a dataset split (JSON).")
    from .contract import READER_KEYS
    from .runs.options import add_option_flags
    p.add_argument("run_dir")
    p.add_argument("--split", default="test", choices=("train", "dev", "test"),
                   help="split of the run's data or of a named --data (a --data FILE is itself the split)")
    add_option_flags(p, ("data", "data_dir", "format", "on_bad_line", *READER_KEYS), "(default: the run's)")
    a = p.parse_args(argv)
    from . import load
    from .runs.evaluate import evaluate_run
    from .runs.threads import use_threads
    use_threads()
    clf = load(a.run_dir)
    if a.encoding:
        clf.config = clf.config.replace(encoding=a.encoding)     # the run's files read in another encoding
    columns = {k: getattr(a, k) for k in READER_KEYS if k != "encoding"}
    print_json(evaluate_run(clf, a.run_dir, a.split, data=a.data, data_dir=a.data_dir, fmt=a.format,
                            on_bad_line=a.on_bad_line, columns=columns))
    return 0


def cmd_predict(argv) -> int:
    p = argparse.ArgumentParser(prog="adaptext predict",
                                description="Predict texts from FILE or stdin: one text per line, or JSON lines "
                                            "(pairs / contexts, with the run's field names or text / pair / "
                                            "contexts); a .csv / .tsv FILE is read by the run's --text-col "
                                            "(and --pair-col). One JSON line out per input.")
    p.add_argument("run_dir")
    p.add_argument("file", nargs="?")
    p.add_argument("--batch-size", type=positive_int, default=64)
    p.add_argument("--encoding", default=None, help="encoding of FILE or stdin (default: the run's, else utf-8)")
    a = p.parse_args(argv)
    from . import load
    from .runs.threads import use_threads
    use_threads()
    clf = load(a.run_dir)
    for d in clf.predict_stream(clf.pipeline.reader.stream(a.file, a.encoding), a.batch_size):
        print(json.dumps(d))
    return 0


# ----------------------------------------------------------------------- models, datasets
def cmd_models(argv) -> int:
    p = argparse.ArgumentParser(prog="adaptext models", description="The registered models.")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    from .registry import model_table
    rows = model_table()
    if a.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'model':<22} {'inputs':<20} {'params*':>9} {'paper*':>8}  paper: description")
    for r in rows:
        pp = _human(r["paper_parameters"]) if r["paper_parameters"] else ""
        ours = _human(r["parameters"]) if r["parameters"] is not None else "(extra)"
        print(f"{r['name']:<22} {r['inputs']:<20} {ours:>9} {pp:>8}  {r['paper']}: {r['description']}")
    print("* parameters at the default (paper) size, 2 classes, word embeddings excluded; "
          "paper: the count the paper reports (Choi et al. 2019, Table 3)")
    return 0


def _human(n: int) -> str:
    return f"{n / 1e6:.2f}M" if n >= 1e5 else f"{n / 1e3:.1f}K"


def cmd_datasets(argv) -> int:
    p = argparse.ArgumentParser(prog="adaptext datasets", description="Named datasets and their split sizes (counted).")
    p.add_argument("--data-dir")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    from .data.datasets import data_root, dataset_table
    rows = dataset_table(a.data_dir)
    if a.json:
        print(json.dumps(list(rows), indent=2))
        return 0
    root = data_root(a.data_dir)
    print(f"data root: {root if root else '(none: set ADAPTEXT_DATA or --data-dir)'}")
    print(f"{'name':<14} {'task':<20} {'classes':>7} {'train':>9} {'dev':>13} {'test':>11}  description", flush=True)
    for r in rows:                             # each row as soon as its splits are counted
        print(f"{r['name']:<14} {r['task']:<20} {str(r['classes'] or '-'):>7} {str(r['train']):>9} "
              f"{str(r['dev']):>13} {str(r['test']):>11}  {r['description']}", flush=True)
    return 0


# ----------------------------------------------------------------------- explain
def explain_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="adaptext explain", description="Plots that show what a trained model does.")
    sub = p.add_subparsers(dest="what", required=True)
    a = sub.add_parser("attention", help="attention of every word over the context, and filter activations (attconv)")
    a.add_argument("--text", required=True)
    a.add_argument("--context", action="append", default=[], help="a context text (repeat for several)")
    t = sub.add_parser("tree", help="a tree coloured by a z_u dimension; node types that most activate z_u (TG models)")
    src = t.add_mutually_exclusive_group(required=True)
    src.add_argument("--tree", help="a bracketed tree, e.g. \"(3 (2 a) (3 (3 good) (2 film)))\"")
    src.add_argument("--text", help="a sentence (drawn over its parse by the run's --parser)")
    t.add_argument("--dim", type=at_least(0), default=0, help="z_u dimension that colours the nodes")
    t.add_argument("--data", help="named dataset or file: also dump the node types that most activate each z_u dimension")
    t.add_argument("--split", default="dev", choices=("train", "dev", "test"))
    t.add_argument("--top", type=positive_int, default=10, help="node types listed per dimension")
    w = sub.add_parser("words", help="integrated gradients: how much each word moved the prediction (any model)")
    w.add_argument("--text", action="append", required=True, help="a text to explain (repeat for several)")
    w.add_argument("--pair", help="the second text of a pair model's input")
    w.add_argument("--context", action="append", default=[], help="a context text (repeat for several)")
    w.add_argument("--label", help="explain this label's logit (default: the predicted label's)")
    w.add_argument("--steps", type=int, default=50, help="integration steps to start from; doubled until the "
                   "attributions sum to the logit difference within 1%% (at most 800)")
    f = sub.add_parser("filters", help="t-SNE of the filters an adaptive CNN generates for texts of each class")
    f.add_argument("--data", help="named dataset or file (default: the run's)")
    f.add_argument("--split", default="test", choices=("train", "dev", "test"))
    f.add_argument("--per-class", type=positive_int, default=40, help="texts per class")
    f.add_argument("--baseline", help="a static CNN run (kim_cnn) whose filters are drawn beside")
    for s in (a, t, f, w):
        s.add_argument("run_dir")
        s.add_argument("--out", required=s is not w, help="folder of the plots" + ("" if s is not w else
                       " (words.html, words_<k>.png, words.json; default: scores printed)"))
    return p


def cmd_explain(argv) -> int:
    """explain a trained run: words (any model) | attention | filters | tree"""
    a = explain_parser().parse_args(argv)
    if a.out and Path(a.out).exists() and not Path(a.out).is_dir():
        raise DataError(a.out, None, "--out is a file, not a folder for the plots")
    if a.what == "words":
        from .explain.words import check_steps
        check_steps(a.steps)                    # before the run loads
    from . import load
    from .explain import attention, filters, tree
    clf = load(a.run_dir)
    if a.what == "words":
        return explain_words(clf, a)
    if a.what == "filters":
        baseline = load(a.baseline) if a.baseline else None
        paths = filters.explain_run(clf, a.run_dir, a.out, a.data, a.split, a.per_class, baseline)
    elif a.what == "tree":
        paths = tree.explain_run(clf, a.run_dir, a.out, a.tree or a.text, a.dim, a.data, a.split, a.top,
                                 bracketed=a.tree is not None)
    else:
        paths = attention.explain_run(clf, a.run_dir, a.text, a.context, a.out)
    for path in paths:
        print(path)
    return 0


def explain_words(clf, a) -> int:
    from .explain.word_report import text_report, write_report
    check_second_input(clf.pipeline.reader.kind, a)
    inputs = ([{"text": t, "pair": a.pair} for t in a.text] if a.pair is not None else
              [{"text": t, "contexts": a.context} for t in a.text] if a.context else a.text)
    records = clf.explain(inputs, a.label, a.steps)
    if a.out:
        for path in write_report(records, a.out):
            print(path)
    else:
        print(text_report(records))
    return 0


def check_second_input(kind: ExampleKind, a) -> None:
    """--pair goes with a pair model and --context with a contexts model, and each needs its own:
    without this check one is dropped unseen or the model asks for a JSON object."""
    wants = {"pair": "--pair", "contexts": "--context"}.get(kind.second or "")
    given = "--pair" if a.pair is not None else "--context" if a.context else None
    if given == wants:
        return
    if wants is None:
        raise UsageError(f"{a.run_dir} reads {kind} input: {given} is for pair and contexts models; drop it")
    raise UsageError(f"{a.run_dir} reads {kind} input: give {wants} TEXT with each --text")


# ----------------------------------------------------------------------- serve, export
def cmd_serve(argv) -> int:
    """serve a run over HTTP (FastAPI): /predict, /info, /health"""
    p = argparse.ArgumentParser(prog="adaptext serve", description="Serve a trained run over HTTP.")
    p.add_argument("run_dir")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=positive_int, default=1,
                   help="torch threads of the model in each process (default 1)")
    p.add_argument("--workers", type=positive_int, default=1,
                   help="server processes sharing the port, each with its own model")
    p.add_argument("--in-process", action="store_true",
                   help="the model in a thread of the server's process, not in a process of its own "
                        "(half the memory; a server on one core)")
    a = p.parse_args(argv)
    from .serve import serve
    serve(a.run_dir, a.host, a.port, a.device, a.threads, a.workers, not a.in_process)
    return 0


def cmd_export(argv) -> int:
    """export a run to ONNX (model.onnx + vocabulary, labels, manifest), checked in onnxruntime"""
    p = argparse.ArgumentParser(prog="adaptext export", description="Export a trained run to ONNX; see adaptext/export.py.")
    p.add_argument("run_dir")
    p.add_argument("--out", required=True, help="directory to write model.onnx, export.json and the vocabulary into")
    p.add_argument("--length", type=int, default=None,
                   help="a graph for exactly N positions (models that unroll a loop over the length: qrnn, dpcnn, ac_dpcnn)")
    p.add_argument("--opset", type=int, default=None, help="ONNX opset (default: the exporter's)")
    a = p.parse_args(argv)
    from .export import ExportCheckFailed, export_run
    try:
        export_run(a.run_dir, a.out, a.length, a.opset)
    except ExportCheckFailed as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


def cmd_cache(argv) -> int:
    """list what adaptext keeps to reuse (stores, derived vectors, teacher logits, parses); --clear removes it"""
    p = argparse.ArgumentParser(prog="adaptext cache", description="What adaptext computed once and reuses, under "
                                "$ADAPTEXT_CACHE (else ~/.cache/adaptext): token stores of data files, "
                                "transformer-derived vectors, teacher logits.")
    from .data import cache
    p.add_argument("--clear", nargs="?", const="all", choices=("all", *cache.KINDS), metavar="KIND",
                   help=f"remove every kind (all), or one: {', '.join(cache.KINDS)}; nothing else under the root")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    if a.clear:
        kind = None if a.clear == "all" else a.clear
        freed = cache.clear(kind)
        print(f"removed {_human(freed)}B from {cache.cache_dir(kind) if kind else cache.cache_root()}")
        return 0
    rows = cache.entries()
    if a.json:
        print_json(rows)
        return 0
    for r in rows:
        print(f"{r['kind']:<15} {_human(r['bytes']) + 'B':>8}  {r['name']}")
    print(f"{len(rows)} entries, {_human(sum(r['bytes'] for r in rows))}B in {cache.cache_root()}")
    return 0


COMMANDS = {"train": cmd_train, "distill": cmd_distill, "logits": cmd_logits, "sweep": cmd_sweep, "auto": cmd_auto, "evaluate": cmd_evaluate, "predict": cmd_predict, "models": cmd_models,
            "datasets": cmd_datasets, "explain": cmd_explain, "serve": cmd_serve, "export": cmd_export,
            "cache": cmd_cache}
USAGE = ("usage: adaptext {" + ",".join(COMMANDS) + "} ...\n\n"
         "  train      train and evaluate a model (no --data: the bundled TREC demo)\n"
         "  evaluate   metrics of a run directory on a dataset split\n"
         "  predict    predict texts from a file or stdin (JSON lines out)\n"
         "  models     list the registered models\n"
         "  datasets   list the named datasets and their split sizes\n"
         + "".join(f"  {k:<10} {v.__doc__}\n" for k, v in COMMANDS.items() if v.__doc__))


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "--version":
        from . import __version__
        print(__version__)
        return 0
    if cmd not in COMMANDS:
        print(f"error: unknown command {cmd!r} (choose from {', '.join(COMMANDS)})", file=sys.stderr)
        return 2
    try:
        return COMMANDS[cmd](rest)
    except BrokenPipeError:                      # adaptext predict ... | head
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (UsageError, MissingResource) as e:
        if os.environ.get("ADAPTEXT_DEBUG"):
            raise
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
