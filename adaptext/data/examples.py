"""Typed examples: one class per task shape the project's models consume.

Every reader yields these; every collate function consumes them. A label is a
string (single-label), a tuple of strings (multi-label) or None (unlabelled input
at predict time). ``where`` is the ``Location`` of the example's source, so later
errors can name the file and line.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Iterable, Protocol, Sequence, Union

from ..errors import UsageError
from .trees import Tree

Label = Union[str, tuple[str, ...], None]


class ExampleKind(enum.StrEnum):
    """The shape of an example, and so of the input a model reads. The values are the names
    that run directories, configs and token stores hold: a kind read back from a file is
    ``ExampleKind(value)``."""
    TEXT = "text"
    PAIR = "pair"
    CONTEXTS = "contexts"
    TREE = "tree"
    TREE_PAIR = "tree_pair"

    @property
    def is_tree(self) -> bool:
        """Its examples are parses (a tree, or a tree pair), not plain texts."""
        return self in (ExampleKind.TREE, ExampleKind.TREE_PAIR)

    @property
    def second(self) -> str | None:
        """The field of the second input beside the text: "pair" (a pair, a tree pair),
        "contexts", or None (a single text or tree)."""
        return _SECOND.get(self)

    @property
    def parses_to(self) -> ExampleKind | None:
        """The kind its examples become when their texts are parsed (a text a tree, a pair a
        tree pair); None where no parser reads them (trees already, texts with contexts)."""
        return _PARSED.get(self)


_SECOND = {ExampleKind.PAIR: "pair", ExampleKind.TREE_PAIR: "pair", ExampleKind.CONTEXTS: "contexts"}
_PARSED = {ExampleKind.TEXT: ExampleKind.TREE, ExampleKind.PAIR: ExampleKind.TREE_PAIR}


@dataclass(frozen=True, slots=True)
class Location:
    """Where an example comes from: a file's path and line (and, in SICK, the pair's id), or a
    label such as "example 3" for an example given in memory (``line`` None). ``str()`` is the
    form a prediction file shows, ``path:line`` or ``path:line#pair_ID=ID``; an error names
    ``source`` and ``line`` as ``path:line``."""
    path: str = ""
    line: int | None = None
    pair_id: str | None = None

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return where if self.pair_id is None else f"{where}#pair_ID={self.pair_id}"

    @property
    def source(self) -> str:
        """What an error about the example names: its path or label; ``<input>`` when it has none."""
        return self.path or "<input>"


NOWHERE = Location()          # an example made without saying where it comes from


class _Located:
    """What every example class shares: a ``where`` given as a string (a label, as user code
    writes it) is held as the Location of that label, so readers of ``where`` meet one type."""
    __slots__ = ()
    where: Location
    label: Label

    def __post_init__(self) -> None:
        if isinstance(self.where, str):
            object.__setattr__(self, "where", Location(self.where))

    def label_names(self) -> tuple[str, ...]:
        """The example's labels: a multi-label example's tuple, a single label as a tuple of one,
        none as an empty tuple."""
        return self.label if isinstance(self.label, tuple) else () if self.label is None else (self.label,)


@dataclass(frozen=True, slots=True)
class TextExample(_Located):
    text: str
    label: Label = None
    where: Location = field(default=NOWHERE, compare=False)
    kind = ExampleKind.TEXT

    def texts(self) -> tuple[str, ...]:
        """The plain texts of the example, in order."""
        return (self.text,)

    def as_input(self) -> str:
        """The example as a run reads an input to predict (``Classifier.predict``, the service)."""
        return self.text


@dataclass(frozen=True, slots=True)
class PairExample(_Located):
    """Two texts: ``text`` is modelled with ``pair`` as its context (hypothesis, premise)."""
    text: str
    pair: str
    label: Label = None
    where: Location = field(default=NOWHERE, compare=False)
    kind = ExampleKind.PAIR

    def texts(self) -> tuple[str, ...]:
        return self.text, self.pair

    def as_input(self) -> dict[str, str]:
        return {"text": self.text, "pair": self.pair}


@dataclass(frozen=True, slots=True)
class ContextsExample(_Located):
    """A text with a list of contexts (a claim with several pieces of evidence)."""
    text: str
    contexts: tuple[str, ...]
    label: Label = None
    where: Location = field(default=NOWHERE, compare=False)
    kind = ExampleKind.CONTEXTS

    def texts(self) -> tuple[str, ...]:
        return (self.text, *self.contexts)

    def as_input(self) -> dict[str, str | list[str]]:
        return {"text": self.text, "contexts": list(self.contexts)}


@dataclass(frozen=True, slots=True)
class TreeExample(_Located):
    """A parse; ``truncated``: built from a plain text cut at a run's max_length (predict)."""
    tree: Tree
    label: Label = None
    where: Location = field(default=NOWHERE, compare=False)
    truncated: bool = field(default=False, compare=False)
    kind = ExampleKind.TREE

    @property
    def text(self) -> str:
        return " ".join(self.tree.leaves())

    def texts(self) -> tuple[str, ...]:
        """The parse's words as one text."""
        return (self.text,)

    def trees(self) -> tuple[Tree, ...]:
        return (self.tree,)


