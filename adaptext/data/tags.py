"""POS tags for leaves and phrase tags for inner nodes of constituency trees.

Shen et al. (2019) feed the tags of every node (POS tags at the leaves, phrase tags such
as NP, VP, ADJP, PP inside) to the hypernetwork of TG-HRecNN / TG-HTreeLSTM. Datasets
like SST and SICK come with trees but without tags, so:

- leaves get POS tags from a tagger behind a small interface, ``get_tagger("nltk")``
  (NLTK's averaged perceptron tagger, the one ``nltk.pos_tag`` uses, its data shipped in
  ``adaptext/resources/pos_tagger``) or ``get_tagger("spacy")`` (when installed);
- inner nodes get phrase tags from a ``PhraseLabeller`` learned from the binarised Penn
  Treebank sample: the most frequent parent tag of each (left, right) children tag pair,
  backed off to the most frequent parent of the right child alone, then of the left child
  alone, then the globally most frequent phrase tag (the right child first because a
  right-branching binarisation puts the rest of a phrase, with its head, on the right:
  ``(NP DT (NP JJ NN))``; ``evaluate_on_treebank`` measures both orders).

The shipped table (``adaptext/resources/phrase_labeller.json``) holds only tag-transition
counts learned from the sample, not the sample; ``build_phrase_labeller`` rebuilds it.
"""
from __future__ import annotations

import gzip
import json
import os
import tempfile
import zipfile
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path

from ..atomic import write_atomic
from ..errors import MissingResource, UsageError
from .examples import TreeExample, TreePairExample
from .trees import Tree

RESOURCE = Path(__file__).resolve().parent.parent / "resources" / "phrase_labeller.json"
TAGGER_DATA = RESOURCE.parent / "pos_tagger"
TRAIN_FILES = range(1, 180)      # wsj_0001 .. wsj_0179: the shipped labeller's training part
HELDOUT_FILES = range(180, 200)  # wsj_0180 .. wsj_0199: held out for the accuracies we report


# ------------------------------------------------------------------ taggers
class NltkTagger:
    """tokens -> Penn Treebank POS tags with NLTK's averaged perceptron tagger.

    The same model and output as ``nltk.pos_tag(tokens)``, read from the copy of its data this
    package ships (``resources/pos_tagger``), so no download is needed, and loaded once
    (``pos_tag`` reloads its JSON weights on every call)."""

    name = "nltk"

    def __init__(self, folder: Path = TAGGER_DATA):
        try:
            from nltk.tag.perceptron import PerceptronTagger
        except ImportError as e:  # pragma: no cover - nltk is a dependency
            raise MissingResource("the NLTK tagger needs nltk: pip install nltk") from e
        self._tagger = PerceptronTagger(load=False)
        self._tagger.decode_json_params(_read_json_gz(folder / f"averaged_perceptron_tagger_eng.{part}.json.gz")
                                        for part in ("weights", "tagdict", "classes"))

    def __call__(self, tokens: list[str]) -> list[str]:
        return [t for _, t in self._tagger.tag(list(tokens))]


def _read_json_gz(path: Path):
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise MissingResource(f"{path}: the packaged POS tagger cannot be read ({e}); reinstall adaptext") from e


class SpacyTagger:
    """tokens -> fine-grained (PTB) tags from a spaCy pipeline, on the given tokenisation."""

    name = "spacy"

    def __init__(self, model: str = "en_core_web_sm"):
        try:
            import spacy
            from spacy.tokens import Doc
        except ImportError as e:
            raise MissingResource("the spaCy tagger needs spaCy: pip install spacy && "
                               f"python -m spacy download {model} (or use the default tagger, 'nltk')") from e
        try:
            self._nlp = spacy.load(model, exclude=["parser", "ner", "lemmatizer"])
        except OSError as e:
            raise MissingResource(f"spaCy model {model!r} is not installed: python -m spacy download {model}") from e
        self._doc = Doc

    def __call__(self, tokens: list[str]) -> list[str]:
        doc = self._doc(self._nlp.vocab, words=list(tokens))
        for _, proc in self._nlp.pipeline:
            doc = proc(doc)
        return [t.tag_ for t in doc]


_TAGGERS = {"nltk": NltkTagger, "spacy": SpacyTagger}
_CACHE: dict = {}


def get_tagger(name: str = "nltk"):
    """A callable ``tokens -> POS tags`` (one tag per token). Loaded once per process."""
    if name not in _TAGGERS:
        raise UsageError(f"unknown tagger {name!r}; choose one of {', '.join(_TAGGERS)}")
    if name not in _CACHE:
        _CACHE[name] = _TAGGERS[name]()
    return _CACHE[name]


# ------------------------------------------------------------------ phrase labeller
def _best(counter: Counter):
    label, count = max(counter.items(), key=lambda kv: (kv[1], kv[0]))
    return [label, count, sum(counter.values())]


