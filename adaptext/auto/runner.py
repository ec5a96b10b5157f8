"""``adaptext auto``: plan the candidates, train each as an ordinary run directory under OUT,
measure every finished one against the teacher in one throughput pass, pick the winner, write
the report.

OUT/auto.json is the journal (as a sweep's study is; ``state`` reads and writes it): the plan,
each candidate's status and results, and the time spent, rewritten atomically after every step
and while a run trains. Started again, auto reads it back: a candidate whose run finished
(metrics.json) is read back, never trained again; one cut short (config.json but no
metrics.json) resumes from its last checkpoint; the time spent before counts against the budget.
Ctrl-C stops auto with the time spent kept, as a kill would, and says how to resume.
"""
from __future__ import annotations

import csv
import os
import signal
import tempfile
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import BadLines, DataError, MissingResource, UsageError
from ..contract import READER_KEYS
from ..runs.files import read_json, write_atomic, writer_lock
from ..runs.metrics import default_monitor
from ..runs.rundir import RunDir, RunState
from . import plan as P
from .speed import BATCH, ROUNDS, SPEED_TEXTS, THREADS, measure_runs, size_mb
from .state import AutoState, Floor, Row, SpeedPass, read_state, write_state

STATE = "auto.json"
# the data options auto passes on to each run: where the data is, and how its files are read
DATA_KEYS = ("data", "dev", "test", "data_dir", "format", "on_bad_line", *READER_KEYS)
SAME_RUN = DATA_KEYS + ("seed", "unlabeled")   # what makes OUT this auto run: refused different on resume
EXPLAINED = 3          # dev texts whose words the report colours by the winner's attributions
HEARTBEAT_S = 15.0                        # while a run trains, auto.json's elapsed time is kept this current
RESUME_HINT = "interrupted; run the same command again to resume"


class Interrupted(BaseException):
    """Ctrl-C while auto runs. Not a KeyboardInterrupt: Lightning turns that into an exit of its
    own in the middle of a run; any other exception it passes on once the run is torn down."""


def run_auto(options: dict, log=print) -> dict:
    """Plan, train, measure and report (see the module docstring); the result (the winner, its
    dev and test scores and speed, the report's paths). ``options``: ``data`` (a file or a named
    dataset), ``dev``, ``test``, the column and reading options, ``time`` (seconds),
    ``min_speed`` (sentences/s, or ``"25x"``: times the teacher's), ``unlabeled`` (a file of
    unlabelled texts for the students), ``threads``, ``seed``, ``export`` ("onnx"), ``dry_run``,
    ``out``; ``only``: the names of the candidates to keep (the others are skipped). Ctrl-C
    raises ``Interrupted`` once auto.json holds the time spent."""
    out = check_options(options)
    if options.get("dry_run"):
        return dry_run(options, out)
    with writer_lock(out, "auto"), interruptible():
        auto = Auto(options, out, log)
        try:
            for row in auto.state.candidates:
                auto.step(row)
                if row.role == "teacher":
                    auto.replan()
            return auto.finish()
        except Interrupted:
            auto.save()
            raise


@contextmanager
def interruptible():
    """While inside, Ctrl-C (SIGINT) raises ``Interrupted`` (in the main thread; elsewhere a
    handler cannot be set, and KeyboardInterrupt stays as it is)."""
    def stop(signum, frame):
        raise Interrupted()
    try:
        before = signal.signal(signal.SIGINT, stop)
    except ValueError:                         # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def check_options(options: dict) -> Path:
    """The option errors a user can fix, before any data is read; the output folder."""
    if not options.get("out"):
        raise UsageError("auto needs --out DIR: the folder of its runs and report")
    out = Path(options["out"])
    if out.exists() and not out.is_dir():
        raise DataError(out, None, "--out is a file, not auto's folder")
    seconds = options.get("time")
    if not isinstance(seconds, (int, float)) or not 0 < seconds < float("inf"):
        raise UsageError("--time must be a duration above 0 (90s, 20m, 2h)")
    Floor.parse(options.get("min_speed"))
    if options.get("export") not in (None, "onnx"):
        raise UsageError(f"--export takes onnx, not {options['export']!r}")
    if options.get("unlabeled") and not Path(options["unlabeled"]).is_file():
        raise DataError(options["unlabeled"], None, "no such file of unlabelled texts (--unlabeled)")
    data = options.get("data")
    if not data:
        raise UsageError("auto needs --data FILE or a named dataset (adaptext datasets)")
    if Path(data).is_file() and not options.get("test"):
        raise DataError(data, None, "no test file: pass --test FILE (auto reports each candidate's test score)")
    return out


