"""Tokenisers (word, character), the vocabulary and the label map: all kept in the run."""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass

from .examples import ExampleKind

PAD, UNK = "<pad>", "<unk>"

# PTB-like: clitics split off ("does n't", "it 's"), hyphen/dot compounds kept, punctuation alone
_WORD = re.compile(r"n't|'\w+|\w+(?=n't)|\w+(?:[-.]\w+)*|[^\w\s]")
_HTML_BREAK = re.compile(r"<br\s*/?>", re.I)


# Kim (2014)'s clean_str, rule by rule: (pattern, replacement)
_KIM_RULES = [(r"[^A-Za-z0-9(),!?\'\`]", " "), (r"\'s", " \'s"), (r"\'ve", " \'ve"), (r"n\'t", " n\'t"),
              (r"\'re", " \'re"), (r"\'d", " \'d"), (r"\'ll", " \'ll"), (r",", " , "), (r"!", " ! "),
              (r"\(", " ( "), (r"\)", " ) "), (r"\?", " ? ")]


def kim_clean(s: str) -> str:
    """Kim (2014)'s ``clean_str``: keep letters, digits and a little punctuation, split clitics."""
    for pattern, replacement in _KIM_RULES:
        s = re.sub(pattern, replacement, s)
    return re.sub(r"\s{2,}", " ", s).strip()


LEVELS = ("word", "char", "subword")


@dataclass
class TokenizerConfig:
    level: str = "word"          # word | char | subword (a pretrained encoder's word pieces)
    lower: bool = True
    clean: str = "none"          # none | kim (Kim 2014's clean_str, word level)
    pretrained: str | None = None   # subword: the encoder whose tokenizer and vocabulary are used

    def __post_init__(self):
        if self.level not in LEVELS:
            raise ValueError(f"tokenizer level must be one of {', '.join(LEVELS)}, not {self.level!r}")
        if self.level == "subword" and not self.pretrained:
            raise ValueError("a subword tokenizer needs the pretrained encoder it belongs to")
        if self.clean not in ("none", "kim"):
            raise ValueError(f"clean must be 'none' or 'kim', not {self.clean!r}")


class Tokenizer:
    """``pieces``: a subword tokenizer's word pieces as ``tokenizers`` holds them (a run's saved
    ``tokenizer.json``); without them they come from the pretrained encoder (transformers)."""

    def __init__(self, config: TokenizerConfig | None = None, pieces=None, **kw):
        self.config = config or TokenizerConfig(**kw)
        self._pieces = pieces         # looked up once, not per text

    @property
    def pieces(self):
        if self._pieces is None:
            from ..pretrained import word_pieces
            self._pieces = word_pieces(self.config.pretrained)
        return self._pieces

    def __call__(self, text: str) -> list[str]:
        c = self.config
        text = _HTML_BREAK.sub(" ", text)
        if c.level == "subword":                 # the encoder's own normalisation (lower-casing, accents)
            unk = getattr(self.pieces.model, "unk_token", None) if UNK in text else None
            if unk:                              # a masked word is the encoder's unknown piece, not "<", "un", ...
                text = text.replace(UNK, f" {unk} ")
            return self.pieces.encode(text, add_special_tokens=False).tokens
        if c.lower:
            text = text.lower()
        if c.level == "char":
            return list(re.sub(r"\s+", " ", text).strip())
        split = (lambda t: kim_clean(t).split()) if c.clean == "kim" else _WORD.findall
        return _keeping_unk(text, split)

    def to_dict(self) -> dict:
        return asdict(self.config)

    def vocabulary(self, token_lists, min_freq: int = 1, max_size: int | None = None) -> "Vocab":
        """The vocabulary of a run: the pretrained encoder's word pieces for a subword tokenizer
        (their ids are the encoder's, shifted by <pad> and <unk>), else the training tokens."""
        if self.config.level == "subword":
            vocab = self.pieces.get_vocab()
            return Vocab(sorted(vocab, key=vocab.__getitem__), shift=True)
        return Vocab.build(token_lists, min_freq, max_size)


