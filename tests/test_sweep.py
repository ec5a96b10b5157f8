"""adaptext sweep: a grid and a search of trainings, each trial a run directory, resumable."""
from __future__ import annotations

import csv
import json
import os

import pytest

from adaptext.cli import main

optuna = pytest.importorskip("optuna")

from conftest import bundled_examples  # noqa: E402
from adaptext.training.sweep import Dimension, Sweep, study_storage  # noqa: E402

SHARED = ["--filters", "8", "--embed-dim", "16", "--max-length", "12", "--epochs", "2", "--seed", "3"]


@pytest.fixture
def data(tmp_path):
    qs = bundled_examples("text", 400)
    for name, rows in (("train.csv", qs[:300]), ("test.csv", qs[300:])):
        with open(tmp_path / name, "w", newline="") as f:
            csv.writer(f).writerows([("text", "label")] + [(q.text, q.label) for q in rows])
    return ["--data", str(tmp_path / "train.csv"), "--test", str(tmp_path / "test.csv")]


def test_a_grid_trains_every_point_once_and_a_rerun_adds_none(data, tmp_path, capsys):
    out = tmp_path / "sweep"
    argv = ["sweep", "--grid", "lr=0.5,1.0", "batch_size=25,50", "--out", str(out), "--optimizer", "adadelta",
            *SHARED, *data]
    assert main(argv) == 0
    said = capsys.readouterr()
    summary = json.loads(said.out)
    rows = list(csv.DictReader(open(out / "trials.csv")))
    assert summary["complete"] == 4 and len(rows) == 4
    progress = [line for line in said.err.splitlines() if line.startswith("trial trial-")]
    assert len(progress) == 4 and all("dev accuracy" in line for line in progress)      # a line per trial
    assert sorted((r["lr"], r["batch_size"]) for r in rows) == [("0.5", "25"), ("0.5", "50"), ("1.0", "25"),
                                                                ("1.0", "50")]
    for r in rows:                                       # each trial an ordinary run, with its options
        cfg = json.loads((out / f"trial-{r['trial']}" / "config.json").read_text())
        assert cfg["optimisation"]["lr"] == float(r["lr"]) and cfg["optimisation"]["batch_size"] == int(r["batch_size"])
        assert float(r["dev_accuracy"]) == pytest.approx(
            json.loads((out / f"trial-{r['trial']}" / "metrics.json").read_text())["dev"]["accuracy"], abs=1e-3)
    best = max(rows, key=lambda r: float(r["dev_accuracy"]))
    assert summary["best"]["trial"] == int(best["trial"])
    assert (out / "sweep.png").stat().st_size > 0 and (out / "trials.md").read_text().count("\n") == 6
    assert main(argv) == 0                              # resumed: the grid is done, nothing trains again
    assert json.loads(capsys.readouterr().out)["trials"] == 4


def test_processes_sharing_a_study_never_take_the_same_grid_point(tmp_path, monkeypatch):
    # no training: each claimed trial only records which process took it, so the two processes
    # contend for the storage as often as they can
    def claim(self, trial):
        with open(tmp_path / f"claims-{os.getpid()}", "a") as f:
            f.write(f"{trial.number} {self.dims[0].suggest(trial)}\n")
        return 0.0
    monkeypatch.setattr(Sweep, "objective", claim)              # the forked processes inherit it
    sweep = Sweep(tmp_path / "sweep", [Dimension("x", values=tuple(range(40)))], options=None, grid=True)
    sweep.study()
    sweep._optimize_in_processes(40, None, jobs=2)
    claims = [line.split() for f in tmp_path.glob("claims-*") for line in f.read_text().splitlines()]
    assert len(list(tmp_path.glob("claims-*"))) == 2
    assert sorted(int(x) for _, x in claims) == list(range(40))             # every point once, none twice
    assert len({n for n, _ in claims}) == 40
    assert {t.state.name for t in sweep.study(prepare=False).trials} == {"COMPLETE"}