def data_options(options: dict) -> dict:
    return {k: options[k] for k in DATA_KEYS if options.get(k) is not None}


def identity(options: dict) -> dict:
    """The options that make OUT this auto run, files by absolute path."""
    found: dict[str, Any] = {}
    for k in SAME_RUN:
        if k == "seed":
            found[k] = seed_of(options)
            continue
        v = options.get(k)
        found[k] = str(Path(v).resolve()) if k in ("data", "dev", "test", "data_dir", "unlabeled") and v and \
            Path(v).exists() else v
    return found


def summarise(options: dict) -> tuple[P.DataSummary, list]:
    """The data read once: its sizes, mean length and kind for the plan; up to 1,000 dev inputs
    (texts, or dicts for pairs and contexts) for the throughput pass. Data of one class, or too
    few to hold a dev split out of, are refused here, before any planning."""
    from ..runs.options import resolve
    from ..runs.splits import load_data, require_dev
    cfg = resolve({**data_options(options), "model": "bov", "store": "off"})
    splits = load_data(cfg, stored=False, log=lambda message: None)
    if not splits.test:
        raise DataError(options["data"], None, "no test split (a cross-validated dataset): auto reports each "
                                               "candidate's test score; pass a --data FILE with --test FILE")
    require_dev(options["data"], splits.dev)
    words = sum(_words(ex) for ex in splits.train)
    labels = {l for ex in splits.train for l in ex.label_names()}
    if len(labels) < 2:
        raise DataError(options["data"], None, f"the training data hold one class ({', '.join(map(str, labels))}): "
                                               f"a classifier needs two or more")
    unseen_labels(splits, cfg.on_bad_line)
    summary = P.DataSummary(len(splits.train), len(splits.dev), len(splits.test), words / max(len(splits.train), 1),
                            splits.kind, bool(splits.multilabel), len(labels))
    if options.get("unlabeled"):
        from ..training.distill import unlabeled_texts
        texts = unlabeled_texts(options["unlabeled"])
        summary.unlabeled = len(texts)
        summary.unlabeled_length = sum(_words(ex) for ex in texts) / len(texts)
    return summary, [ex.as_input() for ex in splits.dev[:SPEED_TEXTS]]


def unseen_labels(splits, on_bad_line: str) -> None:
    """A dev or test label the training data lack is a bad line, as train finds it: with
    ``--on-bad-line error`` it stops auto here, before planning, not each candidate in turn."""
    from ..data.batching import known_label
    from ..data.text import LabelMap
    known, bad = LabelMap.from_examples(splits.train), BadLines(on_bad_line)
    for ex in list(splits.dev) + list(splits.test):
        known_label(ex, known, bad)


def _words(ex) -> int:
    return sum(len(text.split()) for text in ex.texts())


def new_state(options: dict, summary: P.DataSummary) -> AutoState:
    """auto.json of a new auto run: its plan, every candidate pending or skipped."""
    threads = speed_threads(options)        # training without --threads: torch takes every core
    unlabeled = str(Path(options["unlabeled"]).resolve()) if options.get("unlabeled") else None
    found = P.make_plan(summary, options["time"], summary.multilabel, (summary.kind,), threads, unlabeled=unlabeled,
                        only=options.get("only"))
    rows = [Row(c.name, c.options["model"], c.role, c.teacher, c, "skipped" if c.skip else "pending", c.skip,
                c.for_time or None, list(c.notes), c.estimate_s) for c in found]
    seconds = options["time"] - P.START_S - P.FINISH_S
    recipes = sorted({c.recipe for c in found if c.recipe})
    return AutoState(identity(options), summary, threads, default_monitor(summary.multilabel),
                     options["time"], rows, unspent_s=round(P.unspent(found, seconds), 1), recipes=recipes)


def dry_run(options: dict, out: Path) -> dict:
    """The plan (a resumed run's, with its statuses), nothing trained nor written."""
    from .report import plan_text
    summary, _ = summarise(options)
    state = read_state(out / STATE) if (out / STATE).is_file() else new_state(options, summary)
    return {"dry_run": True, "text": plan_text(state, options["time"])}


