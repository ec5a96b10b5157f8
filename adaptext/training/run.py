"""Training a run, top to bottom: prepare (tags, vocabulary, labels, vectors, encoded splits)
-> build the model -> fit it with Lightning (best checkpoint on dev) -> evaluate the best
weights on dev and test -> save the run directory. ``train_run`` is the entry point: it checks
the options, resumes an interrupted run and runs k-fold cross-validation."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from lightning.pytorch.callbacks import Callback

from ..data.batching import BatchLoader, Encoder, StoredItems, item_labels
from ..data.embeddings import embedding_matrix, principal_components
from ..data.transformer_vectors import is_transformer_spec, transformer_vectors
from ..data.errors import BadLines, DataError, UsageError
from ..data.examples import where_of
from ..data.store import StoredSplit
from ..data.text import LabelMap, Vocab
from ..registry import count_parameters, get_entry
from ..runs import metrics as M
from ..runs.memory import MemoryGuard, memory_mb
from ..runs.files import read_json, save_weights, write_atomic, write_csv, write_jsonl
from ..runs.options import PATH_KEYS, RESUME_MAY_CHANGE, check_new_run, resolve
from ..runs.pipeline import collator, gold, predict_probs, tag
from ..runs.spec import RunSpec, make_tokenizer, write_config
from ..runs.splits import DEMO, fold_splits, load_data
from .distill import soft_items, unlabeled_texts


@dataclass
class Prepared:
    """A run's data made ready for its model: the spec (tokenizer, vocabulary, labels), the
    pretrained vectors and the encoded splits."""
    spec: RunSpec
    vectors: torch.Tensor | None
    coverage: object
    train: list
    dev: list
    test: list | None
    test_examples: list
    bad: BadLines
    truncated: int


@dataclass
class Fitted:
    """What training leaves: the epoch log, the epochs run, the seconds they took and the device
    they ran on."""
    rows: list
    epochs_run: int
    seconds: float
    monitor: str
    device: torch.device


# ----------------------------------------------------------------------- prepare
def prepare(cfg: dict, train, dev, test, kind: str, multilabel: bool, log=print) -> Prepared:
    entry = get_entry(cfg["model"])
    where = cfg["data"] or DEMO
    if kind not in entry.inputs:
        raise DataError(where, None, f"model {entry.name} reads {'/'.join(entry.inputs)} examples, "
                                     f"but this dataset holds {kind} examples")
    if not dev:
        raise DataError(where, None, "no dev examples: 10% of each class held out of train "
                                     "rounds to none with this few examples; pass --dev FILE")
    if isinstance(train, StoredSplit):
        return prepare_stored(cfg, train, dev, test, kind, multilabel, log)
    train, dev, test = (tag(s, cfg) for s in (train, dev, test))
    tokenizer = make_tokenizer(cfg)
    unlabeled = unlabeled_texts(cfg["unlabeled"]) if cfg["teacher"] and cfg["unlabeled"] else []
    # a student learns the words of its unlabelled transfer texts from the teacher's logits, so they
    # are counted with the training texts' words
    vocab = tokenizer.vocabulary(token_lists(train + unlabeled, tokenizer), cfg["min_freq"], cfg["max_vocab"] or None)
    found = LabelMap.from_examples(train)
    labels = checked_labels(cfg, LabelMap(found.labels, found.multilabel or multilabel))
    tag_vocab = tag_vocab_of(train) if entry.needs_tags else None
    bad = BadLines(cfg["on_bad_line"])
    vectors, coverage = pretrained_vectors(cfg, vocab, lambda: token_lists(train, tokenizer), bad, log)
    spec = RunSpec(cfg, kind, tokenizer, vocab, tag_vocab, labels, coverage.dim if coverage else None)
    encoder = Encoder(tokenizer, vocab, labels, tag_vocab, cfg["max_length"])
    encoded = [encoder.encode(s, bad) if s else None for s in (train, dev, test)]
    if cfg["teacher"]:
        encoded[0] = soft_items(cfg, train, unlabeled, encoder, bad, log, device=prepare_device(cfg))
    return Prepared(spec, vectors, coverage, *encoded, test or [], bad, encoder.truncated)


def prepare_stored(cfg: dict, train, dev, test, kind: str, multilabel: bool, log=print) -> Prepared:
    """``prepare`` for splits of token stores: the vocabulary counted on the training rows, items
    made batch by batch from the stores."""
    tokenizer = make_tokenizer(cfg)
    if tokenizer.config.level == "subword":
        vocab = tokenizer.vocabulary(())
    else:
        counts = train.store.token_counts(train.rows)
        vocab = Vocab.from_counts(((train.store.strings[i], int(counts[i])) for i in np.flatnonzero(counts)),
                                  cfg["min_freq"], cfg["max_vocab"] or None)
    labels = checked_labels(cfg, LabelMap.of_names(train.label_names(), train.multilabel() or multilabel))
    bad = BadLines(cfg["on_bad_line"])
    vectors, coverage = pretrained_vectors(cfg, vocab, lambda: stored_token_lists(train), bad, log)
    spec = RunSpec(cfg, kind, tokenizer, vocab, None, labels, coverage.dim if coverage else None)
    encoded = [StoredItems(s, vocab, labels, cfg["max_length"], bad) if s else None for s in (train, dev, test)]
    truncated = sum(e.truncated for e in encoded if e is not None)
    return Prepared(spec, vectors, coverage, *encoded, test or [], bad, truncated)


def checked_labels(cfg: dict, labels: LabelMap) -> LabelMap:
    if len(labels) < 2:
        raise DataError(cfg["data"] or DEMO, None, f"the training data has {len(labels)} class(es); "
                                                   "at least 2 are needed")
    return labels


def pretrained_vectors(cfg: dict, vocab: Vocab, texts, bad: BadLines, log=print) -> tuple:
    """(vectors, coverage) of the run's ``--embeddings`` for its vocabulary, or (None, None);
    ``texts()``: the training texts as token lists (transformer-derived vectors read them)."""
    if is_transformer_spec(cfg["embeddings"]):
        vectors, coverage = transformer_vectors(vocab, cfg["embeddings"], texts(), log, device=prepare_device(cfg))
    elif cfg["embeddings"]:
        vectors, coverage = embedding_matrix(vocab, cfg["embeddings"], cfg["oov_init"], cfg["oov_scale"], cfg["seed"],
                                             bad=bad)
    elif cfg["embedding_mode"] != "rand":
        raise DataError(cfg["data"] or DEMO, None, f"embedding mode {cfg['embedding_mode']} needs --embeddings PATH")
    else:
        return None, None
    if cfg["pca_dim"]:
        vectors, coverage = principal_components(vectors, coverage, cfg["pca_dim"])
    log(f"embeddings: {coverage}")
    return vectors, coverage


def prepare_device(cfg: dict) -> str:
    """Where the encoders that prepare a run's data (derived vectors, a teacher's logits) run: the
    GPU the run will train on, else the CPU."""
    if cfg["accelerator"] in ("gpu", "cuda", "auto") and torch.cuda.is_available():
        return "cuda"
    return "cpu"


def stored_token_lists(split):
    strings = split.store.strings
    for row in split.rows:
        for ids in split.store.texts(int(row)):
            yield [strings[i] for i in ids]


def token_lists(examples, tokenizer):
    for ex in examples:
        if ex.kind in ("tree", "tree_pair"):
            lower = tokenizer.config.lower
            for t in ([ex.tree, ex.pair] if ex.kind == "tree_pair" else [ex.tree]):
                yield [w.lower() if lower else w for w in t.leaves()]
            continue
        yield tokenizer(ex.text)
        if ex.kind == "pair":
            yield tokenizer(ex.pair)
        elif ex.kind == "contexts":
            for c in ex.contexts:
                yield tokenizer(c)


def tag_vocab_of(examples):
    tags = set()
    for ex in examples:
        for t in ([ex.tree, ex.pair] if ex.kind == "tree_pair" else [ex.tree]):
            tags.update(x for x in t.tags if x is not None)
    return Vocab(sorted(tags)) if tags else None


def class_weights_of(cfg: dict, p: Prepared) -> torch.Tensor | None:
    """balanced: each class weighs n / (classes * its count), so rare classes count as much as common ones."""
    labels = p.spec.labels
    if cfg["class_weights"] != "balanced" or labels.multilabel:
        return None
    counts = np.bincount(item_labels(p.train), minlength=len(labels)).astype(float)
    return torch.tensor(len(p.train) / (len(labels) * np.maximum(counts, 1)), dtype=torch.float32)


# ----------------------------------------------------------------------- fit
def fit(cfg: dict, model, p: Prepared, out: Path, resume: bool, started: float, extra=()) -> Fitted | None:
    """Train with Lightning; the best dev epoch's weights are left in ``model``. None on the
    processes of a distributed run other than rank 0."""
    import lightning as L

    from .checkpoint import SafetensorsCheckpointIO, load_tree
    from .module import ClassifierModule
    collate = collator(model, p.spec.labels)
    train_loader = BatchLoader(p.train, cfg["batch_size"], collate, shuffle=True, bucket=cfg["bucket"], seed=cfg["seed"])
    dev_loader = BatchLoader(p.dev, max(cfg["batch_size"], 100), collate)
    module = ClassifierModule(model, cfg, p.spec.labels, train_loader, dev_loader, class_weights_of(cfg, p),
                              log_path=out / "log.csv", started=started)
    ckpt_dir = out / "checkpoints"
    trainer = L.Trainer(
        max_epochs=cfg["epochs"], accelerator=cfg["accelerator"], devices=cfg["devices"], strategy=cfg["strategy"],
        num_nodes=cfg["num_nodes"], max_steps=cfg["max_steps"] or -1,
        gradient_clip_val=cfg["grad_clip"] or None, gradient_clip_algorithm="norm",
        deterministic=cfg["deterministic"], plugins=[SafetensorsCheckpointIO()],
        callbacks=callbacks(cfg, out, len(train_loader)) + list(extra), logger=False, enable_model_summary=False,
        num_sanity_val_steps=0, enable_progress_bar=cfg["progress"], default_root_dir=str(out),
        use_distributed_sampler=False)
    last = ckpt_dir / "last.ckpt"
    with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr):    # stdout is the result's
        warnings.filterwarnings("ignore", message=".*does not have many workers.*")
        warnings.filterwarnings("ignore", message=".*dataloader is not resumable.*")
        warnings.filterwarnings("ignore", message=".*smaller than the logging interval.*")
        trainer.fit(module, train_loader, dev_loader, ckpt_path=str(last) if resume and last.exists() else None)
    if not trainer.is_global_zero:
        return None
    if (ckpt_dir / "best.ckpt").exists():
        module.load_state_dict(load_tree(ckpt_dir / "best.ckpt")["state_dict"])
    seconds = module.seconds_before + time.perf_counter() - started      # a resumed run counts its earlier time
    return Fitted(module.epoch_rows, trainer.current_epoch, seconds, module.monitor, trainer.strategy.root_device)


def callbacks(cfg: dict, out: Path, batches_per_epoch: int) -> list:
    from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint, TQDMProgressBar
    ckpt_dir = out / "checkpoints"
    # judged after each dev pass only: a run cut by --max-steps mid-epoch ends without one
    found = [ModelCheckpoint(dirpath=ckpt_dir, filename="best", monitor="dev_score", mode="max", save_top_k=1,
                             save_last=False, enable_version_counter=False, save_on_train_epoch_end=False),
             ModelCheckpoint(dirpath=ckpt_dir, filename="last", monitor=None, save_top_k=1,
                             enable_version_counter=False),
             EarlyStopping("dev_score", mode="max", patience=cfg["patience"], check_on_train_epoch_end=False)]
    if cfg["checkpoint_every"]:
        found.append(StepCheckpoint(ckpt_dir / "last.ckpt", cfg["checkpoint_every"]))
    found.append(Trim())
    if cfg["log_every"]:
        found.append(StepLog(out / "steps.csv", cfg["log_every"]))
    if cfg["progress"]:
        found.append(TQDMProgressBar(refresh_rate=max(1, batches_per_epoch // 20)))
    return found


# ----------------------------------------------------------------------- evaluate
def evaluate(model, p: Prepared) -> tuple[dict, LabelMap, list | None]:
    """Metrics of the trained model on dev and test, the labels with the decision threshold
    tuned on dev (multi-label), and one prediction row per test example."""
    labels, collate = p.spec.labels, collator(model, p.spec.labels)
    dev_probs, dev_y = predict_probs(model, p.dev, collate, labels.multilabel), gold(p.dev, labels)
    if labels.multilabel:
        labels = LabelMap(labels.labels, True, M.tune_threshold(dev_probs, dev_y))
    metrics = {"dev": M.compute(dev_probs, dev_y, labels.labels, labels.multilabel, labels.threshold)}
    if p.test is None:
        return metrics, labels, None
    probs = predict_probs(model, p.test, collate, labels.multilabel)
    metrics["test"] = M.compute(probs, gold(p.test, labels), labels.labels, labels.multilabel, labels.threshold)
    return metrics, labels, test_predictions(p.test_examples, p.test, probs, labels)


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
        rows.append({"index": it.index, "where": where_of(examples, it.index), "gold": g, "pred": p,
                     "prob": round(conf, 6)})
    return rows


def run_info(cfg: dict, model, p: Prepared, f: Fitted, bad_before: int, filtered: dict | None) -> dict:
    """The facts of a run beside its metrics (sizes, coverage, time, the best epoch)."""
    rows = f.rows
    return {
        "model": cfg["model"], "kind": p.spec.kind, "parameters": count_parameters(model),
        "parameters_with_embeddings": count_parameters(model, exclude_embeddings=False),
        "train_examples": len(p.train), "dev_examples": len(p.dev), "test_examples": len(p.test) if p.test else 0,
        "vocab_size": len(p.spec.vocab), "bad_lines_skipped": bad_before + p.bad.count, "truncated_texts": p.truncated,
        "left_out_by_design": filtered or None, "embedding_coverage": p.coverage.ratio if p.coverage else None,
        "epochs_run": f.epochs_run, "best_epoch": _best_epoch(rows, f.monitor), "train_seconds": round(f.seconds, 2),
        "train_examples_per_s": _mean([r["examples_per_s"] for r in rows]),
        "threshold": p.spec.labels.threshold if p.spec.labels.multilabel else None,
    }


# ----------------------------------------------------------------------- save
def save(out: Path, spec: RunSpec, model, metrics: dict, f: Fitted, predictions: list | None) -> None:
    from . import plots
    out.mkdir(parents=True, exist_ok=True)
    save_weights(model, out / "model.safetensors")
    spec.save(out)
    write_csv(out / "log.csv", f.rows)
    (out / "plots").mkdir(exist_ok=True)
    plots.learning_curves(f.rows, out / "plots" / "learning_curves.png", f.monitor)
    split = "test" if "test" in metrics else "dev"
    if "confusion_matrix" in metrics[split]:
        cm = metrics[split]["confusion_matrix"]
        plots.confusion_matrix(cm["matrix"], cm["labels"], out / "plots" / "confusion_matrix.png",
                               f"{spec.model_name} on {split}")
    if predictions is not None:
        write_jsonl(out / "test_predictions.jsonl", predictions)
    write_atomic(out / "metrics.json", metrics)     # last: its presence marks a finished run


# ----------------------------------------------------------------------- one run
def fit_one(cfg: dict, train, dev, test, out: Path, kind: str, multilabel: bool, bad_count: int = 0,
            resume: bool = False, log=print, filtered: dict | None = None, extra=()) -> dict:
    import lightning as L
    quiet_engine()
    started = time.perf_counter()
    L.seed_everything(cfg["seed"], workers=True, verbose=False)
    if cfg["threads"]:
        torch.set_num_threads(cfg["threads"])
    prepared = prepare(cfg, train, dev, test, kind, multilabel, log)
    model = prepared.spec.build_model(prepared.vectors)
    fitted = fit(cfg, model, prepared, out, resume, started, extra)
    if fitted is None:
        return {}
    model.to(fitted.device)     # the engine's teardown leaves it on the CPU: a GPU run tests on the GPU
    metrics, labels, predictions = evaluate(model, prepared)
    model.cpu()
    prepared.spec.labels = labels
    metrics["info"] = run_info(cfg, model, prepared, fitted, bad_count, filtered)
    save(out, prepared.spec, model, metrics, fitted, predictions)
    if not cfg.get("keep_checkpoints"):      # resume state of a finished run: its weights are in model.safetensors
        shutil.rmtree(out / "checkpoints", ignore_errors=True)
    return metrics


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


class Trim(Callback):
    """Keeps the process's memory from creeping up over the steps (see ``MemoryGuard``)."""

    def __init__(self):
        self.guard = MemoryGuard()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.guard.check()


