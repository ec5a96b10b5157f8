"""Sweeps over any train options: a grid, or a search within a trial or time budget (Optuna's
TPE sampler; trials that fall behind on dev are pruned by its median rule). Each trial is an
ordinary run directory; the study is kept in SQLite beside them, so a sweep killed and started
again keeps its finished trials and resumes the one cut short from its last checkpoint. The
results: a table of trials (CSV, Markdown, JSON), a plot of the dev score against each swept
option, and optionally the best options trained again over several seeds.

    adaptext sweep --model kim_cnn --data trec-demo --grid lr=1e-3,3e-3 filters=50,100 --out sweeps/kim
    adaptext sweep --model kim_cnn --data sst2 --search lr=log:1e-4:1e-2 dropout=0.2:0.6 --trials 20 --out s
"""
from __future__ import annotations

import itertools
import json
import math
import sys
import re
import time
from dataclasses import dataclass
from typing import Any, Callable
from pathlib import Path

from lightning.pytorch.callbacks import Callback

from ..errors import DataError, MissingResource, UsageError
from ..runs.files import read_json, write_atomic, write_csv, writer_lock
from ..runs.metrics import default_monitor, monitor_of
from ..tables import markdown_table
from ..runs.rundir import RunDir


@dataclass(frozen=True)
class Dimension:
    """One swept option: ``values`` (a grid or a choice), or a range ``low``..``high``
    (``scale``: float, log or int)."""
    name: str
    values: tuple = ()
    low: float = 0.0
    high: float = 0.0
    scale: str = "choice"

    @property
    def spec(self) -> str:
        """The dimension as ``--grid`` / ``--search`` take it."""
        if self.scale == "choice":
            return f"{self.name}={','.join(map(str, self.values))}"
        prefix = "" if self.scale == "float" else f"{self.scale}:"
        return f"{self.name}={prefix}{self.low:g}:{self.high:g}"

    def edges(self) -> list:
        """The values that bound what a trial may get: every value of a grid or choice, the two
        ends of a range."""
        if self.scale == "choice":
            return list(self.values)
        return [int(self.low), int(self.high)] if self.scale == "int" else [self.low, self.high]

    def suggest(self, trial):
        if self.scale == "choice":
            return trial.suggest_categorical(self.name, list(self.values))
        if self.scale == "int":
            return trial.suggest_int(self.name, int(self.low), int(self.high))
        return trial.suggest_float(self.name, self.low, self.high, log=self.scale == "log")


def parse_dimensions(specs: list[str], search: bool) -> list[Dimension]:
    """``name=a,b,c`` (values); in a search also ``name=LOW:HIGH``, ``name=log:LOW:HIGH``,
    ``name=int:LOW:HIGH``. Values stay strings here: the train parser types and checks them."""
    dims = []
    for spec in specs:
        name, eq, rest = spec.partition("=")
        if not eq or not name or not rest:
            raise UsageError(f"{spec!r}: a swept option is NAME=V1,V2,... or (with --search) NAME=LOW:HIGH, "
                             "NAME=log:LOW:HIGH, NAME=int:LOW:HIGH")
        name = name.strip().lstrip("-").replace("-", "_")
        parts = rest.split(":")
        if search and ":" in rest:
            scale = parts[0] if parts[0] in ("log", "int") else "float"
            bounds = parts[1:] if scale != "float" else parts
            try:
                low, high = (float(b) for b in bounds)
            except ValueError:
                raise UsageError(f"{spec!r}: expected two numbers LOW:HIGH") from None
            if not low < high or (scale == "log" and low <= 0):
                raise UsageError(f"{spec!r}: LOW must be below HIGH{' and above 0 on a log scale' * (scale == 'log')}")
            dims.append(Dimension(name, low=low, high=high, scale=scale))
        else:
            dims.append(Dimension(name, values=tuple(v.strip() for v in rest.split(","))))
    if len({d.name for d in dims}) < len(dims):
        raise UsageError("an option is swept twice")
    return dims


# ------------------------------------------------------------------ the study
def _optuna():
    try:
        import optuna
    except ImportError as e:
        raise MissingResource("adaptext sweep needs Optuna: pip install 'adaptext[sweep]'") from e
    # a failed trial is reported by the sweep (a row with its error, the traceback in its folder),
    # not by Optuna's warning and traceback on the terminal
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    return optuna