def _keeping_unk(text: str, split) -> list[str]:
    """``split(text)`` with each ``<unk>`` kept whole: a word masked out (a distillation copy, a
    corpus that spells unknown words so) reads as the vocabulary's unknown word, not as < unk >."""
    if UNK not in text:
        return split(text)
    out = []
    for k, part in enumerate(text.split(UNK)):
        out += ([UNK] if k else []) + split(part)
    return out


class Vocab:
    """Token <-> id. Id 0 is ``<pad>``, id 1 is ``<unk>``."""

    def __init__(self, tokens: list[str], shift: bool = False):
        """``shift``: every token of ``tokens`` keeps its place after <pad> and <unk> (a pretrained
        vocabulary, whose id k becomes k + 2), even one spelled like them."""
        if shift:
            tokens = [PAD, UNK] + list(tokens)
        elif tokens[:2] != [PAD, UNK]:
            tokens = [PAD, UNK] + [t for t in tokens if t not in (PAD, UNK)]
        self.itos = list(tokens)
        self.stoi = {t: i for i, t in enumerate(self.itos)}

    @classmethod
    def build(cls, token_lists, min_freq: int = 1, max_size: int | None = None) -> "Vocab":
        counts: Counter[str] = Counter()
        for toks in token_lists:
            counts.update(toks)
        return cls.from_counts(counts.items(), min_freq, max_size)

    @classmethod
    def from_counts(cls, counted, min_freq: int = 1, max_size: int | None = None) -> "Vocab":
        """The tokens of ``counted`` ((token, count) pairs) seen at least ``min_freq`` times, the most
        frequent first (ties in token order), at most ``max_size`` of them."""
        kept = [t for t, c in sorted(counted, key=lambda x: (-x[1], x[0])) if c >= min_freq]
        return cls(kept[:max_size] if max_size else kept)

    def extended(self, tokens) -> "Vocab":
        """This vocabulary with ``tokens`` it lacks after its own, in their order (ids unchanged)."""
        return Vocab(self.itos + [t for t in dict.fromkeys(tokens) if t not in self.stoi])

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, tok) -> bool:
        return tok in self.stoi

    def encode(self, tokens: list[str]) -> list[int]:
        get = self.stoi.get
        return [get(t, 1) for t in tokens]

    pad_id, unk_id = 0, 1


class LabelMap:
    """Label strings <-> class ids; ``multilabel`` runs predict label sets."""

    def __init__(self, labels: list[str], multilabel: bool = False, threshold: float = 0.5):
        self.labels = list(labels)
        self.index = {l: i for i, l in enumerate(self.labels)}
        self.multilabel = multilabel
        self.threshold = threshold

    @classmethod
    def from_examples(cls, examples) -> "LabelMap":
        seen: set[str] = set()
        multi = False
        for ex in examples:
            if isinstance(ex.label, tuple):
                multi = True
                seen.update(ex.label)
            elif ex.label is not None:
                seen.add(ex.label)
            if ex.kind == ExampleKind.TREE:     # phrase-level supervision: node labels are classes too
                seen.update(l for l in ex.tree.labels if l is not None)
        return cls.of_names(seen, multi)

    @classmethod
    def of_names(cls, names, multilabel: bool = False) -> "LabelMap":
        """Class ids in natural order of the names (numbers as numbers: "2" before "10")."""
        return cls(sorted(names, key=_natural), multilabel)

    def __len__(self) -> int:
        return len(self.labels)

    def to_dict(self) -> dict:
        return {"labels": self.labels, "multilabel": self.multilabel, "threshold": self.threshold}

    @classmethod
    def from_dict(cls, d) -> "LabelMap":
        return cls(d["labels"], d.get("multilabel", False), d.get("threshold", 0.5))


def _natural(s: str):
    return (0, int(s), "") if s.isdigit() else (1, 0, s)
