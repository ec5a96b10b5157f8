"""The splits a run reads (train, dev, test, or cross-validation folds), from its options: for
training, and again for ``evaluate`` and ``explain``, which must see a split as the run saw it."""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, overload

from ..data.datasets import DATASETS, Splits, holdout, load_files, load_named, take
from ..errors import BadLines, DataError
from ..data.examples import Example
from ..data.readers import file_format
from ..data.store import StoreOptions
from ..registry import get_entry
from ..config import RunConfig
from .spec import make_tokenizer

if TYPE_CHECKING:
    from ..data.datasets import Split

DEMO = "trec-demo"


def load_data(cfg: RunConfig, stored: bool = False, log: Callable[[str], None] = print) -> Splits:
    """The run's ``Splits``: its training file (with --dev / --test files) or a named dataset.
    ``stored``: a file of texts, pairs or contexts is read into token stores (see ``uses_store``).
    A tree model given texts or pairs reads them parsed (``--parser``)."""
    return parsed_for(cfg, _read_splits(cfg, stored, log))


def require_dev(where: str, dev: object) -> None:
    """A run selects its epoch on dev: none is a one-line error before any training."""
    if not dev:
        raise DataError(where, None, "no dev examples: 10% of each class held out of train "
                                     "rounds to none with this few examples; pass --dev FILE")


def parsed_for(cfg: RunConfig, splits: Splits) -> Splits:
    """``splits`` as the run's model reads them: a tree model's texts or pairs parsed, any other
    splits as they are."""
    if not (reads_trees(cfg) and splits.kind.parses_to):
        return splits
    return dataclasses.replace(splits, train=as_trees(cfg, splits.train), dev=as_trees(cfg, splits.dev),
                               test=as_trees(cfg, splits.test), kind=splits.kind.parses_to)


def reads_trees(cfg: RunConfig) -> bool:
    return get_entry(cfg.model).inputs[0].is_tree


@overload
def as_trees(cfg: RunConfig, examples: list[Example]) -> list[Example]: ...
@overload
def as_trees(cfg: RunConfig, examples: None) -> None: ...
def as_trees(cfg: RunConfig, examples: list[Example] | None) -> list[Example] | None:
    """Text and pair examples parsed as the run parses (its tokenizer, max_length, --parser);
    other examples (trees already) as they are."""
    if not examples or not examples[0].kind.parses_to:
        return examples
    from ..parse import parsed_examples
    return parsed_examples(examples, make_tokenizer(cfg), cfg.max_length, cfg.parser)


def _read_splits(cfg: RunConfig, stored: bool, log: Callable[[str], None]) -> Splits:
    data = cfg.data or DEMO
    if Path(data).exists() and not Path(data).is_dir():
        kw = cfg.columns
        store = store_options(cfg, log) if stored and uses_store(cfg, data) else None
        return load_files(data, cfg.dev, cfg.test, cfg.format, cfg.on_bad_line, cfg.cv, cfg.cv_seed,
                          store, **kw)
    if cfg.dev or cfg.test:
        if data not in DATASETS:
            raise DataError(data, None, "no such file" if not Path(data).is_dir() else "a directory, not a file")
        raise DataError(data, None, "--dev / --test go with a training file; a named dataset brings its own splits")
    return load_named(data, cfg.data_dir, cfg.on_bad_line, cfg.cv, cfg.cv_seed)


def store_options(cfg: RunConfig, log: Callable[[str], None] | None = None) -> StoreOptions:
    """How a run reads files into stores; what it says goes to stderr (stdout is the result's)."""
    log = log or (lambda message: print(message, file=sys.stderr))
    return StoreOptions(make_tokenizer(cfg).config, cfg.workers, cfg.progress, log)


def uses_store(cfg: RunConfig, data: str) -> bool:
    """A training file goes through the token store unless the run needs its texts themselves:
    parses, the texts a distillation teacher reads, the trees a tag-guided model tags."""
    if cfg.store == "off" or cfg.teacher or cfg.teacher_logits or reads_trees(cfg):
        return False
    return not file_format(data, cfg.format, cfg.encoding).trees


def fold_splits(splits: Splits, fold: int) -> tuple[Split, Split, Split]:
    """(train, dev, test) of fold k (1-based) of a cross-validated run: it trains on the other
    folds, 10% of them held out as dev, and tests on fold k."""
    assert splits.folds, "a cross-validated run's splits"
    tr_idx, te_idx = splits.folds[fold - 1]
    train, dev = holdout(take(splits.train, tr_idx))
    return train, dev, take(splits.train, te_idx)


def split_examples(cfg: RunConfig, split: str, data: str | None = None, data_dir: str | None = None,
                   fmt: str | None = None, on_bad_line: str = "error", fold: int | None = None,
                   stored: bool = False) -> tuple[Split, BadLines]:
    """(examples, bad lines) of one split as a run saw it, for evaluate and explain.

    Without ``data``: the run's own data, re-read with its options, so ``--split test`` is the
    run's test file and a dev held out of train is the same 10% again (``fold``: fold k of a
    cross-validated run). With a named dataset: that dataset's split (a held-out dev recomputed).
    With a file: that file, read with the run's column options (the file is the split).
    ``stored``: a file of texts, pairs or contexts is read into its token store (a split of it)."""
    from ..data.readers import read_file
    if data and data not in DATASETS:
        if not Path(data).is_file():
            raise DataError(data, None, "a directory, not a file" if Path(data).is_dir() else "no such file")
        bad, columns = BadLines(on_bad_line), cfg.columns
        run = cfg.replace(format=fmt or cfg.format)
        if stored and uses_store(run, data):
            return store_options(run).split(data, run.format, bad, **columns), bad
        examples = read_file(data, run.format, bad, **columns)
        return (as_trees(run, examples) if reads_trees(run) else examples), bad
    own = data is None
    run = cfg.replace(data=data or cfg.data, on_bad_line=on_bad_line, format=fmt or cfg.format,
                      data_dir=data_dir or cfg.data_dir)
    if not own:
        run = run.replace(dev=None, test=None, cv=0)
    splits = load_data(run, stored)
    if own and splits.folds and fold:
        train, dev, test = fold_splits(splits, fold)
        return {"train": train, "dev": dev, "test": test}[split], splits.bad
    chosen = {"train": splits.train, "dev": splits.dev, "test": splits.test}[split]
    if not chosen and own:
        raise DataError(run.data or DEMO, None, f"the run has no {split} split (it was cross-validated: evaluate "
                                                f"one of its fold-k directories); pass --data FILE to evaluate "
                                                f"on a file")
    if not chosen:
        raise DataError(run.data, None, f"the dataset has no {split} split (it is split into cross-validation "
                                        f"folds); evaluate on --split train, or pass --data FILE")
    return chosen, splits.bad
