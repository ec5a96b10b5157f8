"""From examples to tensors: encode once (tokens -> ids, labels -> ids), then collate
batches with padding, lengths and masks; trees as level-ordered node batches so a tree
model composes every node of one height across the batch at once (the order of batches:
loading.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import torch

from ..errors import BadLines
from .examples import ExampleKind
from .text import LabelMap, Tokenizer, Vocab

T = TypeVar("T")


def unseen_label(name: str, labels: LabelMap) -> str:
    """The problem of a dev or test example whose label the training data lack."""
    return (f"label {name!r} does not occur in the training data "
            f"(known: {', '.join(labels.labels[:10])}{', ...' if len(labels) > 10 else ''})")


def known_label(ex, labels: LabelMap, bad: BadLines) -> bool:
    """Whether every label of the (labelled) example occurs in the training data's ``labels``; one
    that does not is reported to ``bad`` as the example's bad line."""
    unseen = [n for n in ex.label_names() if n not in labels.index]
    if unseen:
        bad(ex.where.source, ex.where.line, unseen_label(unseen[0], labels))
    return not unseen


# ------------------------------------------------------------------ batch types
@dataclass
class TreeBatch:
    """All nodes of all trees of a batch, in one flat array.

    ``words``/``tags``: per node (0 = pad for inner nodes / unknown tag). ``left``/``right``:
    flat child indices, -1 at leaves. ``levels[h]``: indices of the nodes of height h
    (leaves are height 0); composing ``levels[1]``, ``levels[2]``, ... in order computes
    every node after its children. ``roots[b]``: the root of tree b. ``node_labels``:
    class id per node, -1 where unlabelled. ``tree_of``: the tree each node belongs to.
    """
    words: torch.Tensor
    tags: torch.Tensor
    left: torch.Tensor
    right: torch.Tensor
    levels: list
    roots: torch.Tensor
    node_labels: torch.Tensor
    tree_of: torch.Tensor

    @property
    def num_nodes(self) -> int:
        return self.words.shape[0]


@dataclass
class Batch:
    """A collated batch. Only the fields of the task are set; the rest stay None.

    text [B, T] with lengths [B]; pair [B, T2] with pair_lengths; contexts [B, K, T3]
    with context_lengths [B, K] (0 for a missing context); tree / pair_tree; labels [B]
    (class ids) or [B, C] (multi-hot, multi-label); index [B]: positions in the dataset.
    """
    index: torch.Tensor
    labels: torch.Tensor | None = None
    text: torch.Tensor | None = None
    lengths: torch.Tensor | None = None
    pair: torch.Tensor | None = None
    pair_lengths: torch.Tensor | None = None
    contexts: torch.Tensor | None = None
    context_lengths: torch.Tensor | None = None
    tree: TreeBatch | None = None
    pair_tree: TreeBatch | None = None
    soft: torch.Tensor | None = None        # [B, C] a teacher's logits (distillation)
    features: torch.Tensor | None = None    # [B, D] its sentence representations, standardised (--feature-weight)

    @classmethod
    def of_ids(cls, kind: ExampleKind, text, lengths, second=None, second_lengths=None) -> "Batch":
        """An unlabelled batch of padded token ids, as an exported graph receives them: the text,
        and the pair (``kind`` pair) or the contexts (``kind`` contexts)."""
        batch = cls(index=torch.arange(text.shape[0]), text=text, lengths=lengths)
        if kind == ExampleKind.PAIR:
            batch.pair, batch.pair_lengths = second, second_lengths
        elif kind == ExampleKind.CONTEXTS:
            batch.contexts, batch.context_lengths = second, second_lengths
        return batch

    @property
    def size(self) -> int:
        return self.index.shape[0]

    @property
    def mask(self) -> torch.Tensor:
        assert self.text is not None and self.lengths is not None, "only a batch of texts has a mask"
        return length_mask(self.lengths, self.text.shape[1])

    @property
    def pair_mask(self) -> torch.Tensor:
        assert self.pair is not None and self.pair_lengths is not None, "only a batch of pairs has a pair mask"
        return length_mask(self.pair_lengths, self.pair.shape[1])


