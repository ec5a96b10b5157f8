"""Errors a user can cause with bad input: always one line naming file, line and problem."""
from __future__ import annotations


class UsageError(ValueError):
    """A problem the user can fix (an option, a file, a run directory): the CLI prints its
    message on one line and exits 2. Any other exception is a bug and keeps its traceback."""


class DataError(UsageError):
    """Bad input data. ``str(err)`` is ``file:line: problem``; the CLI prints it and exits 2."""

    def __init__(self, path, line: int | None, problem: str):
        self.path, self.line, self.problem = str(path), line, problem
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {problem}")


class OptionError(UsageError):
    """An option's value refused (out of range, not one of its choices, not a number). ``key``
    names the option, so a value that came from a ``--config`` file can be reported at its line."""

    def __init__(self, key: str, problem: str):
        self.key = key
        super().__init__(problem)


class UnknownModel(UsageError, KeyError):
    """A model name the registry does not hold (a KeyError too, as a lookup by name)."""

    def __str__(self) -> str:
        return self.args[0]


class MissingResource(RuntimeError):
    """An optional package or data file that a feature needs is not installed (an extra, a
    tagger's model). ``str(err)`` says what to install; the CLI prints it and exits 2."""


class BadLines:
    """Policy for malformed lines: ``error`` raises at the first, ``skip`` counts and goes on."""

    def __init__(self, policy: str = "error"):
        if policy not in ("error", "skip"):
            raise ValueError(f"on_bad_line must be 'error' or 'skip', not {policy!r}")
        self.policy = policy
        self.skipped: list[str] = []
        self.filtered: dict[str, int] = {}     # lines left out by design (e.g. SNLI's gold label '-')

    def __call__(self, path, line: int | None, problem: str) -> None:
        err = DataError(path, line, problem)
        if self.policy == "error":
            raise err
        self.skipped.append(str(err))

    def filter(self, reason: str) -> None:
        self.filtered[reason] = self.filtered.get(reason, 0) + 1

    @property
    def count(self) -> int:
        return len(self.skipped)
