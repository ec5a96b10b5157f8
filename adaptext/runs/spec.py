"""What a run directory must hold to rebuild its model and its text pipeline, written and
read here and nowhere else:

    config.json        the run's options (runs.options: the model's name and options among them)
    vocab.json         input kind, tokenizer, tokens, tag tokens, size of the pretrained vectors
    labels.json        class names, multi-label or not, the decision threshold
    model.safetensors  the weights
    tokenizer.json     a subword run's word pieces (the encoder's tokenizer, as tokenizers saves it)

Loading checks every file before it is used, so a damaged run directory is one error naming
the file and the problem, never a traceback from deep inside a library. Metrics, logs and
plots are results of the run, not part of its spec: loading reads none of them (except the
input kind of a run written before vocab.json held it).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from ..errors import DataError, MissingResource
from ..data.examples import ExampleKind
from ..data.text import LabelMap, Tokenizer, TokenizerConfig, Vocab
from ..registry import ModelEntry, TextClassifier, create_model, get_entry
from . import options
from .files import load_weights, read_json, write_atomic
from .rundir import RunDir
from ..config import RunConfig

if TYPE_CHECKING:
    from tokenizers import Tokenizer as WordPieces

FILES = ("config.json", "vocab.json", "labels.json", "model.safetensors")
PIECES = "tokenizer.json"       # a subword run's word pieces (the tokenizers library's file)


def make_tokenizer(cfg: RunConfig) -> Tokenizer:
    """A new run's tokenizer; a subword one reads the word pieces of the model's pretrained encoder."""
    from ..pretrained import DEFAULT
    level = cfg.tokenizer or get_entry(cfg.model).tokenizer
    pretrained = (cfg.model_options.get("pretrained") or DEFAULT) if level == "subword" else None
    return Tokenizer(level=level, lower=cfg.lower, clean=cfg.clean, pretrained=pretrained)


@dataclass
class RunSpec:
    config: RunConfig               # the resolved options (runs.options)
    kind: ExampleKind               # the example kind the model reads
    tokenizer: Tokenizer
    vocab: Vocab
    tag_vocab: Vocab | None
    labels: LabelMap
    embedding_dim: int | None       # size of the pretrained vectors the model was built with

    @property
    def model_name(self) -> str:
        return self.config.model

    @property
    def entry(self) -> ModelEntry:
        return get_entry(self.model_name)

    def build_model(self, embeddings: torch.Tensor | None = None) -> TextClassifier:
        """The model, untrained: with ``embeddings`` (training) or, when the run had pretrained
        vectors, a placeholder of their size (their trained values come with the weights)."""
        mode = self.config.embedding_mode
        assert mode is not None, "options.resolve sets the embedding mode"
        if embeddings is None and self.embedding_dim:
            embeddings = torch.zeros(len(self.vocab), self.embedding_dim)
        return create_model(self.model_name, num_classes=len(self.labels), vocab_size=len(self.vocab), kind=self.kind,
                            multilabel=self.labels.multilabel,
                            tag_vocab_size=len(self.tag_vocab) if self.tag_vocab else 0, embeddings=embeddings,
                            embedding_mode=mode, **self.config.model_options)

    # ------------------------------------------------------------------ write
    def save(self, run_dir: str | Path) -> None:
        run = Path(run_dir)
        write_config(run, self.config)
        write_atomic(run / "vocab.json", {"kind": self.kind, "tokenizer": self.tokenizer.to_dict(),
                                          "tokens": self.vocab.itos,
                                          "tags": self.tag_vocab.itos if self.tag_vocab else None,
                                          "embedding_dim": self.embedding_dim})
        write_atomic(run / "labels.json", self.labels.to_dict())
        if self.tokenizer.config.level == "subword":      # the run reads text again without the encoder's package
            self.tokenizer.pieces.save(str(run / PIECES))

    # ------------------------------------------------------------------ read
    @classmethod
    def load(cls, run_dir: str | Path) -> "RunSpec":
        run = Path(run_dir)
        for name in FILES:
            if not (run / name).is_file():
                hint = " (a cross-validation run: load one of its fold-k directories)" if (run / "fold-1").exists() else ""
                raise DataError(run / name, None, f"missing: not a finished run directory{hint}")
        config = options.resolve({}, read_json(run / "config.json"), run / "config.json")
        voc = _checked_vocab(run / "vocab.json", read_json(run / "vocab.json"))
        labels = _checked_labels(run / "labels.json", read_json(run / "labels.json"))
        saved = voc.get("kind") or _legacy_kind(run, config.model)
        if saved not in get_entry(config.model).inputs:
            raise DataError(run / "vocab.json", None, f"model {config.model} does not read {saved!r} input")
        try:
            tokenizer = Tokenizer(TokenizerConfig(**voc["tokenizer"]), pieces=_saved_pieces(run))
        except (TypeError, ValueError) as e:
            raise DataError(run / "vocab.json", None, f"a tokenizer this version cannot build ({e})") from None
        return cls(config, ExampleKind(saved), tokenizer, Vocab(voc["tokens"]),
                   Vocab(voc["tags"]) if voc.get("tags") else None, labels, voc.get("embedding_dim"))

    def load_model(self, run_dir: str | Path) -> TextClassifier:
        """The model with the run's trained weights; weights that do not fit the spec (another
        run's, a damaged file) are a ``DataError``."""
        model = self.build_model()
        load_weights(model, Path(run_dir) / "model.safetensors")
        return model


