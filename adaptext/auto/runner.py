"""``adaptext auto``: plan the candidates, train each as an ordinary run directory under OUT,
measure its throughput, pick the winner, write the report.

OUT/auto.json is the journal (as a sweep's study is): the plan, each candidate's status and
results, and the time spent, rewritten atomically after every step. Started again, auto reads it
back: a candidate whose run finished (metrics.json) is read back, never trained again; one cut
short (config.json but no metrics.json) resumes from its last checkpoint; the time spent before
counts against the budget.
"""
from __future__ import annotations

import time
import traceback
from dataclasses import asdict
from pathlib import Path

from ..data.errors import DataError, MissingResource, UsageError
from ..data.examples import ExampleKind
from ..runs.contract import READER_KEYS
from ..runs.files import read_json, write_atomic, writer_lock
from . import plan as P
from .speed import sentences_per_s, size_mb

STATE = "auto.json"
# the data options auto passes on to each run: where the data is, and how its files are read
DATA_KEYS = ("data", "dev", "test", "data_dir", *READER_KEYS)
SAME_RUN = DATA_KEYS + ("seed",)          # what makes OUT this auto run: refused different on resume
HEARTBEAT_S = 15.0                        # while a run trains, auto.json's elapsed time is kept this current


def run_auto(options: dict, log=print) -> dict:
    """Plan, train, measure and report (see the module docstring); the result (the winner, its
    dev and test scores and speed, the report's paths). ``options``: ``data`` (a file or a named
    dataset), ``dev``, ``test``, the column options, ``time`` (seconds), ``min_speed``
    (sentences/s), ``threads``, ``seed``, ``export`` ("onnx"), ``dry_run``, ``out``; ``only``:
    the names of the candidates to keep (the others are skipped)."""
    out = check_options(options)
    if options.get("dry_run"):
        return dry_run(options, out)
    with writer_lock(out, "auto"):
        auto = Auto(options, out, log)
        for row in auto.state["candidates"]:
            auto.step(row)
        return auto.finish()


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
    if options.get("export") not in (None, "onnx"):
        raise UsageError(f"--export takes onnx, not {options['export']!r}")
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
    found = {}
    for k in SAME_RUN:
        v = seed_of(options) if k == "seed" else options.get(k)
        found[k] = str(Path(v).resolve()) if k in ("data", "dev", "test", "data_dir") and v and Path(v).exists() else v
    return found


def summarise(options: dict) -> tuple[P.DataSummary, list]:
    """The data read once: its sizes, mean length and kind for the plan; up to 1,000 dev inputs
    (texts, or dicts for pairs and contexts) for the throughput measurements."""
    from ..runs.options import resolve
    from ..runs.splits import load_data
    cfg = resolve({**data_options(options), "model": "bov", "store": "off"})
    splits = load_data(cfg, stored=False, log=lambda message: None)
    if not splits.test:
        raise DataError(options["data"], None, "no test split (a cross-validated dataset): auto reports each "
                                               "candidate's test score; pass a --data FILE with --test FILE")
    words = sum(_words(ex) for ex in splits.train)
    labels = {l for ex in splits.train for l in (ex.label if isinstance(ex.label, tuple) else (ex.label,))}
    summary = P.DataSummary(len(splits.train), len(splits.dev), len(splits.test), words / max(len(splits.train), 1),
                            splits.kind, bool(splits.multilabel), len(labels))
    return summary, [_as_input(ex) for ex in splits.dev[:1000]]


def _words(ex) -> int:
    return sum(len(text.split()) for text in ex.texts())


def _as_input(ex):
    if ex.kind == ExampleKind.PAIR:
        return {"text": ex.text, "pair": ex.pair}
    if ex.kind == ExampleKind.CONTEXTS:
        return {"text": ex.text, "contexts": list(ex.contexts)}
    return ex.text


