"""The run configuration: one flat dictionary whose keys are the CLI's options (``--batch-size``
is ``batch_size``), so ``config.json`` of a run reproduces it with ``--config``.

Precedence: these defaults < the model's ``train_defaults`` < a ``--config`` file < options given
on the command line. Model options (the fields of the model's config dataclass) live in the
same dictionary.
"""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from ..data.errors import DataError, OptionError

RUN_DEFAULTS: dict = {
    # what to train
    "model": "kim_cnn",
    "data": None,            # a named dataset (see `adaptext datasets`) or a training file
    "dev": None, "test": None,
    "data_dir": None,
    "format": "auto", "encoding": None,
    "text_col": "text", "pair_col": None, "contexts_col": None, "label_col": "label", "label_sep": None,
    "on_bad_line": "error",
    "cv": 0, "cv_seed": 0,
    # text -> ids
    "tokenizer": None,       # word | char (default: the model's)
    "lower": True, "clean": "none",
    "min_freq": 1, "max_vocab": 0, "max_length": 2000,
    "embeddings": None, "embedding_mode": None,   # None: non-static with --embeddings, else rand
    "oov_init": "uniform", "oov_scale": 0.25,
    "tagger": "nltk",
    # optimisation
    "optimizer": "adam", "lr": 1e-3, "batch_size": 50, "epochs": 10, "weight_decay": 0.0,
    "grad_clip": 0.0, "patience": 5, "monitor": None, "class_weights": "none", "bucket": 50,
    # engine
    "seed": 1, "deterministic": False, "accelerator": "cpu", "devices": 1, "strategy": "auto",
    "num_nodes": 1, "threads": 0, "checkpoint_every": 0, "keep_checkpoints": False, "progress": True,
    # where
    "out": None, "resume": None,
}

CHOICES = {
    "format": ("auto", "kim", "trec", "fasttext", "zhang", "csv", "tsv", "jsonl", "nli", "sick", "sst-trees"),
    "on_bad_line": ("error", "skip"),
    "tokenizer": ("word", "char"),
    "clean": ("none", "kim"),
    "embedding_mode": ("rand", "static", "non-static", "multichannel"),
    "oov_init": ("uniform", "normal"),
    "optimizer": ("adam", "adagrad", "adadelta", "sgd"),
    "monitor": ("accuracy", "macro_f1", "micro_f1"),
    "class_weights": ("none", "balanced"),
    "accelerator": ("cpu", "gpu", "cuda", "mps", "auto"),
}

# the smallest value each numeric option takes (lr: above 0; cv: 0, no cross-validation, or >= 2)
LOWEST = {"epochs": 1, "batch_size": 1, "devices": 1, "num_nodes": 1, "min_freq": 1, "patience": 0, "max_vocab": 0,
          "max_length": 0, "grad_clip": 0, "checkpoint_every": 0, "threads": 0, "oov_scale": 0, "weight_decay": 0,
          "bucket": 0, "cv": 0}


def check_ranges(cfg: dict) -> None:
    """A number out of range is a clear error before any data is read (Lightning reads
    ``epochs -1`` as 'train for ever', a batch size of 0 divides by zero)."""
    for k, lo in LOWEST.items():
        if cfg.get(k) is not None and cfg[k] < lo:
            raise OptionError(k, f"{k} must be at least {lo}, not {cfg[k]!r}")
    if cfg.get("lr") is not None and not cfg["lr"] > 0:
        raise OptionError("lr", f"lr must be above 0, not {cfg['lr']!r}")
    if cfg.get("cv") == 1:
        raise OptionError("cv", "cv must be 0 (a held-out test split) or at least 2 folds, not 1")


