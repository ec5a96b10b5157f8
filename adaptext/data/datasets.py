"""Named datasets with their official splits, read from a data root
(``--data-dir`` or ``$ADAPTEXT_DATA``), plus the TREC demo bundled in the package.

Where a set has no dev split, 10% of train is held out (stratified, fixed seed); where
it has no test split (MR, SUBJ) it is evaluated by k-fold cross-validation.
"""
from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from . import readers as R
from . import tree_readers as T
from ..errors import BadLines, DataError
from .examples import Example, ExampleKind as K, TextExample

if TYPE_CHECKING:
    from .store import StoredSplit
    Split = list[Example] | StoredSplit      # a split's examples: in memory, or rows of a token store

RESOURCES = Path(__file__).resolve().parent.parent / "resources"
HOLDOUT_SEED = 0


@dataclass
class DatasetInfo:
    name: str
    kind: K
    description: str
    files: dict                       # split -> path relative to the data root
    read: Callable | None             # (path, bad) -> examples; None where every split is derived
    multilabel: bool = False
    builtin: bool = False
    derive: dict = field(default_factory=dict)   # split -> callable(root, bad) for derived splits

    @property
    def cv(self) -> bool:
        return "test" not in self.files and "test" not in self.derive


def _kim(names):
    return lambda p, bad: R.read_kim(p, bad, label_names=names)


def _prefix_labels(groups: Sequence[str]) -> Callable[[str], tuple[str, ...]]:
    """A newsgroup with its prefixes shared by two or more groups (the hierarchy's inner
    nodes): comp.sys.mac.hardware -> (comp, comp.sys, comp.sys.mac.hardware)."""
    counts: dict[str, int] = {}
    for g in groups:
        parts = g.split(".")
        for k in range(1, len(parts)):
            counts[".".join(parts[:k])] = counts.get(".".join(parts[:k]), 0) + 1

    def labels(g: str) -> tuple[str, ...]:
        parts = g.split(".")
        pre = [".".join(parts[:k]) for k in range(1, len(parts)) if counts.get(".".join(parts[:k]), 0) >= 2]
        return tuple(pre + [g])
    return labels


NEWSGROUPS = ("alt.atheism comp.graphics comp.os.ms-windows.misc comp.sys.ibm.pc.hardware comp.sys.mac.hardware "
              "comp.windows.x misc.forsale rec.autos rec.motorcycles rec.sport.baseball rec.sport.hockey sci.crypt "
              "sci.electronics sci.med sci.space soc.religion.christian talk.politics.guns talk.politics.mideast "
              "talk.politics.misc talk.religion.misc").split()


def _news_hier(p, bad):
    lab = _prefix_labels(NEWSGROUPS)
    return [TextExample(ex.text, lab(ex.label), ex.where) for ex in R.read_jsonl(p, bad, label_col="newsgroup")]


def _sst_phrases(binary):
    def derive(root, bad):
        return T.sst_phrases(T.read_sst_trees(root / "sst_ptb/train.txt", bad, binary=binary))
    return derive


def _sst_trees(binary):
    return lambda p, bad: T.read_sst_trees(p, bad, binary=binary)


def _sick_trees(split, sick_file):
    def derive(root, bad):
        sick = root / "sick" / sick_file
        return T.read_sick_trees(root / "sick/parsed" / split, R.read_sick(sick), sick, bad)
    return derive


SST1_NAMES = T.SST_FINE
SST2_NAMES = {"0": "negative", "1": "positive"}
MR_NAMES = {"0": "negative", "1": "positive"}
SUBJ_NAMES = {"0": "subjective", "1": "objective"}

DATASETS: dict[str, DatasetInfo] = {}


def _add(info: DatasetInfo):
    DATASETS[info.name] = info


_add(DatasetInfo("trec-demo", K.TEXT, "TREC-6 question types, bundled in the package (offline demo)",
                 {"train": "trec/train.txt.gz", "test": "trec/test.txt.gz"}, R.read_trec_raw, builtin=True))
_add(DatasetInfo("mr", K.TEXT, "Movie review polarity (Pang & Lee 2005), 10-fold CV",
                 {"train": "mr/rt-polarity.all"}, _kim(MR_NAMES)))
_add(DatasetInfo("subj", K.TEXT, "Subjectivity (Pang & Lee 2004), 10-fold CV",
                 {"train": "subj/subj.all"}, _kim(SUBJ_NAMES)))
