"""Training a run, top to bottom: read the data, build tokeniser / vocabulary / labels,
build the model from the registry, train with Lightning (best checkpoint on dev), evaluate
the best weights on dev and test, write the run directory. ``train_run`` also runs k-fold
cross-validation and resumes interrupted runs."""
from __future__ import annotations

import json
import os
import shutil
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from lightning.pytorch.callbacks import Callback

from ..data.batching import BatchLoader, Collator, Encoder
from ..data.datasets import holdout, load_files, load_named
from ..data.embeddings import embedding_matrix
from ..data.errors import BadLines, DataError
from ..data.text import LabelMap, Tokenizer, Vocab
from ..registry import count_parameters, create_model, get_entry
from . import metrics as M
from .config import check_new_run, model_options, resolve
from .rundir import read_json, save_weights, write_atomic, write_csv, write_jsonl

DEMO = "trec-demo"


# ----------------------------------------------------------------------- data
def load_data(cfg: dict):
    data = cfg["data"] or DEMO
    if Path(data).exists() and not Path(data).is_dir():
        kw = {k: cfg[k] for k in ("text_col", "pair_col", "contexts_col", "label_col", "label_sep", "encoding")}
        return load_files(data, cfg["dev"], cfg["test"], cfg["format"], cfg["on_bad_line"], cfg["cv"], cfg["cv_seed"], **kw)
    if cfg["dev"] or cfg["test"]:
        from ..data.datasets import DATASETS
        if data not in DATASETS:
            raise DataError(data, None, "no such file" if not Path(data).is_dir() else "a directory, not a file")
        raise DataError(data, None, "--dev / --test go with a training file; a named dataset brings its own splits")
    return load_named(data, cfg["data_dir"], cfg["on_bad_line"], cfg["cv"], cfg["cv_seed"])


COLUMN_KEYS = ("text_col", "pair_col", "contexts_col", "label_col", "label_sep", "encoding")


def split_examples(cfg: dict, split: str, data=None, data_dir=None, fmt=None, on_bad_line="error",
                   fold: int | None = None):
    """(examples, bad lines) of one split as a run saw it, for evaluate and explain.

    Without ``data``: the run's own data, re-read with its options, so ``--split test`` is the
    run's test file and a dev held out of train is the same 10% again (``fold``: fold k of a
    cross-validated run, its splits rebuilt as ``cross_validate`` built them). With a named dataset:
    that dataset's split (a held-out dev recomputed). With a file: that file, read with the
    run's column options (the file is the split)."""
    from ..data.datasets import DATASETS
    from ..data.readers import read_file
    if data and data not in DATASETS:
        if not Path(data).is_file():
            raise DataError(data, None, "no such file")
        bad = BadLines(on_bad_line)
        kw = {k: cfg.get(k) for k in COLUMN_KEYS}
        return read_file(data, fmt or cfg.get("format", "auto"), bad, **kw), bad
    own = data is None
    run = dict(cfg, data=data or cfg.get("data"), on_bad_line=on_bad_line, format=fmt or cfg.get("format", "auto"),
               data_dir=data_dir or cfg.get("data_dir"))
    if not own:
        run.update(dev=None, test=None, cv=0)
    splits = load_data(run)
    if own and splits.folds and fold:
        tr_idx, te_idx = splits.folds[fold - 1]
        train, dev = holdout([splits.train[i] for i in tr_idx])
        chosen = {"train": train, "dev": dev, "test": [splits.train[i] for i in te_idx]}[split]
        return chosen, splits.bad
    chosen = {"train": splits.train, "dev": splits.dev, "test": splits.test}[split]
    if not chosen:
        where = run["data"] or DEMO
        raise DataError(where, None, f"the run has no {split} split (it was cross-validated: evaluate one of its "
                                     f"fold-k directories); pass --data FILE to evaluate on a file")
    return chosen, splits.bad


