"""Entry points of training: ``train_run`` (``adaptext train``: a run from its options, resumed
or cross-validated), ``distill_run`` (``adaptext distill``), ``fit_examples`` (``adaptext.fit``:
a run on examples in memory) and ``trained`` (a run read back, resumed or trained, as its
directory's state says: a sweep's trials, auto's candidates, the benchmarks' kept runs); what a
new or resumed run may be written over (the state itself is ``runs.rundir``'s)."""
from __future__ import annotations

import contextlib
import json
from pathlib import Path

from ..data.datasets import Splits, holdout
from ..errors import BadLines, DataError, UsageError
from ..data.examples import as_examples
from ..runs.files import read_json, writer_lock
from ..registry import get_entry
from ..config import RunConfig
from ..contract import DEFAULT_MODEL, PATH_KEYS, RESUME_MAY_CHANGE
from ..runs.options import check_new_run, resolve
from ..runs.rundir import RunDir, RunState
from ..runs.spec import write_config
from ..runs.splits import DEMO, load_data, parsed_for
from .cv import cross_validate
from .distill import (DISTILLED, augment_seed, logits_data_options, teacher_data_options, teacher_logits,
                      transfer_set, unlabeled_of, write_logits_file)
from .engine import is_rank_zero
from .fit import fit_one

IN_MEMORY = "in-memory"     # the data a run given examples (not files) names in its config
# with the data, what makes a transfer set
TRANSFER_KEYS = ("augment", "augment_seed", "spans", "unlabeled", "unlabeled_sample", "tagger")


def default_out(cfg) -> Path:
    name = Path(cfg.data).stem if cfg.data else DEMO
    return Path("runs") / f"{cfg.model}-{name}-seed{cfg.seed}"


def train_run(options: dict, file_options: dict | None = None, log=print, config_file=None, callbacks=()) -> dict:
    """Train (or resume) a run and return its metrics. ``options`` uses the CLI's keys;
    ``file_options`` were read from ``config_file`` (named in errors about its values);
    ``callbacks``: more Lightning callbacks (a sweep's pruning)."""
    cfg, out = run_config(options, file_options, config_file)
    with _one_writer(out):
        splits = load_data(cfg, stored=True, log=log)
        if splits.bad.count:
            log(f"skipped {splits.bad.count} bad line(s); first: {splits.bad.skipped[0]}")
        return _train(cfg, splits, out, bool(options.get("resume")), log, callbacks)


def distill_run(teachers, options: dict, log=print) -> dict:
    """Train the student ``options`` describe on the logits of a teacher run (or of several: an
    ensemble, their logits averaged), or on those a file keeps (``options["teacher_logits"]``, no
    teacher run), reading the teacher's data unless ``options`` name other data; the student's
    metrics. The student's config.json names every teacher, or the file."""
    if options.get("resume"):              # the student's own config.json names its teachers and data
        return train_run(options, log=log)
    student = get_entry(options.get("model") or DEFAULT_MODEL)
    if not set(DISTILLED) & set(student.inputs):
        raise UsageError(f"--model {student.name} reads {'/'.join(student.inputs)} examples; a student learns a "
                         "teacher's logits on texts or pairs: choose a text or pair model (adaptext models)")
    teachers = [teachers] if isinstance(teachers, (str, Path)) else list(teachers)
    if options.get("teacher_logits"):
        if teachers:
            raise UsageError("give teacher runs or --teacher-logits FILE, not both")
        inherited = {} if options.get("data") else logits_data_options(options["teacher_logits"])
        return train_run(options, inherited, log=log)
    if not teachers:
        raise UsageError("distillation needs a teacher run (adaptext distill TEACHER_RUN ...) or --teacher-logits FILE")
    # the teacher's splits and columns belong to its data: a student told --data reads that data alone
    inherited = {} if options.get("data") else teacher_data_options(teachers[0])
    return train_run({**options, "teacher": joined_teachers(teachers)}, inherited, log=log)


def joined_teachers(teachers: list) -> str:
    """The teacher runs as one option: their absolute paths, comma-separated."""
    for t in teachers:
        if "," in str(t):
            raise DataError(t, None, "a teacher run directory whose name holds a comma cannot be read (the teachers "
                                     "of an ensemble are written comma-separated): rename it")
    return ",".join(str(Path(t).resolve()) for t in teachers)


def logits_run(teachers: list, options: dict, out, log=print) -> Path:
    """Write the logits of the teacher runs (an ensemble: their mean) over the transfer set a
    student with ``options`` would be shown (its training texts, ``augment`` copies, the
    ``unlabeled`` file) to the file ``out``, for ``--teacher-logits``."""
    if not teachers:
        raise UsageError("adaptext logits needs the teacher runs whose logits it writes")
    data_options = teacher_data_options(teachers[0])
    joined = joined_teachers(teachers)
    cfg = resolve({**options, "teacher": joined}, {} if options.get("data") else data_options)
    splits = load_data(cfg, log=log)
    transfer = transfer_set(cfg, splits.train, unlabeled_of(cfg), log)
    labels = sorted({str(ex.label) for ex in splits.train if ex.label is not None})
    logits = teacher_logits(joined, transfer, labels, log)
    # what a student needs to build the same transfer set: the data, and how the set was made from it
    saved = {k: v for k, v in cfg.flat().items() if k in data_options or k in ("data", "dev", "test", *TRANSFER_KEYS)}
    saved["augment_seed"] = augment_seed(cfg)
    return write_logits_file(out, logits, labels, transfer, joined.split(","), saved)