_add(DatasetInfo("trec", K.TEXT, "TREC question types, 6 coarse classes (Li & Roth 2002)",
                 {"train": "trec/raw/TREC.train", "test": "trec/raw/TREC.test"}, R.read_trec_raw))
_add(DatasetInfo("trec50", K.TEXT, "TREC question types, 50 fine classes",
                 {"train": "trec/raw/TREC.train", "test": "trec/raw/TREC.test"},
                 lambda p, bad: R.read_trec_raw(p, bad, fine=True)))
_add(DatasetInfo("sst1", K.TEXT, "SST fine-grained, 5 classes, sentences (Kim's stsa.fine)",
                 {"train": "sst1/stsa.fine.train", "dev": "sst1/stsa.fine.dev", "test": "sst1/stsa.fine.test"},
                 _kim(SST1_NAMES)))
_add(DatasetInfo("sst2", K.TEXT, "SST binary, sentences (Kim's stsa.binary)",
                 {"train": "sst2/stsa.binary.train", "dev": "sst2/stsa.binary.dev", "test": "sst2/stsa.binary.test"},
                 _kim(SST2_NAMES)))
_add(DatasetInfo("sst1-phrases", K.TEXT, "SST-1 trained on every labelled phrase of the train trees",
                 {"dev": "sst1/stsa.fine.dev", "test": "sst1/stsa.fine.test"}, _kim(SST1_NAMES),
                 derive={"train": _sst_phrases(False)}))
_add(DatasetInfo("sst2-phrases", K.TEXT, "SST-2 trained on every non-neutral phrase of the train trees",
                 {"dev": "sst2/stsa.binary.dev", "test": "sst2/stsa.binary.test"}, _kim(SST2_NAMES),
                 derive={"train": _sst_phrases(True)}))
_add(DatasetInfo("sst1-trees", K.TREE, "SST-1 trees, every node labelled",
                 {"train": "sst_ptb/train.txt", "dev": "sst_ptb/dev.txt", "test": "sst_ptb/test.txt"}, _sst_trees(False)))
_add(DatasetInfo("sst2-trees", K.TREE, "SST-2 trees, neutral nodes unlabelled, neutral sentences dropped",
                 {"train": "sst_ptb/train.txt", "dev": "sst_ptb/dev.txt", "test": "sst_ptb/test.txt"}, _sst_trees(True)))
_add(DatasetInfo("sick", K.PAIR, "SICK entailment, 3 classes (SemEval-2014 split)",
                 {"train": "sick/SICK_train.txt", "dev": "sick/SICK_trial.txt", "test": "sick/SICK_test_annotated.txt"},
                 R.read_sick))
_add(DatasetInfo("sick-trees", K.TREE_PAIR, "SICK entailment over Stanford-parser constituency trees",
                 {"train": "sick/parsed/train/id.txt", "dev": "sick/parsed/dev/id.txt", "test": "sick/parsed/test/id.txt"},
                 None, derive={"train": _sick_trees("train", "SICK_train.txt"),
                               "dev": _sick_trees("dev", "SICK_trial.txt"),
                               "test": _sick_trees("test", "SICK_test_annotated.txt")}))
_add(DatasetInfo("ag_news", K.TEXT, "AG News topics, 4 classes (Zhang et al. 2015)",
                 {"train": "ag_news/train.csv", "test": "ag_news/test.csv"}, R.read_zhang_csv))
_add(DatasetInfo("imdb", K.TEXT, "IMDB movie reviews, long documents (Maas et al. 2011)",
                 {"train": "imdb/train.jsonl.gz", "test": "imdb/test.jsonl.gz"}, R.read_jsonl))
_add(DatasetInfo("20news", K.TEXT, "20 Newsgroups bydate, 20 classes, long documents",
                 {"train": "20news/train.jsonl.gz", "test": "20news/test.jsonl.gz"},
                 lambda p, bad: R.read_jsonl(p, bad, label_col="newsgroup")))
_add(DatasetInfo("20news-hier", K.TEXT, "20 Newsgroups, multi-label: group + its shared prefixes",
                 {"train": "20news/train.jsonl.gz", "test": "20news/test.jsonl.gz"}, _news_hier, multilabel=True))
