"""adaptext auto: the plan under small and large budgets (a larger budget buys the students more),
the selection rule (the speed floor, absolute or relative to the teacher; never under the linear
baseline), the throughput pass beside a busy process, resume (a finished candidate read back, a
cut one resumed, Ctrl-C), OUT/best, the report's numbers against the runs' metrics files, the
one-line errors, and multi-label data (micro-F1, no distillation). Runs train on small slices of
the bundled TREC questions, at one thread."""
from __future__ import annotations

import csv
import json
import re
import shutil
import time

import pytest
import torch
from conftest import bundled_examples

from adaptext.auto import plan as P
from adaptext.auto.report import candidate_table, summary_lines
from adaptext.auto.runner import deadline, run_auto, select
from adaptext.auto.state import Floor, Row, read_state
from adaptext.cli import main

torch.set_num_threads(1)         # the machine's cores are shared: one thread, as the suite's other runs
TREC = P.DataSummary(train=4906, dev=546, test=500, mean_length=10.2, classes=6)   # the bundled demo


def planned(found):
    return [c.name for c in found if not c.skip]


def write_csv(path, rows, labels=None):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        for k, q in enumerate(rows):
            w.writerow([q.text, labels[k] if labels else q.label])
    return str(path)


@pytest.fixture(scope="module")
def questions(tmp_path_factory):
    folder = tmp_path_factory.mktemp("auto-data")
    qs = bundled_examples("text", 420)
    return write_csv(folder / "train.csv", qs[:320]), write_csv(folder / "test.csv", qs[320:])


# ------------------------------------------------------------------ the plan
def test_a_small_budget_plans_the_baselines_and_skips_the_teacher_saying_why():
    found = P.make_plan(TREC, 180, encoder=True)
    assert planned(found) == ["fasttext", "bov", "kim_cnn", "kim_cnn-vectors"]
    teacher = next(c for c in found if c.name == "transformer")
    assert teacher.skip.startswith("needs ") and "; the budget leaves " in teacher.skip
    students = [c for c in found if c.role == "student"]
    assert [c.teacher for c in students] == ["transformer"] * 4
    assert all(c.skip in ("its teacher, transformer, is not trained", "not in the recipe the budget affords")
               for c in students)
    assert sum(c.estimate_s for c in found if not c.skip) <= 180 - P.START_S - P.FINISH_S


def test_a_large_budget_plans_the_teacher_and_its_students_with_their_epochs():
    found = P.make_plan(TREC, 4 * 3600, encoder=True, threads=2)
    assert planned(found) == ["fasttext", "bov", "kim_cnn", "kim_cnn-vectors", "transformer", "transformer-seed2",
                              "transformer-seed3", "bilstm-pieces-distilled", "bilstm-distilled", "kim_cnn-distilled",
                              "bilstm-pieces-wide-distilled"]
    by = {c.name: c for c in found}
    assert by["transformer"].options == {**P.TEACHER}
    richest = P.RECIPES[-1]
    assert by["bilstm-distilled"].options == {**P.BILSTM, "alpha": 0.0, "augment": richest.copies,
                                              "epochs": richest.epochs}
    assert by["bilstm-pieces-distilled"].options == {**by["bilstm-distilled"].options, "tokenizer": "subword",
                                                     "embeddings": "transformer", "embedding_mode": "static"}
    # its pieces' vectors are the encoder's input rows: no pass of the encoder over the vocabulary
    assert by["bilstm-pieces-distilled"].key == "lstm-pieces"
    pieces, words = (P.Candidate(n, dict(by[n].options), "transformer") for n in ("bilstm-pieces-distilled",
                                                                                   "bilstm-distilled"))
    assert P.cost_candidate(pieces, TREC, 2) == P.cost_candidate(words, TREC, 2) > 0     # the same teacher logits
    assert pieces.fixed_s == pytest.approx(words.fixed_s + P.ENCODER_LOAD_S)
    assert pieces.epoch_s < words.epoch_s
    assert by["bilstm-pieces-wide-distilled"].options["hidden"] == P.WIDE_HIDDEN
    assert [by[f"transformer-seed{k}"].seed_offset for k in (2, 3)] == [1, 2]
    assert by["kim_cnn-vectors"].options["embeddings"] == "transformer"
    assert by["transformer"].estimate_s > by["kim_cnn"].estimate_s > by["bov"].estimate_s > 0
    assert not any(c.notes for c in found)                           # nothing capped