def study_storage(out: Path):
    """The study's storage, a journal file in OUT. Processes of one sweep hand trials out through
    it: a journal appends each claim under a file lock, so a waiting trial goes to the first
    process that claims it (SQLite reads a trial's state and marks it running in two steps, and
    two processes could both take the same grid point)."""
    from optuna.storages.journal import JournalFileBackend, JournalStorage
    Path(out).mkdir(parents=True, exist_ok=True)
    return JournalStorage(JournalFileBackend(str(Path(out) / "study.log")))


def repair_journal(path: Path) -> None:
    """Drops a last line cut short (a sweep killed while it appended): Optuna reads such a line
    as never written, but would join the next line it appends to it, and the journal would no
    longer load. A line that is not JSON anywhere else is a ``DataError`` naming it."""
    if not path.is_file():
        return
    from optuna.storages.journal import JournalFileSymlinkLock
    lock = JournalFileSymlinkLock(str(path))     # the lock Optuna's appends hold
    lock.acquire()
    try:
        data = path.read_bytes()
        *lines, cut = data.split(b"\n")          # cut: what follows the last newline
        for number, line in enumerate(lines, 1):
            try:
                json.loads(line)
            except ValueError:
                raise DataError(path, number, "not a line of the sweep's journal (Optuna's): remove the line, "
                                              "or sweep into another --out") from None
        if cut:
            with open(path, "r+b") as f:
                f.truncate(len(data) - len(cut))
    finally:
        lock.release()


