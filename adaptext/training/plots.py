"""Learning curves and confusion matrix as PNG (matplotlib, no display needed: figures drawn
on their own Agg canvas, so the process's pyplot backend, e.g. a notebook's, is left alone)."""
from __future__ import annotations

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator


def _figure(**kw) -> Figure:
    fig = Figure(**kw)
    FigureCanvasAgg(fig)
    return fig


def learning_curves(rows: list[dict], path, monitor: str) -> None:
    if not rows:
        return
    ep = [r["epoch"] for r in rows]
    fig = _figure(figsize=(10, 3.8))
    ax = fig.subplots(1, 2)
    ax[0].plot(ep, [r.get("train_loss") for r in rows], marker="o", label="train loss")
    if rows[0].get("dev_loss") is not None:
        ax[0].plot(ep, [r.get("dev_loss") for r in rows], marker="o", label="dev loss")
    ax[0].set_xlabel("epoch"); ax[0].set_ylabel("loss"); ax[0].legend(); ax[0].grid(alpha=.3)
    for key in ("train_accuracy", f"dev_{monitor}"):
        if rows[0].get(key) is not None:
            ax[1].plot(ep, [r.get(key) for r in rows], marker="o", label=key.replace("_", " "))
    ax[1].set_xlabel("epoch"); ax[1].set_ylabel("%"); ax[1].legend(); ax[1].grid(alpha=.3)
    for a in ax:
        a.xaxis.set_major_locator(MaxNLocator(integer=True))       # epochs are whole numbers
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def confusion_matrix(cm: list[list[int]], labels: list[str], path, title: str = "") -> None:
    counts = np.asarray(cm)
    k = len(labels)
    size = min(max(4.8, 3 + 0.45 * k), 18)
    fig = _figure(figsize=(size, size * 0.85))
    ax = fig.subplots()
    norm = counts / np.maximum(counts.sum(1, keepdims=True), 1)
    im = ax.imshow(norm, cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(range(k), labels, rotation=60, ha="right", fontsize=8 if k > 10 else 10)
    ax.set_yticks(range(k), labels, fontsize=8 if k > 10 else 10)
    ax.set_xlabel("predicted"); ax.set_ylabel("true")
    if k <= 20:
        for i in range(k):
            for j in range(k):
                ax.text(j, i, str(counts[i, j]), ha="center", va="center", fontsize=7,
                        color="white" if norm[i, j] > .5 else "black")
    ax.set_title(title or "confusion matrix (row-normalised colour, counts)", fontsize=9)
    fig.colorbar(im, ax=ax, fraction=0.046)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
