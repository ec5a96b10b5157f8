"""The ``adaptext`` command: train, evaluate, predict, models, datasets, explain, serve, export.

Bad input ends with one line ``error: file:line: problem`` and exit code 2.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys
from pathlib import Path

from .data.errors import DataError, MissingResource

# options whose CLI default is "on" get a --no-X form
_TUPLE_SEP = ","


ALIASES = {"pair_col": ("--text-pair-col",)}     # the spelling of --pair-col


def _add_option(group, key, default, help_text="", choices=None):
    flag = ("--" + key.replace("_", "-"), *ALIASES.get(key, ()))
    if isinstance(default, bool):
        group.add_argument(*flag, dest=key, action=argparse.BooleanOptionalAction, default=None, help=help_text)
    elif isinstance(default, tuple):
        conv = type(default[0]) if default else int
        group.add_argument(*flag, dest=key, default=None, metavar="A,B,...", help=help_text or f"default {default}",
                           type=_tuple_of(conv))
    else:
        typ = type(default) if isinstance(default, (int, float)) and default is not None else str
        group.add_argument(*flag, dest=key, default=None, type=typ, choices=choices, help=help_text)


def _tuple_of(conv):
    def parse(s: str) -> tuple:
        try:
            return tuple(conv(x) for x in s.split(_TUPLE_SEP) if x.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated {conv.__name__} values, e.g. 3,4,5; "
                                             f"not {s!r}") from None
    return parse


def positive_int(s: str) -> int:
    try:
        n = int(s)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, not {s!r}")
    return n


def _train_parser(model: str | None) -> argparse.ArgumentParser:
    from .registry import get_entry
    from .training.config import CHOICES, HELP, RUN_DEFAULTS, resolve
    p = argparse.ArgumentParser(prog="adaptext train", description="Train and evaluate a model; writes a run directory.")
    p.add_argument("--config", help="JSON or YAML file of options (e.g. a run's config.json)")
    g = p.add_argument_group("run options")
    resolved = resolve({"model": model or "kim_cnn"})        # this model's defaults, shown in the help
    for key, default in RUN_DEFAULTS.items():
        d = default if default is not None else ""
        if key in ("cv", "cv_seed", "min_freq", "max_vocab", "max_length", "epochs", "batch_size", "patience",
                   "seed", "devices", "num_nodes", "threads", "checkpoint_every", "bucket"):
            d = int(default or 0)
        if key in ("lr", "weight_decay", "grad_clip", "oov_scale"):
            d = float(default)
        shown = resolved.get(key)
        text = HELP.get(key, "") + (f" [default: {shown}]" if shown not in (None, "", ()) and key not in ("out", "embedding_mode") else "")
        _add_option(g, key, d, text.strip(), CHOICES.get(key))
    if model:
        entry = get_entry(model)
        mg = p.add_argument_group(f"{model} options ({entry.paper or 'model'} defaults)")
        for f in dataclasses.fields(entry.config):
            default, about = entry.defaults[f.name], f.metadata.get("help")
            _add_option(mg, f.name, default, f"{about} [default: {default}]" if about else f"default {default}",
                        f.metadata.get("choices"))
    return p


def cmd_train(argv) -> int:
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--model"); pre.add_argument("--config"); pre.add_argument("--resume")
    known, _ = pre.parse_known_args(argv)
    file_opts = {}
    if known.config:
        from .training.config import load_config_file
        file_opts = load_config_file(known.config)
    model = known.model or file_opts.get("model")
    if known.resume and not model:
        cfg_path = Path(known.resume) / "config.json"
        if cfg_path.exists():
            model = json.loads(cfg_path.read_text())["model"]
    args = _train_parser(model or "kim_cnn").parse_args(argv)
    opts = {k: v for k, v in vars(args).items() if k != "config" and v is not None}
    from .training.run import train_run
    metrics = train_run(opts, file_opts, log=lambda m: print(m, file=sys.stderr), config_file=known.config)
    if metrics:
        print(json.dumps(_summary(metrics), indent=2))
    return 0


def _summary(m: dict) -> dict:
    keep = ("accuracy", "macro_f1", "micro_f1", "example_f1", "accuracy_std", "macro_f1_std")
    out = {s: {k: round(v, 2) for k, v in m[s].items() if k in keep} for s in ("dev", "test") if s in m}
    out["info"] = {k: m["info"][k] for k in ("model", "parameters", "train_seconds", "best_epoch") if k in m.get("info", {})}
    return out


def cmd_evaluate(argv) -> int:
    p = argparse.ArgumentParser(prog="adaptext evaluate", description="Metrics of a run on a dataset split (JSON).")
    p.add_argument("run_dir")
    p.add_argument("--data", help="named dataset or file (default: the run's)")
    p.add_argument("--split", default="test", choices=("train", "dev", "test"),
                   help="split of the run's data or of a named --data (a --data FILE is itself the split)")
    p.add_argument("--data-dir")
    p.add_argument("--format", default=None)
    p.add_argument("--on-bad-line", default=None, choices=("error", "skip"), help="default: the run's own setting")
    for col in ("text", "pair", "contexts", "label"):
        p.add_argument(f"--{col}-col", default=None, help=f"{col} column / field of a --data file (default: the run's)")
    a = p.parse_args(argv)
    from . import load
    from .training import metrics as M
    from .training.run import gold, predict_probs
    clf = load(a.run_dir)
    cols = {f"{c}_col": getattr(a, f"{c}_col") for c in ("text", "pair", "contexts", "label")}
    from .data.datasets import DATASETS
    if any(cols.values()) and (not a.data or a.data in DATASETS):
        raise ValueError("--text-col / --pair-col / --contexts-col / --label-col name the columns of a --data file")
    examples, bad = _run_examples(clf, a.run_dir, a.split, a.data, a.data_dir, a.format, a.on_bad_line,
                                  {k: v for k, v in cols.items() if v})
    items = clf.encoder.encode(examples, bad)
    probs = predict_probs(clf.model, items, clf.collate, clf.labels.multilabel)
    m = M.compute(probs, gold(items, clf.labels), clf.labels.labels, clf.labels.multilabel, clf.labels.threshold)
    m["bad_lines_skipped"] = bad.count
    print(json.dumps(m, indent=2))
    return 0


def _run_examples(clf, run_dir, split: str, data=None, data_dir=None, fmt=None, on_bad_line=None, cols=None):
    """(examples, bad lines) of a split as the run in ``run_dir`` saw it: a fold-k directory
    reads its own fold, bad lines are handled by the run's own setting unless ``on_bad_line``
    says otherwise, and a tag-guided model's examples are tagged. For evaluate and explain."""
    from .training.run import add_tags, split_examples
    fold = re.fullmatch(r"fold-(\d+)", Path(run_dir).resolve().name)
    examples, bad = split_examples(dict(clf.config, **(cols or {})), split, data, data_dir, fmt,
                                   on_bad_line or clf.config.get("on_bad_line") or "error",
                                   int(fold.group(1)) if fold else None)
    if clf.entry.needs_tags:
        examples = add_tags(clf.config, clf.entry, [examples])[0]
    return examples, bad