@dataclass
class Sweep:
    """``options(params, out)``: a trial's train options (typed and checked) for its params."""
    out: Path
    dims: list
    options: Callable[[dict[str, Any], str], dict[str, Any]]
    grid: bool
    monitor: str | None = None      # None: the trials' own (the trainer's default for their data)
    shared: dict | None = None      # the options every trial shares (see ``shared_options``)

    def study(self, prepare: bool = True):
        """The sweep's study (made, or loaded from OUT/study.log); ``prepare``: retry the trials a
        killed sweep left running, and enqueue the grid's points not trained yet."""
        optuna = _optuna()
        if prepare:                                          # before any process of the sweep appends
            repair_journal(self.out / "study.log")
        sampler = optuna.samplers.TPESampler(seed=0)        # a grid's points are all enqueued: never sampled
        # a grid is measured at every point (a figure needs them all); a search gives up on trials
        # whose dev score falls below the median of earlier trials at the same epoch
        pruner = optuna.pruners.NopPruner() if self.grid else optuna.pruners.MedianPruner(n_startup_trials=3)
        study = optuna.create_study(study_name="sweep", storage=study_storage(self.out), direction="maximize",
                                    sampler=sampler, pruner=pruner, load_if_exists=True)
        if not prepare:
            return study
        self._check_same_sweep(study)
        self._retry_interrupted(study)
        if self.grid:
            self._enqueue_grid(study)
        return study

    def _identity(self) -> dict:
        return {"kind": "grid" if self.grid else "search", "dims": [d.spec for d in self.dims],
                "options": self.shared or {}}

    def _check_same_sweep(self, study) -> None:
        """A study in OUT made with another model, other options, another grid or search space
        is refused: its trials would be reported as this sweep's."""
        mine, theirs = self._identity(), study.user_attrs.get("sweep")
        if theirs is None:                   # a new study (or one written before studies kept this)
            study.set_user_attr("sweep", mine)
            return
        said = []
        if (theirs["kind"], theirs["dims"]) != (mine["kind"], mine["dims"]):
            said.append(f"--{theirs['kind']} {' '.join(theirs['dims'])}, not --{mine['kind']} {' '.join(mine['dims'])}")
        old, new = theirs["options"], mine["options"]
        keys = ["model"] if old.get("model") != new.get("model") else sorted(set(old) | set(new))
        said += [f"--{k.replace('_', '-')} {old.get(k)}, not {new.get(k)}" for k in keys if old.get(k) != new.get(k)]
        if said:
            more = f" and {len(said) - 3} more" if len(said) > 3 else ""
            raise UsageError(f"{self.out} holds a sweep made with other options ({'; '.join(said[:3])}{more}): "
                             f"rerun it as it was made, or sweep into another --out")

    def _enqueue_grid(self, study) -> None:
        """Every point of the grid not yet trained (nor waiting) becomes a waiting trial."""
        optuna = _optuna()
        names, states = [d.name for d in self.dims], optuna.trial.TrialState
        seen = {tuple(sorted(t.params.items())) for t in study.trials if t.state in (states.COMPLETE, states.PRUNED)}
        seen |= {tuple(sorted(t.system_attrs.get("fixed_params", {}).items()))
                 for t in study.trials if t.state == states.WAITING}
        for values in itertools.product(*(d.values for d in self.dims)):
            if tuple(sorted(zip(names, values))) not in seen:
                study.enqueue_trial(dict(zip(names, values)))

    def _retry_interrupted(self, study) -> None:
        """Trials left running by a killed sweep fail, and run again from their checkpoints."""
        optuna = _optuna()
        for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
            study.tell(t.number, state=optuna.trial.TrialState.FAIL)
            study.enqueue_trial(t.params, user_attrs={"run": t.user_attrs.get("run")})

    def objective(self, trial) -> float:
        params = {d.name: d.suggest(trial) for d in self.dims}
        run = trial.user_attrs.get("run") or str(self.out / f"trial-{trial.number}")
        trial.set_user_attr("run", run)
        started = time.perf_counter()
        try:
            metrics = self._train(trial, params, Path(run))
            self.monitor = self.monitor or monitor_of(metrics)
            score = dev_score(metrics, self.monitor)
        except _optuna().TrialPruned:
            print(f"trial {Path(run).name}: pruned", file=sys.stderr, flush=True)
            raise
        except Exception as e:               # the trial fails; the sweep goes on with the others
            trial.set_user_attr("error", RunDir(run).record_failure(e))
            print(f"trial {Path(run).name}: failed ({trial.user_attrs['error']})", file=sys.stderr, flush=True)
            raise
        shown = ", ".join(f"{k}={v}" for k, v in params.items())
        print(f"trial {Path(run).name} ({shown}): dev {self.monitor} {score:.2f}, "
              f"{time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
        return score

    def _train(self, trial, params: dict, run: Path) -> dict:
        """The trial's metrics: its run trained, resumed from its checkpoint, or read back when it
        finished before a kill kept the sweep from recording it."""
        from .run import trained
        return trained(RunDir(run), self.options(params, str(run)), log=lambda m: None,
                       callbacks=[PruneOnDev(trial)], resume_options={})

    def run(self, trials: int | None, seconds: float | None, log=print, jobs: int = 1) -> dict:
        """A search's ``trials`` in all (those a killed sweep finished count); a grid trains
        the points it has not trained yet. ``jobs``: trials trained at once, in processes."""
        study = self.study()
        if self.grid:
            left = sum(t.state.name == "WAITING" for t in study.trials)
        else:
            done = sum(t.state.is_finished() for t in study.trials if t.state.name != "FAIL")
            left = None if trials is None else max(0, trials - done)
        if left != 0 and jobs > 1:
            self._optimize_in_processes(left, seconds, jobs)
            study = self.study(prepare=False)
        elif left != 0:
            self._optimize(left, seconds, study)
        return self.report(study, log)

    def _optimize(self, trials: int | None, seconds: float | None, study=None) -> None:
        study = study or self.study(prepare=False)
        study.optimize(self.objective, n_trials=trials, timeout=seconds, catch=(Exception,))

    def _optimize_in_processes(self, left: int | None, seconds: float | None, jobs: int) -> None:
        """``jobs`` processes sharing the study: each takes waiting trials (a grid's points) or
        samples new ones, the storage handing every trial to one process only."""
        import multiprocessing
        if "fork" not in multiprocessing.get_all_start_methods():
            raise UsageError("--jobs above 1 needs processes that fork (Linux, macOS)")
        shares = [None] * jobs if left is None else [left // jobs + (k < left % jobs) for k in range(jobs)]
        ctx = multiprocessing.get_context("fork")
        procs = {k: ctx.Process(target=self._worker, args=(k, n, seconds)) for k, n in enumerate(shares) if n != 0}
        for p in procs.values():
            p.start()
        for p in procs.values():
            p.join()
        failed = {k: p.exitcode for k, p in procs.items() if p.exitcode}
        if failed:
            said = "; ".join(self._failure(k, code) for k, code in failed.items())
            raise UsageError(f"sweep processes failed ({said}); run the command again to resume")

    def _failure(self, k: int, code: int) -> str:
        log = self._worker_log(k)
        if not log.exists():
            return f"process {k} exited with code {code}"
        return f"process {k}: {log.read_text().strip().splitlines()[-1]} (traceback in {log})"

    def _worker_log(self, k: int) -> Path:
        return self.out / f"worker-{k}.error"

    def _worker(self, k: int, trials: int | None, seconds: float | None) -> None:
        """One sweep process; its traceback is kept in a file, since a forked child's stderr
        may be captured or closed by whatever started the sweep."""
        import traceback
        self._worker_log(k).unlink(missing_ok=True)
        try:
            self._optimize(trials, seconds)
        except BaseException:
            self._worker_log(k).write_text(traceback.format_exc())
            raise

    # ------------------------------------------------------------------ results
    def report(self, study, log=print) -> dict:
        self.monitor = self.monitor or self._trials_monitor(study)
        rows = [self._row(t) for t in _reported(study.trials)]
        write_csv(self.out / "trials.csv", rows)
        write_atomic(self.out / "trials.json", rows)
        (self.out / "trials.md").write_text(_markdown(rows))
        self.plot(rows)
        done = [r for r in rows if r["state"] == "complete"]
        failed = [r for r in rows if r["state"] == "fail"]
        best = max(done, key=lambda r: r[f"dev_{self.monitor}"]) if done else None
        summary = {"trials": len(rows), "complete": len(done), "pruned": sum(r["state"] == "pruned" for r in rows),
                   "failed": len(failed), "best": best, "table": str(self.out / "trials.md"),
                   "plot": str(self.out / "sweep.png")}
        write_atomic(self.out / "best.json", summary)
        log(f"{len(done)} trial(s) complete; best: {best}")
        if failed:
            first = failed[0]
            log(f"{len(failed)} trial(s) failed (see {self.out / 'trials.md'}); trial {first['trial']}: "
                f"{first['error']} (traceback in {RunDir(first['run']).error})")
        return summary

    def _trials_monitor(self, study) -> str:
        """The metric the trials were trained by (trained in other processes, or before a resume)."""
        for t in study.trials:
            run = RunDir(t.user_attrs.get("run") or self.out / "none")
            if t.state.name == "COMPLETE" and run.metrics.is_file():
                return monitor_of(read_json(run.metrics))
        return default_monitor(False)

    def _row(self, t) -> dict:
        return {"trial": _trial_number(t), **{d.name: t.params.get(d.name) for d in self.dims},
                f"dev_{self.monitor}": None if t.value is None else round(t.value, 4), "state": t.state.name.lower(),
                "seconds": round((t.datetime_complete - t.datetime_start).total_seconds(), 1)
                if t.datetime_complete and t.datetime_start else None, "run": t.user_attrs.get("run"),
                "error": t.user_attrs.get("error")}

    def plot(self, rows: list) -> None:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        key = f"dev_{self.monitor}"
        done = [r for r in rows if r[key] is not None]
        fig, axes = plt.subplots(1, len(self.dims), figsize=(4 * len(self.dims), 3.2), squeeze=False)
        for ax, d in zip(axes[0], self.dims):
            xs = [r[d.name] for r in done]
            numeric = all(_is_number(x) for x in xs)
            ax.scatter([float(x) for x in xs] if numeric else [str(x) for x in xs], [r[key] for r in done])
            if d.scale == "log" or (numeric and xs and min(map(float, xs)) > 0 and _spread(xs) >= 10):
                ax.set_xscale("log")
            ax.set_xlabel(d.name)
            ax.set_ylabel(key)
        fig.tight_layout()
        fig.savefig(self.out / "sweep.png", dpi=120)
        plt.close(fig)


def _reported(trials: list) -> list:
    """The trials of the table: a failure is reported (with its error) unless a later trial
    took the same point again; a trial that a kill cut short and that ran again is not."""
    out = []
    for k, t in enumerate(trials):
        if t.state.name == "FAIL":
            again = any(u.params == t.params for u in trials[k + 1:])
            if "error" not in t.user_attrs or again:
                continue
        out.append(t)
    return out


def _trial_number(t) -> int:
    """The number of the trial's folder (trial-N): a trial run again after a kill keeps its
    folder, while Optuna numbers it anew."""
    found = re.fullmatch(r"trial-(\d+)", Path(t.user_attrs.get("run") or "").name)
    return int(found.group(1)) if found else t.number


def _first_values(dims: list) -> dict:
    return {d.name: d.values[0] if d.values else (int(d.low) if d.scale == "int" else d.low) for d in dims}


def dev_score(metrics: dict, monitor: str) -> float:
    dev = metrics.get("dev", {})
    if monitor not in dev:
        raise UsageError(f"the runs report no dev {monitor}")
    return float(dev[monitor])


class PruneOnDev(Callback):
    """Reports each dev score to the trial, and stops a trial the pruner gives up on."""

    def __init__(self, trial):
        self.trial, self.step = trial, 0

    def on_validation_end(self, trainer, pl_module):
        score = trainer.callback_metrics.get("dev_score")
        if score is None or trainer.sanity_checking:
            return
        self.step += 1                  # folds of a cross-validated trial continue the count
        self.trial.report(float(score), self.step)
        if self.trial.should_prune():
            raise _optuna().TrialPruned(f"dev score {float(score):.4f} at evaluation {self.step}")


def _is_number(x) -> bool:
    try:
        float(x)
        return not isinstance(x, bool)
    except (TypeError, ValueError):
        return False


def _spread(xs) -> float:
    values = [float(x) for x in xs]
    return max(values) / min(values) if values and min(values) > 0 else 0.0


def _markdown(rows: list) -> str:
    if not rows:
        return "no trials\n"
    cols = list(rows[0])
    return markdown_table(cols, ([r[c] for c in cols] for r in rows))


def retrain(best: dict, options, dims: list, out: Path, seeds: list[int], monitor: str, log=print) -> dict:
    """The best trial's options trained again with each seed: test (else dev) mean and spread."""
    from .run import trained
    params = {d.name: best[d.name] for d in dims}
    scores = []
    for seed in seeds:
        run = out / f"best-seed{seed}"
        m = trained(RunDir(run), dict(options(params, str(run)), seed=seed), log=lambda message: None)
        scores.append(m.get("test", m["dev"])[monitor])
    mean = sum(scores) / len(scores)
    std = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
    result = {"params": params, "seeds": seeds, "split": "test" if "test" in m else "dev", monitor: scores,
              "mean": round(mean, 4), "std": round(std, 4)}
    write_atomic(out / "retrain.json", result)
    log(f"best options over seeds {seeds}: {mean:.2f} +- {std:.2f}")
    return result


def shared_options(dims: list, options, out: Path) -> dict:
    """Every value a trial may get (each grid value, each end of a range) checked as ``adaptext
    train`` checks it, the other swept options at their first values; then the options the
    trials share (those that make the study what it is: not the swept ones, nor where and how
    fast the runs are written), as the study keeps them."""
    from ..contract import PATH_KEYS, RESUME_MAY_CHANGE
    from ..runs.options import check_new_run, resolve
    first, run = _first_values(dims), str(out / "check")
    for d in dims:
        for value in d.edges():
            try:
                check_new_run(resolve(options({**first, d.name: value}, run)))
            except UsageError as e:
                raise UsageError(f"{d.name}={value}: {e}") from None
    cfg = resolve(options(first, run))
    free = set(RESUME_MAY_CHANGE) - {"epochs", "max_steps"} | {"out", "resume", "store", "deterministic"}
    shared = {k: v for k, v in cfg.flat().items() if k not in free and k not in {d.name for d in dims}}
    for k in PATH_KEYS:
        if shared.get(k) and Path(shared[k]).exists():       # the same file, from wherever the sweep is run
            shared[k] = str(Path(shared[k]).resolve())
    return json.loads(json.dumps(shared))                    # as the study gives it back (tuples as lists)


def sweep_run(specs: list[str], search: bool, options, out, trials: int | None = None, seconds: float | None = None,
              retrain_seeds: list[int] | None = None, monitor: str | None = None, log=print, jobs: int = 1) -> dict:
    """Run (or resume) a sweep of ``specs`` (see ``parse_dimensions``); its summary.
    ``options(params, run_dir)``: a trial's train options (typed and checked)."""
    if search and not trials and not seconds:
        raise UsageError("a search needs a budget: --trials N and/or --time 30m")
    if seconds is not None and not (math.isfinite(seconds) and seconds > 0):
        raise UsageError(f"--time must be a duration above 0 (90s, 30m, 2h), not {seconds:g} seconds")
    if Path(out).exists() and not Path(out).is_dir():
        raise DataError(out, None, "--out is a file, not the sweep's folder")
    started = time.perf_counter()
    dims = parse_dimensions(specs, search)
    shared = shared_options(dims, options, Path(out))      # every value is checked before any trial
    with writer_lock(out, "sweep"):                       # a second sweep on the same --out is refused
        sweep = Sweep(Path(out), dims, options, not search, monitor, shared)
        summary = sweep.run(trials if search else None, seconds, log, jobs)
        if retrain_seeds and summary["best"]:
            monitor = sweep.monitor or default_monitor(False)          # a best trial has set it
            summary["retrain"] = retrain(summary["best"], options, dims, Path(out), retrain_seeds, monitor, log)
        summary["seconds"] = round(time.perf_counter() - started, 1)
        write_atomic(Path(out) / "best.json", summary)
    return summary