_add(DatasetInfo("snli", K.PAIR, "SNLI 1.0 (gold label '-' skipped)",
                 {"train": "snli/snli_1.0_train.jsonl", "dev": "snli/snli_1.0_dev.jsonl", "test": "snli/snli_1.0_test.jsonl"},
                 R.read_nli_jsonl))
_add(DatasetInfo("multinli", K.PAIR, "MultiNLI 1.0 (dev_matched as test)",
                 {"train": "multinli/multinli_1.0_train.jsonl", "dev": "multinli/multinli_1.0_dev_mismatched.jsonl",
                  "test": "multinli/multinli_1.0_dev_matched.jsonl"}, R.read_nli_jsonl))
_add(DatasetInfo("scitail", K.PAIR, "SciTail (SNLI-format JSONL)",
                 {"train": "scitail/snli_format/scitail_1.0_train.txt", "dev": "scitail/snli_format/scitail_1.0_dev.txt",
                  "test": "scitail/snli_format/scitail_1.0_test.txt"}, R.read_nli_jsonl))


def data_root(data_dir=None) -> Path | None:
    d = data_dir or os.environ.get("ADAPTEXT_DATA")
    return Path(d) if d else None


def _root_for(info: DatasetInfo, data_dir) -> Path:
    if info.builtin:
        return RESOURCES
    root = data_root(data_dir)
    if root is None:
        raise DataError(info.name, None, "named datasets need a data root: pass --data-dir DIR or set ADAPTEXT_DATA")
    return root


def split_status(name: str, data_dir=None) -> dict:
    """split -> path (str) if present, else None. Derived splits count as present when
    their source folder is."""
    info = DATASETS[name]
    root = RESOURCES if info.builtin else data_root(data_dir)
    out = {}
    for split in ("train", "dev", "test"):
        if split in info.files:
            p = root / info.files[split] if root else None
            out[split] = str(p) if p is not None and p.exists() else None
        elif split in info.derive:
            out[split] = "derived" if root is not None and root.exists() else None
    return out


@dataclass
class Splits:
    train: list
    dev: list
    test: list | None
    name: str
    kind: K
    multilabel: bool
    bad: BadLines
    dev_from_train: bool = False
    folds: list | None = None        # [(train_idx, test_idx)] for cross-validation over ``train``


def read_split(name: str, split: str, data_dir=None, bad: BadLines | None = None):
    info = DATASETS[name]
    bad = bad or BadLines()
    root = _root_for(info, data_dir)
    if split in info.derive:
        return info.derive[split](root, bad)
    path = root / info.files[split]
    if not path.exists():
        raise DataError(path, None, f"split {split!r} of {name} is missing under {root}")
    assert info.read is not None, f"{name} names a file for a split it derives"
    return info.read(path, bad)


def label_keys(examples) -> list:
    """The label each example is stratified by (the last of a label set)."""
    if hasattr(examples, "label_keys"):                 # a split of a token store
        return examples.label_keys()
    return [ex.label if not isinstance(ex.label, tuple) else ex.label[-1] for ex in examples]


def take(examples: Split, positions: Sequence[int]) -> Split:
    """The examples at ``positions``, as the same kind of sequence (a list, or a store's split)."""
    if hasattr(examples, "subset"):
        return examples.subset(positions)
    return [examples[i] for i in positions]


def holdout(examples, fraction: float = 0.1, seed: int = HOLDOUT_SEED):
    """(rest, held_out): a stratified random ``fraction`` of the examples held out."""
    rng = random.Random(seed)
    by_label: dict = {}
    for i, key in enumerate(label_keys(examples)):
        by_label.setdefault(key, []).append(i)
    held = set()
    for key in sorted(by_label, key=str):
        idx = by_label[key]
        rng.shuffle(idx)
        held.update(idx[: round(len(idx) * fraction)])
    rest = [i for i in range(len(examples)) if i not in held]
    return take(examples, rest), take(examples, sorted(held))


def cv_folds(examples, k: int = 10, seed: int = 0):
    """Stratified k folds over shuffled examples (MR and SUBJ are label-sorted on disk)."""
    from sklearn.model_selection import StratifiedKFold
    y = label_keys(examples)
    skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    return [(tr.tolist(), te.tolist()) for tr, te in skf.split(np.zeros(len(y)), y)]