def cmd_predict(argv) -> int:
    p = argparse.ArgumentParser(prog="adaptext predict",
                                description="Predict texts from FILE or stdin: one text per line, or JSON lines "
                                            "(pairs / contexts, with the run's field names or text / pair / "
                                            "contexts); a .csv / .tsv FILE is read by the run's --text-col "
                                            "(and --pair-col). One JSON line out per input.")
    p.add_argument("run_dir")
    p.add_argument("file", nargs="?")
    p.add_argument("--batch-size", type=positive_int, default=64)
    a = p.parse_args(argv)
    from . import load
    clf = load(a.run_dir)
    for d in clf.predict(_predict_inputs(clf, a.file), a.batch_size):
        print(json.dumps(d))
    return 0


def _predict_inputs(clf, file: str | None) -> list:
    from .data.readers import decode_line, iter_lines, read_table
    if file and Path(file).name.lower().removesuffix(".gz").endswith((".csv", ".tsv")):
        if not Path(file).is_file():
            raise DataError(file, None, "no such file")
        if clf.kind not in ("text", "pair"):
            raise DataError(file, None, f"a .csv / .tsv file feeds text or pair models; this {clf.kind} model "
                                        "reads JSON lines")
        cfg = clf.config
        pair_col = (cfg.get("pair_col") or "pair") if clf.kind == "pair" else None
        rows = read_table(file, delimiter="\t" if ".tsv" in Path(file).name.lower() else ",",
                          text_col=cfg.get("text_col") or "text", pair_col=pair_col, label_col=None)
        return [ex.text if clf.kind == "text" else {"text": ex.text, "pair": ex.pair} for ex in rows]
    name = file or "<stdin>"
    raw = getattr(sys.stdin, "buffer", None)          # bytes, so a line that is not UTF-8 is named
    if file:
        lines = iter_lines(file, "utf-8")
    elif raw is not None:
        lines = ((i, decode_line(b.rstrip(b"\r\n"), name, i, "utf-8")) for i, b in enumerate(raw, 1))
    else:                                             # a text stream (sys.stdin replaced)
        lines = enumerate((l.rstrip("\r\n") for l in sys.stdin), 1)
    inputs = []
    for i, line in lines:
        if line.lstrip().startswith("{"):
            try:
                inputs.append(json.loads(line))
                continue
            except json.JSONDecodeError as e:
                if clf.kind != "text":           # a text model reads such a line as text
                    raise DataError(name, i, f"invalid JSON ({e.msg})") from None
        inputs.append(line)
    return inputs