class Auto:
    """One session of an auto run: its journal (``state``, OUT/auto.json), its clock (the time
    of earlier sessions counts) and the steps."""

    def __init__(self, options: dict, out: Path, log):
        self.options, self.out, self.log = options, out, log
        self.started, self.warm = time.perf_counter(), False
        summary, self.dev_inputs = summarise(options)
        self.state = self._resumed() if (out / STATE).is_file() else new_state(options, summary)
        self.before = self.state.elapsed_s
        self.state.budget_s = options["time"]          # --time may change on resume: the budget in all
        self.summary = self.state.data
        self.save()
        kept = sum(r.status != "skipped" for r in self.state.candidates)
        self.say(f"plan: {kept} of {len(self.state.candidates)} candidates, "
                 f"{self.summary.train:,} training examples of {self.summary.mean_length:.1f} words")

    def _resumed(self) -> AutoState:
        """auto.json read back; refused when it was made with other data or another seed."""
        state = read_state(self.out / STATE)
        theirs, mine = state.identity, identity(self.options)
        said = [f"--{k.replace('_', '-')} {theirs.get(k)}, not {mine.get(k)}" for k in SAME_RUN
                if theirs.get(k) != mine.get(k)]
        if said:
            raise UsageError(f"{self.out} holds an auto run made with other options ({'; '.join(said[:3])}): "
                             f"rerun it as it was made, or choose another --out")
        return state

    # ---------------------------------------------------------------- the clock
    def elapsed(self) -> float:
        return self.before + time.perf_counter() - self.started

    def remaining(self) -> float:
        return self.state.budget_s - self.elapsed()

    def say(self, message: str) -> None:
        self.log(f"[{clock(self.elapsed())} elapsed, {clock(max(self.remaining(), 0))} left] {message}")

    def save(self) -> None:
        self.state.elapsed_s = round(self.elapsed(), 1)
        write_state(self.out / STATE, self.state)

    # ---------------------------------------------------------------- the steps
    def step(self, row: Row) -> None:
        """Train (or read back, or resume) one candidate and read its scores; a candidate that
        fails is said and kept failed (a resume does not retry it), and the others go on."""
        if row.status == "failed" or (row.status == "skipped" and not row.retry):
            return
        run = self.out / row.name
        try:
            metrics = self._trained(row, run)
            if metrics is not None:             # None: skipped now, for a reason the row says
                self._scored(row, run, metrics)
        except Exception as e:                  # the candidate fails; auto goes on with the others
            row.status, row.reason = "failed", RunDir(run).record_failure(e)
            self.say(f"{row.name}: failed ({row.reason}; traceback in {RunDir(run).error})")
        self.save()

    def _trained(self, row: Row, run: Path) -> dict | None:
        """The candidate's metrics: read back (a finished run), resumed (a run cut short) or
        trained; None when it is skipped now (its teacher missing, the budget too short)."""
        state = RunDir(run).state
        if state is RunState.FINISHED:
            self.say(f"{row.name}: read back from {run} (it finished before; not trained again)")
            return read_json(RunDir(run).metrics)
        teacher = self._teacher_of(row)
        if teacher and self.state.status(teacher) != "done":
            self._skip(row, f"its teacher, {teacher}, was not trained")
            return None
        left = self.remaining() - P.FINISH_S - (0 if self.warm else P.START_S) - self._reserved(row)
        if state in (RunState.RESUMABLE, RunState.FAILED) and RunDir(run).config.is_file():
            if left <= 0:
                self._skip(row, "the budget was spent before it could resume")
                return None
            options, what = {}, "resuming its run from the last checkpoint"
        else:
            planned = row.plan
            assert planned is not None, "every row auto plans carries its candidate"
            cand = replace(planned, options=dict(planned.options), notes=list(planned.notes))
            cand.epoch_s = cand.base_epoch_s * P.calibrated(cand.key, self.state.calibration)
            if not cand.fit_to(left):
                self._skip(row, f"needs {P.human(cand.cost(cand.min_work))} at least; the budget leaves "
                                f"{P.human(max(left, 0))}")
                return None
            row.plan, row.estimate_s = cand, cand.estimate_s
            options = {**cand.options, **data_options(self.options), "seed": seed_of(self.options) + cand.seed_offset,
                       "out": str(run)}
            if row.teacher:
                options["teacher"] = ",".join(student_teacher(self.out / name) for name in self._teachers(row))
            what = f"training {P._work(cand)} (about {P.human(cand.estimate_s)})"
        teachers = self._teachers(row) if row.teacher else None
        row.status, row.retry, row.reason = "running", None, None
        row.command = command(row, self.options, self.out, teachers)
        self.save()
        self.say(f"{row.name}: {what}")
        return self._train(row, run, options)

    def _train(self, row: Row, run: Path, options: dict) -> dict:
        guard = deadline(self._deadline(row), self.save)
        engine = {"progress": False, **({"threads": self.options["threads"]} if self.options.get("threads") else {})}
        from ..training.run import trained          # here: the engine's import counts against the budget
        metrics = trained(RunDir(run), {**options, **engine}, log=lambda message: None, callbacks=[guard],
                          resume_options=engine)
        self.warm = True
        if guard.stopped:
            row.notes.append("training stopped when the budget ran out (the best dev epoch so far kept)")
        self._calibrate(row, run)
        return metrics

    def replan(self) -> None:
        """Once the teacher has trained (and once only: a resume keeps what was chosen), the
        students' recipe is chosen again from the epochs measured so far and the time left, and
        the rows not started take the new recipe's plan (``plan.replan``)."""
        teacher = self.state.row(P.TEACHER_NAME)
        if not (teacher and teacher.done) or len(self.state.recipes) != 1:
            return
        only = self.options.get("only")
        rows = {r.name: r for r in self.state.candidates if r.role in ("ensemble", "student") and
                (not only or r.name in only) and (r.status == "pending" or r.retry or r.reason == P.NOT_IN_RECIPE)}
        found, seconds = self._rechosen(rows)
        if any(c.name == P.WIDE and not c.skip for c in found):
            too_slow = self._wide_too_slow()
            if too_slow:                        # its time goes to the rest of a recipe chosen again without it
                self._skip(rows.pop(P.WIDE), too_slow, retry=False)
                found, seconds = self._rechosen(rows)
        for c in found:
            row = rows[c.name]
            row.plan, row.estimate_s, row.notes = c, c.estimate_s, list(c.notes)
            row.status, row.reason, row.retry = ("skipped" if c.skip else "pending"), c.skip, c.for_time or None
        number = next((c.recipe for c in found if c.recipe), self.state.recipes[0])
        self.state.recipes.append(number)
        self.state.unspent_s = round(P.unspent(found, seconds), 1)
        recipe = P.RECIPES[number - 1].describe(self.summary.unlabeled, P.WIDE in rows, P.sample_of(found))
        self.say(f"the students' recipe chosen again on the measured epochs: recipe {number} ({recipe}), planned "
                 f"{P.human(sum(c.estimate_s for c in found if not c.skip))} of the {P.human(max(seconds, 0))} left")
        self.save()

    def _rechosen(self, rows: dict) -> tuple[list, float]:
        """The ensemble's seeds and students among ``rows`` planned again in the time left (``plan.replan``)."""
        seconds = self.remaining() - P.FINISH_S - (0 if self.warm else P.START_S) - self._measuring()
        return P.replan(self.summary, seconds, self.state.calibration, set(rows), (self.summary.kind,),
                        self.summary.multilabel, speed_threads(self.options),
                        self.state.identity.get("unlabeled")), seconds

    def _teacher_of(self, row: Row) -> str | None:
        return row.teacher or (P.TEACHER_NAME if row.role == "ensemble" else None)

    def _teachers(self, row: Row) -> list:
        """The names of a student's teachers: its teacher, with every seed of the ensemble that finished."""
        return [row.teacher] + [r.name for r in self.state.candidates if r.role == "ensemble" and r.done]

    def _calibrate(self, row: Row, run: Path) -> None:
        """The first epoch's seconds as log.csv measured them, against the plan's: later
        candidates' epochs are costed with the factor (recalibrated once per candidate)."""
        rows = list(csv.DictReader(open(run / "log.csv"))) if (run / "log.csv").is_file() else []
        plan = row.plan
        assert plan is not None, "a candidate auto trained was planned"
        if not rows or row.epoch_s is not None or not plan.base_epoch_s:
            return
        row.epoch_s = float(rows[0]["seconds"])
        planned = plan.base_epoch_s * min(1.0, plan.work)
        self.state.calibration[plan.key] = round(row.epoch_s / planned, 3)

    def _wide_too_slow(self) -> str | None:
        """Why the wider student would not meet the floor, before any time is planned for it: the
        narrow student's architecture, trained one step (its speed does not depend on its weights),
        measured against the teacher now (one short round), over ``WIDE_SLOWDOWN``; None when it
        may (no floor)."""
        floor = Floor.parse(self.options.get("min_speed"))
        if not floor:
            return None
        try:
            speeds = self._narrow_speeds(floor.relative)
        except Exception as e:                  # as a candidate's failure: auto goes on, the wide student planned
            self.say(f"{P.WIDE}: the floor could not be checked before planning it ({e})")
            return None
        wide = speeds[P.NARROW] / P.WIDE_SLOWDOWN
        reach = wide / speeds[P.TEACHER_NAME] if floor.relative else wide
        if reach >= floor.value:
            return None
        return (f"a BiLSTM of {P.WIDE_HIDDEN} units would predict about {reach:,.1f}"
                f"{'x the teacher' if floor.relative else ' sentences/s'}, under the floor ({floor.describe()})")

    def _narrow_speeds(self, teacher: bool) -> dict:
        """{name: sentences/s} of the narrow student's architecture, trained one step in a
        temporary folder, and of the teacher (``teacher``), in one short round over dev texts."""
        from ..training.run import train_run
        with tempfile.TemporaryDirectory(prefix="adaptext-auto-") as probe:
            threads = {"threads": self.options["threads"]} if self.options.get("threads") else {}
            train_run({**P.BILSTM, **P.PIECES, **data_options(self.options), "epochs": 1, "max_steps": 1,
                       "progress": False, "out": probe, **threads}, log=lambda message: None)
            names = {P.NARROW: Path(probe), **({P.TEACHER_NAME: self.out / P.TEACHER_NAME} if teacher else {})}
            return measure_runs(names, self.dev_inputs[:4 * BATCH], rounds=1)

    def _deadline(self, row: Row) -> float:
        """When the candidate's training must stop (perf_counter time): the budget's end, less its
        evaluation, the throughput pass of it and of the candidates done, the minimum of the
        candidates planned after it, and the report."""
        after = P.RUN_S + self._measuring(row) + P.FINISH_S + self._reserved(row)
        return self.started + self.state.budget_s - self.before - after

    def _measuring(self, row: Row | None = None) -> float:
        """The throughput pass's seconds for the candidates done (and ``row``)."""
        return sum(P.speed_seconds(r.model, self.summary) for r in self.state.candidates
                   if r.done or r is row)

    def _reserved(self, row: Row) -> float:
        """The seconds the candidates planned after this one need at least, those of them whose
        minimum still fits, in order, beside this one's: a candidate that takes longer than its
        estimate eats into their extra epochs, never into their minimum; and one that no longer
        fits (a resume with less --time) takes nothing from this one."""
        rows = self.state.candidates
        plan = row.plan
        assert plan is not None, "a pending candidate carries its plan"
        room = self.remaining() - P.FINISH_S - plan.cost(plan.min_work)
        kept = 0.0
        for r in rows[rows.index(row) + 1:]:
            need = r.plan.cost(r.plan.min_work) if r.status == "pending" else 0.0
            if kept + need <= room:
                kept += need
        return kept

    def _skip(self, row: Row, reason: str, retry: bool = True) -> None:
        row.status, row.reason, row.retry = "skipped", reason, retry or None   # retry: again with more --time
        self.say(f"{row.name}: skipped ({reason})")

    def _scored(self, row: Row, run: Path, metrics: dict) -> None:
        """Its scores from the run's own metrics.json (its speed comes from the pass at the end)."""
        metric, info = self.state.metric, metrics.get("info", {})
        row.status, row.dev, row.test = "done", metrics["dev"].get(metric), metrics.get("test", {}).get(metric)
        row.size_mb, row.train_s = round(size_mb(run), 2), info.get("train_seconds")
        row.epochs_run = info.get("epochs_run")
        row.command = row.command or command(row, self.options, self.out)
        self.say(f"{row.name}: dev {metric} {row.dev:.2f}, {row.size_mb:.1f} MB")

    # ---------------------------------------------------------------- the result
    def finish(self) -> dict:
        """The throughput pass, the winner chosen, OUT/best and the report written, the winner
        exported (--export onnx); the result."""
        from .report import write_report
        floor = Floor.parse(self.options.get("min_speed"))
        self.measure()
        winner, met = select(self.state.candidates, floor)
        if winner and floor and not met:
            why = "the teacher, which the floor is relative to, was not measured" \
                if floor.relative and not self.state.teacher_speed else f"no candidate predicts --min-speed {floor}"
            self.say(f"{why}: the fastest, {winner.name} ({winner.speed:,.0f}/s), is the winner")
        self.state.winner, self.state.min_speed, self.state.floor_met = winner.name if winner else None, floor, met
        if winner:
            link_best(self.out, winner.name)
            self.explain_winner(winner.name)
        paths = write_report(self.out, self.state)
        # the result as JSON prints it: names, scores, speeds, counts, paths and the export's outcome
        result: dict[str, Any] = {"winner": None, "metric": self.state.metric,
                                  "min_speed": str(floor) if floor else None, "floor_met": met}
        if winner:
            result.update(winner=winner.name, run=str(self.out / winner.name), dev=winner.dev, test=winner.test,
                          sentences_per_s=winner.speed, ratio_to_teacher=winner.ratio, best=str(self.out / "best"))
            if self.options.get("export"):
                result["export"] = self._export(self.out / winner.name)
        counts = [r.status for r in self.state.candidates]
        result.update(candidates={s: counts.count(s) for s in ("done", "skipped", "failed")}, **paths,
                      journal=str(self.out / STATE))
        self.save()
        result.update(elapsed_s=self.state.elapsed_s, budget_s=self.state.budget_s)
        self.say(f"winner: {result['winner'] or 'none (no candidate finished)'}; report {paths['report']}")
        return result

    def explain_winner(self, name: str) -> None:
        """The winner's word attributions on a few dev texts, for the report (OUT/why.json); they
        need Captum (the explain extra), and the report goes without them where it is missing."""
        from ..api import Classifier
        from .report import WHY
        try:
            records = Classifier.load(self.out / name).explain(self.dev_inputs[:EXPLAINED])
        except MissingResource as e:
            self.say(f"the report shows no word attributions: {e}")
            return
        write_atomic(self.out / WHY, {"winner": name, "records": records})

    def measure(self) -> None:
        """The throughput pass (``speed.measure_runs``) over every finished candidate and the
        teacher, interleaved; each row's sentences/s and its ratio to the teacher's."""
        rows = [r for r in self.state.candidates if r.done and r.role != "ensemble"]
        if not rows:
            return
        self.say(f"measuring the throughput of {len(rows)} runs together ({ROUNDS} interleaved rounds over "
                 f"{min(len(self.dev_inputs), SPEED_TEXTS)} dev texts, {THREADS} thread, CPU time)")
        speeds = measure_runs({r.name: self.out / r.name for r in rows}, self.dev_inputs)
        teacher = speeds.get(P.TEACHER_NAME)
        for r in rows:
            r.speed = round(speeds[r.name], 1)
            r.ratio = round(speeds[r.name] / teacher, 2) if teacher else None
        self.state.teacher_speed = round(teacher, 1) if teacher else None
        self.state.speed = SpeedPass(min(len(self.dev_inputs), SPEED_TEXTS), BATCH, ROUNDS, THREADS)

    def _export(self, run: Path) -> dict:
        """The winner exported to OUT/export (ONNX); an export that fails is said, not fatal."""
        from ..export import ExportCheckFailed, export_run
        try:
            export_run(run, self.out / "export", log=lambda message: None)
        except (UsageError, MissingResource, ExportCheckFailed) as e:
            self.say(f"export of {run.name} failed: {e}")
            return {"error": str(e)}
        self.say(f"{run.name} exported to {self.out / 'export'}")
        return {"onnx": str(self.out / "export" / "model.onnx")}


