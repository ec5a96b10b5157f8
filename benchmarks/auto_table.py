"""``adaptext auto`` on a dataset within a budget: each candidate's dev and test score, its
prediction throughput (sentences/s, batch 64, measured by auto on the data's dev texts) against
the fastest candidate's, and the whole run's wall time against its budget.

    python benchmarks/auto_table.py --data trec --time 20m --out benchmarks/results/auto_trec.json
    python benchmarks/auto_table.py --data sst2 --time 3h --min-speed 10000
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402


def args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="trec")
    ap.add_argument("--time", default="20m")
    ap.add_argument("--min-speed", default=None)
    ap.add_argument("--keep", default=None, help="auto's folder (default: a temporary one)")
    ap.add_argument("--out", default=None)
    return ap.parse_args()


def rows_of(state: dict, dataset: str) -> list[dict]:
    metric, rows = state["metric"], []
    done = [c for c in state["candidates"] if c["status"] == "done"]
    fastest = max(done, key=lambda c: c["speed"])
    for c in state["candidates"]:
        if c["status"] != "done":
            continue
        for split in ("dev", "test"):
            rows.append({"model": c["model"], "variant": c["name"], "dataset": dataset, "split": split,
                         "metric": metric, "mean": round(c[split], 2), "n": 1,
                         "seconds": c["train_s"], "epochs": c["epochs_run"]})
        rows.append({"model": c["model"], "variant": c["name"], "dataset": dataset, "metric": "sentences_per_s",
                     "mean": c["speed"], "n": 1, "baseline": fastest["name"],
                     "ratio": round(c["speed"] / fastest["speed"], 3)})
    return rows


def main() -> None:
    a = args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(a.keep or Path(tmp) / "auto")
        command = [sys.executable, "-m", "adaptext.cli", "auto", "--data", a.data, "--time", a.time,
                   "--data-dir", str(common.DATA), "--out", str(folder)]
        if a.min_speed:
            command += ["--min-speed", a.min_speed]
        started = time.perf_counter()
        done = subprocess.run(command, stdout=subprocess.PIPE, text=True)
        wall = time.perf_counter() - started
        result = json.loads(done.stdout)
        state = json.loads((folder / "auto.json").read_text())
    rows = rows_of(state, a.data)
    rows.append({"model": "auto", "variant": "whole run", "dataset": a.data, "metric": "seconds",
                 "mean": round(wall, 1), "n": 1, "budget_s": state["budget_s"]})
    skipped = "; ".join(f"{c['name']} ({c['status']}: {c['reason']})" for c in state["candidates"]
                        if c["status"] != "done") or "none"
    notes = (f"adaptext auto --data {a.data} --time {a.time}{f' --min-speed {a.min_speed}' if a.min_speed else ''}"
             f" in a fresh process, the machine's default threads: {len(rows) // 3} candidates finished in "
             f"{wall:.0f} s of a {state['budget_s']:.0f} s budget; winner {result['winner']} "
             f"(dev {result['dev']:.2f}, test {result['test']:.2f}). Not finished: {skipped}. "
             f"Throughput: auto's own measurement on up to 1,000 dev texts, batch 64, best of 3 passes; ratio "
             f"against the fastest candidate of the same run.")
    print(common.write("auto", rows, notes, a.out))


if __name__ == "__main__":
    main()