def write_config(run_dir: str | Path, cfg: RunConfig) -> None:
    write_atomic(Path(run_dir) / "config.json", options.nested(cfg))


def _saved_pieces(run: Path) -> WordPieces | None:
    """The word pieces a subword run saved, or None (other runs; a subword run written before runs
    saved them reads the pretrained encoder's)."""
    if not (run / PIECES).is_file():
        return None
    from ..pretrained import saved_word_pieces
    try:
        return saved_word_pieces(run / PIECES)
    except MissingResource:
        raise
    except Exception as e:              # tokenizers raises a bare Exception on a damaged file
        raise DataError(run / PIECES, None, f"not a tokenizer this version can read ({e}): the run directory "
                                            "is damaged") from None


def _checked_vocab(path: Path, voc: object) -> dict[str, Any]:
    def bad(problem: str) -> DataError:
        return DataError(path, None, f"{problem}: the run directory is damaged")
    if not isinstance(voc, dict):
        raise bad(f"expected a JSON object, found {type(voc).__name__}")
    tokens, tags, dim = voc.get("tokens"), voc.get("tags"), voc.get("embedding_dim")
    if not isinstance(tokens, list) or len(tokens) < 2 or not all(isinstance(t, str) for t in tokens):
        raise bad('"tokens" must be a list of strings (<pad>, <unk>, then the words)')
    if tags is not None and (not isinstance(tags, list) or not all(isinstance(t, str) for t in tags)):
        raise bad('"tags" must be a list of strings or null')
    if dim is not None and (not isinstance(dim, int) or isinstance(dim, bool) or dim < 1):
        raise bad('"embedding_dim" must be a positive whole number or null')
    if not isinstance(voc.get("tokenizer"), dict):
        raise bad('"tokenizer" must be an object')
    if voc.get("kind") is not None and voc["kind"] not in tuple(ExampleKind):
        raise bad(f'"kind" must be one of {", ".join(ExampleKind)}')
    return voc


def _checked_labels(path: Path, d: object) -> LabelMap:
    def bad(problem: str) -> DataError:
        return DataError(path, None, f"{problem}: the run directory is damaged")
    if not isinstance(d, dict):
        raise bad(f"expected a JSON object with \"labels\", found {type(d).__name__}")
    labels, threshold = d.get("labels"), d.get("threshold", 0.5)
    if not isinstance(labels, list) or len(labels) < 2 or not all(isinstance(x, str) for x in labels) \
            or len(set(labels)) != len(labels):
        raise bad('"labels" must be a list of two or more distinct strings')
    if not isinstance(d.get("multilabel", False), bool):
        raise bad('"multilabel" must be true or false')
    if not isinstance(threshold, (int, float)) or isinstance(threshold, bool) or not math.isfinite(threshold) \
            or not 0 < threshold < 1:
        raise bad('"threshold" must be a number between 0 and 1')
    return LabelMap.from_dict(d)


def _legacy_kind(run: Path, model: str) -> str:
    """The input kind of a run written before vocab.json named it: the model's only kind, or
    the one its metrics.json recorded."""
    inputs = get_entry(model).inputs
    if len(inputs) == 1:
        return inputs[0]
    metrics = RunDir(run).metrics
    kind: str | None = read_json(metrics).get("info", {}).get("kind") if metrics.is_file() else None
    if kind is None:
        raise DataError(run / "vocab.json", None, f"no input kind, and model {model} reads {', '.join(inputs)}")
    return kind

