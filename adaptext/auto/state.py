"""OUT/auto.json, the journal of an auto run, as typed records: the plan, each candidate's
status and results, the speed floor, the throughput pass and the time spent. This module is the
one place that reads and writes the file; the runner and the report read attributes.

A journal is read leniently (a field it lacks takes its default, one it has that this version
does not know is left out), so that a run started by an earlier version resumes.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError
from .plan import Candidate, DataSummary

VERSION = 2


@dataclass(frozen=True)
class Floor:
    """``--min-speed``: sentences/s at least (``relative`` False), or at least ``value`` times
    the teacher's sentences/s measured in the same pass (``relative`` True: ``25x``)."""
    value: float
    relative: bool = False

    @classmethod
    def parse(cls, given) -> Floor | None:
        """``3000``, ``2.5e3``, ``25x`` (a number or a string); None stays None. Anything else,
        nan, inf, zero or a negative number: a ``UsageError`` naming the value."""
        if given is None:
            return None
        if isinstance(given, Floor):
            return given
        text = str(given).strip().lower()
        relative = text.endswith("x")
        try:
            value = float(text[:-1] if relative else text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value > 0):
            raise UsageError(f"--min-speed takes sentences per second above 0 (3000) or a multiple of the "
                             f"teacher's (25x), not {given!r}")
        return cls(value, relative)

    def __str__(self) -> str:
        return f"{self.value:g}x" if self.relative else f"{self.value:g}"

    def describe(self) -> str:
        return f"{self.value:g}x the teacher's sentences/s" if self.relative else f"{self.value:,g} sentences/s"


@dataclass
class Row:
    """One candidate in the journal: its plan, its status (pending, running, done, skipped,
    failed) and, once done, its scores and the throughput pass's figures."""
    name: str
    model: str = ""
    role: str = "baseline"
    teacher: str | None = None
    plan: Candidate | None = None
    status: str = "pending"
    reason: str | None = None
    retry: bool | None = None          # skipped for time: tried again on its turn and on a resume
    notes: list = field(default_factory=list)
    estimate_s: float = 0.0
    command: str | None = None
    dev: float | None = None
    test: float | None = None
    speed: float | None = None         # sentences/s, median of the throughput pass's rounds
    ratio: float | None = None         # speed over the teacher's in the same pass
    size_mb: float | None = None
    train_s: float | None = None
    epochs_run: int | None = None
    epoch_s: float | None = None       # its first epoch as log.csv measured it (the plan recalibrates on it)

    @classmethod
    def from_json(cls, d: dict) -> Row:
        row = cls(**_known(cls, d))
        if isinstance(row.plan, dict):
            row.plan = Candidate(**_known(Candidate, row.plan))
        return row

    @property
    def done(self) -> bool:
        return self.status == "done" and self.dev is not None


@dataclass
class SpeedPass:
    """How the throughput pass measured: texts, batch, rounds, torch threads, and its clock."""
    texts: int = 0
    batch: int = 64
    rounds: int = 0
    threads: int = 1
    clock: str = "process CPU time"


@dataclass
class AutoState:
    identity: dict                      # the options that make OUT this auto run (refused different on resume)
    data: DataSummary
    threads: int
    metric: str
    budget_s: float
    candidates: list
    elapsed_s: float = 0.0
    version: int = VERSION
    unspent_s: float = 0.0              # what the plan found no use for
    calibration: dict = field(default_factory=dict)   # cost key -> measured epoch over the estimate
    recipes: list = field(default_factory=list)       # the students' recipe as planned, then after the teacher
    min_speed: Floor | None = None
    floor_met: bool | None = None
    winner: str | None = None
    teacher_speed: float | None = None
    speed: SpeedPass | None = None

    @classmethod
    def from_json(cls, d: dict) -> AutoState:
        state = cls(**{k: v for k, v in _known(cls, d).items()
                       if k not in ("data", "candidates", "min_speed", "speed")},
                    data=DataSummary(**_known(DataSummary, d.get("data", {}))),
                    candidates=[Row.from_json(r) for r in d.get("candidates", ())])
        state.min_speed = Floor.parse(d.get("min_speed"))
        state.speed = SpeedPass(**_known(SpeedPass, d["speed"])) if d.get("speed") else None
        return state

    def to_json(self) -> dict:
        d = dataclasses.asdict(self)
        d["min_speed"] = str(self.min_speed) if self.min_speed else None
        return d

    def row(self, name: str | None) -> Row | None:
        return next((r for r in self.candidates if r.name == name), None)

    def status(self, name: str) -> str | None:
        row = self.row(name)
        return row.status if row else None


def _known(cls, d: dict) -> dict:
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in d.items() if k in names}


def as_state(state) -> AutoState:
    """An ``AutoState``, or the JSON of one (a journal read by hand, a report made from a dict)."""
    if isinstance(state, AutoState):
        return state
    return AutoState.from_json({"identity": {}, "threads": 1, "metric": "accuracy", "budget_s": 0.0, **state})


def read_state(path: Path) -> AutoState:
    from ..runs.files import read_json
    return AutoState.from_json(read_json(path))


def write_state(path: Path, state: AutoState) -> None:
    from ..runs.files import write_atomic
    write_atomic(path, state.to_json())
