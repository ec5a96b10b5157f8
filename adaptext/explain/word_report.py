"""Word attributions of a trained run, as records, a coloured HTML page, PNGs and JSON.

``explain_inputs(clf, inputs)`` -> one record per input::

    {"label": predicted, "target": explained label, "logit", "baseline_logit",
     "attribution_sum", "gap", "steps",
     "segments": [{"name": "text" | "pair" | "context1" ... | "tree" | "pair_tree",
                   "tokens": [...], "scores": [...]}]}

``write_report(records, out_dir)`` writes words.json, words.html and words_<k>.png.
"""
from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np

from ..errors import UsageError
from ..runs.inputs import as_input_list
from .highlight import explanation_html
from .words import TOLERANCE, check_explainable, check_steps, integrated_gradients, per_example

MAX_PNGS = 20


def explain_inputs(clf, inputs, label: str | None = None, steps: int = 50, batch_size: int = 16,
                   tolerance: float = TOLERANCE) -> list[dict]:
    """Integrated-gradient word scores for ``inputs`` (as ``clf.predict`` takes them) toward
    ``label`` (default: each input's predicted label)."""
    check_explainable(clf.model)
    check_steps(steps)
    target = _class_id(clf, label)
    examples = clf.as_examples(as_input_list(inputs))
    items = clf.pipeline.items_of(examples)
    records = []
    for lo in range(0, len(items), batch_size):
        chunk = items[lo:lo + batch_size]
        result = integrated_gradients(clf.model, clf.collate(chunk), target, steps, tolerance)
        records += [_record(clf, result, b, examples[lo + b], it) for b, it in enumerate(chunk)]
    return records


def _class_id(clf, label):
    if label is None:
        return None
    if label not in clf.labels.index:
        raise UsageError(f"label {label!r} is not one of the run's: {', '.join(clf.labels.labels[:20])}")
    return clf.labels.index[label]


def _record(clf, result: dict, b: int, example, item) -> dict:
    names = clf.labels.labels
    segments = per_example(result, b)
    total = sum(float(s.sum()) for _, s in segments)
    return {"label": names[int(result["predicted"][b])], "target": names[int(result["target"][b])], "logit": round(float(result["logit"][b]), 6),
            "baseline_logit": round(float(result["baseline_logit"][b]), 6), "attribution_sum": round(total, 6),
            "gap": round(float(result["gap"][b]), 6), "steps": result["steps"],
            "truncated": bool(item.truncated),
            "segments": [{"name": name, "tokens": _tokens(clf, example, name, len(scores)),
                          "scores": [round(float(v), 6) for v in scores]}
                         for name, scores in segments]}


def _tokens(clf, example, segment: str, n: int) -> list[str]:
    """The words of one segment of an example as the model read them (a text cut where the run
    cuts it; a text empty after tokenisation is the one unknown word the model saw)."""
    if segment in ("tree", "pair_tree"):
        tree = example.tree if segment == "tree" else example.pair
        words = tree.leaves()
    else:
        source = (example.text if segment == "text" else example.pair if segment == "pair"
                  else example.contexts[int(segment[len("context"):]) - 1])
        words = clf.encoder.tokens(source)
    words = words[:n] or ["<unk>"]
    if len(words) != n:
        raise AssertionError(f"{segment}: {len(words)} words for {n} attributions")
    return words


# ------------------------------------------------------------------ rendering
def write_report(records: list[dict], out_dir) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "words.json", out / "words.html"]
    paths[0].write_text(json.dumps({"tolerance": TOLERANCE, "explanations": records}, indent=1) + "\n")
    paths[1].write_text(_html(records))
    for k, rec in enumerate(records[:MAX_PNGS], start=1):
        paths.append(_png(rec, out / f"words_{k}.png"))
    return paths


def _html(records: list[dict]) -> str:
    blocks = [f"<div class=ex><h3>toward {html.escape(rec['target'])}</h3>{explanation_html(rec)}"
              f"<p class=check>{_check_line(rec)}</p></div>" for rec in records]
    return ("<!doctype html><meta charset=utf-8><title>word attributions</title>"
            "<style>body{font-family:sans-serif;max-width:60em}"
            ".check{color:#555;font-size:90%}.ex{border-bottom:1px solid #ccc;margin-bottom:1em}</style>"
            "<h2>Integrated gradients over the word vectors</h2>"
            "<p>Green words raise the logit of the explained label, red ones lower it; hover for the score. "
            "Baseline: every word vector zero.</p>" + "".join(blocks) + "\n")


def _check_line(rec: dict) -> str:
    diff = rec["logit"] - rec["baseline_logit"]
    return (f"completeness: attributions sum to {rec['attribution_sum']:+.4f}, logit - baseline logit = "
            f"{diff:+.4f} (gap {100 * rec['gap']:.2f}% of it, {rec['steps']} steps)")


def _png(rec: dict, path: Path) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    tokens = [f"{t}" if seg["name"] == "text" else f"{seg['name']}: {t}" if i == 0 else t
              for seg in rec["segments"] for i, t in enumerate(seg["tokens"])]
    scores = np.asarray([v for seg in rec["segments"] for v in seg["scores"]])
    fig = Figure(figsize=(min(max(7.5, 3 + 0.32 * len(tokens)), 30), 3.8))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    ax.bar(range(len(tokens)), scores, color=["#00963c" if v >= 0 else "#d22828" for v in scores])
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_xticks(range(len(tokens)), tokens, rotation=70, ha="right", fontsize=8 if len(tokens) <= 40 else 6)
    ax.set_ylabel("attribution (logit)")
    ax.set_title(f"toward {rec['target']}\n{_check_line(rec)}", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def text_report(records: list[dict]) -> str:
    """The scores as plain text, one line per segment: word(+0.123) ..."""
    lines = []
    for k, rec in enumerate(records, start=1):
        lines.append(f"[{k}] toward {rec['target']}")
        for seg in rec["segments"]:
            lines.append(f"  {seg['name']}: " + " ".join(f"{t}({v:+.3f})" for t, v in zip(seg["tokens"], seg["scores"])))
        lines.append(f"  {_check_line(rec)}")
    return "\n".join(lines)
