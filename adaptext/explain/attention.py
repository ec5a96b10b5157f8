"""What an attentive convolution model looked at (Yin & Schütze 2018, Figure 6a).

``plot_attention(model, batch, tokens_text, tokens_context, out_dir)`` takes an already
built model with an ``explain(batch)`` method (``attconv``) and a one-example batch, and
writes PNGs (matplotlib, Agg backend, no display needed; ``attention_figures`` gives the
figures themselves):

- ``attention.png`` (context-wise with several contexts: ``attention_context<k>.png``):
  the attention distribution of every word of the text (rows) over the context (columns);
  each row sums to 1.
- ``activations.png``: the output of every filter of the attentive convolution along the
  text (filters x words, tanh range), and under it, for every word, how many filters take
  their max-pooled value there (the word's share of the sentence representation).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ..errors import UsageError
from ..data.examples import ExampleKind


def _ticks(ax, axis: str, tokens: list[str]) -> None:
    n = len(tokens)
    step = max(1, int(np.ceil(n / 80)))                 # at most ~80 labels per axis
    pos = list(range(0, n, step))
    labels = [tokens[i] for i in pos]
    fs = 8 if n <= 40 else 6
    if axis == "x":
        ax.set_xticks(pos, labels, rotation=70, ha="right", fontsize=fs)
    else:
        ax.set_yticks(pos, labels, fontsize=fs)


DPI = 110


def _heatmap(weights: np.ndarray, rows: list[str], cols: list[str], title: str) -> Figure:
    n, m = weights.shape
    fig = Figure(figsize=(min(3 + 0.28 * m, 30), min(2 + 0.26 * n, 30)))
    ax = fig.add_subplot(1, 1, 1)
    im = ax.imshow(weights, cmap="viridis", vmin=0.0, vmax=max(float(weights.max(initial=0.0)), 1e-6),
                   aspect="auto", interpolation="nearest")
    _ticks(ax, "x", cols)
    _ticks(ax, "y", rows)
    ax.set_xlabel("context")
    ax.set_ylabel("text")
    ax.set_title(title, fontsize=10)
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.02)
    FigureCanvasAgg(fig)
    fig.tight_layout()                                  # laid out once: the file shows the figure as returned
    return fig


def _activations(acts: np.ndarray, tokens: list[str]) -> Figure:
    n, h = acts.shape
    fig = Figure(figsize=(min(3 + 0.3 * n, 30), 2.5 + min(0.02 * h, 6)), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    v = max(float(np.abs(acts).max(initial=0.0)), 1e-6)        # symmetric scale, within tanh's (-1, 1)
    im = top.imshow(acts.T, cmap="RdBu_r", vmin=-v, vmax=v, aspect="auto", interpolation="nearest")
    top.set_ylabel("filter")
    top.set_title("attentive convolution: activation of every filter along the text", fontsize=10)
    fig.colorbar(im, ax=[top, bottom], fraction=0.03, pad=0.01)
    winners = np.bincount(acts.argmax(0), minlength=n) if n else np.zeros(0)
    bottom.bar(range(n), winners / max(h, 1), color="tab:orange")
    bottom.set_ylabel("pooled share")
    _ticks(bottom, "x", tokens)
    FigureCanvasAgg(fig)
    return fig


def _check(name: str, tokens: list[str], length: int) -> list[str]:
    tokens = [str(t) for t in tokens]
    if len(tokens) != length:
        raise ValueError(f"{len(tokens)} tokens given for the {name}, but it has {length} "
                         f"(pass the tokens the model's tokenizer produced)")
    return tokens


def plot_attention(model, batch, tokens_text, tokens_context, out_dir) -> list[Path]:
    """Heatmap(s) of the attention of the text over its context and the per-filter
    activations along the text, for the first example of ``batch``; returns the PNG paths.

    ``tokens_context``: the context's tokens (pair), a list of token lists (several
    contexts), or None for a single text (its context is itself)."""
    figures = attention_figures(model, batch, tokens_text, tokens_context)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, fig in figures.items():
        fig.savefig(out / name, dpi=DPI)
    return [out / name for name in figures]


def attention_figures(model, batch, tokens_text, tokens_context) -> dict[str, Figure]:
    """The figures ``plot_attention`` writes, by file name: the heatmap(s) (the attention
    matrix is the image of their axes) and the activations."""
    if not model.explains:
        raise UsageError(f"{type(model).__name__} has no attention to explain (use an attconv model)")
    was_training = model.training
    model.eval()
    try:
        info = model.explain(batch)
    finally:
        model.train(was_training)
    n = int(batch.lengths[0])
    text = _check("text", tokens_text, n)
    attn = info["attention"][0].float().cpu().numpy()
    nested = bool(tokens_context) and isinstance(tokens_context[0], (list, tuple))
    figures: dict[str, Figure] = {}
    mode = info["mode"]
    if mode == ExampleKind.TEXT:
        figures["attention.png"] = _heatmap(attn[:n, :n], text, text, "intra-context attention (context = the text)")
    elif mode == ExampleKind.PAIR:
        m = int(batch.pair_lengths[0])
        ctx = _check("context", tokens_context if tokens_context is not None else [], m)
        figures["attention.png"] = _heatmap(attn[:n, :m], text, ctx, "attention of the text over its context")
    elif mode == "context-concat":
        m = int(info["context_lengths"][0])
        flat = [t for c in tokens_context for t in c] if nested else list(tokens_context or [])
        ctx = _check("joined contexts", flat, m)
        figures["attention.png"] = _heatmap(attn[:n, :m], text, ctx, "attention of the text over its joined contexts")
    else:                                                    # context-wise: one map per context
        lens = batch.context_lengths[0].tolist()
        given = list(tokens_context) if nested else [list(tokens_context or [])]
        used = [k for k, m in enumerate(lens) if m > 0]
        if len(given) != len(used):
            raise ValueError(f"{len(given)} token lists given for {len(used)} contexts")
        for k, toks in zip(used, given):
            m = int(lens[k])
            ctx = _check(f"context {k + 1}", toks, m)
            name = "attention.png" if len(used) == 1 else f"attention_context{k + 1}.png"
            figures[name] = _heatmap(attn[k, :n, :m], text, ctx, f"attention of the text over context {k + 1}")
    figures["activations.png"] = _activations(info["activations"][0, :n].float().cpu().numpy(), text)
    return figures


def explain_run(clf, run_dir, text: str, contexts: list, out_dir) -> list[Path]:
    """The attention plots of a trained attentive-convolution run for one text (and its
    context or contexts, as the run reads them)."""
    from ..errors import DataError
    run = run_dir
    if not clf.model.explains:
        raise DataError(run, None, f"{clf.config.model} has no attention to show (use an attconv run)")
    for name, t in [("--text", text)] + [(f"--context {k}", c) for k, c in enumerate(contexts, 1)]:
        if not clf.tokens(t):
            raise DataError("<input>", None, f"{name} is empty after tokenisation: nothing to attend from or to")
    if clf.kind == ExampleKind.TEXT:
        if contexts:
            raise DataError(run, None, "this model reads single texts and attends within the text: "
                                       "drop --context (a pair or contexts run attends to a context)")
        inputs: list[str | dict[str, Any]] = [text]
        ctx_tokens: list[str] | list[list[str]] | None = None
    elif not contexts:
        raise DataError(run, None, f"this {clf.kind} model needs --context")
    elif clf.kind == ExampleKind.PAIR:
        if len(contexts) > 1:
            raise DataError(run, None, f"a pair model reads one --context, not {len(contexts)} "
                                       "(several contexts need a model trained on texts with contexts)")
        inputs, ctx_tokens = [{"text": text, "pair": contexts[0]}], clf.tokens(contexts[0])
    else:
        inputs, ctx_tokens = [{"text": text, "contexts": contexts}], [clf.tokens(c) for c in contexts]
    batch, _ = clf.batch(inputs)
    return plot_attention(clf.model, batch, clf.tokens(text), ctx_tokens, out_dir)