def length_mask(lengths: torch.Tensor, max_len: int) -> torch.Tensor:
    return torch.arange(max_len, device=lengths.device)[None, :] < lengths[..., None]


# ------------------------------------------------------------------ encoding
@dataclass
class EncodedTree:
    words: np.ndarray
    tags: np.ndarray
    left: np.ndarray
    right: np.ndarray
    heights: np.ndarray
    labels: np.ndarray


@dataclass
class Item:
    index: int
    label: int | list[int] | None = None          # list of ints: multi-label
    text: np.ndarray | None = None
    pair: np.ndarray | None = None
    contexts: list | None = None
    tree: EncodedTree | None = None
    pair_tree: EncodedTree | None = None
    truncated: bool = False
    soft: np.ndarray | None = None    # a teacher's logits [C] (distillation); its label may then be None
    features: np.ndarray | None = None    # the teacher's sentence representation [D] (--feature-weight)

    def length(self) -> int:
        if self.text is not None:
            return len(self.text) + (len(self.pair) if self.pair is not None else 0)
        assert self.tree is not None, "an item has a text or a tree"
        return len(self.tree.words)


@dataclass
class Encoder:
    """Turns examples into ``Item``s once; the run keeps its settings."""
    tokenizer: Tokenizer
    vocab: Vocab
    labels: LabelMap | None = None
    tag_vocab: Vocab | None = None
    max_length: int = 0          # truncate longer texts (0: no limit)
    truncated: int = field(default=0, init=False)

    def tokens(self, text: str) -> list[str]:
        return self.tokenizer(text)

    def _ids(self, text: str) -> tuple[np.ndarray, bool]:
        toks = self.tokenizer(text)
        cut = bool(self.max_length) and len(toks) > self.max_length
        if cut:
            toks = toks[: self.max_length]
        return np.asarray(self.vocab.encode(toks), dtype=np.int64), cut

    def _tree(self, tree) -> EncodedTree:
        lower = self.tokenizer.config.lower
        words = [0 if w is None else self.vocab.stoi.get(w.lower() if lower else w, 1) for w in tree.words]
        tv = self.tag_vocab
        tags = [tv.stoi.get(t, 1) if (tv is not None and t is not None) else 0 for t in tree.tags]
        lab = [-1 if (l is None or self.labels is None or l not in self.labels.index) else self.labels.index[l]
               for l in tree.labels]
        return EncodedTree(np.asarray(words, np.int64), np.asarray(tags, np.int64), np.asarray(tree.left, np.int64),
                           np.asarray(tree.right, np.int64), np.asarray(tree.heights(), np.int64),
                           np.asarray(lab, np.int64))

    def _label(self, ex, bad: BadLines):
        if ex.label is None or self.labels is None:
            return None
        lm = self.labels
        if not known_label(ex, lm, bad):
            return False
        if lm.multilabel:
            return [lm.index[n] for n in ex.label_names()]
        if isinstance(ex.label, tuple):
            bad(ex.where.source, ex.where.line, "several labels on an example of a single-label task")
            return False
        return lm.index[ex.label]

    def encode(self, examples, bad: BadLines | None = None, with_labels: bool = True) -> list[Item]:
        bad = bad or BadLines()
        items = []
        for i, ex in enumerate(examples):
            label = self._label(ex, bad) if with_labels else None
            if label is False:
                continue
            item = Item(index=i, label=label)
            if ex.kind.is_tree:
                item.tree, item.truncated = self._tree(ex.tree), ex.truncated
                if ex.kind == ExampleKind.TREE_PAIR:
                    item.pair_tree = self._tree(ex.pair)
            else:
                item.text, item.truncated = self._ids(ex.text)
                if ex.kind == ExampleKind.PAIR:
                    item.pair, cut = self._ids(ex.pair)
                    item.truncated |= cut
                elif ex.kind == ExampleKind.CONTEXTS:
                    enc = [self._ids(c) for c in ex.contexts]
                    item.contexts = [e for e, _ in enc]
                    item.truncated |= any(c for _, c in enc)
            self.truncated += item.truncated
            items.append(item)
        return items


