"""Words coloured by their attribution, as HTML: the one renderer of word scores, shared by
``adaptext explain words --out`` (words.html) and the service (each /explain answer carries its
coloured words, which the service's page shows as they come).

Green for a word that raises the explained logit, red for one that lowers it; the colour's
opacity is the word's share of the largest |score| of its explanation, so the words of one
explanation compare at a glance whatever the model's logit scale.
"""
from __future__ import annotations

import html

# inline, not in a stylesheet: the spans read the same in any page they are put in
WORD_STYLE = "padding:1px 2px;border-radius:3px"


def colour(score: float, scale: float) -> str:
    """The background of a word of ``score``, ``scale`` being its explanation's largest |score|."""
    a = min(abs(score) / scale, 1.0) if scale > 0 else 0.0
    return f"rgba(0,150,60,{a:.2f})" if score >= 0 else f"rgba(210,40,40,{a:.2f})"


def coloured_words(tokens: list[str], scores: list[float], scale: float) -> str:
    """The words as spans, each coloured by its score, the score shown on hover."""
    return " ".join(f'<span class=word title="{v:+.4f}" style="background:{colour(v, scale)};{WORD_STYLE}">'
                    f"{html.escape(t)}</span>" for t, v in zip(tokens, scores))


def explanation_html(record: dict) -> str:
    """An explanation's segments (text, pair, each context, trees), a paragraph each, on the one
    scale of the whole explanation: a pair's two texts are compared as the model weighed them."""
    scale = max((abs(v) for seg in record["segments"] for v in seg["scores"]), default=0.0)
    return "".join(f"<p><b>{html.escape(seg['name'])}</b>: {coloured_words(seg['tokens'], seg['scores'], scale)}</p>"
                   for seg in record["segments"])