def check_sources(data: str | None, dev: str | None = None, test: str | None = None) -> None:
    """Refuse a training source that is neither a file nor a named dataset, and a --dev or --test
    that is not a file, before anything is read."""
    if data and data not in DATASETS and not Path(data).is_file():
        _not_a_source(data)
    for path in (dev, test):
        if path and not Path(path).is_file():
            raise DataError(path, None, "a directory, not a file" if Path(path).is_dir() else "no such file")


def _not_a_source(name: str) -> None:
    if Path(name).is_dir():
        raise DataError(name, None, "a directory, not a file")
    if Path(name).suffix or "/" in name or "\\" in name:          # meant as a file
        raise DataError(name, None, "no such file")
    raise DataError(name, None, f"unknown dataset; named datasets: {', '.join(DATASETS)} (or pass a file path)")


def load_named(name: str, data_dir=None, on_bad_line: str = "error", cv: int = 0, cv_seed: int = 0) -> Splits:
    if name not in DATASETS:
        _not_a_source(name)
    info = DATASETS[name]
    bad = BadLines(on_bad_line)
    train = read_split(name, "train", data_dir, bad)
    has = split_status(name, data_dir)
    test = read_split(name, "test", data_dir, bad) if has.get("test") else None
    folds = None
    if test is None:
        if info.cv or cv:
            folds = cv_folds(train, cv or 10, cv_seed)
        else:
            raise DataError(name, None, "the test split is missing (see `adaptext datasets`)")
    elif cv:
        raise DataError(name, None, f"{name} has an official test split; --cv is for sets without one")
    if has.get("dev"):
        dev, from_train = read_split(name, "dev", data_dir, bad), False
    else:
        train, dev = holdout(train) if folds is None else (train, [])
        from_train = True
    return Splits(train, dev, test, name, info.kind, info.multilabel, bad, from_train, folds)


def load_files(train, dev=None, test=None, fmt="auto", on_bad_line="error", cv: int = 0, cv_seed: int = 0,
               store=None, **read_kw) -> Splits:
    """A user's own files: train (required), dev and test (optional). Option errors come before
    any file is read (a large training file takes a while). With ``store`` (a ``StoreOptions``)
    each file is read into a token store (built once, then reused) instead of into memory."""
    if test and cv:
        raise DataError(test, None, "--cv is for data without a test file: drop --test or --cv")
    if not test and not cv:
        raise DataError(train, None, "no test file: pass --test FILE, or --cv K for cross-validation")
    bad = BadLines(on_bad_line)
    read = (lambda path: store.split(path, fmt, bad, **read_kw)) if store else \
        (lambda path: R.read_file(path, fmt, bad, **read_kw))
    tr = read(train)
    if not tr:
        raise DataError(train, None, "no examples in the training file")
    te = read(test) if test else None
    folds = cv_folds(tr, cv, cv_seed) if te is None else None
    if dev:
        dv, from_train = read(dev), False
    elif folds is None:
        tr, dv = holdout(tr)
        from_train = True
    else:
        dv, from_train = [], True
    from .examples import is_multilabel, kind_of
    kind, multilabel = (tr.kind, tr.multilabel()) if store else (kind_of(tr), is_multilabel(tr))
    return Splits(tr, dv, te, Path(train).name, kind, multilabel, bad, from_train, folds)


def dataset_table(data_dir=None):
    """One row per named dataset, as each is counted (reading them all takes a while): its task,
    classes and the counted size of each split."""
    for name, info in DATASETS.items():
        sizes, classes = _split_sizes(name, info, data_dir)
        yield {"name": name, "task": info.kind + (" multi-label" if info.multilabel else ""),
               "classes": classes, **sizes, "description": info.description}


def _split_sizes(name: str, info: DatasetInfo, data_dir) -> tuple[dict, int | None]:
    status = split_status(name, data_dir)
    sizes: dict[str, int | str] = {}
    classes: int | None = None
    for split in ("train", "dev", "test"):
        if split not in status:
            sizes[split] = "10% of train" if split == "dev" and not info.cv else "-"
            continue
        try:
            examples = read_split(name, split, data_dir, BadLines("skip")) if status[split] is not None else None
        except DataError:
            examples = None
        if examples is None:
            sizes[split] = "missing"
            continue
        sizes[split] = len(examples)
        if split == "train":
            classes = len({l for e in examples for l in (e.label if isinstance(e.label, tuple) else (e.label,))})
    if info.cv and isinstance(sizes.get("train"), int):
        sizes["test"] = "10-fold CV"
    return sizes, classes
