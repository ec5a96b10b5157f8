"""Typed examples: one class per task shape the project's models consume.

Every reader yields these; every collate function consumes them. A label is a
string (single-label), a tuple of strings (multi-label) or None (unlabelled input
at predict time). ``where`` is "file:line" so later errors can name the source.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from .errors import UsageError
from .trees import Tree

Label = Union[str, tuple, None]

KINDS = ("text", "pair", "contexts", "tree", "tree_pair")


@dataclass(frozen=True, slots=True)
class TextExample:
    text: str
    label: Label = None
    where: str = field(default="", compare=False)
    kind = "text"


@dataclass(frozen=True, slots=True)
class PairExample:
    """Two texts: ``text`` is modelled with ``pair`` as its context (hypothesis, premise)."""
    text: str
    pair: str
    label: Label = None
    where: str = field(default="", compare=False)
    kind = "pair"


@dataclass(frozen=True, slots=True)
class ContextsExample:
    """A text with a list of contexts (a claim with several pieces of evidence)."""
    text: str
    contexts: tuple
    label: Label = None
    where: str = field(default="", compare=False)
    kind = "contexts"


@dataclass(frozen=True, slots=True)
class TreeExample:
    """A parse; ``truncated``: built from a plain text cut at a run's max_length (predict)."""
    tree: Tree
    label: Label = None
    where: str = field(default="", compare=False)
    truncated: bool = field(default=False, compare=False)
    kind = "tree"

    @property
    def text(self) -> str:
        return " ".join(self.tree.leaves())


@dataclass(frozen=True, slots=True)
class TreePairExample:
    tree: Tree
    pair: Tree
    label: Label = None
    where: str = field(default="", compare=False)
    truncated: bool = field(default=False, compare=False)
    kind = "tree_pair"

    @property
    def text(self) -> str:
        return " ".join(self.tree.leaves())


Example = Union[TextExample, PairExample, ContextsExample, TreeExample, TreePairExample]


def kind_of(examples) -> str:
    """The one kind shared by a list of examples (mixing kinds is an error)."""
    kinds = {ex.kind for ex in examples}
    if len(kinds) != 1:
        raise ValueError(f"examples mix several kinds: {sorted(kinds)}")
    return kinds.pop()


def is_multilabel(examples) -> bool:
    return any(isinstance(ex.label, tuple) for ex in examples)


def where_of(examples, k: int) -> str:
    """The file:line of example ``k`` of a list, or of a split of a token store."""
    return examples.where(k) if hasattr(examples, "where") else examples[k].where


def as_examples(items) -> list:
    """Examples as given, or made from tuples: ``(text, label)`` a text, ``(text, pair, label)``
    a pair; a tuple of another length is refused, naming its position."""
    out = []
    for k, x in enumerate(items):
        if isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str):
            x = TextExample(x[0], x[1], f"example {k + 1}")
        elif isinstance(x, tuple) and len(x) == 3 and isinstance(x[0], str) and isinstance(x[1], str):
            x = PairExample(x[0], x[1], x[2], f"example {k + 1}")
        elif getattr(x, "kind", None) not in KINDS:
            raise UsageError(f"example {k + 1}: expected an example or a (text, label) / (text, pair, label) "
                             f"tuple, not {type(x).__name__}")
        out.append(x)
    kinds = {x.kind for x in out}
    if len(kinds) > 1:
        raise UsageError(f"the examples mix kinds ({', '.join(sorted(kinds))}): one run reads one kind")
    return out