def new_state(options: dict, summary: P.DataSummary) -> dict:
    """auto.json of a new auto run: its plan, every candidate pending or skipped."""
    threads = speed_threads(options)        # training without --threads: torch takes every core
    found = P.make_plan(summary, options["time"], summary.multilabel, (summary.kind,), threads)
    only = options.get("only")
    rows = []
    for c in found:
        if only and c.name not in only and (not c.skip or c.for_time):
            c.skip, c.for_time = "left out (only: " + ", ".join(only) + ")", False
        rows.append({"name": c.name, "model": c.options["model"], "role": c.role, "teacher": c.teacher,
                     "status": "skipped" if c.skip else "pending", "reason": c.skip, "retry": c.for_time or None,
                     "notes": list(c.notes), "estimate_s": c.estimate_s, "plan": c.as_dict()})
    return {"version": 1, "identity": identity(options), "data": asdict(summary), "threads": speed_threads(options),
            "metric": "micro_f1" if summary.multilabel else "accuracy", "budget_s": options["time"],
            "elapsed_s": 0.0, "candidates": rows}


def dry_run(options: dict, out: Path) -> dict:
    """The plan (a resumed run's, with its statuses), nothing trained nor written."""
    from .report import plan_text
    summary, _ = summarise(options)
    state = read_json(out / STATE) if (out / STATE).is_file() else new_state(options, summary)
    return {"dry_run": True, "text": plan_text(state, options["time"])}


