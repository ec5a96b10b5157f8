"""Explaining tag-guided tree models (Shen et al. 2019, Section 5, Figure 3 and Table 4).

- ``draw_tree``: one tree drawn with matplotlib, each inner node coloured by one dimension of
  the hypernetwork's z_u (the vector that scales the rows of the main network's U at that
  node) and labelled with its tag and predicted label; leaves show word and POS tag.
- ``top_node_types``: for every z_u dimension, the node types (the children's tag pairs, e.g.
  ``DT+NN``) whose mean activation over a dataset is highest.

Models without a hypernetwork have no z_u; ``draw_tree`` then colours by the hidden state.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ..errors import UsageError
from ..data.examples import ExampleKind


def _encode(model, tree_batch) -> dict:
    was = model.training
    model.eval()
    try:
        with torch.no_grad():
            out = model.encode(tree_batch)
            if getattr(model, "pair", False) is False and hasattr(model, "head"):
                out["node_logits"] = model.node_logits(tree_batch, out)
    finally:
        model.train(was)
    return out


def draw_tree(model, batch, tree, out_png, dim: int = 0, label_names=None, index: int = 0) -> dict:
    """Draw tree ``index`` of ``batch`` (``tree``: the same tree as a ``Tree``, for its words
    and tags) to ``out_png``. Returns the drawn values: per node word, tag, value, prediction."""
    tb = batch.tree
    out = _encode(model, tb)
    nodes = (tb.tree_of == index).nonzero().flatten()
    if len(nodes) != len(tree):
        raise ValueError(f"tree {index} of the batch has {len(nodes)} nodes, the given tree {len(tree)}")
    key = "z_u" if "z_u" in out else "h"
    vals = out[key][nodes]
    if not 0 <= dim < vals.shape[1]:
        raise UsageError(f"dim {dim} out of range: {key} has {vals.shape[1]} dimensions")
    vals = vals[:, dim].numpy()
    preds = None
    if "node_logits" in out:
        p = out["node_logits"][nodes].argmax(1).tolist()
        preds = [label_names[i] if label_names is not None else str(i) for i in p]

    _plot_tree(tree, vals, preds, f"{key}[{dim}]", out_png)
    return {"value": key, "dim": dim,
            "nodes": [{"word": tree.words[i], "tag": tree.tags[i], "value": float(vals[i]),
                       "predicted": None if preds is None else preds[i]} for i in range(len(tree))]}


def _plot_tree(tree, vals: np.ndarray, preds, value_name: str, out_png) -> None:
    """Leaves left to right, a parent above the middle of its children at its height; inner
    nodes coloured by ``vals``."""
    import matplotlib
    from matplotlib import cm, colors
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    n = len(tree)
    x, y = np.zeros(n), np.asarray(tree.heights(), dtype=float)
    k = 0
    for i in range(n):                      # post-order: children first
        if tree.left[i] < 0:
            x[i], k = k, k + 1
        else:
            x[i] = (x[tree.left[i]] + x[tree.right[i]]) / 2
    inner = [i for i in range(n) if tree.left[i] >= 0]
    lim = float(np.abs(vals[inner]).max()) if inner else 1.0
    norm = colors.Normalize(-lim or -1.0, lim or 1.0)
    cmap = matplotlib.colormaps["coolwarm"]
    fig = Figure(figsize=(max(6.0, 0.9 * k + 1), max(3.5, 0.8 * (y.max() + 2))))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    for i in inner:
        for c in (tree.left[i], tree.right[i]):
            ax.plot([x[i], x[c]], [y[i], y[c]], color="0.6", lw=0.8, zorder=1)
    for i in range(n):
        tag = tree.tags[i] or "?"
        if tree.left[i] < 0:
            text, face = f"{tree.words[i]}\n{tag}", "white"
        else:
            text, face = tag + (f"\n{preds[i]}" if preds is not None else ""), cmap(norm(vals[i]))
        ax.text(x[i], y[i], text, ha="center", va="center", fontsize=7, zorder=2,
                bbox=dict(boxstyle="round,pad=0.25", fc=face, ec="0.3", lw=0.5))
    ax.set_xlim(-1, max(k, 1))
    ax.set_ylim(-1, y.max() + 1)
    ax.axis("off")
    fig.colorbar(cm.ScalarMappable(norm=norm, cmap=cmap), ax=ax, fraction=0.03, pad=0.01, label=value_name)
    root_pred = f" (predicted: {preds[tree.root]})" if preds is not None else ""
    ax.set_title(" ".join(tree.leaves())[:120] + root_pred, fontsize=8)
    fig.tight_layout()
    Path(out_png).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_png, dpi=120)


def top_node_types(model, loader_or_batches, k: int = 10, tag_names=None, min_count: int = 3) -> dict:
    """For each z_u dimension, the ``k`` node types (children's tags ``left+right``) of highest
    mean activation over the batches (both trees of pair batches), among types seen at least
    ``min_count`` times: ``{dim: [{"type", "left", "right", "mean", "count"}, ...]}``."""
    sums: dict[tuple[int, int], torch.Tensor] = {}
    counts: dict[tuple[int, int], int] = {}
    for batch in loader_or_batches:
        for tb in (batch.tree, batch.pair_tree):
            if tb is None:
                continue
            out = _encode(model, tb)
            if "z_u" not in out:
                raise UsageError("only tag-guided models (tg_hrecnn, tg_htreelstm) have z_u")
            z = out["z_u"].double()
            inner = (tb.left >= 0).nonzero().flatten()
            if inner.numel() == 0:
                continue
            T = int(tb.tags.max()) + 1 if tag_names is None else len(tag_names)
            T = max(T, int(tb.tags.max()) + 1)
            key = tb.tags[tb.left[inner]] * T + tb.tags[tb.right[inner]]     # one id per tag pair
            uniq, inv = torch.unique(key, return_inverse=True)
            s = torch.zeros(len(uniq), z.shape[1], dtype=torch.float64).index_add_(0, inv, z[inner])
            c = torch.bincount(inv, minlength=len(uniq))
            for u, row, cnt in zip(uniq.tolist(), s, c.tolist()):
                pair = (u // T, u % T)
                sums[pair] = sums.get(pair, 0) + row
                counts[pair] = counts.get(pair, 0) + cnt
    if not sums:
        raise ValueError("no inner nodes in the given batches")
    pairs = [p for p in sums if counts[p] >= min_count] or list(sums)
    means = torch.stack([sums[p] / counts[p] for p in pairs])           # [types, Z]
    name = (lambda t: tag_names[t]) if tag_names is not None else str
    result = {}
    for d in range(means.shape[1]):
        top = torch.argsort(means[:, d], descending=True)[:k].tolist()
        result[d] = [{"type": f"{name(pairs[j][0])}+{name(pairs[j][1])}", "left": name(pairs[j][0]),
                      "right": name(pairs[j][1]), "mean": float(means[j, d]), "count": counts[pairs[j]]}
                     for j in top]
    return result


def explain_run(clf, run_dir, out_dir, tree: str, dim: int = 0, data=None, split: str = "dev",
                top: int = 10, bracketed: bool = True) -> list[Path]:
    """A tree drawn by the run's hidden state (dimension ``dim`` of z_u for a tag-guided model),
    and, with ``data``, the node types that most activate each z_u dimension over a split.
    ``tree``: a bracketed parse, or (``bracketed`` false) a plain text the run parses."""
    import json

    from ..data.loading import batch_loader
    from ..errors import DataError
    from ..runs.evaluate import run_examples
    from ..runs.pipeline import tag
    if not clf.kind.is_tree:
        raise DataError(run_dir, None, f"{clf.config.model} is not a tree model")
    if data and not clf.entry.needs_tags:
        raise UsageError(f"--data dumps the node types behind each z_u dimension; {clf.config.model} "
                         f"has no tag-guided hypernetwork (drop --data to draw the tree by its hidden state)")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    key, pair_key = ("tree", "pair_tree") if bracketed else ("text", "pair")
    (example,) = clf.as_examples([{key: tree} if clf.kind == ExampleKind.TREE else {key: tree, pair_key: tree}])
    batch = clf.collate(clf.encoder.encode([example], with_labels=False))
    draw_tree(clf.model, batch, example.tree, out / "tree.png", dim, label_names=clf.labels.labels)
    paths = [out / "tree.png"]
    if data:
        examples, _ = run_examples(clf, run_dir, split, data)
        items = clf.encoder.encode(tag(examples, clf.config), with_labels=False)
        found = top_node_types(clf.model, batch_loader(items, 64, clf.collate), top,
                               tag_names=clf.encoder.tag_vocab.itos if clf.encoder.tag_vocab else None)
        (out / "node_types.json").write_text(json.dumps(found, indent=2))
        paths.append(out / "node_types.json")
    return paths