class StepLog(Callback):
    """Every N training steps, a row of steps.csv: the step, its loss, the seconds since the
    process started training and the process's resident memory (MB) now and at its peak, so
    memory growing during an epoch is seen, not guessed."""

    def __init__(self, path: Path, every: int):
        self.path, self.every, self.started = Path(path), every, time.perf_counter()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        step = trainer.global_step
        if step % self.every or not trainer.is_global_zero:
            return
        loss = outputs["loss"] if isinstance(outputs, dict) else outputs
        row = {"step": step, "epoch": trainer.current_epoch + 1, "loss": round(float(loss), 6),
               "seconds": round(time.perf_counter() - self.started, 2), **memory_mb()}
        new = not self.path.exists()
        with open(self.path, "a", encoding="utf-8") as f:
            if new:
                f.write(",".join(row) + "\n")
            f.write(",".join(str(v) for v in row.values()) + "\n")


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return float(np.mean(xs)) if xs else None


def _best_epoch(rows, monitor):
    key = f"dev_{monitor}"
    scored = [r for r in rows if r.get(key) is not None]
    return max(scored, key=lambda r: r[key])["epoch"] if scored else None


# ----------------------------------------------------------------------- entry point
def default_out(cfg) -> Path:
    name = Path(cfg["data"]).stem if cfg["data"] else DEMO
    return Path("runs") / f"{cfg['model']}-{name}-seed{cfg['seed']}"


