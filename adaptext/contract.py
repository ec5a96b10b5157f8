"""The run contract: every option of ``adaptext train``, declared once.

Each option is one field of a section dataclass (data, text, optimisation, engine,
distillation, output) whose metadata says what the option means (help), which values it takes
(choices, lowest, above) and whether ``--resume`` may change it. ``runs.options`` makes the
command line's flags and help, the checks of a ``--config`` file, the resume rule and the layout
of ``config.json`` from these declarations: adding an option is one line here. The column
options (``--text-col`` ...) are the fields of the readers' ``ReadOptions``, which the readers
take too, so they are declared there. This module imports no model: the registry reads it to
keep a model's options from shadowing a run's.
"""
from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any, Iterable

from .data.readers import FORMATS, ReadOptions
from .optim import OPTIMIZERS
from .optim.schedules import SCHEDULES


def opt(default: Any, help: str, *, choices: Iterable[str] | None = None, lowest: float | None = None,
        highest: float | None = None, above: float | None = None, below: float | None = None, resume: bool = False,
        path: bool = False, reader: bool = False, aliases: tuple[str, ...] = ()) -> Any:
    """A run option. ``lowest`` / ``highest``: the smallest / largest value taken; ``above`` /
    ``below``: bounds a value must exceed / stay under; ``resume``: ``--resume`` may change it;
    ``path``: a file or folder, written to config.json by absolute path; ``reader``: passed to the
    file readers (columns, encoding)."""
    return field(default=default, metadata={
        "help": help, "choices": tuple(choices) if choices else None, "lowest": lowest, "highest": highest,
        "above": above, "below": below, "resume": resume, "path": path, "reader": reader, "aliases": tuple(aliases)})


@dataclass(frozen=True)
class DataOptions:
    data: str | None = opt(None, "named dataset or training file (default: the bundled TREC demo)", path=True)
    dev: str | None = opt(None, "dev file (default: the dataset's dev split, else 10%% of train)", path=True)
    test: str | None = opt(None, "test file", path=True)
    data_dir: str | None = opt(None, "root of the named datasets (default: $ADAPTEXT_DATA)", path=True, resume=True)
    format: str = opt("auto", "file format (auto: from the name and first line)", choices=FORMATS)
    encoding: str | None = opt(None, "file encoding (default: utf-8; auto for Kim/TREC files: utf-8, else cp1252)",
                               reader=True)
    on_bad_line: str = opt("error", "error: stop at a bad line; skip: leave it out and count it",
                           choices=("error", "skip"))
    cv: int = opt(0, "k-fold cross-validation (sets without a test split)", lowest=0)
    cv_seed: int = opt(0, "seed of the cross-validation folds")
    store: str = opt("auto", "auto: read text, pair and context files into an on-disk token store, built once "
                             "and reused by later runs (flat memory on corpora larger than RAM); off: into memory",
                     choices=("auto", "off"))
    workers: int = opt(0, "processes that tokenise a file into its store (0: one per CPU core for files over "
                          "64 MB)", lowest=0, resume=True)


