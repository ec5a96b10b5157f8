"""What a trained run leaves: its metrics on dev and test, one prediction row per test example,
the facts of the run, and the run directory (weights, spec, log, plots, metrics.json last)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..data.examples import where_of
from ..data.text import LabelMap
from ..registry import count_parameters
from ..runs import metrics as M
from ..runs.files import save_weights, write_atomic, write_csv, write_jsonl
from ..runs.pipeline import collator, gold, predict_probs
from ..runs.rundir import RunDir
from ..runs.spec import RunSpec
from .engine import Fitted
from .prepare import Prepared
from ..config import RunConfig


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
        rows.append({"index": it.index, "where": str(where_of(examples, it.index)), "gold": g, "pred": p,
                     "prob": round(conf, 6)})
    return rows


def run_info(cfg: RunConfig, model, p: Prepared, f: Fitted, bad_before: int, filtered: dict | None) -> dict:
    """The facts of a run beside its metrics (sizes, coverage, time, the best epoch)."""
    rows = f.rows
    return {
        "model": cfg.model, "kind": p.spec.kind, "parameters": count_parameters(model),
        "parameters_with_embeddings": count_parameters(model, exclude_embeddings=False),
        "train_examples": len(p.train), "dev_examples": len(p.dev), "test_examples": len(p.test) if p.test else 0,
        "vocab_size": len(p.spec.vocab), "bad_lines_skipped": bad_before + p.bad.count, "truncated_texts": p.truncated,
        "left_out_by_design": filtered or None, "embedding_coverage": p.coverage.ratio if p.coverage else None,
        "epochs_run": f.epochs_run, "monitor": f.monitor, "best_epoch": _best_epoch(rows, f.monitor), "train_seconds": round(f.seconds, 2),
        "train_examples_per_s": mean_or_none([r["examples_per_s"] for r in rows]),
        "threshold": p.spec.labels.threshold if p.spec.labels.multilabel else None,
    }


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
    write_atomic(RunDir(out).metrics, metrics)      # last: its presence marks a finished run


def mean_or_none(xs):
    xs = [x for x in xs if x is not None]
    return float(np.mean(xs)) if xs else None


def _best_epoch(rows, monitor):
    key = f"dev_{monitor}"
    scored = [r for r in rows if r.get(key) is not None]
    return max(scored, key=lambda r: r[key])["epoch"] if scored else None