HELP = {
    "data": "named dataset or training file (default: the bundled TREC demo)",
    "dev": "dev file (default: the dataset's dev split, else 10%% of train)",
    "test": "test file",
    "cv": "k-fold cross-validation (sets without a test split)",
    "tokenizer": "word or char (default: the model's)",
    "min_freq": "keep words seen at least this often in train",
    "max_length": "truncate texts to this many tokens (0: never)",
    "embeddings": "pretrained vectors (GloVe / word2vec / fastText text, or word2vec .bin; .gz ok)",
    "embedding_mode": "Kim 2014: rand, static, non-static, multichannel (default: non-static with --embeddings, else rand)",
    "checkpoint_every": "also checkpoint every N training steps (for --resume mid-epoch)",
    "monitor": "dev metric for early stopping and model selection",
    "resume": "continue an interrupted run from its last checkpoint",
    "out": "run directory to write (default: runs/MODEL-DATA-seedS)",
    "model": "a registered model (`adaptext models`)",
    "data_dir": "root of the named datasets (default: $ADAPTEXT_DATA)",
    "format": "file format (auto: from the name and first line)",
    "encoding": "file encoding (default: utf-8; auto for Kim/TREC files: utf-8, else cp1252)",
    "text_col": "CSV/TSV/JSONL column or field of the text",
    "pair_col": "column or field of the second text (pairs)",
    "contexts_col": "JSONL field holding a list of context texts",
    "label_col": "column or field of the label",
    "label_sep": "split the label column on this string: a label set (multi-label)",
    "on_bad_line": "error: stop at a bad line; skip: leave it out and count it",
    "cv_seed": "seed of the cross-validation folds",
    "lower": "lower-case the text",
    "clean": "kim: Kim's (2014) string cleaning",
    "max_vocab": "keep at most this many words (0: all)",
    "oov_init": "vectors of words missing from --embeddings",
    "oov_scale": "their scale (uniform: +-scale; normal: std)",
    "tagger": "POS tagger of the tag-guided tree models",
    "optimizer": "optimiser",
    "lr": "learning rate",
    "batch_size": "examples per batch",
    "epochs": "at most this many epochs",
    "weight_decay": "L2 penalty",
    "grad_clip": "clip gradients to this norm (0: no clipping)",
    "patience": "stop after this many epochs without a better dev score",
    "class_weights": "balanced: weigh the loss by inverse class frequency",
    "bucket": "sort by length within pools of this many batches (less padding; 0: off)",
    "seed": "random seed",
    "deterministic": "bit-identical reruns on the same machine (slower)",
    "accelerator": "Lightning accelerator",
    "devices": "devices (processes with --strategy ddp)",
    "strategy": "Lightning strategy, e.g. ddp",
    "num_nodes": "machines (with --strategy ddp)",
    "threads": "torch CPU threads (0: torch's default)",
    "progress": "progress bar with examples/s",
    "keep_checkpoints": "keep checkpoints/ (the resume state) once the run has finished",
}


