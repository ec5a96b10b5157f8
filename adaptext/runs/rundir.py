"""A run directory's layout and the one reading of its state.

Every caller that asks "is this run finished, can it resume, is someone writing it?" (train,
cross-validation, a sweep's trials, auto's candidates, the benchmarks' kept runs) asks
``RunDir(path).state``; the rules live here and nowhere else:

- ``RUNNING``: a live process holds the directory's kernel lock (``.lock``);
- ``FINISHED``: ``metrics.json`` is there (it is written last, so the run is whole);
- ``FAILED``: ``error.txt`` holds the traceback of the attempt that failed;
- ``RESUMABLE``: ``config.json`` is there but no metrics: a run cut short, which continues from
  its last checkpoint (or from its first step, with its own options, if it had none);
- ``NEW``: none of these.
"""
from __future__ import annotations

import contextlib
import os
import traceback
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from ..errors import DataError, MissingResource, UsageError


class RunState(StrEnum):
    NEW = "new"
    RUNNING = "running"
    RESUMABLE = "resumable"
    FINISHED = "finished"
    FAILED = "failed"


@dataclass(frozen=True)
class RunDir:
    path: Path

    def __init__(self, path: str | os.PathLike[str]) -> None:
        object.__setattr__(self, "path", Path(path))

    # ------------------------------------------------------------------- layout
    @property
    def config(self) -> Path:
        return self.path / "config.json"

    @property
    def metrics(self) -> Path:
        return self.path / "metrics.json"

    @property
    def checkpoints(self) -> Path:
        return self.path / "checkpoints"

    @property
    def last_checkpoint(self) -> Path:
        return self.checkpoints / "last.ckpt"

    @property
    def error(self) -> Path:
        return self.path / "error.txt"

    @property
    def lock(self) -> Path:
        return self.path / ".lock"

    def fold(self, k: int) -> RunDir:
        return RunDir(self.path / f"fold-{k}")

    def folds(self) -> list[RunDir]:
        return [RunDir(p) for p in sorted(self.path.glob("fold-*")) if p.is_dir()]

    # ------------------------------------------------------------------- state
    @property
    def state(self) -> RunState:
        if self.holder() is not None:
            return RunState.RUNNING
        if self.metrics.is_file():
            return RunState.FINISHED
        if self.error.is_file():
            return RunState.FAILED
        if self.config.is_file():
            return RunState.RESUMABLE
        return RunState.NEW

    @property
    def can_train_on(self) -> bool:
        """A finished run that kept its resume state (``--keep-checkpoints``), or a cross-validated
        one (each fold keeps its own): ``--resume`` continues it with more epochs."""
        return self.last_checkpoint.is_file() or bool(self.folds())

    @property
    def started(self) -> bool:
        """Whether the directory holds any of a run: a new run may not be written over it."""
        return self.state is not RunState.NEW or self.checkpoints.exists() or bool(self.folds())

    def holder(self) -> str | None:
        """The process writing this directory now (``pid N: its command line``), or None."""
        import fcntl
        if not self.lock.is_file():
            return None
        with open(self.lock, "a+", encoding="utf-8") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                return describe(handle.read().strip())
            fcntl.flock(handle, fcntl.LOCK_UN)
        return None

    # ------------------------------------------------------------------- failure
    def record_failure(self, error: BaseException) -> str:
        """Keep a failed attempt's traceback in ``error.txt``; the one line that says why."""
        self.path.mkdir(parents=True, exist_ok=True)
        self.error.write_text("".join(traceback.format_exception(error)), encoding="utf-8")
        return why(error)

    def clear_failure(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.error.unlink()

    def check_writable(self) -> None:
        """Refuse, before any data is read, a run directory that cannot be made: a file on its
        path, or a folder the user may not write to."""
        for p in (self.path, *self.path.parents):
            if p.exists():
                if not p.is_dir():
                    raise DataError(p, None, "a file, not a folder: the run directory cannot be made there "
                                             "(choose another --out)")
                if not os.access(p, os.W_OK | os.X_OK):
                    raise DataError(p, None, "permission denied: the run directory cannot be written there "
                                             "(choose another --out)")
                return

    def require_new(self) -> None:
        """Refuse to begin a new run here: one being written now, or any of a run already there."""
        self.refuse_if_running()
        if self.started:
            raise DataError(self.path, None, f"the run directory already holds a run ({self.state}: use --resume "
                                             "to continue it, or another --out)")

    def refuse_if_running(self, what: str = "run") -> None:
        holder = self.holder()
        if holder is not None:
            raise DataError(self.path, None, f"{holder} is writing this {what} directory now; wait for it to "
                                             f"finish, or choose another --out")


def why(error: BaseException) -> str:
    """A failure in one line: a user's error as said, anything else with its type."""
    said = str(error) if isinstance(error, (UsageError, MissingResource)) else f"{type(error).__name__}: {error}"
    return " ".join(said.split())[:300]


def describe(lock_text: str) -> str:
    """The process a lock file names (``pid N``), with its command line where the system shows it."""
    pid = lock_text.removeprefix("pid ").strip()
    if not pid.isdigit():
        return "another adaptext process"
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return f"process {pid}"
    command = " ".join([os.path.basename(argv[0]), *argv[1:]]) if argv else ""
    return f"process {pid} ({command[:200]})" if command else f"process {pid}"