def select(rows: list, floor: Floor | None) -> tuple[Row | None, bool]:
    """(the winner, whether it meets the floor). The winner is the best on dev among the
    finished candidates that meet ``floor`` (no floor: among all; a tie goes to the faster),
    never one under the linear baseline on dev: when every candidate that meets the floor is
    worse than it, the linear baseline wins. When none meets the floor, the fastest is the winner
    and the floor is not met: a model the user can deploy, and the report shows how far off it
    is. A relative floor with no teacher measured cannot be met. Test scores play no part."""
    done = [r for r in rows if r.done and r.role != "ensemble"]
    if not done:
        return None, False
    linear = next((r for r in done if r.name == P.LINEAR), None)
    done = [r for r in done if linear is None or r.dev >= linear.dev]
    fast = [r for r in done if meets(r, floor)]
    if fast:
        return max(fast, key=lambda r: (r.dev, r.speed or 0)), True
    return linear or max(done, key=lambda r: r.speed or 0), False


def meets(row: Row, floor: Floor | None) -> bool:
    if floor is None:
        return True
    got = row.ratio if floor.relative else row.speed
    return got is not None and got >= floor.value


def link_best(out: Path, name: str) -> None:
    """OUT/best: a link to the winner's run directory (relative, so that OUT can move), which
    ``adaptext predict OUT/best`` reads; replaced atomically. Only a link or a file auto wrote is
    replaced."""
    best, tmp = out / "best", out / ".best.tmp"
    if best.exists() and best.is_dir() and not best.is_symlink():
        raise DataError(best, None, "is a folder auto did not make: move it, then run auto again")
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    os.symlink(name, tmp, target_is_directory=True)
    os.replace(tmp, best)


