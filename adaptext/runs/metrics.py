"""Classification metrics, single-label and multi-label, as scikit-learn computes them, on the
percent scale, with the class names of the run."""
from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.metrics import accuracy_score, confusion_matrix, f1_score, precision_recall_fscore_support


def default_monitor(multilabel: bool, chosen: str | None = None) -> str:
    """The dev metric that picks the best epoch, ranks a sweep's trials and auto's candidates:
    the one chosen (``--monitor``), else micro-F1 for multi-label data (subset accuracy would
    count a text with one label of five wrong as wholly wrong), else accuracy."""
    return chosen or ("micro_f1" if multilabel else "accuracy")


def monitor_of(metrics: dict[str, Any]) -> str:
    """The dev metric a finished run was trained by, from its metrics.json."""
    info = metrics.get("info", {})
    return default_monitor(info.get("threshold") is not None, info.get("monitor"))


def _per_class(y_true: np.ndarray, y_pred: np.ndarray, labels: list[str], ids: range) -> dict[str, dict[str, Any]]:
    p, r, f, support = precision_recall_fscore_support(y_true, y_pred, labels=ids, zero_division=0)
    return {labels[c]: {"precision": 100 * float(p[c]), "recall": 100 * float(r[c]), "f1": 100 * float(f[c]),
                        "support": int(support[c])} for c in range(len(labels))}


def single_label(y_true: np.ndarray, y_pred: np.ndarray, labels: list[str]) -> dict[str, Any]:
    """``y_true``, ``y_pred``: class ids. Macro F1 averages the classes in the gold labels or the
    predictions (a class predicted but never gold counts, with F1 0)."""
    y_true, y_pred, ids = np.asarray(y_true, dtype=np.int64), np.asarray(y_pred, dtype=np.int64), range(len(labels))
    if not len(y_true):                      # an empty split: sklearn refuses it, the run reports zeros
        return _empty_single(labels)
    accuracy = 100.0 * float(accuracy_score(y_true, y_pred))
    return {
        "n": int(len(y_true)),
        "accuracy": accuracy,
        "macro_f1": 100.0 * float(f1_score(y_true, y_pred, average="macro", zero_division=0)),
        "micro_f1": accuracy,                # equals accuracy for single-label
        "weighted_f1": 100.0 * float(f1_score(y_true, y_pred, labels=ids, average="weighted", zero_division=0)),
        "per_class": _per_class(y_true, y_pred, labels, ids),
        "confusion_matrix": {"labels": list(labels), "matrix": confusion_matrix(y_true, y_pred, labels=ids).tolist()},
    }


def _empty_single(labels: list[str]) -> dict[str, Any]:
    zero = {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}
    return {"n": 0, "accuracy": 0.0, "macro_f1": 0.0, "micro_f1": 0.0, "weighted_f1": 0.0,
            "per_class": {name: dict(zero) for name in labels},
            "confusion_matrix": {"labels": list(labels), "matrix": [[0] * len(labels) for _ in labels]}}


def multi_label(y_true: np.ndarray, y_pred: np.ndarray, labels: list[str]) -> dict[str, Any]:
    """y_true, y_pred: [N, C] 0/1. Micro / macro F1 over labels (macro: the labels in the gold
    sets or the predictions); example-based F1 (mean over examples of 2|Y∩Ŷ| / (|Y|+|Ŷ|), 1 for
    an example with neither); subset accuracy."""
    t, pr = np.asarray(y_true).astype(bool), np.asarray(y_pred).astype(bool)
    present = np.flatnonzero(t.any(0) | pr.any(0))
    mp, mr, mf, _ = precision_recall_fscore_support(t, pr, average="micro", zero_division=0)
    subset = 100 * float(accuracy_score(t, pr))
    return {
        "n": int(len(t)),
        "micro_f1": 100 * float(mf), "micro_precision": 100 * float(mp), "micro_recall": 100 * float(mr),
        "macro_f1": 100 * float(f1_score(t, pr, labels=present, average="macro", zero_division=0))
        if len(present) else 0.0,
        "example_f1": 100 * float(f1_score(t, pr, average="samples", zero_division=1.0)),
        "subset_accuracy": subset,
        "accuracy": subset,
        "per_class": _per_class(t, pr, labels, range(len(labels))),
    }


def decide(probs: np.ndarray, multilabel: bool, threshold: float = 0.5) -> np.ndarray:
    """Class ids (single-label) or a 0/1 matrix (multi-label; the top label is always kept
    so that every text gets at least one label)."""
    if not multilabel:
        ids: np.ndarray = probs.argmax(1)
        return ids
    out: np.ndarray = probs >= threshold
    out[np.arange(len(probs)), probs.argmax(1)] = True
    return out


def tune_threshold(probs: np.ndarray, y_true: np.ndarray) -> float:
    """The decision threshold with the best micro F1 on dev (grid 0.05 .. 0.95)."""
    best, best_f = 0.5, -1.0
    for th in np.arange(0.05, 0.96, 0.05):
        f = f1_score(y_true, decide(probs, True, th), average="micro", zero_division=0)
        if f > best_f + 1e-9:
            best, best_f = float(round(th, 2)), f
    return best


def compute(probs: np.ndarray, y_true: np.ndarray, labels: list[str], multilabel: bool,
            threshold: float = 0.5) -> dict[str, Any]:
    pred = decide(probs, multilabel, threshold)
    if multilabel:
        return multi_label(y_true, pred, labels)
    return single_label(y_true, pred, labels)


def by_length(lengths: np.ndarray | list[int], correct: np.ndarray | list[bool],
              bins: int = 10) -> list[dict[str, Any]]:
    """Accuracy per length quantile bucket (deciles by default), as in Yin & Schütze's Figure 5:
    ``[{"bin": 1, "min_len": .., "max_len": .., "n": .., "accuracy": ..}, ...]``. Bucket edges are
    quantiles of ``lengths``; equal lengths never straddle two buckets."""
    lengths = np.asarray(lengths)
    correct = np.asarray(correct, dtype=float)
    if len(lengths) != len(correct):
        raise ValueError(f"{len(lengths)} lengths but {len(correct)} outcomes")
    edges = np.unique(np.quantile(lengths, np.linspace(0, 1, bins + 1)))
    which = np.clip(np.searchsorted(edges, lengths, side="right") - 1, 0, len(edges) - 2)
    out = []
    for b in range(len(edges) - 1):
        sel = which == b
        if sel.any():
            out.append({"bin": b + 1, "min_len": int(lengths[sel].min()), "max_len": int(lengths[sel].max()),
                        "n": int(sel.sum()), "accuracy": 100.0 * float(correct[sel].mean())})
    return out
