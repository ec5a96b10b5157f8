"""A trained run measured again: on a split of its own data (as it saw it), of a named dataset,
or on a labelled file. For ``adaptext evaluate`` and the plots of ``adaptext explain``."""
from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from ..data.datasets import DATASETS
from ..errors import BadLines, UsageError
from ..data.examples import Example
from . import metrics as M
from .pipeline import gold
from .splits import split_examples

if TYPE_CHECKING:
    from ..api import Classifier
    from ..data.datasets import Split


@overload
def run_examples(clf: Classifier, run_dir: str | Path, split: str, data: str | None = None,
                 data_dir: str | None = None, fmt: str | None = None, on_bad_line: str | None = None,
                 columns: dict[str, str | None] | None = None,
                 stored: Literal[False] = False) -> tuple[list[Example], BadLines]: ...
@overload
def run_examples(clf: Classifier, run_dir: str | Path, split: str, data: str | None = None,
                 data_dir: str | None = None, fmt: str | None = None, on_bad_line: str | None = None,
                 columns: dict[str, str | None] | None = None, stored: bool = False) -> tuple[Split, BadLines]: ...
def run_examples(clf: Classifier, run_dir: str | Path, split: str, data: str | None = None,
                 data_dir: str | None = None, fmt: str | None = None, on_bad_line: str | None = None,
                 columns: dict[str, str | None] | None = None, stored: bool = False) -> tuple[Split, BadLines]:
    """(examples, bad lines) of a split as the run in ``run_dir`` saw it: a fold-k directory
    reads its own fold, and bad lines are handled by the run's own setting unless
    ``on_bad_line`` says otherwise. ``columns``: the columns of a ``data`` file, where they
    differ from the run's. ``stored``: a text file is read into its token store (see splits)."""
    columns = {k: v for k, v in (columns or {}).items() if v}
    if columns and (not data or data in DATASETS):
        raise UsageError("--text-col / --pair-col / --contexts-col / --label-col name the columns of a --data file")
    fold = re.fullmatch(r"fold-(\d+)", Path(run_dir).resolve().name)
    return split_examples(clf.config.replace(**columns), split, data, data_dir, fmt,
                          on_bad_line or clf.config.on_bad_line or "error", int(fold.group(1)) if fold else None,
                          stored)


def evaluate_run(clf: Classifier, run_dir: str | Path, split: str = "test", **where: Any) -> dict[str, Any]:
    """The run's metrics on ``split`` (see ``run_examples`` for ``where``), with the number of
    bad lines skipped."""
    examples, bad = run_examples(clf, run_dir, split, **where, stored=True)
    items = clf.pipeline.labelled_items(examples, bad)
    probs = clf.pipeline.probabilities(items)
    labels = clf.labels
    metrics = M.compute(probs, gold(items, labels), labels.labels, labels.multilabel, labels.threshold)
    metrics["bad_lines_skipped"] = bad.count
    return metrics
