"""Spans of binary trees and unlabelled bracketing F1. Free of torch (and of imports), so a
scoring script in another environment can load this file alone."""
from __future__ import annotations


def spans_of(tree) -> list[tuple[int, int]]:
    """(start, end) of every inner node, in words."""
    start, end, leaf = {}, {}, 0
    out = []
    for i in range(len(tree)):                   # post-order: children first
        if tree.is_leaf(i):
            start[i], end[i] = leaf, leaf + 1
            leaf += 1
        else:
            start[i], end[i] = start[tree.left[i]], end[tree.right[i]]
            out.append((start[i], end[i]))
    return out


def nontrivial(spans, n: int) -> set:
    """Spans of two words or more, less the whole sentence (every tree has those alike)."""
    return {(i, j) for i, j in spans if j - i >= 2 and (i, j) != (0, n)}


def bracket_f1(gold: list, predicted: list) -> float:
    """Unlabelled bracketing F1 (%, corpus level) of ``predicted`` trees against ``gold`` trees
    (or span lists), over non-trivial spans."""
    return span_f1([spans_of(g) if hasattr(g, "left") else g for g in gold], [spans_of(p) for p in predicted],
                   [len(p.leaves()) for p in predicted])


def span_f1(gold: list, predicted: list, lengths: list) -> float:
    """``bracket_f1`` over span lists of sentences of ``lengths`` words."""
    hit = n_gold = n_pred = 0
    for g, p, n in zip(gold, predicted, lengths):
        gs, ps = nontrivial(g, n), nontrivial(p, n)
        hit, n_gold, n_pred = hit + len(gs & ps), n_gold + len(gs), n_pred + len(ps)
    if not n_gold or not n_pred:
        return 0.0
    precision, recall = hit / n_pred, hit / n_gold
    return 200 * precision * recall / (precision + recall) if hit else 0.0