def cmd_models(argv) -> int:
    p = argparse.ArgumentParser(prog="adaptext models", description="The registered models.")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    import torch
    from .registry import count_parameters, create_model, get_entry, list_models
    rows = []
    for name in list_models():
        e = get_entry(name)
        variants = [(e.defaults.get("generation", "-"), {})]
        if "generation" in e.defaults:            # adaptive models: both filter generations
            variants.append(("full" if variants[0][0] != "full" else "hashed",
                             {"generation": "full" if variants[0][0] != "full" else "hashed"}))
        paper = getattr(e.cls, "paper_params", {})
        for variant, opts in variants:
            with torch.device("meta"):             # counts without allocating 200M-parameter models
                m = create_model(name, num_classes=2, vocab_size=1000, kind=e.inputs[0], tag_vocab_size=50, **opts)
            rows.append({"name": name if variant == "-" else f"{name} ({variant})", "inputs": ",".join(e.inputs),
                         "tokenizer": e.tokenizer, "parameters": count_parameters(m),
                         "paper_parameters": paper[variant] * 1e6 if variant in paper else None,
                         "paper": e.paper, "description": e.description})
    if a.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'model':<22} {'inputs':<20} {'params*':>9} {'paper*':>8}  paper: description")
    for r in rows:
        pp = _human(r["paper_parameters"]) if r["paper_parameters"] else ""
        print(f"{r['name']:<22} {r['inputs']:<20} {_human(r['parameters']):>9} {pp:>8}  {r['paper']}: {r['description']}")
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
    from .data.datasets import DATASETS, data_root, read_split, split_status
    from .data.errors import BadLines
    rows = []
    for name, info in DATASETS.items():
        status = split_status(name, a.data_dir)
        sizes, classes = {}, None
        for split in ("train", "dev", "test"):
            if split not in status:
                sizes[split] = "-" if split != "dev" else "10% of train" if not info.cv else "-"
                continue
            if status[split] is None:
                sizes[split] = "missing"
                continue
            try:
                ex = read_split(name, split, a.data_dir, BadLines("skip"))
            except DataError:
                sizes[split] = "missing"
                continue
            sizes[split] = len(ex)
            if split == "train":
                labs = set()
                for e in ex:
                    labs.update(e.label if isinstance(e.label, tuple) else (e.label,))
                classes = len(labs)
        if info.cv and isinstance(sizes.get("train"), int):
            sizes["test"] = "10-fold CV"
        rows.append({"name": name, "task": info.kind + (" multi-label" if info.multilabel else ""),
                     "classes": classes, **sizes, "description": info.description})
    if a.json:
        print(json.dumps(rows, indent=2))
        return 0
    root = data_root(a.data_dir)
    print(f"data root: {root if root else '(none: set ADAPTEXT_DATA or --data-dir)'}")
    print(f"{'name':<14} {'task':<20} {'classes':>7} {'train':>9} {'dev':>13} {'test':>11}  description")
    for r in rows:
        print(f"{r['name']:<14} {r['task']:<20} {str(r['classes'] or '-'):>7} {str(r['train']):>9} "
              f"{str(r['dev']):>13} {str(r['test']):>11}  {r['description']}")
    return 0


