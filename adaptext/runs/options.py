"""A run's options resolved and checked, from the declarations of ``contract``: the
command line's flags and help, the checks of a ``--config`` file (refused values named at their
line), the resume rule and the layout of ``config.json`` are all generated from them. The
model's own options are the fields of its config dataclass (registry).

At run time a configuration is a ``RunConfig`` (``config``): every run option an attribute
(``cfg.lr``), the model's options in ``cfg.model_options``; a run option and a model option
never share a name (the registry refuses a model field that would
shadow one). ``config.json`` is written nested, one mapping per section and the model's
options under ``model``::

    {"model": {"name": "kim_cnn", "filters": 100, ...},
     "data": {"data": "mr", "cv": 10, ...}, "text": {...}, "optimisation": {...},
     "engine": {...}, "output": {...}}

and a flat file (written before the sections existed, or by hand) is read as well.

Precedence: the contract's defaults < the model's ``train_defaults`` < a ``--config`` file <
options given on the command line.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..errors import DataError, OptionError, UsageError
from ..data.readers import check_encoding
from ..config import RunConfig
from ..contract import DEFAULT_MODEL, OPTIONS, SECTIONS

if TYPE_CHECKING:
    from ..registry import ModelEntry


def run_defaults() -> dict[str, Any]:
    return {"model": DEFAULT_MODEL, **{k: o.default for k, o in OPTIONS.items()}}


# ----------------------------------------------------------------------- checks
def check_value(key: str, value: Any) -> None:
    """Refuse a run option's value outside its choices or range, or a number that is not finite."""
    o = OPTIONS[key]
    if value is None:
        return
    allowed = o.meta["choices"]
    if allowed and value not in allowed:
        raise OptionError(key, f"{key} must be one of {', '.join(allowed)}, not {value!r}")
    if o.type in (int, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            kind = "a whole number" if o.type is int else "a number"
            raise OptionError(key, f"{key} must be {kind}, not {value!r}")
        if not math.isfinite(value):
            raise OptionError(key, f"{key} must be a finite number, not {value!r}")
        if o.meta["lowest"] is not None and value < o.meta["lowest"]:
            raise OptionError(key, f"{key} must be at least {o.meta['lowest']}, not {value!r}")
        if o.meta["above"] is not None and not value > o.meta["above"]:
            raise OptionError(key, f"{key} must be above {o.meta['above']}, not {value!r}")
        if o.meta["highest"] is not None and value > o.meta["highest"]:
            raise OptionError(key, f"{key} must be at most {o.meta['highest']}, not {value!r}")
        if o.meta["below"] is not None and not value < o.meta["below"]:
            raise OptionError(key, f"{key} must be below {o.meta['below']}, not {value!r}")
    if key == "encoding":
        check_encoding(value)          # a named dataset's files are read only after the model is built
    if key == "cv" and value == 1:
        raise OptionError("cv", "cv must be 0 (a held-out test split) or at least 2 folds, not 1")


RATES = ("dropout", "head_dropout", "recurrent_dropout", "weight_dropout", "zoneout")
ZERO_MEANS_OFF = ("fixed_length",)       # densecnn --fixed-length 0: pad to the batch's longest text


def coerce_model_option(key: str, default: Any, value: Any) -> Any:
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
    except (TypeError, ValueError, OverflowError):
        names = {int: "whole numbers", float: "numbers"}
        kind = f"comma-separated {names[type(default[0]) if default else int]}" if isinstance(default, tuple) \
            else {int: "a whole number", float: "a number"}[type(default)]
        raise OptionError(key, f"{key} must be {kind}, not {given!r}") from None


def check_model_value(key: str, default: Any, v: Any) -> None:
    """A model option out of range is a clear error before any data is read (``--widths 0``
    failed at the first batch inside oneDNN): sizes, widths and counts whose default is positive
    stay >= 1, dropout rates in [0, 1), the max-norm >= 0, every number finite."""
    if isinstance(default, bool) or v is None:
        return
    if isinstance(v, float) and not math.isfinite(v):
        raise OptionError(key, f"{key} must be a finite number, not {v!r}")
    least = 0 if key in ZERO_MEANS_OFF else 1
    if isinstance(default, int) and default > 0 and v < least:
        raise OptionError(key, f"{key} must be at least {least}, not {v!r}")
    if isinstance(default, tuple) and default and all(isinstance(x, int) for x in default) \
            and (not v or any(x < 1 for x in v)):
        raise OptionError(key, f"{key} must be one or more numbers of at least 1, not {','.join(map(str, v)) or 'none'}")
    if key in RATES and not 0 <= v < 1:
        raise OptionError(key, f"{key} must be in [0, 1), not {v!r}")
    if key == "max_norm" and v < 0:
        raise OptionError(key, f"max_norm must be at least 0 (0: no constraint), not {v!r}")


def check_new_run(cfg: RunConfig) -> None:
    """Options that a new run refuses (a saved run's config is loaded as it was)."""
    if cfg.embedding_mode == "rand" and cfg.embeddings:
        raise UsageError("embedding mode rand (random vectors) does not use --embeddings: drop one, "
                         "or pick static, non-static or multichannel")
    if cfg.pca_dim and not cfg.embeddings:
        raise UsageError("--pca-dim reduces pretrained vectors: it needs --embeddings")
    if cfg.embedding_words:
        check_embedding_words(cfg)
    if cfg.init:
        check_init(cfg.init)


def check_init(init: str) -> None:
    """--init names a weights file, or a run directory holding one."""
    path = Path(init)
    if not path.exists():
        raise DataError(init, None, "--init: no such weights file or run directory")
    if path.is_dir() and not (path / "model.safetensors").is_file():
        raise DataError(init, None, "--init: a folder without model.safetensors (a finished run directory?)")


def check_embedding_words(cfg: RunConfig) -> None:
    """--embedding-words adds words of a vectors file to a vocabulary of words."""
    from ..data.transformer_vectors import is_transformer_spec
    from ..registry import get_entry
    if not cfg.embeddings or is_transformer_spec(cfg.embeddings):
        raise UsageError("--embedding-words adds the words of a file of pretrained vectors: it needs --embeddings "
                         "FILE (vectors derived from an encoder are made for the training words only)")
    level = cfg.tokenizer or get_entry(cfg.model).tokenizer
    if level != "word":
        raise UsageError(f"--embedding-words adds words to a vocabulary of words; this run's tokenizer reads {level}s")


# ----------------------------------------------------------------------- resolve
def resolve(options: dict[str, Any], file_options: dict[str, Any] | None = None,
            source: str | Path | None = None) -> RunConfig:
    """Merge defaults, the model's training defaults, a config file and explicit options into
    one checked, typed config. A value refused that came from the file (``source``, when given)
    is a ``DataError`` naming its line."""
    from ..registry import get_entry
    file_options = flatten(file_options or {})
    model = options.get("model") or file_options.get("model") or DEFAULT_MODEL
    entry = get_entry(model)
    cfg = {**run_defaults(), **entry.defaults, **entry.train_defaults}
    for src in (file_options, options):
        cfg.update({k: v for k, v in src.items() if v is not None})
    cfg["model"] = model

    def from_file(key: str) -> bool:
        return source is not None and key in file_options and options.get(key) is None

    unknown = sorted(set(cfg) - set(OPTIONS) - {"model"} - set(entry.defaults))
    if unknown:
        problem = f"unknown option(s) {', '.join(unknown)} for model {model}"
        if source is not None and all(from_file(k) for k in unknown):
            raise DataError(source, line_of(source, unknown[0]), problem)
        raise UsageError(problem)
    try:
        _check(entry, cfg)
    except OptionError as e:
        if source is not None and from_file(e.key):
            raise DataError(source, line_of(source, e.key), str(e)) from None
        raise
    return RunConfig.from_flat(cfg)


def _check(entry: ModelEntry, cfg: dict[str, Any]) -> None:
    """Refuse a value outside its choices or range, before any data is read; model options are
    brought to their field's type on the way (JSON turns tuples into lists; YAML writes 3 for (3,))."""
    for k in OPTIONS:
        check_value(k, cfg[k])
    if cfg["embedding_mode"] is None:
        cfg["embedding_mode"] = "non-static" if cfg["embeddings"] else "rand"
    for k, default in entry.defaults.items():
        cfg[k] = coerce_model_option(k, default, cfg[k])
        check_model_value(k, default, cfg[k])
    entry.config(**{k: cfg[k] for k in entry.defaults})      # refuses a value outside a field's choices


# ----------------------------------------------------------------------- config.json
def nested(cfg: RunConfig) -> dict[str, dict[str, Any]]:
    """The documented form of config.json: the model (name and options), then one mapping per section."""
    out: dict[str, dict[str, Any]] = {"model": {"name": cfg.model, **cfg.model_options}}
    for section in SECTIONS:
        out[section] = {k: getattr(cfg, k) for k, o in OPTIONS.items() if o.section == section}
    return out


def flatten(data: dict[str, Any]) -> dict[str, Any]:
    """Options as one flat mapping, from the nested form, the flat form, or a mix of both."""
    flat: dict[str, Any] = {}
    for k, v in data.items():
        if k == "model" and isinstance(v, dict):
            flat.update({kk: vv for kk, vv in v.items() if kk != "name"})
            if "name" in v:
                flat["model"] = v["name"]
        elif k in SECTIONS and isinstance(v, dict):
            flat.update(v)
        else:
            flat[k] = v
    return flat


def load_config_file(path: str | Path) -> dict[str, Any]:
    """Options from a JSON or YAML file (a run's ``config.json`` among them), flattened; a file
    that does not parse is a ``DataError`` naming its line."""
    path = Path(path)
    if path.is_dir():
        raise DataError(path, None, "a folder, not a config file (a run's is RUN/config.json)")
    if not path.is_file():
        raise DataError(path, None, "no such config file")
    text = path.read_text(encoding="utf-8", errors="replace")
    data = _yaml(path, text) if path.suffix.lower() in (".yaml", ".yml") else _json(path, text)
    if not isinstance(data, dict):
        raise DataError(path, None, "a config file must hold one mapping of options")
    data = {k.replace("-", "_"): v for k, v in flatten(data).items()}
    return {k: v for k, v in data.items() if not k.startswith("_")}


def _json(path: Path, text: str) -> Any:
    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in pairs]
        twice = next((k for k in keys if keys.count(k) > 1), None)
        if twice is not None:                 # json keeps the last silently: say which was meant
            raise DataError(path, line_of(path, twice), f"{twice!r} is set twice")
        return dict(pairs)
    try:
        return json.loads(text, object_pairs_hook=unique)
    except json.JSONDecodeError as e:
        raise DataError(path, e.lineno, f"invalid JSON ({e.msg} at column {e.colno})") from None