SST2 = P.DataSummary(train=6920, dev=872, test=1821, mean_length=19.29985549132948, classes=2)   # as auto reads it


def test_from_five_copies_each_richer_recipe_costs_the_students_at_most_half_as_much_again():
    """The ladder leaves no more than a third of the students' time unspent where the next rung
    does not fit: each rung's first student (its epochs and the teacher's logits) against the last."""
    def student_s(recipe):
        c = next(c for c in P.pool(P.ExampleKind.TEXT, recipe) if c.name == "bilstm-pieces-distilled")
        logits = P.cost_candidate(c, SST2, 2)
        return c.cost(c.work) + logits
    rungs = {r.copies: r for r in reversed(P.RECIPES) if r.copies >= 5 and r.epochs == 5}   # the first of each
    copies = [rungs[k] for k in sorted(rungs)]
    assert [r.copies for r in copies] == [5, 7, 10, 15, 20, 30, 40]
    for poorer, richer in zip(copies, copies[1:]):
        assert 1.0 < student_s(richer) / student_s(poorer) <= 1.5, (poorer, richer)


def test_the_recipe_is_the_first_students_and_the_fallback_students_get_what_it_leaves():
    found = {c.name: c for c in P.make_plan(SST2, 30 * 60, encoder=True, threads=2)}
    first, words, cnn = (found[n] for n in ("bilstm-pieces-distilled", "bilstm-distilled", "kim_cnn-distilled"))
    recipe = P.RECIPES[first.recipe - 1]
    assert not first.fallback and words.fallback and cnn.fallback
    assert first.work == recipe.epochs and not first.notes
    assert words.work < recipe.epochs and cnn.work < recipe.epochs
    assert not words.skip and not cnn.skip                               # at least their minimum
    # the same recipe with every student whole does not fit: counted so, the plan would be poorer
    seconds = 30 * 60 - P.START_S - P.FINISH_S
    whole, logits = P.costed(P.pool(P.ExampleKind.TEXT, recipe), SST2, (P.ExampleKind.TEXT,), False, None, 2)
    assert P.whole_cost(whole, logits) <= seconds
    for c in whole:
        c.fallback = False
    assert P.whole_cost(whole, logits) > seconds


@pytest.mark.parametrize("summary", [TREC, SST2, P.DataSummary(train=8636, dev=960, test=1066, mean_length=21.0)],
                         ids=["trec-demo", "sst2", "mr-fold"])
def test_no_plan_spends_more_than_its_budget(summary):
    for minutes in (10, 20, 30, 45, 60, 120, 180):
        found = P.make_plan(summary, minutes * 60, encoder=True, threads=2)
        spent = sum(c.estimate_s for c in found if not c.skip)
        assert spent <= minutes * 60 - P.START_S - P.FINISH_S + 1, (minutes, [(c.name, c.work, c.estimate_s)
                                                                               for c in found if not c.skip])


def test_a_tight_budget_caps_epochs_and_no_encoder_skips_what_needs_it():
    budget = 8 * 60
    found = P.make_plan(TREC, budget, encoder=True)
    assert "transformer" in planned(found)
    assert any("planned, to fit the budget" in n for c in found for n in c.notes)
    assert sum(c.estimate_s for c in found if not c.skip) <= budget
    without = P.make_plan(TREC, 4 * 3600, encoder=False)
    assert planned(without) == ["fasttext", "bov", "kim_cnn"]
    assert next(c for c in without if c.name == "transformer").skip.startswith("needs the pretrained encoder")


def test_pairs_plan_only_pair_models_and_multilabel_data_no_distillation():
    pairs = P.make_plan(P.DataSummary(4000, 400, 400, 18.0, kind="pair"), 4 * 3600, kinds=("pair",), encoder=True)
    assert planned(pairs) == ["attconv", "transformer", "transformer-seed2", "transformer-seed3", "attconv-distilled"]
    assert next(c for c in pairs if c.name == "bov").skip == "bov reads text examples, not pair"
    multi = P.make_plan(TREC, 4 * 3600, multilabel=True, encoder=True)
    assert planned(multi) == ["fasttext", "bov", "kim_cnn", "kim_cnn-vectors", "transformer"]
    assert all("multi-label" in c.skip for c in multi if c.role in ("student", "ensemble"))