def cmd_explain(argv) -> int:
    """explain a trained run: attention | filters | tree (PNG plots)"""
    p = argparse.ArgumentParser(prog="adaptext explain", description="Plots that show what a trained model does.")
    sub = p.add_subparsers(dest="what", required=True)
    a = sub.add_parser("attention", help="attention of every word over the context, and filter activations (attconv)")
    a.add_argument("run_dir")
    a.add_argument("--text", required=True)
    a.add_argument("--context", action="append", default=[], help="a context text (repeat for several)")
    a.add_argument("--out", required=True)
    t = sub.add_parser("tree", help="a tree coloured by a z_u dimension; node types that most activate z_u (TG models)")
    t.add_argument("run_dir")
    src = t.add_mutually_exclusive_group(required=True)
    src.add_argument("--tree", help="a bracketed tree, e.g. \"(3 (2 a) (3 (3 good) (2 film)))\"")
    src.add_argument("--text", help="a sentence (drawn over a right-branching tree: no parser is bundled)")
    t.add_argument("--dim", type=int, default=0, help="z_u dimension that colours the nodes")
    t.add_argument("--data", help="named dataset or file: also dump the node types that most activate each z_u dimension")
    t.add_argument("--split", default="dev", choices=("train", "dev", "test"))
    t.add_argument("--top", type=int, default=10)
    t.add_argument("--out", required=True)
    f = sub.add_parser("filters", help="t-SNE of the filters an adaptive CNN generates for texts of each class")
    f.add_argument("run_dir")
    f.add_argument("--data", help="named dataset or file (default: the run's)")
    f.add_argument("--split", default="test", choices=("train", "dev", "test"))
    f.add_argument("--per-class", type=int, default=40, help="texts per class")
    f.add_argument("--baseline", help="a static CNN run (kim_cnn) whose filters are drawn beside")
    f.add_argument("--out", required=True)
    args = p.parse_args(argv)
    from . import load
    clf = load(args.run_dir)
    if args.what == "filters":
        paths = _explain_filters(clf, args)
    elif args.what == "tree":
        paths = _explain_tree(clf, args)
    elif args.what == "attention":
        from .explain.attention import plot_attention
        if not hasattr(clf.model, "explain"):
            raise DataError(args.run_dir, None, f"{clf.config['model']} has no attention to show (use an attconv run)")
        for name, t in [("--text", args.text)] + [(f"--context {k}", c) for k, c in enumerate(args.context or [], 1)]:
            if not _tokens(clf, t):
                raise DataError("<input>", None, f"{name} is empty after tokenisation: nothing to attend from or to")
        if clf.kind == "text":
            if args.context:
                raise DataError(args.run_dir, None, "this model reads single texts and attends within the text: "
                                                    "drop --context (a pair or contexts run attends to a context)")
            inputs, ctx_tokens = [args.text], None
        elif not args.context:
            raise DataError(args.run_dir, None, f"this {clf.kind} model needs --context")
        elif clf.kind == "pair":
            if len(args.context) > 1:
                raise DataError(args.run_dir, None, f"a pair model reads one --context, not {len(args.context)} "
                                                    "(several contexts need a model trained on texts with contexts)")
            inputs, ctx_tokens = [{"text": args.text, "pair": args.context[0]}], _tokens(clf, args.context[0])
        else:
            inputs, ctx_tokens = [{"text": args.text, "contexts": args.context}], [_tokens(clf, c) for c in args.context]
        batch, _ = clf.batch(inputs)
        paths = plot_attention(clf.model, batch, _tokens(clf, args.text), ctx_tokens, args.out)
    for path in paths:
        print(path)
    return 0


