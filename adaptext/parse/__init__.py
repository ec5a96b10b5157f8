"""Plain text -> binary constituency trees, so the tree models read any text format.

Parsers by name (``--parser``): ``bracketer``, the span bracketer shipped in the package
(trained on the SST training trees; see bracketer.py), and the baselines ``right-branching``
and ``left-branching``. ``parse_token_lists`` parses a corpus in batches, a text longer than
``MAX_WORDS`` tokens in sentence-sized pieces joined right-branching, and caches the trees
under ``$ADAPTEXT_CACHE/parses`` by parser and tokens, so folds, seeds and reruns parse once.
"""
from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..atomic import written_atomically
from ..data.cache import cache_dir
from ..errors import MissingResource, UsageError
from ..data.trees import Tree, TreeBuilder, leaf_tree

PARSERS = ("bracketer", "right-branching", "left-branching")
DEFAULT = "bracketer"
MAX_WORDS = 120                    # longer texts are parsed a sentence at a time
SENTENCE_END = {".", "!", "?", ";"}
SHIPPED = Path(__file__).resolve().parent.parent / "resources" / "parser"


def left_tree(tokens: list[str]) -> Tree:
    b = TreeBuilder()
    node = b.add(word=tokens[0])
    for w in tokens[1:]:
        node = b.add(left=node, right=b.add(word=w))
    return b.build()


@lru_cache(maxsize=None)
def shipped_bracketer(folder: str = str(SHIPPED)):
    from .bracketer import Bracketer
    if not (Path(folder) / "bracketer.safetensors").is_file():
        raise MissingResource(f"no bracketer weights in {folder}")
    return Bracketer.load(folder)


@lru_cache(maxsize=None)
def identity(name: str) -> str:
    """What names a parser's output in the cache: its weights' hash for the bracketer."""
    if name != "bracketer":
        return name
    return "bracketer-" + hashlib.blake2b((SHIPPED / "bracketer.safetensors").read_bytes(), digest_size=8).hexdigest()


def check_parser(name: str) -> None:
    if name not in PARSERS:
        raise UsageError(f"unknown parser {name!r}; available: {', '.join(PARSERS)}")


def pieces(tokens: list[str]) -> list[list[str]]:
    """A long text as sentences (cut after . ! ? ;), each at most MAX_WORDS tokens."""
    out, cur = [], []
    for w in tokens:
        cur.append(w)
        if w in SENTENCE_END or len(cur) == MAX_WORDS:
            out.append(cur)
            cur = []
    return out + ([cur] if cur else [])


def join_right(trees: list[Tree]) -> Tree:
    """Trees of consecutive pieces under right-branching nodes: (t1 (t2 (t3 ...)))."""
    b = TreeBuilder()
    roots = []
    for t in trees:
        base = len(b.left)
        for l, r, w, tag, lab in zip(t.left, t.right, t.words, t.tags, t.labels):
            b.add(l + base if l >= 0 else -1, r + base if r >= 0 else -1, w, tag, lab)
        roots.append(len(b.left) - 1)
    node = roots[-1]
    for r in reversed(roots[:-1]):
        node = b.add(left=r, right=node)
    return b.build()


def _parse_batch(name: str, sentences: list[list[str]]) -> list[Tree]:
    if name == "right-branching":
        return [leaf_tree(s) for s in sentences]
    if name == "left-branching":
        return [left_tree(s) for s in sentences]
    return shipped_bracketer().parse(sentences)


def parse_token_lists(token_lists: list[list[str]], name: str = DEFAULT, cache: bool = True) -> list[Tree]:
    """One binary tree per token list (an empty list is read as one unknown word)."""
    check_parser(name)
    token_lists = [t or ["<unk>"] for t in token_lists]
    path = _cache_path(name, token_lists) if cache else None
    if path is not None and path.is_file():
        return _load(path, token_lists)
    split = [pieces(t) if len(t) > MAX_WORDS else [t] for t in token_lists]
    flat = _parse_batch(name, [p for ps in split for p in ps])
    trees, k = [], 0
    for ps in split:
        trees.append(flat[k] if len(ps) == 1 else join_right(flat[k:k + len(ps)]))
        k += len(ps)
    if path is not None:
        _save(path, trees)
    return trees


# ------------------------------------------------------------------ cache
def _cache_path(name: str, token_lists) -> Path | None:
    if len(token_lists) < 64:                      # a request's few texts: parsing beats a file per call
        return None
    h = hashlib.blake2b(identity(name).encode(), digest_size=16)
    for t in token_lists:
        h.update("\x1f".join(t).encode("utf-8", "surrogatepass") + b"\x1e")
    return cache_dir("parses") / f"{h.hexdigest()}.npz"


def _save(path: Path, trees: list[Tree]) -> None:
    sizes = np.asarray([len(t) for t in trees], dtype=np.int64)
    left = np.concatenate([np.asarray(t.left, dtype=np.int32) for t in trees])
    right = np.concatenate([np.asarray(t.right, dtype=np.int32) for t in trees])
    with written_atomically(path, suffix=".npz") as tmp:
        np.savez(tmp, sizes=sizes, left=left, right=right)


def _load(path: Path, token_lists) -> list[Tree]:
    with np.load(path) as z:
        sizes, left, right = z["sizes"], z["left"], z["right"]
    trees, start = [], 0
    for n, tokens in zip(sizes, token_lists):
        l, r = left[start:start + n].tolist(), right[start:start + n].tolist()
        words = iter(tokens)
        trees.append(Tree(tuple(l), tuple(r), tuple(next(words) if a < 0 else None for a in l),
                          (None,) * n, (None,) * n))
        start += n
    return trees


# ------------------------------------------------------------------ examples
def parsed_examples(examples: list, tokens, max_length: int, name: str = DEFAULT) -> list:
    """Text examples as tree examples and pairs as tree pairs, labels kept, every text tokenised
    as the run tokenises (cut at ``max_length``, 0: never) and parsed in one batch."""
    from ..data.examples import PairExample, TreeExample, TreePairExample
    texts, cut = [], []
    for ex in examples:
        for s in ex.texts():
            toks = tokens(s)
            cut.append(bool(max_length) and len(toks) > max_length)
            texts.append(toks[:max_length] if max_length else toks)
    trees = iter(zip(parse_token_lists(texts, name), cut))
    out: list[TreeExample | TreePairExample] = []
    for ex in examples:
        (tree, c) = next(trees)
        if isinstance(ex, PairExample):
            pair, c2 = next(trees)
            out.append(TreePairExample(tree, pair, ex.label, ex.where, truncated=c or c2))
        else:
            out.append(TreeExample(tree, ex.label, ex.where, truncated=c))
    return out