@dataclass(frozen=True)
class TextOptions:
    tokenizer: str | None = opt(None, "word, char, or subword (a pretrained encoder's word pieces; default: the "
                                      "model's)", choices=("word", "char", "subword"))
    lower: bool = opt(True, "lower-case the text")
    clean: str = opt("none", "kim: Kim's (2014) string cleaning", choices=("none", "kim"))
    min_freq: int = opt(1, "keep words seen at least this often in train", lowest=1)
    max_vocab: int = opt(0, "keep at most this many words (0: all)", lowest=0)
    max_length: int = opt(2000, "truncate texts to this many tokens (0: never)", lowest=0)
    embeddings: str | None = opt(None, "pretrained vectors (GloVe / word2vec / fastText text, or word2vec .bin; "
                                       ".gz ok), or transformer[:NAME_OR_PATH]: vectors for the vocabulary derived "
                                       "from a pretrained encoder (default all-MiniLM-L6-v2)", path=True)
    embedding_mode: str | None = opt(None, "Kim 2014: rand, static, non-static, multichannel (default: non-static "
                                           "with --embeddings, else rand)",
                                     choices=("rand", "static", "non-static", "multichannel"))
    oov_init: str = opt("uniform", "vectors of words missing from --embeddings", choices=("uniform", "normal"))
    oov_scale: float = opt(0.25, "their scale (uniform: +-scale; normal: std)", lowest=0)
    embedding_words: int = opt(0, "also give the vocabulary the first N words of --embeddings (a GloVe or word2vec "
                                  "file lists the most frequent first), so that a word the training texts lack keeps "
                                  "its pretrained vector instead of reading as unknown (0: the training words only)",
                               lowest=0)
    pca_dim: int = opt(0, "keep this many principal components of the --embeddings vectors (0: all of them); "
                          "smaller vectors, a faster model", lowest=0)
    tagger: str = opt("nltk", "POS tagger of the tag-guided tree models")
    parser: str = opt("bracketer", "how a tree model reads plain texts: bracketer (the span parser shipped in the "
                                   "package), right-branching or left-branching (files of trees keep their trees)",
                      choices=("bracketer", "right-branching", "left-branching"))


@dataclass(frozen=True)
class OptimisationOptions:
    optimizer: str = opt("adam", "optimiser", choices=OPTIMIZERS)
    lr: float = opt(1e-3, "learning rate", above=0)
    batch_size: int = opt(50, "examples per batch", lowest=1)
    epochs: int = opt(10, "at most this many epochs", lowest=1, resume=True)
    lr_schedule: str = opt("constant", "the learning rate over training: constant, or linear decay to 0 at the last "
                                       "step of --epochs (or --max-steps)", choices=SCHEDULES)
    warmup: float = opt(0.0, "share of the planned steps over which the learning rate rises from 0", lowest=0,
                        below=1)
    weight_decay: float = opt(0.0, "L2 penalty", lowest=0)
    grad_clip: float = opt(0.0, "clip gradients to this norm (0: no clipping)", lowest=0)
    patience: int = opt(5, "stop after this many epochs without a better dev score", lowest=0)
    monitor: str | None = opt(None, "dev metric for early stopping and model selection",
                              choices=("accuracy", "macro_f1", "micro_f1"))
    class_weights: str = opt("none", "balanced: weigh the loss by inverse class frequency",
                             choices=("none", "balanced"))
    label_smoothing: float = opt(0.0, "share of each target spread over the other classes (single-label)",
                                 lowest=0, below=1)
    bucket: int = opt(50, "sort by length within pools of this many batches (less padding; 0: off)", lowest=0)
    init: str | None = opt(None, "weights the model starts from: a safetensors file, or a run directory's "
                                 "model.safetensors; the tensors it names replace the model's own (each of the "
                                 "same name and shape), the others start as the model starts them", path=True)


@dataclass(frozen=True)
class EngineOptions:
    seed: int = opt(1, "random seed")
    deterministic: bool = opt(False, "bit-identical reruns on the same machine (slower)")
    accelerator: str = opt("cpu", "Lightning accelerator", choices=("cpu", "gpu", "cuda", "mps", "auto"),
                           resume=True)
    devices: int = opt(1, "devices (processes with --strategy ddp)", lowest=1, resume=True)
    strategy: str = opt("auto", "Lightning strategy, e.g. ddp", resume=True)
    num_nodes: int = opt(1, "machines (with --strategy ddp)", lowest=1, resume=True)
    threads: int = opt(0, "torch CPU threads (0: the cores other work leaves free)", lowest=0, resume=True)
    checkpoint_every: int = opt(0, "also checkpoint every N training steps (for --resume mid-epoch)", lowest=0,
                                resume=True)
    keep_checkpoints: bool = opt(False, "keep checkpoints/ (the resume state) once the run has finished",
                                 resume=True)
    progress: bool = opt(True, "progress bar with examples/s (on stderr)", resume=True)
    max_steps: int = opt(0, "stop after this many training steps (0: --epochs decides)", lowest=0, resume=True)
    log_every: int = opt(0, "every N training steps append the loss and the process's memory to steps.csv "
                            "(0: never)", lowest=0, resume=True)