def token_lists(examples, tokenizer):
    for ex in examples:
        if ex.kind in ("tree", "tree_pair"):
            lower = tokenizer.config.lower
            yield [w.lower() if lower else w for w in ex.tree.leaves()]
            if ex.kind == "tree_pair":
                yield [w.lower() if lower else w for w in ex.pair.leaves()]
            continue
        yield tokenizer(ex.text)
        if ex.kind == "pair":
            yield tokenizer(ex.pair)
        elif ex.kind == "contexts":
            for c in ex.contexts:
                yield tokenizer(c)


def add_tags(cfg, entry, splits: list):
    """Trees of tag-guided models get POS tags (leaves) and phrase tags (inner nodes)."""
    if not entry.needs_tags:
        return splits
    from ..data.tags import PhraseLabeller, get_tagger, tag_examples
    tagger, labeller = get_tagger(cfg["tagger"]), PhraseLabeller.load_default()
    return [tag_examples(s, tagger, labeller) if s else s for s in splits]


def tag_vocab_of(examples):
    tags = set()
    for ex in examples:
        for t in ([ex.tree, ex.pair] if ex.kind == "tree_pair" else [ex.tree]):
            tags.update(x for x in t.tags if x is not None)
    return Vocab(sorted(tags)) if tags else None


# ----------------------------------------------------------------------- one run
def fit_one(cfg: dict, train, dev, test, out: Path, kind: str, multilabel: bool, bad_count: int = 0,
            resume: bool = False, log=print, filtered: dict | None = None) -> dict:
    import lightning as L
    from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint

    from .checkpoint import SafetensorsCheckpointIO, load_tree
    from .module import ClassifierModule
    quiet_engine()

    t0 = time.perf_counter()
    L.seed_everything(cfg["seed"], workers=True, verbose=False)
    if cfg["threads"]:
        torch.set_num_threads(cfg["threads"])
    entry = get_entry(cfg["model"])
    if kind not in entry.inputs:
        raise DataError(cfg["data"] or DEMO, None, f"model {entry.name} reads {'/'.join(entry.inputs)} examples, "
                                                   f"but this dataset holds {kind} examples")
    if not dev:
        raise DataError(cfg["data"] or DEMO, None, "no dev examples: 10% of each class held out of train "
                                                   "rounds to none with this few examples; pass --dev FILE")
    train, dev, test = add_tags(cfg, entry, [train, dev, test])

    tokenizer = Tokenizer(level=cfg["tokenizer"] or entry.tokenizer, lower=cfg["lower"], clean=cfg["clean"])
    vocab = Vocab.build(token_lists(train, tokenizer), cfg["min_freq"], cfg["max_vocab"] or None)
    labels = LabelMap.from_examples(train)
    labels.multilabel = labels.multilabel or multilabel
    if len(labels) < 2:
        raise DataError(cfg["data"] or DEMO, None, f"the training data has {len(labels)} class(es); at least 2 are needed")
    tag_vocab = tag_vocab_of(train) if entry.needs_tags else None

    bad = BadLines(cfg["on_bad_line"])
    vectors, coverage = None, None
    if cfg["embeddings"]:
        vectors, coverage = embedding_matrix(vocab, cfg["embeddings"], cfg["oov_init"], cfg["oov_scale"], cfg["seed"],
                                             bad=bad)
        log(f"embeddings: {coverage}")
    elif cfg["embedding_mode"] != "rand":
        raise DataError(cfg["data"] or DEMO, None, f"embedding mode {cfg['embedding_mode']} needs --embeddings PATH")

    model = create_model(cfg["model"], num_classes=len(labels), vocab_size=len(vocab), kind=kind,
                         multilabel=labels.multilabel, tag_vocab_size=len(tag_vocab) if tag_vocab else 0,
                         embeddings=vectors, embedding_mode=cfg["embedding_mode"], **model_options(cfg))

    encoder = Encoder(tokenizer, vocab, labels, tag_vocab, cfg["max_length"])
    train_items, dev_items = encoder.encode(train, bad), encoder.encode(dev, bad)
    test_items = encoder.encode(test, bad) if test else None
    collate = Collator(len(labels), labels.multilabel, getattr(model, "min_length", 1), getattr(model, "fixed_length", 0))
    train_loader = BatchLoader(train_items, cfg["batch_size"], collate, shuffle=True, bucket=cfg["bucket"], seed=cfg["seed"])
    dev_loader = BatchLoader(dev_items, max(cfg["batch_size"], 100), collate)

    class_weights = None
    if cfg["class_weights"] == "balanced" and not labels.multilabel:
        counts = np.bincount([it.label for it in train_items], minlength=len(labels)).astype(float)
        class_weights = torch.tensor(len(train_items) / (len(labels) * np.maximum(counts, 1)), dtype=torch.float32)

    module = ClassifierModule(model, cfg, labels, train_loader, dev_loader, class_weights)
    module.started = t0
    module.log_path = out / "log.csv"
    ckpt_dir = out / "checkpoints"
    best_cb = ModelCheckpoint(dirpath=ckpt_dir, filename="best", monitor="dev_score", mode="max", save_top_k=1,
                              save_last=False, enable_version_counter=False)
    last_cb = ModelCheckpoint(dirpath=ckpt_dir, filename="last", monitor=None, save_top_k=1, enable_version_counter=False)
    callbacks = [best_cb, last_cb, EarlyStopping("dev_score", mode="max", patience=cfg["patience"])]
    if cfg["checkpoint_every"]:
        callbacks.append(StepCheckpoint(ckpt_dir / "last.ckpt", cfg["checkpoint_every"]))
    if cfg["progress"]:
        from lightning.pytorch.callbacks import TQDMProgressBar
        callbacks.append(TQDMProgressBar(refresh_rate=max(1, len(train_loader) // 20)))
    trainer = L.Trainer(
        max_epochs=cfg["epochs"], accelerator=cfg["accelerator"], devices=cfg["devices"], strategy=cfg["strategy"],
        num_nodes=cfg["num_nodes"], gradient_clip_val=cfg["grad_clip"] or None, gradient_clip_algorithm="norm",
        deterministic=cfg["deterministic"], plugins=[SafetensorsCheckpointIO()], callbacks=callbacks, logger=False,
        enable_model_summary=False, num_sanity_val_steps=0, enable_progress_bar=cfg["progress"],
        default_root_dir=str(out), use_distributed_sampler=False)
    last = ckpt_dir / "last.ckpt"
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*does not have many workers.*")
        warnings.filterwarnings("ignore", message=".*dataloader is not resumable.*")
        warnings.filterwarnings("ignore", message=".*smaller than the logging interval.*")
        trainer.fit(module, train_loader, dev_loader, ckpt_path=str(last) if resume and last.exists() else None)
    if not trainer.is_global_zero:
        return {}
    train_seconds = module.seconds_before + time.perf_counter() - t0      # a resumed run counts its earlier time

    # the best dev epoch's weights, evaluated on dev and test
    best = ckpt_dir / "best.ckpt"
    if best.exists():
        state = load_tree(best)["state_dict"]
        module.load_state_dict(state)
    model.eval()
    dev_probs = predict_probs(model, dev_items, collate, labels.multilabel)
    dev_y = gold(dev_items, labels)
    if labels.multilabel:
        labels.threshold = M.tune_threshold(dev_probs, dev_y)
    metrics = {"dev": M.compute(dev_probs, dev_y, labels.labels, labels.multilabel, labels.threshold)}
    if test_items is not None:
        t_probs = predict_probs(model, test_items, collate, labels.multilabel)
        metrics["test"] = M.compute(t_probs, gold(test_items, labels), labels.labels, labels.multilabel, labels.threshold)
        predictions = test_predictions(test, test_items, t_probs, labels)
    else:
        predictions = None
    metrics["info"] = {
        "model": cfg["model"], "kind": kind, "parameters": count_parameters(model), "parameters_with_embeddings":
        count_parameters(model, exclude_embeddings=False), "train_examples": len(train_items),
        "dev_examples": len(dev_items), "test_examples": len(test_items) if test_items else 0,
        "vocab_size": len(vocab), "bad_lines_skipped": bad_count + bad.count, "truncated_texts": encoder.truncated,
        "left_out_by_design": filtered or None,
        "embedding_coverage": coverage.ratio if coverage else None, "epochs_run": trainer.current_epoch,
        "best_epoch": _best_epoch(module.epoch_rows, module.monitor), "train_seconds": round(train_seconds, 2),
        "train_examples_per_s": _mean([r["examples_per_s"] for r in module.epoch_rows]),
        "threshold": labels.threshold if labels.multilabel else None,
    }
    save_run(out, cfg, model, tokenizer, vocab, labels, tag_vocab, metrics, module.epoch_rows, coverage, module.monitor,
             predictions)
    if not cfg.get("keep_checkpoints"):      # resume state of a finished run: its weights are in model.safetensors
        shutil.rmtree(ckpt_dir, ignore_errors=True)
    return metrics


def test_predictions(examples, items, probs: np.ndarray, labels) -> list[dict]:
    """One row per test example (its position in the split and its file:line), gold and
    predicted label(s) and the probability of the prediction: for error analysis without
    reloading the model."""
    pred = M.decide(probs, labels.multilabel, labels.threshold)
    rows = []
    for k, it in enumerate(items):
        if labels.multilabel:
            g, p = [labels.labels[j] for j in it.label], [labels.labels[j] for j in np.flatnonzero(pred[k])]
            conf = float(probs[k][pred[k]].min())
        else:
            g, p, conf = labels.labels[it.label], labels.labels[int(pred[k])], float(probs[k, pred[k]])
        rows.append({"index": it.index, "where": examples[it.index].where, "gold": g, "pred": p,
                     "prob": round(conf, 6)})
    return rows


def quiet_engine() -> None:
    """Keep Lightning's banner lines (accelerator, tips) out of the user's terminal."""
    import logging
    for name in ("lightning.pytorch", "lightning.fabric"):
        logging.getLogger(name).setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", message=".*LeafSpec.*")
    warnings.filterwarnings("ignore", message=".*all_gather is deprecated.*")
    warnings.filterwarnings("ignore", message=".*sync_dist=True.*")   # dev metrics are gathered before logging
    warnings.filterwarnings("ignore", message=".*exists and is not empty.*")  # resuming into the run's own folder


class StepCheckpoint(Callback):
    """Checkpoint every N training steps inside an epoch (a killed run loses at most N steps);
    the end of an epoch is checkpointed by ModelCheckpoint."""

    def __init__(self, path, every: int):
        self.path, self.every = str(path), every

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if (batch_idx + 1) % self.every == 0 and batch_idx + 1 < trainer.num_training_batches:
            trainer.save_checkpoint(self.path)


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return float(np.mean(xs)) if xs else None


def _best_epoch(rows, monitor):
    key = f"dev_{monitor}"
    scored = [r for r in rows if r.get(key) is not None]
    return max(scored, key=lambda r: r[key])["epoch"] if scored else None


@torch.no_grad()
def predict_probs(model, items, collate, multilabel: bool, batch_size: int = 256) -> np.ndarray:
    from .module import logits_of, probabilities
    loader = BatchLoader(items, batch_size, collate)
    out = np.zeros((len(items), collate.num_classes), dtype=np.float32)
    pos = {it.index: k for k, it in enumerate(items)}
    device = next(model.parameters()).device
    for batch in loader:
        batch = _to(batch, device)
        p = probabilities(logits_of(model(batch)), multilabel).float().cpu().numpy()
        out[[pos[int(i)] for i in batch.index]] = p
    return out


def _to(batch, device):
    if device.type == "cpu":
        return batch
    from lightning_utilities.core.apply_func import apply_to_collection
    return apply_to_collection(batch, torch.Tensor, lambda t: t.to(device))


def gold(items, labels):
    if labels.multilabel:
        y = np.zeros((len(items), len(labels)), dtype=np.int64)
        for k, it in enumerate(items):
            y[k, it.label] = 1
        return y
    return np.asarray([it.label for it in items], dtype=np.int64)


def save_run(out: Path, cfg, model, tokenizer, vocab, labels, tag_vocab, metrics, rows, coverage, monitor,
             predictions=None) -> None:
    from . import plots
    out.mkdir(parents=True, exist_ok=True)
    save_weights(model, out / "model.safetensors")
    write_atomic(out / "vocab.json", {"tokenizer": tokenizer.to_dict(), "tokens": vocab.itos,
                                      "tags": tag_vocab.itos if tag_vocab else None,
                                      "embedding_dim": coverage.dim if coverage else None})
    write_atomic(out / "labels.json", labels.to_dict())
    write_csv(out / "log.csv", rows)
    (out / "plots").mkdir(exist_ok=True)
    plots.learning_curves(rows, out / "plots" / "learning_curves.png", monitor)
    split = "test" if "test" in metrics else "dev"
    if "confusion_matrix" in metrics[split]:
        cm = metrics[split]["confusion_matrix"]
        plots.confusion_matrix(cm["matrix"], cm["labels"], out / "plots" / "confusion_matrix.png",
                               f"{cfg['model']} on {split}")
    if predictions is not None:
        write_jsonl(out / "test_predictions.jsonl", predictions)
    write_atomic(out / "metrics.json", metrics)     # last: its presence marks a finished run


# ----------------------------------------------------------------------- entry point
def default_out(cfg) -> Path:
    name = Path(cfg["data"]).stem if cfg["data"] else DEMO
    return Path("runs") / f"{cfg['model']}-{name}-seed{cfg['seed']}"


def train_run(options: dict, file_options: dict | None = None, log=print, config_file=None) -> dict:
    """Train (or resume) a run and return its metrics. ``options`` uses the CLI's keys;
    ``file_options`` were read from ``config_file`` (named in errors about its values)."""
    resume = options.get("resume")
    if resume:
        out = Path(resume)
        if not (out / "config.json").exists():
            raise DataError(out, None, "not a run directory (no config.json) to resume")
        saved = read_json(out / "config.json")
        if file_options:
            raise ValueError("--resume continues a run with its own config.json; drop --config")
        changed = {k: v for k, v in options.items() if k not in RESUME_MAY_CHANGE + ("resume",)
                   and _comparable(k, v) != _comparable(k, saved.get(k))}
        if changed:
            k, v = next(iter(changed.items()))
            flag = "--" + k.replace("_", "-")
            raise ValueError(f"--resume continues the run as it was configured; {flag} {v} differs from its "
                             f"{saved.get(k)!r} (only {', '.join('--' + x.replace('_', '-') for x in RESUME_MAY_CHANGE)} "
                             f"may change). For a new run with other options: --config {out / 'config.json'} "
                             f"{flag} {v} --out NEW_DIR")
        if (out / "metrics.json").exists() and not (out / "checkpoints" / "last.ckpt").exists() \
                and not any(out.glob("fold-*")):
            raise DataError(out, None, "the run has finished and its resume state was removed (train with "
                                       "--keep-checkpoints to keep it); to train on, start a new run: --config "
                                       f"{out / 'config.json'} --epochs N --out NEW_DIR")
        cfg = resolve({k: v for k, v in options.items() if k in RESUME_MAY_CHANGE}, saved, out / "config.json")
        cfg["resume"] = None
    else:
        cfg = resolve(options, file_options, config_file)
        check_new_run(cfg)
        for k in PATH_KEYS:                                  # --config RUN/config.json works from anywhere
            if k != "out" and cfg[k] and Path(cfg[k]).exists():
                cfg[k] = str(Path(cfg[k]).resolve())
        out = Path(cfg["out"]) if cfg["out"] else default_out(cfg)
        if (out / "metrics.json").exists() or (out / "checkpoints").exists() or any(out.glob("fold-*")):
            raise DataError(out, None, "the run directory already holds a run (use --resume to continue it, "
                                       "or another --out)")
    cfg["out"] = str(out)
    splits = load_data(cfg)
    if splits.bad.count:
        log(f"skipped {splits.bad.count} bad line(s); first: {splits.bad.skipped[0]}")
    out.mkdir(parents=True, exist_ok=True)
    if _is_rank_zero():
        write_atomic(out / "config.json", cfg)
    if splits.folds:
        return cross_validate(cfg, splits, out, bool(resume), log)
    return fit_one(cfg, splits.train, splits.dev, splits.test, out, splits.kind, splits.multilabel,
                   splits.bad.count, bool(resume), log, splits.bad.filtered)


# what a resumed run may do differently: train longer, on other hardware or with its data elsewhere,
# checkpoint more often, with(out) a progress bar
RESUME_MAY_CHANGE = ("epochs", "progress", "devices", "accelerator", "num_nodes", "strategy", "threads", "data_dir",
                     "checkpoint_every", "keep_checkpoints")
PATH_KEYS = ("data", "dev", "test", "embeddings", "data_dir", "out")


def _comparable(key: str, value):
    """An option as config.json holds it (tuples as lists; files by absolute path)."""
    if key in PATH_KEYS and isinstance(value, str) and Path(value).exists():
        return str(Path(value).resolve())
    return json.loads(json.dumps(value))


def _is_rank_zero() -> bool:
    return int(os.environ.get("LOCAL_RANK", 0)) == 0 and int(os.environ.get("NODE_RANK", 0)) == 0


def cross_validate(cfg, splits, out: Path, resume: bool, log=print) -> dict:
    """k-fold CV: each fold trains on k-1 folds (10% of them held out as dev) and tests on the
    remaining fold; metrics.json holds every fold and the mean and standard deviation."""
    folds = []
    for k, (tr_idx, te_idx) in enumerate(splits.folds, 1):
        fold_dir = out / f"fold-{k}"
        if (fold_dir / "metrics.json").exists():
            folds.append(read_json(fold_dir / "metrics.json"))
            continue
        train = [splits.train[i] for i in tr_idx]
        test = [splits.train[i] for i in te_idx]
        train, dev = holdout(train)
        log(f"fold {k}/{len(splits.folds)}: train {len(train)}, dev {len(dev)}, test {len(test)}")
        if _is_rank_zero():                       # each fold a run directory of its own: load / evaluate it
            fold_dir.mkdir(parents=True, exist_ok=True)
            write_atomic(fold_dir / "config.json", cfg)
        m = fit_one(cfg, train, dev, test, fold_dir, splits.kind, splits.multilabel, splits.bad.count,
                    resume and (fold_dir / "checkpoints").exists(), log)
        if not m:
            return {}
        folds.append(m)
    summary = {}
    for split in ("dev", "test"):
        summary[split] = {}
        for key in ("accuracy", "macro_f1", "micro_f1"):
            vals = [f[split][key] for f in folds if key in f.get(split, {})]
            if vals:
                summary[split][key] = float(np.mean(vals))
                summary[split][f"{key}_std"] = float(np.std(vals))
    metrics = {**summary, "cv": {"folds": len(folds), "seed": cfg["cv_seed"],
                                 "test_accuracy": [f["test"]["accuracy"] for f in folds]},
               "info": {"model": cfg["model"], "parameters": folds[0]["info"]["parameters"],
                        "train_seconds": sum(f["info"]["train_seconds"] for f in folds),
                        "train_examples_per_s": _mean([f["info"]["train_examples_per_s"] for f in folds])}}
    write_atomic(out / "metrics.json", metrics)
    return metrics
