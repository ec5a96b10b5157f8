"""Load a run directory and predict: ``clf = adaptext.load(RUN_DIR); clf.predict(["..."])``."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from .data.batching import Collator, Encoder
from .data.errors import DataError
from .data.examples import ContextsExample, PairExample, TextExample, TreeExample, TreePairExample
from .data.text import LabelMap, Tokenizer, TokenizerConfig, Vocab
from .data.trees import leaf_tree, tree_from_brackets
from .registry import create_model, get_entry
from .training.config import model_options, resolve
from .training.metrics import decide
from .training.rundir import load_weights, read_json


class Classifier:
    """A trained model with everything needed to turn raw input into predictions."""

    def __init__(self, model, encoder: Encoder, labels: LabelMap, config: dict, kind: str):
        self.model, self.encoder, self.labels, self.config, self.kind = model.eval(), encoder, labels, config, kind
        self.entry = get_entry(config["model"])
        self.collate = Collator(len(labels), labels.multilabel, getattr(model, "min_length", 1),
                                getattr(model, "fixed_length", 0))

    @classmethod
    def load(cls, run_dir, device: str = "cpu") -> "Classifier":
        run = Path(run_dir)
        for name in ("config.json", "vocab.json", "labels.json", "model.safetensors"):
            if not (run / name).exists():
                hint = " (a cross-validation run: load one of its fold-k directories)" if (run / "fold-1").exists() else ""
                raise DataError(run / name, None, f"missing: not a finished run directory{hint}")
        cfg = resolve({}, read_json(run / "config.json"), run / "config.json")
        voc = read_json(run / "vocab.json")
        labels = LabelMap.from_dict(read_json(run / "labels.json"))
        vocab = Vocab(voc["tokens"])
        tag_vocab = Vocab(voc["tags"]) if voc.get("tags") else None
        entry = get_entry(cfg["model"])
        kind = read_json(run / "metrics.json").get("info", {}).get("kind", entry.inputs[0])
        placeholder = torch.zeros(len(vocab), voc["embedding_dim"]) if voc.get("embedding_dim") else None
        model = create_model(cfg["model"], num_classes=len(labels), vocab_size=len(vocab), kind=kind,
                             multilabel=labels.multilabel, tag_vocab_size=len(tag_vocab) if tag_vocab else 0,
                             embeddings=placeholder, embedding_mode=cfg["embedding_mode"], **model_options(cfg))
        load_weights(model, run / "model.safetensors")
        try:
            model.to(device)
        except (RuntimeError, AssertionError) as e:     # "gpu", or cuda on a machine without one
            raise ValueError(f"device {device!r}: {str(e).splitlines()[0]}") from None
        # a model that reads a fixed number of positions (DenseCNN's 300) cuts there whatever the
        # run's max_length: the encoder cuts at the nearer limit, so such a cut is flagged too
        fixed, limit = getattr(model, "fixed_length", 0), cfg["max_length"]
        limit = min(limit, fixed) if limit and fixed else limit or fixed
        enc = Encoder(Tokenizer(TokenizerConfig(**voc["tokenizer"])), vocab, labels, tag_vocab, limit)
        if entry.needs_tags:                  # a missing tagger is said now, not at the first prediction
            from .data.tags import PhraseLabeller, get_tagger
            get_tagger(cfg["tagger"])
            PhraseLabeller.load_default()
        return cls(model, enc, labels, cfg, kind)

    # ------------------------------------------------------------------ input
    def as_examples(self, inputs) -> list:
        """Strings, dicts ({"text", "pair"} / {"text", "contexts"} / {"tree"}, or the fields the run
        was trained with: its --text-col / --pair-col / --contexts-col) or examples."""
        out = []
        for k, x in enumerate(as_input_list(inputs)):
            if hasattr(x, "kind"):
                out.append(x)
                continue
            try:
                out.append(self._example(x, f"<input>:{k + 1}"))
            except ValueError as e:                           # a tree that does not parse, a wrong type
                raise DataError("<input>", k + 1, str(e)) from None
        if self.entry.needs_tags:
            from .training.run import add_tags
            out = add_tags(self.config, self.entry, [out])[0]
        return out

    def _example(self, x, where: str):
        if isinstance(x, str):
            if self.kind == "tree":
                tree, cut = self._tree(x)
                return TreeExample(tree, where=where, truncated=cut)
            if self.kind != "text":
                raise ValueError(f"this model reads {self.kind} input; give a JSON object, not a string")
            return TextExample(x, None, where)
        if not isinstance(x, dict):
            raise ValueError(f"cannot read a {type(x).__name__} as input")
        x = self._renamed(x)
        if self.kind == "pair":
            if "pair" not in x and "context" not in x:
                raise ValueError('a pair model needs {"text": ..., "pair": ...}' + self._fields_hint())
            return PairExample(_text(x, "text"), _text(x, "pair" if "pair" in x else "context"), None, where)
        if self.kind == "contexts":
            ctx = x.get("contexts")
            ctx = [ctx] if isinstance(ctx, str) else ctx
            if not isinstance(ctx, list) or not ctx or not all(isinstance(c, str) and c.strip() for c in ctx):
                raise ValueError('"contexts" must be a non-empty list of non-empty texts')
            return ContextsExample(_text(x, "text"), tuple(ctx), None, where)
        if self.kind == "tree":
            tree, cut = self._tree(_text(x, "tree" if "tree" in x else "text"))
            return TreeExample(tree, where=where, truncated=cut)
        if self.kind == "tree_pair":
            (tree, cut), (pair, pair_cut) = (self._tree(_text(x, "tree" if "tree" in x else "text")),
                                             self._tree(_text(x, "pair_tree" if "pair_tree" in x else "pair")))
            return TreePairExample(tree, pair, where=where, truncated=cut or pair_cut)
        return TextExample(_text(x, "text"), None, where)

    def _renamed(self, x: dict) -> dict:
        """The run's own field names (--text-col hypothesis --pair-col premise) read as text / pair /
        contexts; the generic names work too."""
        cols = {self.config.get(k): role for k, role in (("text_col", "text"), ("pair_col", "pair"),
                                                         ("contexts_col", "contexts")) if self.config.get(k)}
        return {**x, **{role: x[col] for col, role in cols.items() if col in x and role not in x}}

    def _fields_hint(self) -> str:
        cols = [self.config.get(k) for k in ("text_col", "pair_col") if self.config.get(k) not in (None, "text")]
        return f" (or the run's fields: {', '.join(repr(c) for c in cols)})" if cols else ""

    def _tree(self, s: str) -> tuple:
        """(tree, truncated): a bracketed parse as it is, or a plain text as a right-branching
        tree of its tokens, cut at the run's max_length as texts are (its depth is its length)."""
        s = s.strip()
        if s.startswith("("):
            return tree_from_brackets(s, labels_are="labels"), False
        tokens, limit = self.encoder.tokens(s) or ["<unk>"], self.encoder.max_length
        cut = bool(limit) and len(tokens) > limit
        return leaf_tree(tokens[:limit] if cut else tokens), cut

    def batch(self, inputs):
        """The model's batch of ``inputs``, encoded as ``predict`` encodes them."""
        items = self._items(inputs)
        return self.collate(items), items

    # ------------------------------------------------------------------ output
    def _items(self, inputs):
        items = self.encoder.encode(self.as_examples(inputs), with_labels=False)
        for k, it in enumerate(items):
            it.index = k
            if it.text is not None and len(it.text) == 0:      # empty after tokenisation:
                it.text = np.asarray([1], dtype=np.int64)        # classified as one unknown word
        return items

    @torch.no_grad()
    def predict_proba(self, inputs, batch_size: int = 64) -> np.ndarray:
        from .training.run import predict_probs
        _check_batch_size(batch_size)
        return predict_probs(self.model, self._items(inputs), self.collate, self.labels.multilabel, batch_size)

    def predict(self, inputs, batch_size: int = 64) -> list[dict]:
        """[{"label": ..., "probs": {label: p}}] (multi-label: also "labels": [...], most probable
        first, and "label" the most probable);
        "truncated": true where a text was longer than the run's max_length (or than the
        model's fixed length, e.g. DenseCNN's 300 positions), so only its beginning was read."""
        from .training.run import predict_probs
        _check_batch_size(batch_size)
        items = self._items(as_input_list(inputs))
        probs = predict_probs(self.model, items, self.collate, self.labels.multilabel, batch_size)
        pred = decide(probs, self.labels.multilabel, self.labels.threshold)
        out = []
        for k, p in enumerate(probs):
            d = {"probs": {l: round(float(v), 6) for l, v in zip(self.labels.labels, p)}}
            if self.labels.multilabel:
                chosen = sorted(np.flatnonzero(pred[k]), key=lambda j: -p[j])      # most probable first
                d["labels"] = [self.labels.labels[j] for j in chosen]
                d["label"] = d["labels"][0] if d["labels"] else None
            else:
                d["label"] = self.labels.labels[int(pred[k])]
            if items[k].truncated:
                d["truncated"] = True
            out.append(d)
        return out


def _check_batch_size(batch_size) -> None:
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a whole number of at least 1, not {batch_size!r}")


def as_input_list(inputs) -> list:
    if isinstance(inputs, (str, bytes, dict)):     # list("great") would be five one-letter texts
        raise TypeError(f"give a list of inputs, not one {type(inputs).__name__} (e.g. predict([text]))")
    return list(inputs)


def _text(x: dict, key: str) -> str:
    if key not in x:
        raise ValueError(f"no {key!r} field")
    if not isinstance(x[key], str):
        raise ValueError(f"{key!r} must be a string, found {type(x[key]).__name__}")
    return x[key]