@dataclass(frozen=True)
class DistillationOptions:
    teacher: str | None = opt(None, "a trained run whose logits the model learns from (see adaptext distill); "
                                    "several, comma-separated: an ensemble, their logits averaged", path=True)
    teacher_logits: str | None = opt(None, "a file of a teacher's logits over the transfer set (adaptext logits), "
                                           "learnt from in place of the teacher run", path=True)
    distill_loss: str = opt("mse", "mse: squared error between logits (Tang et al. 2019); kl: KL divergence of "
                                   "the temperature-softened distributions (Hinton et al. 2015)", choices=("mse", "kl"))
    alpha: float = opt(0.5, "weight of the true labels' loss; the teacher's weighs 1 - alpha", lowest=0, highest=1)
    temperature: float = opt(2.0, "softening of the kl loss", above=0)
    feature_weight: float = opt(0.0, "weight of a second target in the teacher's share of the loss: its "
                                     "sentence representation (what its classifier head reads, each dimension "
                                     "standardised), matched by a linear map of the student's, trained and then "
                                     "dropped (0: off; needs --teacher)", lowest=0)
    augment: int = opt(0, "augmented copies of each training text in the transfer set (Tang et al.: masking, "
                          "POS-guided word replacement, n-gram sampling)", lowest=0)
    augment_seed: int | None = opt(None, "seed of the augmented copies (default: --seed); students of several seeds "
                                         "share one file of teacher logits through it")
    spans: int = opt(0, "contiguous word spans of each training text in the transfer set, of random length, "
                        "distinct (the phrases a treebank would give it)", lowest=0)
    unlabeled: str | None = opt(None, "a file of unlabelled in-domain texts, one per line, added to the transfer "
                                      "set", path=True)
    unlabeled_sample: int = opt(0, "take this many texts of --unlabeled, drawn with the copies' seed (0: all)",
                                lowest=0)


@dataclass(frozen=True)
class OutputOptions:
    out: str | None = opt(None, "run directory to write (default: runs/MODEL-DATA-seedS)", path=True)
    resume: str | None = opt(None, "continue an interrupted run from its last checkpoint")


SECTIONS = {"data": (DataOptions, ReadOptions), "text": (TextOptions,), "optimisation": (OptimisationOptions,),
            "engine": (EngineOptions,), "distillation": (DistillationOptions,), "output": (OutputOptions,)}
DEFAULT_MODEL = "kim_cnn"


@dataclass(frozen=True)
class Option:
    """One run option: its name, section, default, Python type and metadata."""
    name: str
    section: str
    default: typing.Any
    type: type
    meta: dict[str, Any]

    @property
    def flags(self) -> tuple[str, ...]:
        return ("--" + self.name.replace("_", "-"), *self.meta["aliases"])


def _base_type(hint: Any) -> type:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    base: type = args[0] if args else hint
    return base


def _collect() -> dict[str, Option]:
    options = {}
    for section, classes in SECTIONS.items():
        for cls in classes:
            hints = typing.get_type_hints(cls)
            for f in dataclasses.fields(cls):
                # a column's field says its help and aliases; as a run option it is read by the readers
                meta = opt(f.default, reader=True, **f.metadata).metadata if cls is ReadOptions else f.metadata
                options[f.name] = Option(f.name, section, f.default, _base_type(hints[f.name]), dict(meta))
    return options


OPTIONS: dict[str, Option] = _collect()
RESUME_MAY_CHANGE = tuple(k for k, o in OPTIONS.items() if o.meta["resume"])
PATH_KEYS = tuple(k for k, o in OPTIONS.items() if o.meta["path"])
READER_KEYS = tuple(k for k, o in OPTIONS.items() if o.meta["reader"])