def _yaml(path: Path, text: str) -> Any:
    import yaml

    class UniqueKeys(yaml.SafeLoader):        # PyYAML keeps the last of two equal keys silently
        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
            seen = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if key in seen:
                    raise DataError(path, key_node.start_mark.line + 1, f"{key!r} is set twice")
                seen.add(key)
            return super().construct_mapping(node, deep)
    try:
        return yaml.load(text, Loader=UniqueKeys) or {}
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise DataError(path, mark.line + 1 if mark else None,
                        f"invalid YAML ({getattr(e, 'problem', None) or e})") from None


def line_of(path: str | Path, key: str) -> int | None:
    """The line of a config file (JSON or YAML) that sets ``key`` (written with _ or -), if one does."""
    names = "|".join(re.escape(k) for k in {key, key.replace("_", "-")})
    pattern = re.compile(rf"""(?:^|[\s{{,])["']?(?:{names})["']?\s*:(?!\s*\{{)""")
    for i, line in enumerate(Path(path).read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if pattern.search(line):
            return i
    return None


# ----------------------------------------------------------------------- command line
def add_arguments(parser: argparse.ArgumentParser, model: str) -> None:
    """One flag per run option (section by section) and per option of ``model``, with help
    showing the value this model runs with."""
    from ..registry import get_entry
    add_run_arguments(parser, resolve({"model": model}).flat())
    entry = get_entry(model)
    group = parser.add_argument_group(f"{model} options ({entry.paper or 'model'} defaults)")
    for f in dataclasses.fields(entry.config):
        default, about = entry.defaults[f.name], f.metadata.get("help")
        typ = tuple if isinstance(default, tuple) else type(default) if default is not None else str
        _add_flag(group, ("--" + f.name.replace("_", "-"),), f.name, typ, f.metadata.get("choices"),
                  f"{about} [default: {default}]" if about else f"default {default}",
                  element=type(default[0]) if isinstance(default, tuple) and default else int)


def add_run_arguments(parser: argparse.ArgumentParser, shown: dict[str, Any] | None = None) -> None:
    """One flag per run option, section by section; ``shown``: the values to give as defaults."""
    shown = shown or {}
    for section in SECTIONS:
        group = parser.add_argument_group(f"{section} options")
        for key, o in OPTIONS.items():
            if o.section != section:
                continue
            text = o.meta["help"]
            if shown.get(key) not in (None, "", ()) and key not in ("out", "embedding_mode"):
                text += f" [default: {shown[key]}]"
            _add_flag(group, o.flags, key, o.type, o.meta["choices"], text)


def add_option_flags(parser: argparse.ArgumentParser, keys: tuple[str, ...], note: str = "") -> None:
    """The flags of some run options, as ``adaptext train`` declares them, for another command
    (evaluate, auto) that takes them; ``note``: what their default is there."""
    for key in keys:
        o = OPTIONS[key]
        _add_flag(parser, o.flags, key, o.type, o.meta["choices"], f"{o.meta['help']} {note}".strip())


def check_run_arguments(argv: list[str], prog: str, out_is_run: bool = True) -> dict[str, Any]:
    """The run options among ``argv`` typed and range-checked, the data they name found and the
    run directory ``--out`` names writable (``out_is_run``), without the registry (which needs
    torch, and seconds to import): a mistyped number or a missing file is said at once. The
    options given, by key."""
    from ..data.datasets import check_sources
    parser = argparse.ArgumentParser(prog=prog, add_help=False)
    add_run_arguments(parser)
    given = {k: v for k, v in vars(parser.parse_known_args(argv)[0]).items() if v is not None}
    for key, value in given.items():
        check_value(key, value)
    check_sources(given.get("data"), given.get("dev"), given.get("test"))
    if given.get("out") and out_is_run:
        from .rundir import RunDir
        RunDir(given["out"]).check_writable()
    return given


def _add_flag(group: argparse._ActionsContainer, flags: tuple[str, ...], key: str, typ: type,
              choices: tuple[str, ...] | None, help_text: str, element: type = int) -> None:
    if typ is bool:
        group.add_argument(*flags, dest=key, action=argparse.BooleanOptionalAction, default=None, help=help_text)
    elif typ is tuple:
        group.add_argument(*flags, dest=key, default=None, metavar="A,B,...", type=_tuple_of(element), help=help_text)
    else:
        group.add_argument(*flags, dest=key, default=None, type=_number(typ) if typ in (int, float) else str,
                           choices=choices, help=help_text)


def _number(typ: type[int] | type[float]) -> Callable[[str], float]:
    def parse(s: str) -> float:
        try:
            value = typ(s)
        except ValueError:
            kind = "a whole number" if typ is int else "a number"
            raise argparse.ArgumentTypeError(f"expected {kind}, not {s!r}") from None
        if typ is float and not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"expected a finite number, not {s!r}")
        return value
    parse.__name__ = typ.__name__
    return parse


def _tuple_of(conv: type) -> Callable[[str], tuple[Any, ...]]:
    def parse(s: str) -> tuple[Any, ...]:
        try:
            return tuple(conv(x) for x in s.split(",") if x.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated {conv.__name__} values, e.g. 3,4,5; "
                                             f"not {s!r}") from None
    return parse