def deadline(at: float, beat):
    """A Lightning callback that stops a candidate's training once the budget's time for it has
    run out at ``at`` (perf_counter time: the run keeps its best dev epoch so far, is evaluated and
    written as any run), and calls ``beat`` (auto.json's elapsed time rewritten) every
    ``HEARTBEAT_S`` while it trains, so that a kill loses at most that much of the count. At the
    end of an epoch it recalibrates on the epoch just measured: when another epoch of that length
    would run past ``at``, training stops there rather than in the middle of it, whose work dev
    would never see."""
    from lightning.pytorch.callbacks import Callback

    class Deadline(Callback):
        def __init__(self):
            self.stopped, self.last, self.epoch_started = False, time.perf_counter(), time.perf_counter()

        def on_train_epoch_start(self, trainer, *args) -> None:
            self.epoch_started = time.perf_counter()

        def on_train_batch_end(self, trainer, *args) -> None:
            now = time.perf_counter()
            if now - self.last >= HEARTBEAT_S:
                beat()
                self.last = now
            if now >= at:
                self.stop(trainer)

        def on_train_epoch_end(self, trainer, *args) -> None:
            now = time.perf_counter()
            if now + (now - self.epoch_started) > at and trainer.current_epoch + 1 < trainer.max_epochs:
                self.stop(trainer)

        def stop(self, trainer) -> None:
            if not trainer.should_stop:
                trainer.should_stop = True
                self.stopped = True

    return Deadline()