def train_run(options: dict, file_options: dict | None = None, log=print, config_file=None, callbacks=()) -> dict:
    """Train (or resume) a run and return its metrics. ``options`` uses the CLI's keys;
    ``file_options`` were read from ``config_file`` (named in errors about its values);
    ``callbacks``: more Lightning callbacks (a sweep's pruning)."""
    if options.get("resume"):
        if file_options:
            raise UsageError("--resume continues a run with its own config.json; drop --config")
        cfg, out = resumed_config(Path(options["resume"]), options)
    else:
        cfg, out = new_config(options, file_options, config_file)
    cfg["out"] = str(out)
    check_writable(out)
    splits = load_data(cfg, stored=True, log=log)
    if splits.bad.count:
        log(f"skipped {splits.bad.count} bad line(s); first: {splits.bad.skipped[0]}")
    make_run_dir(out)
    if _is_rank_zero():
        write_config(out, cfg)
    resume = bool(options.get("resume"))
    if splits.folds:
        metrics = cross_validate(cfg, splits, out, resume, log, callbacks)
    else:
        metrics = fit_one(cfg, splits.train, splits.dev, splits.test, out, splits.kind, splits.multilabel,
                          splits.bad.count, resume, log, splits.bad.filtered, callbacks)
    if metrics:
        log(f"run written to {out}")
    return metrics