def test_a_trial_cut_short_by_a_kill_runs_again(data, tmp_path, capsys):
    out = tmp_path / "sweep"
    argv = ["sweep", "--grid", "lr=0.5,1.0", "--out", str(out), "--optimizer", "adadelta", *SHARED, *data]
    study = optuna.create_study(study_name="sweep", storage=study_storage(out), direction="maximize")
    killed = study.ask()                                  # a trial that started, then its process died
    killed.suggest_categorical("lr", ["0.5", "1.0"])
    killed.set_user_attr("run", str(out / "trial-0"))
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    rows = list(csv.DictReader(open(out / "trials.csv")))
    assert summary["complete"] == 2 and sorted(r["lr"] for r in rows) == ["0.5", "1.0"]
    assert any(r["run"] == str(out / "trial-0") for r in rows)     # the cut trial ran again in its own folder


def test_a_search_keeps_to_its_budget_and_reports_each_dev_score(data, tmp_path, capsys):
    out = tmp_path / "search"
    assert main(["sweep", "--search", "lr=log:0.1:2", "dropout=0.2:0.6", "--trials", "3", "--optimizer", "adadelta",
                 "--out", str(out), "--retrain", "2", *SHARED, *data]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["trials"] == 3 and summary["retrain"]["seeds"] == [1, 2]
    assert len(summary["retrain"]["accuracy"]) == 2 and summary["retrain"]["split"] == "test"
    study = optuna.load_study(study_name="sweep", storage=study_storage(out))
    assert all(0.1 <= t.params["lr"] <= 2 for t in study.trials)
    assert all(len(t.intermediate_values) == 2 for t in study.trials)   # one dev score per epoch, for pruning


def test_sweep_errors_are_one_line(data, tmp_path, capsys):
    assert main(["sweep", "--search", "lr=0.1:0.5", "--out", str(tmp_path / "s"), *data]) == 2
    assert "needs a budget" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:                # the train parser refuses the value, before any trial
        main(["sweep", "--grid", "lr=fast", "--out", str(tmp_path / "s"), *data])
    assert e.value.code == 2 and "--lr: expected a number, not 'fast'" in capsys.readouterr().err


def test_a_failing_sweep_process_names_its_error_and_keeps_its_traceback(data, tmp_path, capsys, monkeypatch):
    from adaptext.training.sweep import Sweep

    def broken(self, trials, seconds, study=None):
        raise RuntimeError("storage unreachable")
    monkeypatch.setattr(Sweep, "_optimize", broken)          # the forked processes inherit it
    out = tmp_path / "sweep"
    assert main(["sweep", "--grid", "lr=0.5,1.0", "--jobs", "2", "--out", str(out), *SHARED, *data]) != 0
    err = capsys.readouterr().err
    assert "process 0: RuntimeError: storage unreachable" in err and "process 1: RuntimeError" in err
    assert "in broken" in (out / "worker-0.error").read_text()


def test_trials_in_two_processes_share_one_study(data, tmp_path, capsys):
    out = tmp_path / "sweep"
    assert main(["sweep", "--grid", "lr=0.5,1.0", "--jobs", "2", "--out", str(out), "--optimizer", "adadelta",
                 "--threads", "1", *SHARED, *data]) == 0
    rows = list(csv.DictReader(open(out / "trials.csv")))
    assert sorted(r["lr"] for r in rows) == ["0.5", "1.0"] and {r["state"] for r in rows} == {"complete"}


def test_a_second_sweep_on_the_same_out_is_refused_while_the_first_runs(data, tmp_path, capsys):
    from adaptext.runs.files import writer_lock
    out = tmp_path / "sweep"
    argv = ["sweep", "--grid", "lr=0.5,1.0", "--out", str(out), "--optimizer", "adadelta", *SHARED, *data]
    with writer_lock(out, "sweep"):                      # the first sweep, still running
        assert main(argv) == 2
        assert f"process {os.getpid()} (" in capsys.readouterr().err
        assert not (out / "study.log").exists()
    assert main(argv) == 0                              # once it has finished, the folder is the sweep's again