def _explain_filters(clf, args) -> list:
    import random
    from .explain.filters import first_block, generated_filters, plot_filters, static_filters
    first_block(clf.model)                   # not an adaptive CNN: said before any data is read
    if clf.labels.multilabel:
        raise DataError(args.run_dir, None, "explain filters colours each text by its one class; a multi-label "
                                            "run's texts have several")
    data = args.data or clf.config.get("data") or "trec-demo"
    ex, _ = _run_examples(clf, args.run_dir, args.split, args.data)
    by_class: dict = {}
    for e in ex:
        if e.label in clf.labels.index:
            by_class.setdefault(e.label, []).append(e)
    rng = random.Random(0)
    chosen = [e for lab in clf.labels.labels for e in rng.sample(by_class.get(lab, []), min(args.per_class, len(by_class.get(lab, []))))]
    if not chosen:
        raise DataError(data, None, f"no example carries one of the run's labels ({', '.join(map(str, clf.labels.labels))})")
    items = clf.encoder.encode(chosen)
    gen = generated_filters(clf.model, clf.collate(items))
    static = None
    if args.baseline:
        from . import load
        static = static_filters(load(args.baseline).model)
    classes = [it.label for it in items]
    path = plot_filters(gen, classes, clf.labels.labels, Path(args.out) / "filters_tsne.png", static,
                        title=f"{clf.config['model']} ({clf.config.get('generation', '')}) on {data}: generated filters")
    return [path]


def _explain_tree(clf, args) -> list:
    from .explain.tree import draw_tree, top_node_types
    if clf.kind not in ("tree", "tree_pair"):
        raise DataError(args.run_dir, None, f"{clf.config['model']} is not a tree model")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (example,) = clf.as_examples([args.tree or args.text]) if clf.kind == "tree" else \
        clf.as_examples([{"tree": args.tree or args.text, "pair": args.tree or args.text}])
    batch = clf.collate(clf.encoder.encode([example], with_labels=False))
    tag_guided = clf.config["model"].startswith("tg_")
    if args.data and not tag_guided:
        raise ValueError(f"--data dumps the node types behind each z_u dimension; {clf.config['model']} "
                         f"has no tag-guided hypernetwork (drop --data to draw the tree by its hidden state)")
    draw_tree(clf.model, batch, example.tree, out / "tree.png", args.dim, label_names=clf.labels.labels)
    paths = [out / "tree.png"]
    if args.data:
        from .data.batching import BatchLoader
        ex, _ = _run_examples(clf, args.run_dir, args.split, args.data)
        items = clf.encoder.encode(ex, with_labels=False)
        top = top_node_types(clf.model, BatchLoader(items, 64, clf.collate), args.top,
                             tag_names=clf.encoder.tag_vocab.itos if clf.encoder.tag_vocab else None)
        (out / "node_types.json").write_text(json.dumps(top, indent=2))
        paths.append(out / "node_types.json")
    return paths


def _tokens(clf, text: str) -> list[str]:
    toks = clf.encoder.tokens(text)
    return toks[: clf.encoder.max_length] if clf.encoder.max_length else toks


def cmd_serve(argv) -> int:
    """serve a run over HTTP (FastAPI): /predict, /info, /health"""
    p = argparse.ArgumentParser(prog="adaptext serve", description="Serve a trained run over HTTP.")
    p.add_argument("run_dir")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--device", default="cpu")
    a = p.parse_args(argv)
    from .serve import serve
    serve(a.run_dir, a.host, a.port, a.device)
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
    from .export import export_run
    try:
        export_run(a.run_dir, a.out, a.length, a.opset)
    except RuntimeError as e:                 # a graph that failed its check
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


COMMANDS = {"train": cmd_train, "evaluate": cmd_evaluate, "predict": cmd_predict, "models": cmd_models,
            "datasets": cmd_datasets, "explain": cmd_explain, "serve": cmd_serve, "export": cmd_export}


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: adaptext {" + ",".join(COMMANDS) + "} ...\n\n"
              "  train      train and evaluate a model (no --data: the bundled TREC demo)\n"
              "  evaluate   metrics of a run directory on a dataset split\n"
              "  predict    predict texts from a file or stdin (JSON lines out)\n"
              "  models     list the registered models\n"
              "  datasets   list the named datasets and their split sizes\n"
              + "".join(f"  {k:<10} {v.__doc__ or ''}\n" for k, v in COMMANDS.items()
                        if k not in ("train", "evaluate", "predict", "models", "datasets")))
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
    except (DataError, MissingResource) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except (ValueError, KeyError) as e:
        if os.environ.get("ADAPTEXT_DEBUG"):
            raise
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        print(f"error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
