"""One registry for every model: ``@register_model("name", config=Cfg)`` on the class,
``create_model(name, num_classes=..., vocab_size=..., **config)`` to build it.

A model is a ``TextClassifier``: built from ``(config, spec)``, its config dataclass (the
paper's defaults) and a ``DataSpec`` describing the data (vocabulary, classes, tags,
pretrained vectors). Its ``forward(batch)`` returns logits [B, C] (or a dict with ``logits``
and, for tree models trained on every labelled node, ``node_logits`` [N, C]).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, TypeVar

import torch

from .data.batching import Batch
from .errors import OptionError, UnknownModel, UsageError
from .data.examples import ExampleKind

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


@dataclass
class DataSpec:
    num_classes: int
    vocab_size: int
    kind: ExampleKind = ExampleKind.TEXT
    multilabel: bool = False
    tag_vocab_size: int = 0
    pad_id: int = 0
    embeddings: torch.Tensor | None = None     # [vocab_size, dim] pretrained vectors
    embedding_mode: str = "rand"                # rand | static | non-static | multichannel


class TextClassifier(torch.nn.Module):
    """What the training engine, the inference pipeline and export ask of every model.

    ``min_length``: the fewest positions a batch must hold (the widest filter of a narrow
    convolution); ``fixed_length``: positions every text is padded or cut to (0: free);
    ``apply_constraints()``: runs after each optimiser step (Kim's max-norm); ``explain(batch)``:
    a model that can show its attention overrides it (``explains`` is then true)."""

    min_length: int = 1
    fixed_length: int = 0

    def __init__(self, config: Any, spec: DataSpec) -> None:
        super().__init__()
        self.config, self.spec = config, spec

    def apply_constraints(self) -> None:
        pass

    def explain(self, batch: Batch) -> dict[str, Any]:
        raise NotImplementedError(f"{type(self).__name__} has no attention to show")

    def word_vectors(self) -> tuple[torch.nn.Module, int, Callable[[torch.Tensor], torch.Tensor]]:
        """Where word attributions are computed: ``(module, rows, to_rows)``, the module that turns
        word ids into vectors, its number of rows, and how the model maps a batch's ids to those
        rows (a fixed offset for ids past the vocabulary)."""
        embedding = getattr(self, "embedding", None)
        if embedding is None:
            raise NotImplementedError(f"{type(self).__name__} looks up no word vectors to attribute to")
        return embedding, self.spec.vocab_size, lambda ids: ids

    @property
    def kind(self) -> ExampleKind:
        """The example kind the model was built for."""
        return self.spec.kind

    @property
    def explains(self) -> bool:
        return type(self).explain is not TextClassifier.explain


@dataclass
class ModelEntry:
    name: str
    cls: type[TextClassifier]
    config: type[DataclassInstance]
    inputs: tuple[ExampleKind, ...]   # the kinds the model reads
    tokenizer: str           # default tokenizer level: word | char
    description: str
    paper: str
    train_defaults: dict[str, Any] = field(default_factory=dict)
    test_config: dict[str, Any] = field(default_factory=dict)   # a tiny size for the registry-wide test
    needs_tags: bool = False   # trees need POS / phrase tags (adaptext.data.tags adds them)
    paper_params: dict[str, float] = field(default_factory=dict)   # variant ("-" or a generation) -> millions, as published

    @property
    def defaults(self) -> dict[str, Any]:
        return dataclasses.asdict(self.config())


_REGISTRY: dict[str, ModelEntry] = {}


def _input_kind(kind: ExampleKind | str) -> ExampleKind:
    """A kind a model declares it reads, given as an ``ExampleKind`` or its name."""
    try:
        return ExampleKind(kind)
    except ValueError:
        raise ValueError(f"unknown input kind {kind!r}") from None


M = TypeVar("M", bound=TextClassifier)


def register_model(name: str, *, config: type[DataclassInstance], inputs: Iterable[ExampleKind | str] = (ExampleKind.TEXT,),
                   tokenizer: str = "word", description: str = "", paper: str = "",
                   train_defaults: dict[str, Any] | None = None, test_config: dict[str, Any] | None = None,
                   needs_tags: bool = False,
                   paper_params: dict[str, float] | None = None) -> Callable[[type[M]], type[M]]:
    kinds = tuple(map(_input_kind, inputs))
    if not issubclass(config, Options) and any("choices" in f.metadata for f in dataclasses.fields(config)):
        raise TypeError(f"{config.__name__} has choice fields, so it must derive from Options (which checks them)")
    from .contract import OPTIONS
    shadowed = sorted({f.name for f in dataclasses.fields(config)} & (set(OPTIONS) | {"model"}))
    if shadowed:
        raise TypeError(f"{config.__name__} field(s) {', '.join(shadowed)} would shadow run options of that name")

    def deco(cls: type[M]) -> type[M]:
        if name in _REGISTRY:
            raise ValueError(f"model {name!r} registered twice")
        if not issubclass(cls, TextClassifier):
            raise TypeError(f"{cls.__name__} must derive from adaptext.registry.TextClassifier")
        _REGISTRY[name] = ModelEntry(name, cls, config, kinds, tokenizer,
                                     description or (cls.__doc__ or "").strip().split("\n")[0], paper,
                                     dict(train_defaults or {}), dict(test_config or {}), needs_tags,
                                     dict(paper_params or {}))
        return cls
    return deco


def _load_all() -> None:
    from . import models  # noqa: F401  (importing registers every model)


def list_models() -> list[str]:
    _load_all()
    return sorted(_REGISTRY)


def get_entry(name: str) -> ModelEntry:
    _load_all()
    if name not in _REGISTRY:
        raise UnknownModel(f"unknown model {name!r}; registered: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


def choice(default: str, choices: Iterable[str], help: str = "") -> str:
    """A model option that takes one of ``choices`` (a field of an ``Options`` dataclass): making
    the config refuses any other value, and the command line lists them."""
    return field(default=default, metadata={"choices": tuple(choices), "help": help})


@dataclass
class Options:
    """Base of the model configs that have ``choice`` fields: a config made with a value outside
    a field's choices is refused, however it is made (make_config, a run's config, directly)."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            allowed = f.metadata.get("choices")
            if allowed and getattr(self, f.name) not in allowed:
                raise OptionError(f.name, f"{f.name} must be one of {', '.join(allowed)}, not {getattr(self, f.name)!r}")