def test_a_budget_too_short_for_anything_is_one_line(questions, tmp_path, capsys):
    train, test = questions
    assert main(["auto", "--data", train, "--test", test, "--time", "5s", "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: --time 5 s is too short for even the first candidate "
                                                     "(fasttext")
    assert "give --time" in err and not (tmp_path / "a" / "auto.json").exists()


def test_dry_run_prints_the_plan_and_writes_nothing(questions, tmp_path, capsys):
    train, test = questions
    argv = ["auto", "--data", train, "--test", test, "--time", "20m", "--dry-run", "--out", str(tmp_path / "d")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("candidate") and re.search(r"^fasttext +fasttext +5 +\d+\.\d +pending", out, re.M)
    assert "min budget" in out and not (tmp_path / "d").exists()


# ------------------------------------------------------------------ selection
def test_the_winner_is_the_best_on_dev_at_or_above_the_floor():
    rows = [Row("slow", status="done", dev=95.0, speed=300.0, ratio=1.0),
            Row("mid", status="done", dev=90.0, speed=5000.0, ratio=16.7),
            Row("quick", status="done", dev=85.0, speed=20000.0, ratio=66.7),
            Row("tied", status="done", dev=90.0, speed=8000.0, ratio=26.7),
            Row("off", status="skipped")]
    assert select(rows, None) == (rows[0], True)                     # no floor: the best on dev
    assert select(rows, Floor(5000)) == (rows[3], True)              # a tie on dev goes to the faster
    assert select(rows, Floor(10000)) == (rows[2], True)
    assert select(rows, Floor(50000)) == (rows[2], False)            # none that fast: the fastest, floor not met
    assert select(rows, Floor(25, relative=True)) == (rows[3], True)   # 25x the teacher's speed
    assert select(rows, Floor(30, relative=True)) == (rows[2], True)
    assert select(rows[4:], None) == (None, False)


def test_the_winner_is_never_under_the_linear_baseline_on_dev():
    linear = Row(P.LINEAR, status="done", dev=88.0, speed=40000.0, ratio=130.0)
    rows = [linear, Row("mid", status="done", dev=87.0, speed=9000.0, ratio=30.0),
            Row("teacher", status="done", dev=95.0, speed=300.0, ratio=1.0)]
    assert select(rows, Floor(25, relative=True)) == (linear, True)  # every fast one worse on dev: the linear one
    assert select(rows, None) == (rows[2], True)
    better = Row("student", status="done", dev=89.0, speed=8000.0, ratio=26.7)
    assert select(rows + [better], Floor(25, relative=True)) == (better, True)


@pytest.mark.parametrize("given,want", [("3000", Floor(3000)), (2500.0, Floor(2500)), ("25x", Floor(25, True)),
                                        (" 2.5X", Floor(2.5, True)), (None, None)])
def test_min_speed_reads_an_absolute_or_a_relative_floor(given, want):
    assert Floor.parse(given) == want


@pytest.mark.parametrize("given", ["nan", "inf", "-3", "0", "x", "abcx", "nanx", "0x", "-2x", "fast"])
def test_a_min_speed_that_is_no_floor_is_one_line_before_any_data(given, tmp_path, capsys):
    argv = ["auto", "--data", str(tmp_path / "absent.csv"), f"--min-speed={given}", "--out", str(tmp_path / "a")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == f"error: --min-speed takes sentences per second above 0 (3000) or a multiple of the teacher's " \
                  f"(25x), not {given!r}\n"
    assert not (tmp_path / "a").exists()


def test_the_deadline_stops_a_run_between_batches(tmp_path):
    from adaptext.training.run import train_run
    guard = deadline(time.perf_counter(), lambda: None)
    m = train_run({"model": "bov", "data": "trec-demo", "epochs": 5, "threads": 1, "progress": False,
                   "out": str(tmp_path / "r")}, log=lambda m: None, callbacks=[guard])
    assert guard.stopped and m["info"]["epochs_run"] <= 1 and "accuracy" in m["test"]


# ------------------------------------------------------------------ a real auto run, cut and resumed
class Cut(BaseException):
    """A kill, as the run sees it: no handler of auto's catches it."""


@pytest.fixture(scope="module")
def resumed(questions, tmp_path_factory, monkeypatch_module):
    """An auto run of bov and kim_cnn cut in kim_cnn's second epoch, then run again."""
    import adaptext.training.run as R
    from lightning.pytorch.callbacks import Callback
    train, test = questions
    out = tmp_path_factory.mktemp("auto") / "out"
    options = {"data": train, "test": test, "time": 120.0, "threads": 1, "out": str(out), "only": ["bov", "kim_cnn"]}
    real = R.train_run

    class CutInEpoch2(Callback):
        def on_train_epoch_start(self, trainer, module):
            if trainer.current_epoch == 1:
                raise Cut()

    def cutting(opts, *args, callbacks=(), **kw):
        extra = [CutInEpoch2()] if opts.get("model") == "kim_cnn" else []
        return real(opts, *args, callbacks=[*callbacks, *extra], **kw)

    monkeypatch_module.setattr(R, "train_run", cutting)
    first = []
    with pytest.raises(Cut):
        run_auto(options, log=first.append)
    monkeypatch_module.setattr(R, "train_run", real)
    cut = json.loads((out / "auto.json").read_text())
    bov_mtime = (out / "bov" / "metrics.json").stat().st_mtime_ns
    cut["checkpoint"] = (out / "kim_cnn" / "checkpoints" / "last.ckpt").exists()
    cut["kim_cnn_metrics"] = (out / "kim_cnn" / "metrics.json").exists()
    second = []
    result = run_auto(options, log=second.append)
    return out, cut, bov_mtime, first, second, result


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_a_cut_run_keeps_its_finished_candidate_and_resumes_the_cut_one(resumed):
    out, cut, bov_mtime, first, second, result = resumed
    status = {r["name"]: r["status"] for r in cut["candidates"]}
    assert status["bov"] == "done" and status["kim_cnn"] == "running"
    assert cut["checkpoint"] and not cut["kim_cnn_metrics"]      # cut short: config.json, a checkpoint
    assert (out / "bov" / "metrics.json").stat().st_mtime_ns == bov_mtime           # not trained again
    assert any("bov: read back" in line for line in second)
    assert not any("bov: training" in line for line in second)
    assert any("kim_cnn: resuming" in line for line in second)
    rows = list(csv.DictReader(open(out / "kim_cnn" / "log.csv")))
    assert [int(r["epoch"]) for r in rows] == list(range(1, len(rows) + 1)) and len(rows) > 1
    final = json.loads((out / "auto.json").read_text())
    assert {r["name"]: r["status"] for r in final["candidates"] if r["status"] == "done"} == {
        "bov": "done", "kim_cnn": "done"}
    assert final["candidates"][0]["name"] == "fasttext" and final["candidates"][0]["reason"].startswith("left out")
    assert final["elapsed_s"] > cut["elapsed_s"] and final["elapsed_s"] <= 1.1 * final["budget_s"]
    assert all(re.match(r"\[\d+:\d\d elapsed, \d+:\d\d left\] ", line) for line in first + second)


def test_the_report_holds_the_runs_own_numbers(resumed):
    out, *_, result = resumed
    state = read_state(out / "auto.json")
    md = (out / "report.md").read_text()
    done = [r for r in state.candidates if r.status == "done"]
    for r in done:
        m = json.loads((out / r.name / "metrics.json").read_text())
        assert r.dev == m["dev"]["accuracy"] and r.test == m["test"]["accuracy"]
        assert r.train_s == m["info"]["train_seconds"] and r.speed > 0 and r.ratio is None   # no teacher here
        name = r.name + (" (winner)" if r.name == state.winner else "")
        line = next(l for l in md.splitlines() if l.startswith(f"| {name} |"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[2:5] == [f"{m['dev']['accuracy']:.2f}", f"{m['test']['accuracy']:.2f}", f"{r.speed:,.0f}"]
        assert f"`{r.command}`" in md and r.command.startswith("adaptext train --model")
    assert state.winner == max(done, key=lambda r: r.dev).name == result["winner"]
    assert state.speed.rounds == 5 and state.speed.threads == 1 and "5 rounds interleaved" in md
    assert result["dev"] == next(r.dev for r in done if r.name == result["winner"])
    winner = json.loads((out / result["winner"] / "metrics.json").read_text())
    for label, s in winner["test"]["per_class"].items():
        assert f"| {label} | {s['precision']:.2f} | {s['recall']:.2f} | {s['f1']:.2f} | {s['support']} |" in md
    assert "| gold \\ predicted |" in md and "skipped: left out" in md
    page = (out / "report.html").read_text()
    assert 'src="data:image/png;base64,' in page and "<table>" in page
    assert (out / "frontier.png").read_bytes()[:4] == b"\x89PNG"
    why = json.loads((out / "why.json").read_text())           # the winner's words, coloured on the page
    assert why["winner"] == state.winner and len(why["records"]) == 3
    assert page.count('<div class="why">') == 3 and page.count("class=word") >= 3


def test_multilabel_data_report_micro_f1(tmp_path):
    qs = bundled_examples("text", 300)
    labels = [f"{q.label}|{'long' if len(q.text.split()) > 9 else 'short'}" for q in qs]
    train = write_csv(tmp_path / "train.csv", qs[:240], labels[:240])
    test = write_csv(tmp_path / "test.csv", qs[240:], labels[240:])
    out = tmp_path / "out"
    result = run_auto({"data": train, "test": test, "label_sep": "|", "time": 90.0, "threads": 1, "out": str(out),
                       "only": ["bov"]}, log=lambda m: None)
    state = json.loads((out / "auto.json").read_text())
    assert state["metric"] == result["metric"] == "micro_f1" and state["data"]["multilabel"]
    assert all("multi-label" in r["reason"] for r in state["candidates"] if r["role"] == "student")
    m = json.loads((out / "bov" / "metrics.json").read_text())
    assert result["winner"] == "bov" and result["dev"] == m["dev"]["micro_f1"]
    header, rows = candidate_table(state)
    assert header[5] == "x teacher"
    assert header[2:4] == ["dev micro-F1", "test micro-F1"]
    assert rows[1][:3] == ["bov (winner)", "bov", f"{m['dev']['micro_f1']:.2f}"]
    assert "confusion matrix" not in (out / "report.md").read_text()



def test_out_best_is_a_run_that_predict_reads(resumed, tmp_path, capsys):
    out, *_, result = resumed
    assert (out / "best").is_symlink() and (out / "best").resolve() == (out / result["winner"]).resolve()
    texts = tmp_path / "texts.txt"
    texts.write_text("Who wrote Hamlet ?\nHow far is the moon ?\n")
    capsys.readouterr()
    assert main(["predict", str(out / "best"), str(texts)]) == 0
    said = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    import adaptext
    want = adaptext.load(out / result["winner"]).predict(["Who wrote Hamlet ?", "How far is the moon ?"])
    assert [p["label"] for p in said] == [p["label"] for p in want] and said[0]["probs"] == want[0]["probs"]


def test_a_finished_run_selects_again_under_a_floor_without_training(resumed, tmp_path):
    out = tmp_path / "copy"                  # a copy: the other tests read the resumed run's own report
    shutil.copytree(resumed[0], out, symlinks=True)
    options = json.loads((out / "auto.json").read_text())
    mtimes = {r: (out / r / "metrics.json").stat().st_mtime_ns for r in ("bov", "kim_cnn")}
    speeds = {r["name"]: r["speed"] for r in options["candidates"] if r["status"] == "done"}
    base = {"data": options["identity"]["data"], "test": options["identity"]["test"], "time": 120.0, "threads": 1,
            "out": str(out)}
    said = []
    again = run_auto({**base, "min_speed": 10 * max(speeds.values())}, log=said.append)
    assert again["winner"] == max(speeds, key=speeds.get) and again["floor_met"] is False
    assert any("no candidate predicts --min-speed" in line for line in said)
    assert "no candidate reaches the floor" in (out / "report.md").read_text()
    assert {r: (out / r / "metrics.json").stat().st_mtime_ns for r in mtimes} == mtimes
    with pytest.raises(Exception, match=r"holds an auto run made with other options \(--seed 1, not 2\)"):
        run_auto({**base, "seed": 2}, log=said.append)


# ------------------------------------------------------------------ the budget buys the students more
def plan_minutes(capsys, time_, demo_out):
    assert main(["auto", "--data", "trec-demo", "--time", time_, "--dry-run", "--out", str(demo_out)]) == 0
    text = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in text.splitlines()[1:-1]}
    total = float(re.search(r"^about ([\d.]+) min to train", text, re.M).group(1))
    return rows, total


def test_three_hours_plan_more_for_the_students_than_one_hour(capsys, tmp_path):
    """On the demo 1h already affords the richest recipe; 3h gives its fallback students their epochs."""
    hour, hour_total = plan_minutes(capsys, "1h", tmp_path / "a")
    three, three_total = plan_minutes(capsys, "3h", tmp_path / "b")
    assert three_total > hour_total * 1.3

    def minutes(rows, name):
        return float(rows[name][rows[name].index("pending") - 1])
    students = ("bilstm-pieces-distilled", "bilstm-distilled", "kim_cnn-distilled", "bilstm-pieces-wide-distilled")
    assert all(minutes(three, n) >= minutes(hour, n) for n in students)
    assert sum(minutes(three, n) for n in students) > sum(minutes(hour, n) for n in students) + 20
    assert "pending" in three["transformer-seed2"]


def test_unlabeled_texts_join_the_students_transfer_set_in_the_plan(tmp_path):
    texts = tmp_path / "unlabeled.txt"
    texts.write_text("".join(f"{q.text}\n" for q in bundled_examples("text", 200)))
    summary = P.DataSummary(**{**TREC.__dict__, "unlabeled": 200, "unlabeled_length": 10.0})
    found = {c.name: c for c in P.make_plan(summary, 3 * 3600, encoder=True, unlabeled=str(texts))}
    without = {c.name: c for c in P.make_plan(TREC, 3 * 3600, encoder=True)}
    assert found["bilstm-distilled"].options["unlabeled"] == str(texts)
    assert found["bilstm-distilled"].epoch_s > without["bilstm-distilled"].epoch_s
    assert "unlabeled" not in found["kim_cnn"].options


def test_unlabelled_texts_too_many_for_the_budget_are_sampled_not_dropped():
    """All of them while some recipe fits with them; else as many as fit (half, a quarter, ... no fewer
    than the training texts) with the richest recipe that fits with that many; else none."""
    def narrow(texts: int, seconds: float) -> dict:
        summary = P.DataSummary(**{**TREC.__dict__, "unlabeled": texts, "unlabeled_length": 10.0})
        found = P.make_plan(summary, seconds, threads=1, encoder=True, unlabeled="/data/more.txt")
        return next(c for c in found if c.name == P.NARROW).options
    assert narrow(5_000, 1800)["unlabeled"] == "/data/more.txt" and "unlabeled_sample" not in narrow(5_000, 1800)
    sampled = [narrow(400_000, t).get("unlabeled_sample") for t in (900, 1800, 3600)]
    assert all(TREC.train <= n < 400_000 and (400_000 / n).is_integer() for n in sampled)
    assert sampled == sorted(set(sampled))                  # a larger budget buys more of them
    assert "unlabeled" not in narrow(400_000, 600)          # too short for even the smallest sample
    assert P.RECIPES[4].describe(400_000, sample=12_500) == \
        "10 copies, 5 epochs, 1 teacher, 12,500 of the 400,000 unlabelled texts"


def test_later_candidates_are_costed_with_the_measured_epochs():
    assert P.calibrated("lstm", None) == 1.0
    assert P.calibrated("lstm", {"lstm": 2.0, "bov": 1.0}) == 2.0
    assert P.calibrated("kim_cnn", {"bov": 3.0, "fasttext": 1.0, "lstm": 2.0}) == 2.0    # the median of those measured


@pytest.mark.parametrize("factor, richer", [(0.3, True), (3.0, False)], ids=["faster", "slower"])
def test_the_students_recipe_is_chosen_again_once_the_teacher_has_trained(questions, tmp_path, monkeypatch, factor,
                                                                          richer):
    """A machine that trains 3x faster than the coefficients buys the students a richer recipe
    than the plan's, one 3x slower a poorer one; the new options are in auto.json, and neither a
    second call nor a resume chooses again."""
    from adaptext.auto.runner import STATE, Auto
    monkeypatch.setattr(P, "encoder_available", lambda: None)
    train, test = questions
    out, said = tmp_path / "auto", []
    auto = Auto({"data": train, "test": test, "time": 150, "out": str(out)}, out, said.append)
    first = auto.state.recipes[0]
    assert 1 < first < len(P.RECIPES)
    for r in auto.state.candidates:                     # the baselines and the teacher, as if trained
        if r.role in ("baseline", "teacher") and r.status == "pending":
            r.status, r.dev = "done", 80.0
            auto.before += r.estimate_s * factor
    auto.state.calibration = dict.fromkeys(P.EPOCH_S_PER_KTOKEN, factor)
    auto.replan()
    first_, second = auto.state.recipes
    assert first_ == first and (second > first if richer else second < first)
    recipe = P.RECIPES[second - 1]
    journal = read_state(out / STATE)
    student = journal.row("bilstm-pieces-distilled")          # the recipe's own student
    assert journal.recipes == [first, second] and student.status == "pending"
    assert student.plan.options["augment"] == recipe.copies and student.plan.recipe == second
    assert (journal.row("transformer-seed2").status == "pending") == (recipe.teachers > 1)
    assert any("recipe chosen again" in line and f"recipe {second} " in line for line in said)
    assert f"Students' recipe {second}: {recipe.copies} copies" in "\n".join(summary_lines(journal))
    auto.replan()
    assert read_state(out / STATE).recipes == [first, second]
    again = Auto({"data": train, "test": test, "time": 150, "out": str(out)}, out, said.append)
    assert again.state.row("bilstm-pieces-distilled").plan.options == student.plan.options


def test_no_floor_probe_where_the_recipe_chosen_again_has_no_wide_student(questions, tmp_path, monkeypatch):
    import adaptext.auto.runner as R
    monkeypatch.setattr(R, "measure_runs", lambda *a, **k: pytest.fail("measured"))
    train, test = questions
    out = tmp_path / "auto"
    auto = R.Auto({"data": train, "test": test, "time": 150, "min_speed": "25x", "out": str(out)}, out, print)
    for r in auto.state.candidates:                     # trained as planned
        if r.role in ("baseline", "teacher") and r.status == "pending":
            r.status, r.dev = "done", 80.0
            auto.before += r.estimate_s
    auto.replan()
    assert not P.RECIPES[auto.state.recipes[-1] - 1].wide and auto.state.row(P.WIDE).reason == P.NOT_IN_RECIPE


@pytest.mark.parametrize("narrow, ruled_out", [(2000.0, True), (5000.0, False), (None, False)],
                         ids=["too slow", "fast enough", "not measurable"])
def test_the_floor_rules_the_wide_student_out_before_the_recipe_gives_it_time(questions, tmp_path, monkeypatch,
                                                                              narrow, ruled_out):
    """Under --min-speed 25x, once the teacher has trained, the narrow student's architecture,
    trained one step, is measured against the teacher: at 2,000 sentences/s against its 100, the
    wide student (over WIDE_SLOWDOWN: about 11.8x) is skipped, saying so, before the recipe is chosen
    again, and never tried again; at 5,000 (29.4x) it keeps its place in the recipe, as it does
    when the measurement fails (auto goes on, saying so)."""
    import adaptext.auto.runner as R
    measured = []

    def speeds(runs, texts, rounds):
        measured.append(runs)
        assert (runs[P.NARROW] / "config.json").is_file() and len(texts) <= 4 * R.BATCH     # a real run, one step
        if narrow is None:
            raise RuntimeError("no pass")
        return {P.NARROW: narrow, P.TEACHER_NAME: 100.0}
    monkeypatch.setattr(R, "measure_runs", speeds)
    train, test = questions
    out, said = tmp_path / "auto", []
    auto = R.Auto({"data": train, "test": test, "time": 4 * 3600, "min_speed": "25x", "out": str(out)}, out,
                  said.append)
    assert auto.state.row(P.WIDE).status == "pending"           # the richest recipe has it
    for r in auto.state.candidates:
        if r.role in ("baseline", "teacher"):
            r.status, r.dev = "done", 80.0
    auto.replan()
    assert [sorted(runs) for runs in measured] == [sorted([P.NARROW, P.TEACHER_NAME])]
    journal = read_state(out / R.STATE)
    wide, recipe = journal.row(P.WIDE), next(line for line in summary_lines(journal) if "recipe" in line)
    assert ("a wide BiLSTM" in recipe) != ruled_out                   # what the students are given, as it ran
    assert ("a wide BiLSTM" in next(line for line in said if "recipe chosen again" in line)) != ruled_out
    if ruled_out:
        assert wide.status == "skipped" and not wide.retry
        assert wide.reason == "a BiLSTM of 128 units would predict about 11.8x the teacher, under the floor (25x " \
                              "the teacher's sentences/s)"
        assert any(f"{P.WIDE}: skipped (a BiLSTM of 128" in line for line in said)
    else:
        assert wide.status == "pending" and wide.plan.options["hidden"] == P.WIDE_HIDDEN
    assert any("the floor could not be checked before planning it (no pass)" in line for line in said) == \
        (narrow is None)


# ------------------------------------------------------------------ throughput beside a busy process
class Spin:
    """A fake model whose prediction costs ``work`` loop steps per text, all on this thread."""

    def __init__(self, work):
        self.work = work

    def predict(self, texts, batch_size):
        return sum(i * i for i in range(self.work * len(texts)))


def test_the_throughput_pass_ranks_a_slow_model_below_a_fast_one_beside_a_busy_process():
    import subprocess
    import sys
    from adaptext.auto.speed import measure
    spin = "import time\nend = time.time() + 60\nwhile time.time() < end: pass"      # bounded, should the kill fail
    busy = subprocess.Popen([sys.executable, "-c", spin])
    try:
        speeds = measure({"slow": Spin(3000), "fast": Spin(1000)}, ["a text"] * 64, rounds=5)
    finally:
        busy.kill()
        busy.wait()
    assert speeds["slow"] < speeds["fast"]
    assert 2.0 < speeds["fast"] / speeds["slow"] < 4.5          # 3x the work: a third of the speed


# ------------------------------------------------------------------ errors before planning, Ctrl-C
def test_one_class_data_is_one_line_before_planning(tmp_path, capsys):
    qs = bundled_examples("text", 60)
    train = write_csv(tmp_path / "train.csv", qs[:40], ["HUM"] * 40)
    test = write_csv(tmp_path / "test.csv", qs[40:])
    assert main(["auto", "--data", train, "--test", test, "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the training data hold one class (HUM)" in err
    assert not (tmp_path / "a" / "auto.json").exists()


def test_data_too_few_to_hold_a_dev_split_out_of_is_one_line_before_planning(tmp_path, capsys):
    qs = bundled_examples("text", 8)
    train = write_csv(tmp_path / "train.csv", qs[:4], ["HUM", "LOC"] * 2)   # 10% of 2 a class rounds to none
    test = write_csv(tmp_path / "test.csv", qs[4:])
    assert main(["auto", "--data", train, "--test", test, "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no dev examples" in err and "pass --dev FILE" in err
    assert not (tmp_path / "a" / "auto.json").exists()


def test_a_test_label_the_training_data_lack_is_one_line_before_planning_unless_skipped(tmp_path, capsys):
    qs = bundled_examples("text", 80)
    train = write_csv(tmp_path / "train.csv", qs[:60], ["HUM", "LOC"] * 30)
    test = write_csv(tmp_path / "test.csv", qs[60:], ["HUM"] * 12 + ["NUM"] + ["LOC"] * 7)
    assert main(["auto", "--data", train, "--test", test, "--dry-run", "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "test.csv:14: label 'NUM' does not occur in the training data" in err
    assert main(["auto", "--data", train, "--test", test, "--on-bad-line", "skip", "--dry-run",
                 "--out", str(tmp_path / "b")]) == 0


def test_a_bad_line_stops_auto_unless_it_is_told_to_skip_it(questions, tmp_path, capsys):
    train, test = questions
    bad = tmp_path / "bad.csv"
    bad.write_text(open(train).read() + "a line without its label\n")
    argv = ["auto", "--data", str(bad), "--test", test, "--dry-run", "--out", str(tmp_path / "a")]
    assert main(argv) == 2
    assert capsys.readouterr().err == f"error: {bad}:322: expected at least 2 fields, found 1\n"
    assert main(argv + ["--on-bad-line", "skip"]) == 0
    assert capsys.readouterr().out.startswith("candidate")


def test_ctrl_c_says_how_to_resume_exits_130_and_keeps_the_time_spent(questions, tmp_path):
    import os
    import signal
    import subprocess
    import sys
    train, test = questions
    out = tmp_path / "out"
    argv = ["auto", "--data", train, "--test", test, "--threads", "1", "--out", str(out)]
    first = argv + ["--time", "5m"]            # long enough not to end by itself before Ctrl-C comes
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    child = subprocess.Popen([sys.executable, "-m", "adaptext.cli", *first], stderr=subprocess.PIPE, text=True, env=env)
    deadline_at = time.time() + 120
    while time.time() < deadline_at and '"status": "running"' not in _text(out / "auto.json"):
        time.sleep(0.2)
    time.sleep(1.0)
    child.send_signal(signal.SIGINT)
    err = child.communicate(timeout=120)[1]
    assert child.returncode == 130, err
    assert err.strip().splitlines()[-1] == "interrupted; run the same command again to resume"
    cut = read_state(out / "auto.json")
    assert cut.elapsed_s > 1.0 and any(r.status == "running" for r in cut.candidates)
    again = argv + ["--time", f"{int(cut.elapsed_s) + 60}s"]    # --time may change on resume: a minute more
    assert main(again) == 0
    final = read_state(out / "auto.json")
    assert final.elapsed_s > cut.elapsed_s and final.winner and final.budget_s == int(cut.elapsed_s) + 60


def _text(path):
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""