def trained(run: RunDir, options: dict, log=print, callbacks=(), resume_options: dict | None = None) -> dict:
    """The metrics of the run ``options`` describe in ``run``: read back when it finished,
    resumed when it was cut short (or failed after it began), trained when new. A resume takes
    ``resume_options`` (default: those of ``options`` that ``--resume`` may change)."""
    state = run.state
    if state is RunState.FINISHED:
        return read_json(run.metrics)
    run.refuse_if_running()
    run.clear_failure()
    if run.config.is_file():
        again = {k: v for k, v in options.items() if k in RESUME_MAY_CHANGE} if resume_options is None else resume_options
        return train_run({**again, "resume": str(run.path)}, log=log, callbacks=callbacks)
    return train_run({**options, "out": str(run.path)}, log=log, callbacks=callbacks)


def fit_examples(train, dev=None, test=None, log=print, **options) -> tuple[Path, dict]:
    """A run on examples in memory (``TextExample`` ... or ``(text, label)`` / ``(text, pair,
    label)`` tuples); ``dev``: default a stratified 10% of ``train``. (the run directory, its
    metrics): ``options["out"]``, default runs/MODEL-in-memory-seedS."""
    train, dev, test = (as_examples(s) if s is not None else None for s in (train, dev, test))
    if not train:
        raise UsageError("fit needs training examples")
    cfg, out = run_config({**options, "data": IN_MEMORY}, None, None)
    held_out = dev is None
    if held_out:
        train, dev = holdout(train)
    multilabel = any(isinstance(ex.label, tuple) for ex in train)
    splits = parsed_for(cfg, Splits(train, dev, test, IN_MEMORY, train[0].kind, multilabel, BadLines(), held_out))
    with _one_writer(out):
        return out, _train(cfg, splits, out, False, log, ())


def run_config(options: dict, file_options: dict | None, config_file) -> tuple[RunConfig, Path]:
    """The checked config of a new or resumed run and its directory, before any data is read."""
    if options.get("resume"):
        if file_options:
            raise UsageError("--resume continues a run with its own config.json; drop --config")
        cfg, out = resumed_config(Path(options["resume"]), options)
    else:
        cfg, out = new_config(options, file_options, config_file)
    RunDir(out).check_writable()
    return cfg.replace(out=str(out)), out


def _one_writer(out: Path):
    """The run directory, made and locked for this process (rank 0 only: a distributed run's
    other ranks write nothing there)."""
    make_run_dir(out)
    return writer_lock(out) if is_rank_zero() else contextlib.nullcontext()


def _train(cfg: RunConfig, splits: Splits, out: Path, resume: bool, log, callbacks) -> dict:
    if is_rank_zero():
        write_config(out, cfg)
    if splits.folds:
        metrics = cross_validate(cfg, splits, out, resume, log, callbacks)
    else:
        metrics = fit_one(cfg, splits, out, resume, log, callbacks)
    if metrics:
        log(f"run written to {out}")
    return metrics


def new_config(options: dict, file_options: dict | None, config_file) -> tuple[RunConfig, Path]:
    cfg = resolve(options, file_options, config_file)
    check_new_run(cfg)
    paths = {k: getattr(cfg, k) for k in PATH_KEYS if k != "out"}
    cfg = cfg.replace(**{k: str(Path(v).resolve()) for k, v in paths.items()     # --config RUN/config.json
                         if v and Path(v).exists()})                             # works from anywhere
    out = Path(cfg.out) if cfg.out else default_out(cfg)
    if is_rank_zero():              # the other ranks of a run rank 0 has checked, locked and begun
        RunDir(out).require_new()
    return cfg, out


def resumed_config(out: Path, options: dict) -> tuple[RunConfig, Path]:
    """The run's own config, with only the options ``--resume`` may change taken from ``options``."""
    run = RunDir(out)
    if is_rank_zero():
        run.refuse_if_running()
    if not run.config.exists():
        raise DataError(out, None, "not a run directory (no config.json) to resume")
    saved = resolve({}, read_json(out / "config.json"), out / "config.json").flat()
    changed = {k: v for k, v in options.items() if k not in RESUME_MAY_CHANGE + ("resume",)
               and _comparable(k, v) != _comparable(k, saved.get(k))}
    if changed:
        k, v = next(iter(changed.items()))
        flag = "--" + k.replace("_", "-")
        raise UsageError(f"--resume continues the run as it was configured; {flag} {v} differs from its "
                         f"{saved.get(k)!r} (only {', '.join('--' + x.replace('_', '-') for x in RESUME_MAY_CHANGE)} "
                         f"may change). For a new run with other options: --config {out / 'config.json'} "
                         f"{flag} {v} --out NEW_DIR")
    if run.state is RunState.FINISHED and not run.can_train_on:
        raise DataError(out, None, "the run has finished and its resume state was removed (train with "
                                   "--keep-checkpoints to keep it); to train on, start a new run: --config "
                                   f"{out / 'config.json'} --epochs N --out NEW_DIR")
    cfg = resolve({k: v for k, v in options.items() if k in RESUME_MAY_CHANGE}, saved, out / "config.json")
    return cfg.replace(resume=None), out


def make_run_dir(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except (PermissionError, FileExistsError, NotADirectoryError) as e:
        raise DataError(out, None, f"the run directory cannot be made ({e.strerror}): choose another --out") from None


def _comparable(key: str, value):
    """An option as config.json holds it (tuples as lists; files by absolute path)."""
    if key in PATH_KEYS and isinstance(value, str) and Path(value).exists():
        return str(Path(value).resolve())
    return json.loads(json.dumps(value))