def make_config(name: str, **overrides: Any) -> DataclassInstance:
    entry = get_entry(name)
    names = {f.name for f in dataclasses.fields(entry.config)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise UsageError(f"{name} has no option {', '.join(unknown)}; its options: {', '.join(sorted(names))}")
    return entry.config(**overrides)


def create_model(name: str, *, num_classes: int, vocab_size: int, kind: str | None = None, multilabel: bool = False,
                 tag_vocab_size: int = 0, embeddings: torch.Tensor | None = None, embedding_mode: str = "rand",
                 **config: Any) -> TextClassifier:
    """Build a registered model with its paper defaults, overridden by ``config``; ``kind``: an
    ``ExampleKind`` or its name, by default the first the model reads."""
    entry = get_entry(name)
    cfg = make_config(name, **config)
    kind = kind or entry.inputs[0]
    if kind not in entry.inputs:
        raise UsageError(f"{name} reads {', '.join(entry.inputs)} examples, not {kind}")
    spec = DataSpec(num_classes, vocab_size, ExampleKind(kind), multilabel, tag_vocab_size, 0,
                    embeddings, embedding_mode)
    try:
        return entry.cls(cfg, spec)
    except (RuntimeError, MemoryError) as e:
        if not isinstance(e, MemoryError) and "allocate" not in str(e):
            raise
        raise UsageError(_too_large(entry, cfg, spec, e)) from None


def _too_large(entry: ModelEntry, cfg: DataclassInstance, spec: DataSpec, error: BaseException) -> str:
    """What a model too large to allocate would need: its parameters counted where they take no
    memory (PyTorch's meta device), else the allocation that failed."""
    from .memory import human_bytes, total_memory
    changed = {k: v for k, v in dataclasses.asdict(cfg).items() if v != entry.defaults.get(k)}
    options = ", ".join(f"--{k.replace('_', '-')} {','.join(map(str, v)) if isinstance(v, tuple) else v}"
                        for k, v in changed.items()) or "its default options"
    try:
        with torch.device("meta"):
            meta_spec = dataclasses.replace(spec, embeddings=None if spec.embeddings is None else
                                            torch.empty(spec.embeddings.shape, device="meta"))
            count = sum(p.numel() for p in entry.cls(cfg, meta_spec).parameters())
        need = f"{count:,} parameters, {human_bytes(4 * count)} for its weights alone"
    except Exception:                          # a model that cannot be built there: the allocation
        need = f"memory it could not allocate ({' '.join(str(error).split())[:200]})"
    have = total_memory()
    machine = f" (this machine has {human_bytes(have)}; training needs about four times the weights)" if have else ""
    return f"model {entry.name} with {options} is too large: {need}{machine}"


def count_parameters(model: torch.nn.Module, exclude_embeddings: bool = True) -> int:
    skip = set()
    if exclude_embeddings:
        for m in model.modules():
            if isinstance(m, torch.nn.Embedding) and getattr(m, "is_word_embedding", False):
                skip.add(id(m.weight))
    return sum(p.numel() for p in model.parameters() if id(p) not in skip)


def _size(entry: ModelEntry, options: dict[str, Any]) -> int | None:
    """Parameters at the default size, 2 classes, embeddings excluded (None: the model needs an
    extra that is not installed)."""
    from .errors import MissingResource
    vocab_size = 1000
    try:
        if entry.tokenizer == "subword":           # the encoder's own vocabulary, after <pad> and <unk>
            from .pretrained import tokenizer
            vocab_size = len(tokenizer(entry.defaults["pretrained"]).get_vocab()) + 2
        with torch.device("meta"):                 # counts without allocating 200M-parameter models
            m = create_model(entry.name, num_classes=2, vocab_size=vocab_size, kind=entry.inputs[0],
                             tag_vocab_size=50, **options)
    except MissingResource:
        return None
    return count_parameters(m)


def model_table() -> list[dict[str, Any]]:
    """One row per registered model (and per filter generation of the adaptive ones): inputs,
    tokenizer, parameters at the paper's size beside the count the paper reports."""
    rows = []
    for name in list_models():
        e = get_entry(name)
        variants: dict[str, dict[str, str]] = {e.defaults.get("generation", "-"): {}}
        if "generation" in e.defaults:            # adaptive models: both filter generations
            other = "full" if e.defaults["generation"] != "full" else "hashed"
            variants[other] = {"generation": other}
        for variant, opts in variants.items():
            published = e.paper_params.get(variant)
            rows.append({"name": name if variant == "-" else f"{name} ({variant})", "inputs": ",".join(e.inputs),
                         "tokenizer": e.tokenizer, "parameters": _size(e, opts),
                         "paper_parameters": published * 1e6 if published is not None else None,
                         "paper": e.paper, "description": e.description})
    return rows