class Auto:
    """One session of an auto run: its journal (``state``, OUT/auto.json), its clock (the time
    of earlier sessions counts) and the steps."""

    def __init__(self, options: dict, out: Path, log):
        self.options, self.out, self.log = options, out, log
        self.started, self.warm = time.perf_counter(), False
        summary, self.dev_inputs = summarise(options)
        if (out / STATE).is_file():
            self.state = self._resumed()
        else:
            self.state = new_state(options, summary)
        self.before = float(self.state.get("elapsed_s", 0.0))
        self.state["budget_s"] = options["time"]          # --time may change on resume: the budget in all
        self.summary = P.DataSummary(**self.state["data"])
        self.save()
        kept = sum(r["status"] != "skipped" for r in self.state["candidates"])
        self.say(f"plan: {kept} of {len(self.state['candidates'])} candidates, "
                 f"{self.summary.train:,} training examples of {self.summary.mean_length:.1f} words")

    def _resumed(self) -> dict:
        """auto.json read back; refused when it was made with other data or another seed."""
        state = read_json(self.out / STATE)
        theirs, mine = state.get("identity", {}), identity(self.options)
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
        return self.state["budget_s"] - self.elapsed()

    def say(self, message: str) -> None:
        self.log(f"[{clock(self.elapsed())} elapsed, {clock(max(self.remaining(), 0))} left] {message}")

    def save(self) -> None:
        self.state["elapsed_s"] = round(self.elapsed(), 1)
        write_atomic(self.out / STATE, self.state)

    # ---------------------------------------------------------------- the steps
    def step(self, row: dict) -> None:
        """Train (or read back, or resume) one candidate and measure it; a candidate that fails
        is said and kept failed (a resume does not retry it), and the others go on."""
        if row["status"] == "failed" or (row["status"] == "skipped" and not row.get("retry")):
            return
        run = self.out / row["name"]
        try:
            metrics = self._trained(row, run)
            if metrics is not None:             # None: skipped now, for a reason the row says
                self._measured(row, run, metrics)
        except Exception as e:                  # the candidate fails; auto goes on with the others
            run.mkdir(parents=True, exist_ok=True)
            (run / "error.txt").write_text(traceback.format_exc())
            said = str(e) if isinstance(e, (UsageError, MissingResource)) else f"{type(e).__name__}: {e}"
            row.update(status="failed", reason=" ".join(said.split())[:300])
            self.say(f"{row['name']}: failed ({row['reason']}; traceback in {run / 'error.txt'})")
        self.save()

    def _trained(self, row: dict, run: Path) -> dict | None:
        """The candidate's metrics: read back (a finished run), resumed (a run cut short) or
        trained; None when it is skipped now (its teacher missing, or the budget too short)."""
        if (run / "metrics.json").is_file():
            self.say(f"{row['name']}: read back from {run} (it finished before; not trained again)")
            return read_json(run / "metrics.json")
        teacher = self.out / row["teacher"] if row["teacher"] else None
        if teacher and self._status(row["teacher"]) != "done":
            return self._skip(row, f"its teacher, {row['teacher']}, was not trained")
        left = self.remaining() - P.FINISH_S - (0 if self.warm else P.START_S) - self._reserved(row)
        if (run / "config.json").is_file():
            if left <= 0:
                return self._skip(row, "the budget was spent before it could resume")
            options, what = {"resume": str(run)}, "resuming its run from the last checkpoint"
        else:
            cand = P.Candidate(**row["plan"])
            if not cand.fit_to(left):
                return self._skip(row, f"needs {P.human(cand.cost(cand.min_work))} at least; the budget leaves "
                                       f"{P.human(max(left, 0))}")
            row.update(plan=cand.as_dict(), estimate_s=cand.estimate_s)
            options = {**cand.options, **data_options(self.options), "seed": seed_of(self.options),
                       "out": str(run)}
            if teacher:
                options["teacher"] = student_teacher(teacher)
            what = f"training {P._work(cand)} (about {P.human(cand.estimate_s)})"
        row.update(status="running", command=command(row, self.options, self.out), retry=None, reason=None)
        self.save()
        self.say(f"{row['name']}: {what}")
        guard = deadline(self._deadline(row), self.save)
        engine = {"progress": False, **({"threads": self.options["threads"]} if self.options.get("threads") else {})}
        from ..training.run import train_run        # here: the engine's import counts against the budget
        metrics = train_run({**options, **engine}, log=lambda message: None, callbacks=[guard])
        self.warm = True
        if guard.stopped:
            row["notes"].append("training stopped when the budget ran out (the best dev epoch so far kept)")
        return metrics

    def _deadline(self, row: dict) -> float:
        """When the candidate's training must stop (perf_counter time): the budget's end, less its
        evaluation and throughput measurement, the minimum of the candidates planned after it,
        and the report."""
        speedup = P.threads_speedup(speed_threads(self.options))
        after = P.RUN_S + P.speed_seconds(row["model"], self.summary, speedup) + P.FINISH_S + self._reserved(row)
        return self.started + self.state["budget_s"] - self.before - after

    def _reserved(self, row: dict) -> float:
        """The seconds the candidates planned after this one need at least: a candidate that
        takes longer than its estimate eats into their extra epochs, never into their minimum."""
        rows = self.state["candidates"]
        later = rows[rows.index(row) + 1:]
        return sum(P.Candidate(**r["plan"]).cost(r["plan"]["min_work"]) for r in later if r["status"] == "pending")

    def _status(self, name: str) -> str | None:
        return next((r["status"] for r in self.state["candidates"] if r["name"] == name), None)

    def _skip(self, row: dict, reason: str) -> None:
        row.update(status="skipped", reason=reason, retry=True)    # tried again on a resume with more --time
        self.say(f"{row['name']}: skipped ({reason})")

    def _measured(self, row: dict, run: Path, metrics: dict) -> None:
        """Its scores from the run's own metrics.json, and its throughput measured here."""
        if row.get("speed") is None:
            row["speed"] = round(sentences_per_s(run, self.dev_inputs, speed_threads(self.options)), 1)
        metric, info = self.state["metric"], metrics.get("info", {})
        row.update(status="done", dev=metrics["dev"].get(metric), test=metrics.get("test", {}).get(metric),
                   size_mb=round(size_mb(run), 2), train_s=info.get("train_seconds"),
                   epochs_run=info.get("epochs_run"), command=command(row, self.options, self.out))
        self.say(f"{row['name']}: dev {metric} {row['dev']:.2f}, {row['speed']:,.0f} sentences/s, "
                 f"{row['size_mb']:.1f} MB")

    # ---------------------------------------------------------------- the result
    def finish(self) -> dict:
        """The winner chosen, OUT/best and the report written, the winner exported (--export
        onnx); the result."""
        from .report import write_report
        min_speed = self.options.get("min_speed")
        winner, met = select(self.state["candidates"], min_speed)
        if winner and min_speed and not met:
            self.say(f"no candidate predicts --min-speed {min_speed:g} sentences/s: the fastest, "
                     f"{winner['name']} ({winner['speed']:,.0f}/s), is the winner")
        self.state.update(winner=winner["name"] if winner else None, min_speed=min_speed, floor_met=met)
        if winner:
            write_atomic(self.out / "best", winner["name"] + "\n")
        paths = write_report(self.out, self.state)
        result = {"winner": None, "metric": self.state["metric"], "min_speed": min_speed, "floor_met": met}
        if winner:
            result.update(winner=winner["name"], run=str(self.out / winner["name"]), dev=winner["dev"],
                          test=winner["test"], sentences_per_s=winner["speed"], best=str(self.out / "best"))
            if self.options.get("export"):
                result["export"] = self._export(self.out / winner["name"])
        counts = [r["status"] for r in self.state["candidates"]]
        result.update(candidates={s: counts.count(s) for s in ("done", "skipped", "failed")}, **paths,
                      journal=str(self.out / STATE))
        self.save()
        result.update(elapsed_s=self.state["elapsed_s"], budget_s=self.state["budget_s"])
        self.say(f"winner: {result['winner'] or 'none (no candidate finished)'}; report {paths['report']}")
        return result

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


