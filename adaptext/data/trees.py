"""Binary constituency trees with a word per leaf, a tag and an optional label per node.

A ``Tree`` is stored flat in post-order (children before parents, root last), which
is what the batched tree engine wants: node heights are computed once, and nodes of
equal height across a batch are composed together.

Readers here: PTB brackets (SST's ``(3 (2 The) (2 Rock))``, or general treebank
trees with POS and phrase labels, binarised and with unary chains collapsed) and
parent-pointer files (``*.toks`` + ``*.cparents``, Tai et al. 2015's preprocessing).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tree:
    left: tuple          # child index per node, -1 for a leaf
    right: tuple
    words: tuple         # the token at a leaf, None at an inner node
    tags: tuple          # POS tag (leaf) / phrase tag (inner), None where unknown
    labels: tuple        # node label (e.g. SST sentiment), None where unlabelled

    def __post_init__(self):
        n = len(self.left)
        if not (n == len(self.right) == len(self.words) == len(self.tags) == len(self.labels)) or n == 0:
            raise ValueError("a tree needs equally long, non-empty node arrays")

    def __len__(self) -> int:
        return len(self.left)

    @property
    def root(self) -> int:
        return len(self.left) - 1

    def is_leaf(self, i: int) -> bool:
        return self.left[i] < 0

    def leaves(self) -> list[str]:
        return [w for w, l in zip(self.words, self.left) if l < 0]

    def heights(self) -> list[int]:
        h = [0] * len(self)
        for i, (l, r) in enumerate(zip(self.left, self.right)):
            if l >= 0:
                h[i] = 1 + max(h[l], h[r])
        return h

    def with_tags(self, tags) -> "Tree":
        return Tree(self.left, self.right, self.words, tuple(tags), self.labels)

    def with_labels(self, labels) -> "Tree":
        return Tree(self.left, self.right, self.words, self.tags, tuple(labels))

    def to_ptb(self, i: int | None = None, show: str = "labels") -> str:
        """Bracketed form, each node shown by its label (default) or tag."""
        i = self.root if i is None else i
        name = (self.labels if show == "labels" else self.tags)[i]
        name = "X" if name is None else name
        if self.is_leaf(i):
            return f"({name} {self.words[i]})"
        return f"({name} {self.to_ptb(self.left[i], show)} {self.to_ptb(self.right[i], show)})"


class TreeBuilder:
    """A tree made node by node, in any order that adds a node's children before it: ``add``
    returns the new node's index, ``build`` the ``Tree`` in post-order (its root last)."""

    def __init__(self):
        self.left, self.right, self.words, self.tags, self.labels = [], [], [], [], []

    def add(self, left=-1, right=-1, word=None, tag=None, label=None) -> int:
        self.left.append(left); self.right.append(right); self.words.append(word)
        self.tags.append(tag); self.labels.append(label)
        return len(self.left) - 1

    def build(self) -> Tree:
        return _postorder(Tree(tuple(self.left), tuple(self.right), tuple(self.words), tuple(self.tags),
                               tuple(self.labels)))


# ---------------------------------------------------------------- PTB brackets
def _tokenize_brackets(s: str) -> list[str]:
    out: list[str] = []
    buf: list[str] = []
    for ch in s:
        if ch in "()":
            if buf:
                out.append("".join(buf)); buf = []
            out.append(ch)
        elif ch in " \t\r\n":   # not str.split(): SST leaves may hold U+00A0
            if buf:
                out.append("".join(buf)); buf = []
        else:
            buf.append(ch)
    if buf:
        out.append("".join(buf))
    return out


MAX_DEPTH = 300     # treebank parses nest a few dozen levels


def parse_brackets(s: str):
    """Parse one bracketed tree into nested ``(label, children_or_word)`` tuples.

    Raises ValueError with the problem (unbalanced brackets, empty node, trailing text).
    """
    toks = _tokenize_brackets(s)
    if not toks or toks[0] != "(":
        raise ValueError("a tree must start with '('")
    depth = deepest = 0
    for t in toks:
        depth += (t == "(") - (t == ")")
        deepest = max(deepest, depth)
    if deepest > MAX_DEPTH:                   # the parse below recurses once per level
        raise ValueError(f"the tree nests {deepest} brackets deep; at most {MAX_DEPTH} are read")
    pos = 0

    def node():
        nonlocal pos
        if pos >= len(toks) or toks[pos] != "(":
            raise ValueError("expected '('")
        pos += 1
        label = None
        if pos < len(toks) and toks[pos] not in "()":
            label = toks[pos]; pos += 1
        kids = []
        while True:
            if pos >= len(toks):
                raise ValueError("unbalanced brackets: missing ')'")
            t = toks[pos]
            if t == ")":
                pos += 1
                break
            if t == "(":
                kids.append(node())
            else:
                kids.append(t); pos += 1
        if not kids:
            raise ValueError(f"empty node ({label})")
        return (label, kids)

    tree = node()
    # PTB files wrap trees in an unlabelled outer bracket: ( (S ...) )
    if pos != len(toks):
        raise ValueError("unbalanced brackets: text after the tree's last ')'")
    return tree


def _strip_function_tag(label):
    if label is None or label.startswith("-"):  # -NONE-, -LRB-
        return label
    return label.split("-")[0].split("=")[0]


def _clean_ptb(node):
    """Drop empty elements (-NONE-) and nodes left empty; strip function tags."""
    label, kids = node
    if label == "-NONE-":
        return None
    out = []
    for k in kids:
        if isinstance(k, str):
            out.append(k)
        else:
            c = _clean_ptb(k)
            if c is not None:
                out.append(c)
    if not out:
        return None
    return (_strip_function_tag(label), out)