@dataclass(frozen=True, slots=True)
class TreePairExample(_Located):
    tree: Tree
    pair: Tree
    label: Label = None
    where: Location = field(default=NOWHERE, compare=False)
    truncated: bool = field(default=False, compare=False)
    kind = ExampleKind.TREE_PAIR

    @property
    def text(self) -> str:
        return " ".join(self.tree.leaves())

    def texts(self) -> tuple[str, ...]:
        """The words of each parse as one text: the tree's, then the pair's."""
        return self.text, " ".join(self.pair.leaves())

    def trees(self) -> tuple[Tree, ...]:
        return self.tree, self.pair


Example = Union[TextExample, PairExample, ContextsExample, TreeExample, TreePairExample]


class Locates(Protocol):
    """Rows that say where each comes from without being built (a split of a token store)."""
    def where(self, k: int) -> Location: ...


def kind_of(examples: Iterable[Example]) -> ExampleKind:
    """The one kind shared by a list of examples (mixing kinds is an error)."""
    kinds = {ex.kind for ex in examples}
    if len(kinds) != 1:
        raise ValueError(f"examples mix several kinds: {sorted(map(str, kinds))}")
    return kinds.pop()


def is_multilabel(examples: Iterable[Example]) -> bool:
    return any(isinstance(ex.label, tuple) for ex in examples)


def where_of(examples: Sequence[Example] | Locates, k: int) -> Location:
    """The location of example ``k`` of a list, or of a split of a token store."""
    return examples.where(k) if hasattr(examples, "where") else examples[k].where


def as_examples(items: Iterable[Any]) -> list[Example]:
    """Examples as given, or made from tuples: ``(text, label)`` a text, ``(text, pair, label)``
    a pair; a tuple of another length is refused, naming its position."""
    out = []
    for k, x in enumerate(items):
        if isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str):
            x = TextExample(x[0], x[1], Location(f"example {k + 1}"))
        elif isinstance(x, tuple) and len(x) == 3 and isinstance(x[0], str) and isinstance(x[1], str):
            x = PairExample(x[0], x[1], x[2], Location(f"example {k + 1}"))
        elif not isinstance(getattr(x, "kind", None), ExampleKind):
            raise UsageError(f"example {k + 1}: expected an example or a (text, label) / (text, pair, label) "
                             f"tuple, not {type(x).__name__}")
        out.append(x)
    kinds = {x.kind for x in out}
    if len(kinds) > 1:
        raise UsageError(f"the examples mix kinds ({', '.join(sorted(kinds))}): one run reads one kind")
    return out
