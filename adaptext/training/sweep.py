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
import math
import time
from dataclasses import dataclass
from pathlib import Path

from lightning.pytorch.callbacks import Callback

from ..data.errors import MissingResource, UsageError
from ..runs.files import write_atomic, write_csv


@dataclass(frozen=True)
class Dimension:
    """One swept option: ``values`` (a grid or a choice), or a range ``low``..``high``
    (``scale``: float, log or int)."""
    name: str
    values: tuple = ()
    low: float = 0.0
    high: float = 0.0
    scale: str = "choice"

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
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def study_storage(out: Path):
    """The study's storage, a journal file in OUT. Processes of one sweep hand trials out through
    it: a journal appends each claim under a file lock, so a waiting trial goes to the first
    process that claims it (SQLite reads a trial's state and marks it running in two steps, and
    two processes could both take the same grid point)."""
    from optuna.storages.journal import JournalFileBackend, JournalStorage
    Path(out).mkdir(parents=True, exist_ok=True)
    return JournalStorage(JournalFileBackend(str(Path(out) / "study.log")))


@dataclass
class Sweep:
    """``options(params, out)``: a trial's train options (typed and checked) for its params."""
    out: Path
    dims: list
    options: object
    grid: bool
    monitor: str = "accuracy"

    def study(self, prepare: bool = True):
        """The sweep's study (made, or loaded from OUT/study.log); ``prepare``: retry the trials a
        killed sweep left running, and enqueue the grid's points not trained yet."""
        optuna = _optuna()
        sampler = optuna.samplers.TPESampler(seed=0)        # a grid's points are all enqueued: never sampled
        # a grid is measured at every point (a figure needs them all); a search gives up on trials
        # whose dev score falls below the median of earlier trials at the same epoch
        pruner = optuna.pruners.NopPruner() if self.grid else optuna.pruners.MedianPruner(n_startup_trials=3)
        study = optuna.create_study(study_name="sweep", storage=study_storage(self.out), direction="maximize",
                                    sampler=sampler, pruner=pruner, load_if_exists=True)
        if not prepare:
            return study
        self._retry_interrupted(study)
        if self.grid:
            self._enqueue_grid(study)
        return study

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
        from .run import train_run
        params = {d.name: d.suggest(trial) for d in self.dims}
        run = trial.user_attrs.get("run") or str(self.out / f"trial-{trial.number}")
        trial.set_user_attr("run", run)
        resume = (Path(run) / "checkpoints" / "last.ckpt").exists() or any(Path(run).glob("fold-*/checkpoints"))
        opts = {"resume": run} if resume else self.options(params, run)
        metrics = train_run(opts, log=lambda m: None, callbacks=[PruneOnDev(trial)])
        return dev_score(metrics, self.monitor)

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
        study.optimize(self.objective, n_trials=trials, timeout=seconds, catch=(UsageError,))

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
        rows = [{"trial": t.number, **{d.name: t.params.get(d.name) for d in self.dims},
                 f"dev_{self.monitor}": None if t.value is None else round(t.value, 4), "state": t.state.name.lower(),
                 "seconds": round((t.datetime_complete - t.datetime_start).total_seconds(), 1)
                 if t.datetime_complete and t.datetime_start else None, "run": t.user_attrs.get("run")}
                for t in study.trials if t.state.name != "FAIL"]
        write_csv(self.out / "trials.csv", rows)
        write_atomic(self.out / "trials.json", rows)
        (self.out / "trials.md").write_text(_markdown(rows))
        self.plot(rows)
        done = [r for r in rows if r["state"] == "complete"]
        best = max(done, key=lambda r: r[f"dev_{self.monitor}"]) if done else None
        summary = {"trials": len(rows), "complete": len(done), "pruned": sum(r["state"] == "pruned" for r in rows),
                   "best": best, "table": str(self.out / "trials.md"), "plot": str(self.out / "sweep.png")}
        write_atomic(self.out / "best.json", summary)
        log(f"{len(done)} trial(s) complete; best: {best}")
        return summary

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
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join("" if r[c] is None else str(r[c]) for c in cols) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def retrain(best: dict, options, dims: list, out: Path, seeds: list[int], monitor: str, log=print) -> dict:
    """The best trial's options trained again with each seed: test (else dev) mean and spread."""
    from .run import train_run
    params = {d.name: best[d.name] for d in dims}
    scores = []
    for seed in seeds:
        run = out / f"best-seed{seed}"
        m = train_run(dict(options(params, str(run)), seed=seed), log=lambda message: None)
        scores.append(m.get("test", m["dev"])[monitor])
    mean = sum(scores) / len(scores)
    std = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
    result = {"params": params, "seeds": seeds, "split": "test" if "test" in m else "dev", monitor: scores,
              "mean": round(mean, 4), "std": round(std, 4)}
    write_atomic(out / "retrain.json", result)
    log(f"best options over seeds {seeds}: {mean:.2f} +- {std:.2f}")
    return result


def sweep_run(specs: list[str], search: bool, options, out, trials: int | None = None, seconds: float | None = None,
              retrain_seeds: list[int] | None = None, monitor: str = "accuracy", log=print, jobs: int = 1) -> dict:
    """Run (or resume) a sweep of ``specs`` (see ``parse_dimensions``); its summary.
    ``options(params, run_dir)``: a trial's train options (typed and checked)."""
    if search and not trials and not seconds:
        raise UsageError("a search needs a budget: --trials N and/or --time 30m")
    started = time.perf_counter()
    dims = parse_dimensions(specs, search)
    options(_first_values(dims), str(Path(out) / "check"))       # a bad option or value is said before any trial
    sweep = Sweep(Path(out), dims, options, not search, monitor)
    summary = sweep.run(trials if search else None, seconds, log, jobs)
    if retrain_seeds and summary["best"]:
        summary["retrain"] = retrain(summary["best"], options, dims, Path(out), retrain_seeds, monitor, log)
    summary["seconds"] = round(time.perf_counter() - started, 1)
    write_atomic(Path(out) / "best.json", summary)
    return summary