def tree_from_brackets(s: str, labels_are: str = "labels", clean: bool = False) -> Tree:
    """A ``Tree`` from brackets.

    ``labels_are="labels"`` (SST: every node's bracket label is its sentiment label) or
    ``"tags"`` (treebank: the bracket label is the POS / phrase tag). n-ary nodes are
    binarised right-branching (new nodes repeat the parent's tag, as the usual
    "@X" binarisation does); unary chains are collapsed keeping the lowest node's
    word and the highest node's label/tag. ``clean`` removes -NONE- elements and
    function tags (general PTB files).
    """
    nested = parse_brackets(s)
    while nested[0] is None and len(nested[1]) == 1 and not isinstance(nested[1][0], str):
        nested = nested[1][0]          # ( (S ...) ) wrapper
    if clean:
        nested = _clean_ptb(nested)
        if nested is None:
            raise ValueError("the tree is empty after removing -NONE- elements")
    b = TreeBuilder()

    def put(name, index, **kw):
        if labels_are == "labels":
            kw["label"] = name
        else:
            kw["tag"] = name
        return b.add(**kw)

    def walk(node):
        label, kids = node
        if len(kids) == 1:
            k = kids[0]
            if isinstance(k, str):
                return put(label, None, word=k)
            # unary chain: keep the upper label on the collapsed node
            i = walk(k)
            if labels_are == "labels":
                b.labels[i] = label if label is not None else b.labels[i]
            else:
                b.tags[i] = label if label is not None and not is_leaf(i) else b.tags[i]
            return i
        idx = [walk(k) if not isinstance(k, str) else put(label, None, word=k) for k in kids]
        # right-branching binarisation of n-ary nodes
        right = idx[-1]
        for j in range(len(idx) - 2, -1, -1):
            right = put(label, None, left=idx[j], right=right)
        return right

    def is_leaf(i):                  # leaves keep their POS tag through unary chains
        return b.left[i] < 0

    walk(nested)
    return b.build()


def _postorder(t: Tree) -> Tree:
    """Renumber so that children precede parents and the root is last."""
    order, stack = [], [(t.root if _is_root_last(t) else _find_root(t), False)]
    while stack:
        i, done = stack.pop()
        if done or t.left[i] < 0:
            order.append(i)
        else:
            stack.append((i, True)); stack.append((t.right[i], False)); stack.append((t.left[i], False))
    if order == list(range(len(t))):
        return t
    new = {old: k for k, old in enumerate(order)}
    pick = lambda arr: tuple(arr[o] for o in order)
    return Tree(tuple(new[t.left[o]] if t.left[o] >= 0 else -1 for o in order),
                tuple(new[t.right[o]] if t.right[o] >= 0 else -1 for o in order),
                pick(t.words), pick(t.tags), pick(t.labels))


def _find_root(t: Tree) -> int:
    children = {c for c in t.left + t.right if c >= 0}
    roots = [i for i in range(len(t)) if i not in children]
    if len(roots) != 1:
        raise ValueError(f"a tree needs exactly one root, found {len(roots)}")
    return roots[0]


def _is_root_last(t: Tree) -> bool:
    return _find_root(t) == t.root


# ---------------------------------------------------------------- parent pointers
def tree_from_parents(tokens: list[str], parents: list[int]) -> Tree:
    """A ``Tree`` from Tai et al.'s ``cparents``: node i < len(tokens) is token i,
    1-based parent index per node, 0 for the root. Unary inner nodes are collapsed."""
    n = len(parents)
    if n < len(tokens):
        raise ValueError(f"{n} parent pointers for {len(tokens)} tokens")
    kids: list[list[int]] = [[] for _ in range(n)]
    root = -1
    for i, p in enumerate(parents):
        if p == 0:
            if root >= 0:
                raise ValueError("two roots (two 0 parent pointers)")
            root = i
        elif not 1 <= p <= n:
            raise ValueError(f"parent pointer {p} out of range 1..{n}")
        else:
            kids[p - 1].append(i)
    if root < 0:
        raise ValueError("no root (no 0 parent pointer)")
    # children in sentence order, by the first token each one covers (node indices put
    # token children before phrase children: "boy and playing outdoors ...")
    first = [i if i < len(tokens) else n for i in range(n)]
    for tok in range(len(tokens)):
        j = tok
        for _ in range(n):                      # bounded: walk() reports cycles
            if parents[j] == 0:
                break
            j = parents[j] - 1
            first[j] = min(first[j], tok)
    for k in kids:
        k.sort(key=first.__getitem__)
    b = TreeBuilder()
    seen = set()

    def walk(i):
        if i in seen:
            raise ValueError("parent pointers form a cycle")
        seen.add(i)
        if i < len(tokens):
            if kids[i]:
                raise ValueError(f"token node {i + 1} has children")
            return b.add(word=tokens[i])
        ch = [walk(k) for k in kids[i]]
        if not ch:
            raise ValueError(f"inner node {i + 1} has no children")
        right = ch[-1]
        for j in range(len(ch) - 2, -1, -1):
            right = b.add(left=ch[j], right=right)
        return right

    walk(root)
    t = b.build()
    if len(t.leaves()) != len(tokens):
        raise ValueError("parent pointers do not reach every token")
    return t


def leaf_tree(tokens: list[str]) -> Tree:
    """A right-branching tree over tokens (for texts that come without a parse)."""
    if not tokens:
        raise ValueError("cannot build a tree over no tokens")
    b = TreeBuilder()
    leaves = [b.add(word=w) for w in tokens]
    right = leaves[-1]
    for j in range(len(leaves) - 2, -1, -1):
        right = b.add(left=leaves[j], right=right)
    return b.build()