def load_config_file(path) -> dict:
    """Options from a JSON or YAML file (a run's ``config.json`` among them); a file that does not
    parse is a ``DataError`` naming its line."""
    from ..data.errors import DataError
    path = Path(path)
    if not path.is_file():
        raise DataError(path, None, "no such config file")
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml
        try:
            data = yaml.safe_load(text) or {}
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            raise DataError(path, mark.line + 1 if mark else None,
                            f"invalid YAML ({getattr(e, 'problem', None) or e})") from None
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise DataError(path, e.lineno, f"invalid JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(data, dict):
        raise DataError(path, None, "a config file must hold one mapping of options")
    data = {k.replace("-", "_"): v for k, v in data.items()}
    return {k: v for k, v in data.items() if not k.startswith("_")}


RATES = ("dropout", "head_dropout", "recurrent_dropout", "weight_dropout", "zoneout")
ZERO_MEANS_OFF = ("fixed_length",)       # densecnn --fixed-length 0: pad to the batch's longest text


def coerce_model_option(key: str, default, value):
    """A model option from a config file as its field's type: YAML's ``widths: 3`` is ``(3,)``,
    ``"3,4,5"`` is ``(3, 4, 5)``, ``"100"`` is 100; what does not convert is a clear error."""
    if value is None or isinstance(default, bool) or not isinstance(default, (int, float, tuple)):
        return value
    given = value
    try:
        if isinstance(default, tuple):
            conv = type(default[0]) if default else int
            if isinstance(value, str):
                value = [x for x in value.split(",") if x.strip()]
            elif not isinstance(value, (list, tuple)):
                value = [value]
            return tuple(conv(x) for x in value)
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise TypeError(value)
        return type(default)(value)
    except (TypeError, ValueError):
        names = {int: "whole numbers", float: "numbers"}
        kind = f"comma-separated {names[type(default[0]) if default else int]}" if isinstance(default, tuple) \
            else {int: "a whole number", float: "a number"}[type(default)]
        raise OptionError(key, f"{key} must be {kind}, not {given!r}") from None


def check_model_ranges(model: str, cfg: dict) -> None:
    """A model option out of range is a clear error before any data is read (``--widths 0``
    failed at the first batch inside oneDNN): sizes, widths and counts whose default is positive
    stay >= 1, dropout rates in [0, 1), the max-norm >= 0."""
    from ..registry import get_entry
    defaults = get_entry(model).defaults
    for k, default in defaults.items():
        v = cfg.get(k)
        if isinstance(default, bool) or v is None:
            continue
        least = 0 if k in ZERO_MEANS_OFF else 1
        if isinstance(default, int) and default > 0 and v < least:
            raise OptionError(k, f"{k} must be at least {least}, not {v!r}")
        if isinstance(default, tuple) and default and all(isinstance(x, int) for x in default) \
                and (not v or any(x < 1 for x in v)):
            raise OptionError(k, f"{k} must be one or more numbers of at least 1, not {','.join(map(str, v)) or 'none'}")
        if k in RATES and not 0 <= v < 1:
            raise OptionError(k, f"{k} must be in [0, 1), not {v!r}")
        if k == "max_norm" and v < 0:
            raise OptionError(k, f"max_norm must be at least 0 (0: no constraint), not {v!r}")


def check_new_run(cfg: dict) -> None:
    """Options that a new run refuses (a saved run's config is loaded as it was)."""
    if cfg["embedding_mode"] == "rand" and cfg["embeddings"]:
        raise ValueError("embedding mode rand (random vectors) does not use --embeddings: drop one, "
                         "or pick static, non-static or multichannel")


def model_fields(model: str) -> dict:
    from ..registry import get_entry
    return {f.name: f for f in dataclasses.fields(get_entry(model).config)}


def resolve(options: dict, file_options: dict | None = None, source=None) -> dict:
    """Merge defaults, the model's training defaults, a config file and explicit options. A value
    refused that came from the file (``source``, when given) is a ``DataError`` naming its line."""
    file_options = file_options or {}
    model = options.get("model") or file_options.get("model") or RUN_DEFAULTS["model"]
    from ..registry import get_entry
    entry = get_entry(model)
    cfg = dict(RUN_DEFAULTS)
    cfg.update(entry.defaults)
    cfg.update(entry.train_defaults)
    for src in (file_options, options):
        for k, v in src.items():
            if v is not None:
                cfg[k] = v
    cfg["model"] = model

    def from_file(key: str) -> bool:
        return source is not None and key in file_options and options.get(key) is None

    unknown = sorted(set(cfg) - set(RUN_DEFAULTS) - set(entry.defaults))
    if unknown:
        problem = f"unknown option(s) {', '.join(unknown)} for model {model}"
        if all(from_file(k) for k in unknown):
            raise DataError(source, _line_of(source, unknown[0]), problem)
        raise ValueError(problem)
    try:
        _check(model, entry, cfg)
    except OptionError as e:
        if from_file(e.key):
            raise DataError(source, _line_of(source, e.key), str(e)) from None
        raise
    return cfg


def _check(model: str, entry, cfg: dict) -> None:
    """Refuse a value outside its choices or range, before any data is read; model options are
    brought to their field's type on the way."""
    for k, allowed in CHOICES.items():
        if cfg.get(k) is not None and cfg[k] not in allowed:
            raise OptionError(k, f"{k} must be one of {', '.join(allowed)}, not {cfg[k]!r}")
    check_ranges(cfg)
    if cfg["embedding_mode"] is None:
        cfg["embedding_mode"] = "non-static" if cfg["embeddings"] else "rand"
    for k in model_fields(model):               # JSON turns tuples into lists; YAML writes 3 for (3,)
        cfg[k] = coerce_model_option(k, entry.defaults[k], cfg[k])
    check_model_ranges(model, cfg)
    from ..registry import make_config
    make_config(model, **model_options(cfg))        # refuses a value outside a field's choices


def _line_of(path, key: str) -> int | None:
    """The line of a config file (JSON or YAML) that sets ``key`` (written with _ or -), if one does."""
    names = "|".join(re.escape(k) for k in {key, key.replace("_", "-")})
    pattern = re.compile(rf"""(?:^|[\s{{,])["']?(?:{names})["']?\s*:""")
    for i, line in enumerate(Path(path).read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if pattern.search(line):
            return i
    return None


def model_options(cfg: dict) -> dict:
    return {k: cfg[k] for k in model_fields(cfg["model"])}