class StoredItems:
    """Items of rows of a token store, made when a batch asks for them (a corpus larger than
    memory is never a list of items). The store's token ids become the run's through one lookup
    table; ``index``: the row's position in its split (where its location is found)."""

    def __init__(self, split, vocab: Vocab, labels: LabelMap | None, max_length: int = 0,
                 bad: BadLines | None = None, with_labels: bool = True):
        store = self.store = split.store
        self.kind, self.max_length = store.kind, max_length
        self.vocab_map = np.fromiter((vocab.stoi.get(t, 1) for t in store.strings), np.int64, len(store.strings))
        self.multilabel = bool(labels and labels.multilabel)
        self.label_map = (np.asarray([labels.index.get(n, -1) for n in store.label_names], dtype=np.int64)
                          if labels is not None and with_labels else None)
        positions = np.arange(len(split), dtype=np.int64)
        if self.label_map is not None and labels is not None:      # the map is made from the labels
            positions = self._labelled(split, positions, labels, bad or BadLines())
        self.positions, self.rows = positions, split.rows[positions]

    def _labelled(self, split, positions, labels: LabelMap, bad: BadLines) -> np.ndarray:
        """The positions whose labels the run knows; the others are reported to ``bad``."""
        st, label_map = self.store, self.label_map
        assert label_map is not None, "only a run with labels checks them"
        unknown = np.concatenate([[0], np.cumsum(label_map[st.labels] < 0)]) if len(st.labels) else np.zeros(1)
        rows = split.rows
        wrong = unknown[st.label_offsets[1:][rows]] - unknown[st.label_offsets[:-1][rows]] > 0
        if not self.multilabel:
            wrong |= st.label_kinds[rows] == 2
        for k in np.flatnonzero(wrong):
            where = split.where(k)
            names = [st.label_names[i] for i in st.example_labels(rows[k])]
            unseen = [n for n in names if n not in labels.index]
            bad(where.source, where.line, unseen_label(unseen[0], labels) if unseen
                else "several labels on an example of a single-label task")
        return positions[~wrong]

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, k: int) -> Item:
        row = int(self.rows[k])
        item = Item(index=int(self.positions[k]), label=self._label(row))
        texts = [self._ids(t) for t in self.store.texts(row)]
        item.text = texts[0][0]
        if self.kind == ExampleKind.PAIR:
            item.pair = texts[1][0]
        elif self.kind == ExampleKind.CONTEXTS:
            item.contexts = [t for t, _ in texts[1:]]
        item.truncated = any(cut for _, cut in texts)
        return item

    def __iter__(self):
        return (self[k] for k in range(len(self)))

    def _ids(self, ids: np.ndarray) -> tuple[np.ndarray, bool]:
        cut = bool(self.max_length) and len(ids) > self.max_length
        return self.vocab_map[ids[: self.max_length] if cut else ids], cut

    def _label(self, row: int):
        if self.label_map is None or self.store.label_kinds[row] == 0:
            return None
        ids = self.label_map[self.store.example_labels(row)]
        return ids.tolist() if self.multilabel else int(ids[0])

    def lengths(self) -> np.ndarray:
        """Each item's length as ``Item.length`` counts it (text, plus the pair), after the cut."""
        cut = (lambda n: np.minimum(n, self.max_length)) if self.max_length else (lambda n: n)
        n = cut(self.store.text_lengths(self.rows))
        return n + cut(self.store.text_lengths(self.rows, 1)) if self.kind == ExampleKind.PAIR else n

    def labels(self) -> list:
        return [self._label(int(r)) for r in self.rows]

    def indices(self) -> list:
        return self.positions.tolist()

    @property
    def truncated(self) -> int:
        """How many items have a text cut at ``max_length``."""
        if not self.max_length:
            return 0
        lengths, owner = self.store.segment_lengths(self.rows)
        return int(np.unique(owner[lengths > self.max_length]).size)


