"""Generated filters of an adaptive CNN, seen through t-SNE (Choi et al. 2019, Figure 4).

For sample texts of every class, the first adaptive block's context vector generates that
text's filters; the filters of one width are projected to 2-D with t-SNE (scikit-learn) and
coloured by the text's class. Beside them, the static filters of a baseline run (e.g.
``kim_cnn``) in the same projection: static filters are one cloud whatever the input.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ..data.batching import length_mask
from ..errors import UsageError


def first_block(model):
    feats = getattr(model, "features", None)
    if feats is None or getattr(feats, "context", None) is None:
        raise UsageError("not an adaptive Kim CNN run (ac_cnn): no generated filters to show")
    return feats


@torch.no_grad()
def generated_filters(model, batch, width_index: int = 0, per_text: int = 20) -> np.ndarray:
    """[B, per_text, C*k]: the first ``per_text`` generated filters of one width, per text."""
    feats = first_block(model)
    x = model.embedding(batch.text)
    c = feats.context(x, length_mask(batch.lengths, x.shape[1]))
    f = feats.convs[width_index].filters(c)[:, :per_text]          # [B, O, C, k]
    return f.flatten(2).cpu().numpy()


@torch.no_grad()
def static_filters(model, width_index: int = 0, per_text: int = 20) -> np.ndarray:
    w = model.features.convs[width_index].weight[:per_text]           # [O, C, k]
    return w.flatten(1).cpu().numpy()


def plot_filters(gen: np.ndarray, classes: list, label_names: list, out_png, static: np.ndarray | None = None,
                 seed: int = 0, title: str = "") -> Path:
    """t-SNE of generated filters (points coloured by the class of the text that generated
    them), and of static filters (grey crosses) when given."""
    from sklearn.manifold import TSNE
    n, per, d = gen.shape
    pts = [gen.reshape(n * per, d)]
    if static is not None:
        if static.shape[1] != d:
            raise UsageError(f"the baseline's filters have {static.shape[1]} weights, the generated ones {d}: "
                             "a baseline with the same embedding size and filter width is needed")
        pts.append(static)
    allp = np.concatenate(pts)
    allp = allp / np.maximum(np.linalg.norm(allp, axis=1, keepdims=True), 1e-12)
    emb = TSNE(n_components=2, perplexity=min(30, max(5, len(allp) // 20)), random_state=seed,
               init="pca").fit_transform(allp)
    fig = Figure(figsize=(7.5, 6))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(111)
    cls = np.repeat(np.asarray(classes), per)
    cmap = __import__("matplotlib").colormaps["tab10" if len(label_names) <= 10 else "tab20"]
    for k, name in enumerate(label_names):
        sel = cls == k
        if sel.any():
            ax.scatter(emb[: n * per][sel, 0], emb[: n * per][sel, 1], s=6, alpha=.6, color=cmap(k % cmap.N),
                       label=str(name))
    if len(pts) > 1:
        ax.scatter(emb[n * per:, 0], emb[n * per:, 1], s=40, marker="x", color="black", label="static (baseline)")
    ax.legend(markerscale=2, fontsize=8, loc="best")
    ax.set_xticks([]); ax.set_yticks([])
    ax.set_title(title or "t-SNE of generated filters, coloured by the class of the text")
    fig.tight_layout()
    out_png = Path(out_png)
    out_png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_png, dpi=110)
    return out_png


def explain_run(clf, run_dir, out_dir, data=None, split: str = "test", per_class: int = 40,
                baseline=None) -> list[Path]:
    """t-SNE of the filters an adaptive CNN run generates for up to ``per_class`` texts of each
    class of a split (the run's own, or of ``data``), beside those of a static ``baseline`` (a
    loaded run, e.g. kim_cnn)."""
    import random

    from ..errors import DataError
    from ..runs.evaluate import run_examples
    first_block(clf.model)                   # not an adaptive CNN: said before any data is read
    if clf.labels.multilabel:
        raise DataError(run_dir, None, "explain filters colours each text by its one class; a multi-label "
                                       "run's texts have several")
    examples, _ = run_examples(clf, run_dir, split, data)
    by_class: dict = {}
    for e in examples:
        if e.label in clf.labels.index:
            by_class.setdefault(e.label, []).append(e)
    rng = random.Random(0)
    chosen = [e for lab in clf.labels.labels
              for e in rng.sample(by_class.get(lab, []), min(per_class, len(by_class.get(lab, []))))]
    name = data or clf.config.data or "trec-demo"
    if not chosen:
        raise DataError(name, None, f"no example carries one of the run's labels "
                                    f"({', '.join(map(str, clf.labels.labels))})")
    items = clf.encoder.encode(chosen)
    gen = generated_filters(clf.model, clf.collate(items))
    static = None
    if baseline is not None:
        static = static_filters(baseline.model)
    title = f"{clf.config.model} ({clf.config.model_options.get('generation', '')}) on {name}: generated filters"
    return [plot_filters(gen, [it.label for it in items], clf.labels.labels, Path(out_dir) / "filters_tsne.png",
                         static, title=title)]