def select(rows: list, min_speed: float | None) -> tuple[dict | None, bool]:
    """(the winner, whether it meets the floor). The winner is the best on dev among the
    finished candidates that predict at least ``min_speed`` sentences/s (no floor: among all; a
    tie goes to the faster). When none is that fast, the fastest is the winner and the floor is
    not met: a model the user can deploy, and the report shows how far off it is. Test scores
    play no part."""
    done = [r for r in rows if r["status"] == "done" and r.get("dev") is not None]
    if not done:
        return None, False
    fast = [r for r in done if not min_speed or (r.get("speed") or 0) >= min_speed]
    if fast:
        return max(fast, key=lambda r: (r["dev"], r.get("speed") or 0)), True
    return max(done, key=lambda r: r.get("speed") or 0), False


def deadline(at: float, beat):
    """A Lightning callback that stops a candidate's training once the budget's time for it has
    run out at ``at`` (perf_counter time: the run keeps its best dev epoch so far, is evaluated and
    written as any run), and calls ``beat`` (auto.json's elapsed time rewritten) every
    ``HEARTBEAT_S`` while it trains, so that a kill loses at most that much of the count."""
    from lightning.pytorch.callbacks import Callback

    class Deadline(Callback):
        def __init__(self):
            self.stopped, self.last = False, time.perf_counter()

        def on_train_batch_end(self, trainer, *args) -> None:
            now = time.perf_counter()
            if now - self.last >= HEARTBEAT_S:
                beat()
                self.last = now
            if now >= at and not trainer.should_stop:
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
    """The torch threads throughput is measured with: --threads, else one per core."""
    import os
    return options.get("threads") or os.cpu_count() or 1


def seed_of(options: dict) -> int:
    return 1 if options.get("seed") is None else int(options["seed"])


def command(row: dict, options: dict, out: Path) -> str:
    """The ``adaptext train`` (a student: ``adaptext distill``) command that trains the
    candidate's run again as auto trained it."""
    import shlex
    opts = {**row["plan"]["options"], **data_options(options), "seed": seed_of(options)}
    if options.get("threads"):
        opts["threads"] = options["threads"]
    words = ["adaptext", "distill", str(out / row["teacher"])] if row["teacher"] else ["adaptext", "train"]
    for k, v in {**opts, "out": str(out / row["name"])}.items():
        flag = "--" + k.replace("_", "-")
        words += ([flag] if v else ["--no-" + k.replace("_", "-")]) if isinstance(v, bool) else [flag, str(v)]
    return " ".join(shlex.quote(w) for w in words)


def clock(seconds: float) -> str:
    """1:02:03, 4:05."""
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"
