"""Readers of parsed data: SST's labelled PTB trees (and their phrases), SICK's dependency-style
parent-pointer parses joined with its labels, and treebank ``.mrg`` files (for the phrase labeller)."""
from __future__ import annotations

from pathlib import Path

from ..errors import BadLines, DataError
from .examples import TextExample, TreeExample, TreePairExample
from .lines import iter_lines, location, read_text
from .trees import tree_from_brackets, tree_from_parents

SST_FINE = {"0": "very negative", "1": "negative", "2": "neutral", "3": "positive", "4": "very positive"}
SST_BINARY = {"0": "negative", "1": "negative", "3": "positive", "4": "positive"}


def read_sst_trees(path, bad: BadLines | None = None, binary: bool = False, encoding: str = "utf-8"):
    """SST PTB trees: one ``TreeExample`` per sentence, every node labelled (the binary view
    maps 0/1 to negative, 3/4 to positive, and leaves neutral nodes unlabelled; sentences
    whose root is neutral are dropped)."""
    bad = bad or BadLines()
    names = SST_BINARY if binary else SST_FINE
    out = []
    for i, line in iter_lines(path, encoding, bad):
        if not line.strip():
            continue
        try:
            t = tree_from_brackets(line, labels_are="labels")
        except ValueError as e:
            bad(path, i, f"bad tree: {e}")
            continue
        unknown = [l for l in t.labels if l not in SST_FINE]
        if unknown:
            bad(path, i, f"node label {unknown[0]!r} is not an SST label 0-4")
            continue
        t = t.with_labels(names.get(l) for l in t.labels)
        if t.labels[t.root] is None:
            continue
        out.append(TreeExample(t, t.labels[t.root], location(path, i)))
    return out


def sst_phrases(trees, dedupe: bool = True):
    """Every labelled node of SST trees as a text example (Kim 2014's phrase-level training).
    Repeated phrases (same lower-cased words) are kept once."""
    out, seen = [], set()
    for ex in trees:
        t = ex.tree
        spans = _spans(t)
        for i, lab in enumerate(t.labels):
            if lab is None:
                continue
            words = spans[i]
            key = " ".join(words).lower()
            if dedupe:
                if key in seen:
                    continue
                seen.add(key)
            out.append(TextExample(" ".join(words), lab, ex.where))
    return out


def _spans(t) -> list[list[str]]:
    spans: list = [None] * len(t)
    for i in range(len(t)):       # post-order: children first
        spans[i] = [t.words[i]] if t.left[i] < 0 else spans[t.left[i]] + spans[t.right[i]]
    return spans


def read_ptb_file(path, bad: BadLines | None = None, encoding: str = "utf-8"):
    """A treebank ``.mrg`` file (trees may span lines): trees with POS tags at the leaves and
    phrase tags inside, -NONE- elements and function tags removed, binarised."""
    bad = bad or BadLines()
    text = read_text(path, encoding, bad)
    out, depth, start, line = [], 0, 1, 1
    buf: list[str] = []
    for ch in text:
        if ch == "\n":
            line += 1
        if ch == "(":
            if depth == 0:
                start, buf = line, []
            depth += 1
        if depth > 0:
            buf.append(ch)
        if ch == ")":
            depth -= 1
            if depth == 0:
                try:
                    out.append(TreeExample(tree_from_brackets("".join(buf), labels_are="tags", clean=True),
                                           None, location(path, start)))
                except ValueError as e:
                    bad(path, start, f"bad tree: {e}")
            elif depth < 0:
                bad(path, line, "unbalanced brackets: ')' without '('")
                depth = 0
    if depth > 0:
        bad(path, start, "unbalanced brackets: missing ')'")
    return out


def read_sick_trees(folder, sick_pairs, sick_file, bad: BadLines | None = None):
    """``parsed/{split}/{a,b}.toks`` + ``{a,b}.cparents`` joined on ``id.txt`` with the labels of
    ``sick_pairs``, the pairs read from ``sick_file`` (``readers.read_sick``): tree pairs
    (hypothesis tree first, premise tree as its pair)."""
    bad = bad or BadLines()
    folder = Path(folder)
    labels = {ex.where.pair_id: ex for ex in sick_pairs}
    ids = [l.strip() for _, l in iter_lines(folder / "id.txt", "utf-8")]
    cols = {}
    for name in ("a.toks", "a.cparents", "b.toks", "b.cparents"):
        cols[name] = [l for _, l in iter_lines(folder / name, "utf-8")]
        if len(cols[name]) != len(ids):
            raise DataError(folder / name, None, f"{len(cols[name])} lines, but id.txt has {len(ids)}")
    out = []
    for k, pid in enumerate(ids):
        trees = []
        for side in "ab":
            try:
                parents = [int(x) for x in cols[f"{side}.cparents"][k].split()]
                trees.append(tree_from_parents(cols[f"{side}.toks"][k].split(" "), parents))
            except ValueError as e:
                bad(folder / f"{side}.cparents", k + 1, str(e))
                break
        if len(trees) < 2:
            continue
        if pid not in labels:
            bad(folder / "id.txt", k + 1, f"pair_ID {pid} not found in {sick_file}")
            continue
        out.append(TreePairExample(trees[1], trees[0], labels[pid].label, location(folder / "id.txt", k + 1)))
    return out
