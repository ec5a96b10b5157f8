"""Classification metrics, single-label and multi-label (plain numpy, no hidden state)."""
from __future__ import annotations

import numpy as np


def _prf(tp, fp, fn):
    p = np.divide(tp, tp + fp, out=np.zeros_like(tp, dtype=float), where=(tp + fp) > 0)
    r = np.divide(tp, tp + fn, out=np.zeros_like(tp, dtype=float), where=(tp + fn) > 0)
    f = np.divide(2 * p * r, p + r, out=np.zeros_like(p), where=(p + r) > 0)
    return p, r, f


def single_label(y_true, y_pred, labels: list[str]) -> dict:
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    k = len(labels)
    cm = np.zeros((k, k), dtype=np.int64)
    np.add.at(cm, (y_true, y_pred), 1)
    tp = np.diag(cm).astype(float)
    fp = cm.sum(0) - tp
    fn = cm.sum(1) - tp
    p, r, f = _prf(tp, fp, fn)
    support = cm.sum(1)
    present = (support > 0) | (cm.sum(0) > 0)    # classes in the gold labels or the predictions (as sklearn)
    n = max(len(y_true), 1)
    return {
        "n": int(len(y_true)),
        "accuracy": 100.0 * float(tp.sum()) / n,
        "macro_f1": 100.0 * float(f[present].mean()) if present.any() else 0.0,
        "micro_f1": 100.0 * float(tp.sum()) / n,   # equals accuracy for single-label
        "weighted_f1": 100.0 * float((f * support).sum() / max(support.sum(), 1)),
        "per_class": {labels[c]: {"precision": 100 * float(p[c]), "recall": 100 * float(r[c]),
                                  "f1": 100 * float(f[c]), "support": int(support[c])} for c in range(k)},
        "confusion_matrix": {"labels": list(labels), "matrix": cm.tolist()},
    }


def multi_label(y_true, y_pred, labels: list[str]) -> dict:
    """y_true, y_pred: [N, C] 0/1. Micro / macro F1 over labels; example-based F1
    (mean over examples of 2|Y∩Ŷ| / (|Y|+|Ŷ|)); subset accuracy."""
    t, pr = np.asarray(y_true).astype(bool), np.asarray(y_pred).astype(bool)
    tp = (t & pr).sum(0).astype(float)
    fp = (~t & pr).sum(0).astype(float)
    fn = (t & ~pr).sum(0).astype(float)
    p, r, f = _prf(tp, fp, fn)
    mp, mr, mf = _prf(np.array([tp.sum()]), np.array([fp.sum()]), np.array([fn.sum()]))
    inter = (t & pr).sum(1)
    denom = t.sum(1) + pr.sum(1)
    ex_f1 = np.where(denom > 0, 2 * inter / np.maximum(denom, 1), 1.0)
    support = t.sum(0)
    present = (support > 0) | (pr.sum(0) > 0)
    return {
        "n": int(len(t)),
        "micro_f1": 100 * float(mf[0]), "micro_precision": 100 * float(mp[0]), "micro_recall": 100 * float(mr[0]),
        "macro_f1": 100 * float(f[present].mean()) if present.any() else 0.0,
        "example_f1": 100 * float(ex_f1.mean()),
        "subset_accuracy": 100 * float((t == pr).all(1).mean()),
        "accuracy": 100 * float((t == pr).all(1).mean()),
        "per_class": {labels[c]: {"precision": 100 * float(p[c]), "recall": 100 * float(r[c]),
                                  "f1": 100 * float(f[c]), "support": int(support[c])} for c in range(len(labels))},
    }


def decide(probs: np.ndarray, multilabel: bool, threshold: float = 0.5) -> np.ndarray:
    """Class ids (single-label) or a 0/1 matrix (multi-label; the top label is always kept
    so that every text gets at least one label)."""
    if not multilabel:
        return probs.argmax(1)
    out = probs >= threshold
    out[np.arange(len(probs)), probs.argmax(1)] = True
    return out


def tune_threshold(probs: np.ndarray, y_true: np.ndarray) -> float:
    """The decision threshold with the best micro F1 on dev (grid 0.05 .. 0.95)."""
    best, best_f = 0.5, -1.0
    for th in np.arange(0.05, 0.96, 0.05):
        f = multi_label(y_true, decide(probs, True, th), [str(i) for i in range(probs.shape[1])])["micro_f1"]
        if f > best_f + 1e-9:
            best, best_f = float(round(th, 2)), f
    return best


def compute(probs: np.ndarray, y_true: np.ndarray, labels: list[str], multilabel: bool, threshold: float = 0.5) -> dict:
    pred = decide(probs, multilabel, threshold)
    if multilabel:
        return multi_label(y_true, pred, labels)
    return single_label(y_true, pred, labels)


def by_length(lengths, correct, bins: int = 10) -> list[dict]:
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