def new_config(options: dict, file_options: dict | None, config_file) -> tuple[dict, Path]:
    cfg = resolve(options, file_options, config_file)
    check_new_run(cfg)
    for k in PATH_KEYS:                                  # --config RUN/config.json works from anywhere
        if k != "out" and cfg[k] and Path(cfg[k]).exists():
            cfg[k] = str(Path(cfg[k]).resolve())
    out = Path(cfg["out"]) if cfg["out"] else default_out(cfg)
    if (out / "metrics.json").exists() or (out / "checkpoints").exists() or any(out.glob("fold-*")):
        raise DataError(out, None, "the run directory already holds a run (use --resume to continue it, "
                                   "or another --out)")
    return cfg, out


def resumed_config(out: Path, options: dict) -> tuple[dict, Path]:
    """The run's own config, with only the options ``--resume`` may change taken from ``options``."""
    if not (out / "config.json").exists():
        raise DataError(out, None, "not a run directory (no config.json) to resume")
    saved = resolve({}, read_json(out / "config.json"), out / "config.json")
    changed = {k: v for k, v in options.items() if k not in RESUME_MAY_CHANGE + ("resume",)
               and _comparable(k, v) != _comparable(k, saved.get(k))}
    if changed:
        k, v = next(iter(changed.items()))
        flag = "--" + k.replace("_", "-")
        raise UsageError(f"--resume continues the run as it was configured; {flag} {v} differs from its "
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
    return cfg, out


def check_writable(out: Path) -> None:
    """Refuse, before any data is read, a run directory that cannot be made: a file on its
    path, or a folder the user may not write to."""
    for p in (out, *out.parents):
        if p.exists():
            if not p.is_dir():
                raise DataError(p, None, "a file, not a folder: the run directory cannot be made there "
                                         "(choose another --out)")
            if not os.access(p, os.W_OK | os.X_OK):
                raise DataError(p, None, "permission denied: the run directory cannot be written there "
                                         "(choose another --out)")
            return


def make_run_dir(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except (PermissionError, FileExistsError, NotADirectoryError) as e:
        raise DataError(out, None, f"the run directory cannot be made ({e.strerror}): choose another --out") from None


def _comparable(key: str, value):
    """An option as config.json holds it (tuples as lists; files by absolute path)."""
    if key in PATH_KEYS and isinstance(value, str) and Path(value).exists():
        return str(Path(value).resolve())
    return json.loads(json.dumps(value))


def _is_rank_zero() -> bool:
    return int(os.environ.get("LOCAL_RANK", 0)) == 0 and int(os.environ.get("NODE_RANK", 0)) == 0


def cross_validate(cfg, splits, out: Path, resume: bool, log=print, extra=()) -> dict:
    """k-fold CV: each fold trains on k-1 folds (10% of them held out as dev) and tests on the
    remaining fold; metrics.json holds every fold and the mean and standard deviation."""
    folds = []
    for k in range(1, len(splits.folds) + 1):
        fold_dir = out / f"fold-{k}"
        if (fold_dir / "metrics.json").exists():
            folds.append(read_json(fold_dir / "metrics.json"))
            continue
        train, dev, test = fold_splits(splits, k)
        log(f"fold {k}/{len(splits.folds)}: train {len(train)}, dev {len(dev)}, test {len(test)}")
        if _is_rank_zero():                       # each fold a run directory of its own: load / evaluate it
            fold_dir.mkdir(parents=True, exist_ok=True)
            write_config(fold_dir, cfg)
        m = fit_one(cfg, train, dev, test, fold_dir, splits.kind, splits.multilabel, splits.bad.count,
                    resume and (fold_dir / "checkpoints").exists(), log, extra=extra)
        if not m:
            return {}
        folds.append(m)
    metrics = {**cv_summary(folds), "cv": {"folds": len(folds), "seed": cfg["cv_seed"],
                                           "test_accuracy": [f["test"]["accuracy"] for f in folds]},
               "info": {"model": cfg["model"], "parameters": folds[0]["info"]["parameters"],
                        "train_seconds": sum(f["info"]["train_seconds"] for f in folds),
                        "train_examples_per_s": _mean([f["info"]["train_examples_per_s"] for f in folds])}}
    write_atomic(out / "metrics.json", metrics)
    return metrics


def cv_summary(folds: list) -> dict:
    """Mean and standard deviation over folds of each headline metric, on dev and test."""
    summary = {}
    for split in ("dev", "test"):
        summary[split] = {}
        for key in ("accuracy", "macro_f1", "micro_f1"):
            vals = [f[split][key] for f in folds if key in f.get(split, {})]
            if vals:
                summary[split][key] = float(np.mean(vals))
                summary[split][f"{key}_std"] = float(np.std(vals))
    return summary