_LABELLERS: dict = {}


class PhraseLabeller:
    """Phrase tag of an inner node from its two children's tags.

    ``pair[(l, r)]``, ``left[l]``, ``right[r]`` hold ``[best parent tag, its count, total]``;
    ``backoff`` is the order of the single-child tables tried after the pair table.
    """

    def __init__(self, pair: dict, left: dict, right: dict, default: str, backoff=("right", "left")):
        self.pair, self.left, self.right, self.default = pair, left, right, default
        self.backoff = tuple(backoff)

    def __call__(self, left_tag, right_tag) -> str:
        hit = self.pair.get((left_tag, right_tag))
        if hit is not None:
            return hit[0]
        for side in self.backoff:
            hit = (self.right.get(right_tag) if side == "right" else self.left.get(left_tag))
            if hit is not None:
                return hit[0]
        return self.default

    # -------------------------------------------------------------- learning
    @classmethod
    def fit(cls, trees, backoff=("right", "left")) -> "PhraseLabeller":
        """Count parent tags over every inner node of tagged binary trees."""
        pair: defaultdict[tuple[str, str], Counter[str]] = defaultdict(Counter)
        left: defaultdict[str, Counter[str]] = defaultdict(Counter)
        right: defaultdict[str, Counter[str]] = defaultdict(Counter)
        glob: Counter[str] = Counter()
        for t in trees:
            for i in range(len(t)):
                l, r = t.left[i], t.right[i]
                if l < 0 or t.tags[i] is None:
                    continue
                p, tl, tr = t.tags[i], t.tags[l], t.tags[r]
                pair[(tl, tr)][p] += 1
                left[tl][p] += 1
                right[tr][p] += 1
                glob[p] += 1
        if not glob:
            raise ValueError("no tagged inner nodes to learn phrase tags from")
        return cls({k: _best(c) for k, c in pair.items()}, {k: _best(c) for k, c in left.items()},
                   {k: _best(c) for k, c in right.items()}, _best(glob)[0], backoff)

    # -------------------------------------------------------------- JSON artefact
    def to_json(self) -> dict:
        return {"format": "adaptext.phrase_labeller/1", "default": self.default, "backoff": list(self.backoff),
                "pair": {f"{l} {r}": v for (l, r), v in sorted(self.pair.items())},
                "left": dict(sorted(self.left.items())), "right": dict(sorted(self.right.items()))}

    @classmethod
    def from_json(cls, d: dict) -> "PhraseLabeller":
        if d.get("format") != "adaptext.phrase_labeller/1":
            raise ValueError("not an adaptext phrase labeller file (format adaptext.phrase_labeller/1)")
        pair = {tuple(k.split(" ")): v for k, v in d["pair"].items()}
        return cls(pair, d["left"], d["right"], d["default"], d.get("backoff", ("right", "left")))

    def save(self, path) -> None:
        write_atomic(path, json.dumps(self.to_json(), separators=(",", ":"), sort_keys=False) + "\n")

    @classmethod
    def load_default(cls) -> "PhraseLabeller":
        """The table shipped with the package (learned from wsj_0001-0179), read once."""
        if "default" not in _LABELLERS:
            _LABELLERS["default"] = cls.load(RESOURCE)
        return _LABELLERS["default"]

    @classmethod
    def load(cls, path=None) -> "PhraseLabeller":
        """The labeller saved at ``path``; the one shipped with the package by default."""
        path = Path(path) if path is not None else RESOURCE
        try:
            return cls.from_json(json.loads(path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            raise FileNotFoundError(f"{path}: no phrase labeller there (build one with "
                                    "adaptext.data.tags.build_phrase_labeller)") from None


# ------------------------------------------------------------------ tagging trees
def tag_tree(tree: Tree, tagger, labeller: PhraseLabeller) -> Tree:
    """POS tags at the leaves (one tagger call over the sentence), phrase tags at the inner
    nodes, bottom-up over the post-order arrays (children come before parents)."""
    words = tree.leaves()
    pos = tagger(words)
    if len(pos) != len(words):
        raise ValueError(f"the tagger gave {len(pos)} tags for {len(words)} tokens")
    tags: list[str | None] = [None] * len(tree)
    k = 0
    for i in range(len(tree)):
        if tree.left[i] < 0:
            tags[i] = pos[k]
            k += 1
        else:
            tags[i] = labeller(tags[tree.left[i]], tags[tree.right[i]])
    return tree.with_tags(tags)


def tag_examples(examples, tagger=None, labeller: PhraseLabeller | None = None) -> list:
    """Tagged copies of ``TreeExample`` / ``TreePairExample`` lists (both trees of a pair)."""
    tagger = tagger or get_tagger("nltk")
    labeller = labeller or PhraseLabeller.load()
    out: list[TreeExample | TreePairExample] = []
    for ex in examples:
        if isinstance(ex, TreePairExample):
            out.append(replace(ex, tree=tag_tree(ex.tree, tagger, labeller), pair=tag_tree(ex.pair, tagger, labeller)))
        elif isinstance(ex, TreeExample):
            out.append(replace(ex, tree=tag_tree(ex.tree, tagger, labeller)))
        else:
            raise TypeError(f"tags are for tree examples, not {type(ex).__name__}")
    return out


# ------------------------------------------------------------------ the treebank sample
def default_treebank() -> Path:
    root = os.environ.get("ADAPTEXT_DATA")
    if not root:
        raise FileNotFoundError("set ADAPTEXT_DATA (the folder holding ptb_sample/treebank.zip) or pass the zip path")
    return Path(root) / "ptb_sample" / "treebank.zip"


def read_treebank(zip_path=None, files=None) -> list[Tree]:
    """Binarised, cleaned trees of ``combined/wsj_NNNN.mrg`` (NNNN in ``files``, all by
    default) of NLTK's Penn Treebank sample zip, in file order."""
    from .tree_readers import read_ptb_file

    zip_path = Path(zip_path) if zip_path is not None else default_treebank()
    wanted = None if files is None else {f"wsj_{n:04d}.mrg" for n in files}
    trees: list[Tree] = []
    with zipfile.ZipFile(zip_path) as z, tempfile.TemporaryDirectory() as tmp:
        names = sorted(n for n in z.namelist() if "/combined/" in n and n.endswith(".mrg")
                       and (wanted is None or n.rsplit("/", 1)[-1] in wanted))
        if not names:
            raise ValueError(f"{zip_path}: no combined/*.mrg files matched")
        for n in names:
            path = Path(z.extract(n, tmp))
            trees.extend(ex.tree for ex in read_ptb_file(path))
    return trees


def build_phrase_labeller(zip_path=None, out=RESOURCE, files=TRAIN_FILES) -> PhraseLabeller:
    """Learn the labeller from the treebank sample (wsj_0001-0179 by default, so the
    held-out figures of ``evaluate_on_treebank`` describe the shipped table) and save it."""
    lab = PhraseLabeller.fit(read_treebank(zip_path, files))
    if out is not None:
        lab.save(out)
    return lab


def evaluate_on_treebank(zip_path=None, tagger="nltk", train_files=TRAIN_FILES, test_files=HELDOUT_FILES) -> dict:
    """Accuracies on held-out treebank sentences (percentages):

    - ``tagger``: POS tags of the held-out tokens (-NONE- removed) against the gold tags;
    - ``labeller_gold_children``: the phrase tag of each held-out inner node given its
      children's gold tags (backoff right then left, and left then right);
    - ``labeller_end_to_end``: inner-node tags predicted bottom-up from the tagger's POS tags,
      as ``tag_tree`` does on SST / SICK trees.
    """
    train, test = read_treebank(zip_path, train_files), read_treebank(zip_path, test_files)
    tag = get_tagger(tagger) if isinstance(tagger, str) else tagger
    out: dict[str, float] = {"train_trees": len(train), "test_trees": len(test)}
    ok = n = 0
    predicted = []
    for t in test:
        gold = [t.tags[i] for i in range(len(t)) if t.left[i] < 0]
        pred = tag(t.leaves())
        ok += sum(a == b for a, b in zip(gold, pred))
        n += len(gold)
        predicted.append(pred)
    out["tagger"], out["tokens"] = 100.0 * ok / n, n
    for order in (("right", "left"), ("left", "right")):
        lab = PhraseLabeller.fit(train, backoff=order)
        ok = n = seen = 0
        for t in test:
            for i in range(len(t)):
                if t.left[i] >= 0:
                    key = (t.tags[t.left[i]], t.tags[t.right[i]])
                    ok += lab(*key) == t.tags[i]
                    seen += key in lab.pair
                    n += 1
        out[f"labeller_gold_children_{order[0]}_first"] = 100.0 * ok / n
    out["inner_nodes"], out["pair_seen"] = n, 100.0 * seen / n
    lab = PhraseLabeller.fit(train)
    ok = 0
    for t, pred in zip(test, predicted):
        tagged = tag_tree(t, lambda _w, p=pred: p, lab)
        ok += sum(a == b for i, (a, b) in enumerate(zip(tagged.tags, t.tags)) if t.left[i] >= 0)
    out["labeller_end_to_end"] = 100.0 * ok / n
    out["majority_baseline"] = 100.0 * sum(t.tags[i] == lab.default for t in test for i in range(len(t))
                                           if t.left[i] >= 0) / n
    return out


if __name__ == "__main__":  # python -m adaptext.data.tags [--build]
    import sys

    if "--build" in sys.argv:
        build_phrase_labeller()
        print(f"wrote {RESOURCE}")
    print(json.dumps(evaluate_on_treebank(), indent=2))