# ------------------------------------------------------------------ collate
def _every(values: list[T | None]) -> list[T]:
    """One field of every item of a batch: a batch holds one kind of example, so a field its
    first item has, every item has."""
    present = [v for v in values if v is not None]
    assert len(present) == len(values), "the items of a batch are of one kind"
    return present


def _pad(seqs, min_len: int = 1, fixed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
    if fixed:
        lengths = np.minimum(lengths, fixed)
    width = fixed or max(int(lengths.max(initial=0)), min_len)
    out = np.zeros((len(seqs), width), dtype=np.int64)
    for r, s in enumerate(seqs):
        n = lengths[r]
        out[r, :n] = s[:n]
    return torch.from_numpy(out), torch.from_numpy(lengths)


def _tree_batch(trees: list[EncodedTree]) -> TreeBatch:
    sizes = [len(t.words) for t in trees]
    offsets = np.cumsum([0] + sizes[:-1])
    cat = lambda name: np.concatenate([getattr(t, name) for t in trees])
    left, right = cat("left"), cat("right")
    shift = np.repeat(offsets, sizes)
    left = np.where(left >= 0, left + shift, -1)
    right = np.where(right >= 0, right + shift, -1)
    heights = cat("heights")
    order = np.argsort(heights, kind="stable")
    bounds = np.searchsorted(heights[order], np.arange(heights.max() + 2))
    levels = [torch.from_numpy(order[bounds[h]:bounds[h + 1]].copy()) for h in range(heights.max() + 1)]
    roots = offsets + np.asarray(sizes) - 1
    return TreeBatch(torch.from_numpy(cat("words")), torch.from_numpy(cat("tags")), torch.from_numpy(left),
                     torch.from_numpy(right), levels, torch.from_numpy(roots),
                     torch.from_numpy(cat("labels")), torch.from_numpy(np.repeat(np.arange(len(trees)), sizes)))


@dataclass
class Collator:
    """Pads to the longest text of the batch, at least ``min_length`` (so the widest filter
    fits), or exactly ``fixed_length`` (models that need one length)."""
    num_classes: int
    multilabel: bool = False
    min_length: int = 1
    fixed_length: int = 0

    def __call__(self, items: list[Item]) -> Batch:
        b = Batch(index=torch.tensor([it.index for it in items], dtype=torch.int64))
        if items[0].soft is not None:                 # distillation: unlabelled transfer texts are -100
            b.soft = torch.from_numpy(np.stack(_every([it.soft for it in items])).astype(np.float32))
            b.labels = torch.tensor([-100 if it.label is None else it.label for it in items], dtype=torch.int64)
            if items[0].features is not None:
                b.features = torch.from_numpy(np.stack(_every([it.features for it in items])).astype(np.float32))
        elif items[0].label is not None:
            if self.multilabel:
                y = torch.zeros(len(items), self.num_classes)
                for r, it in enumerate(items):
                    y[r, it.label] = 1.0
                b.labels = y
            else:
                b.labels = torch.tensor([it.label for it in items], dtype=torch.int64)
        first = items[0]
        if first.text is not None:
            b.text, b.lengths = _pad([it.text for it in items], self.min_length, self.fixed_length)
        if first.pair is not None:
            b.pair, b.pair_lengths = _pad([it.pair for it in items], self.min_length, self.fixed_length)
        if first.contexts is not None:
            contexts = _every([it.contexts for it in items])
            k = max(len(cs) for cs in contexts)
            flat = [c for cs in contexts for c in cs + [np.zeros(0, np.int64)] * (k - len(cs))]
            ctx, lens = _pad(flat, self.min_length, self.fixed_length)
            b.contexts = ctx.view(len(items), k, -1)
            b.context_lengths = lens.view(len(items), k)
        if first.tree is not None:
            b.tree = _tree_batch(_every([it.tree for it in items]))
        if first.pair_tree is not None:
            b.pair_tree = _tree_batch(_every([it.pair_tree for it in items]))
        return b