def student_teacher(teacher: Path) -> str:
    """The teacher's run directory as a student's --teacher names it (what ``distill_run``
    checks, here for ``train_run``, which also takes the deadline's callback)."""
    if "," in str(teacher.resolve()):
        raise DataError(teacher, None, "a teacher run directory whose name holds a comma cannot be read (the "
                                       "teachers of an ensemble are written comma-separated): use another --out")
    return str(teacher.resolve())


def speed_threads(options: dict) -> int:
    """The torch threads a run trains with, as the plan counts them: --threads, else one per core."""
    return options.get("threads") or os.cpu_count() or 1


def seed_of(options: dict) -> int:
    return 1 if options.get("seed") is None else int(options["seed"])


def command(row: Row, options: dict, out: Path, teachers: list | None = None) -> str:
    """The ``adaptext train`` (a student: ``adaptext distill``, with ``teachers``, the names of
    its teachers' runs) command that trains the candidate's run again as auto trained it."""
    import shlex
    plan = row.plan
    assert plan is not None, "a candidate auto trains was planned"
    opts = {**plan.options, **data_options(options), "seed": seed_of(options) + plan.seed_offset}
    if options.get("threads"):
        opts["threads"] = options["threads"]
    words = ["adaptext", "distill", *(str(out / t) for t in teachers or [row.teacher])] if row.teacher else \
        ["adaptext", "train"]
    for k, v in {**opts, "out": str(out / row.name)}.items():
        flag = "--" + k.replace("_", "-")
        words += ([flag] if v else ["--no-" + k.replace("_", "-")]) if isinstance(v, bool) else [flag, str(v)]
    return " ".join(shlex.quote(w) for w in words)


def clock(seconds: float) -> str:
    """1:02:03, 4:05."""
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"
