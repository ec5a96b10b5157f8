"""Does auto's choice hold on a busy machine? One auto run trains on a quiet machine; then the same
OUT is run again twice, which trains nothing and measures, selects and reports again: once quiet,
once beside a process that spins on a core for the whole rerun. The winner and every candidate's
sentences/s ratio to the teacher should agree (the ratios within 20%).

    python benchmarks/auto_busy.py --data trec --time 30m --min-speed 25x
    python benchmarks/auto_busy.py --data trec --time 3m --out /tmp/auto_busy.json     # a smoke run
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common  # noqa: E402

SPIN = "import time\nend = time.time() + {seconds}\nwhile time.time() < end: pass\n"


def args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="trec")
    ap.add_argument("--time", default="30m")
    ap.add_argument("--min-speed", default="25x")
    ap.add_argument("--threads", default=None, help="auto's --threads (default: as adaptext train chooses)")
    ap.add_argument("--keep", default=None, help="auto's folder (default: a temporary one)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    common.require_out(a, a.time != "30m" or a.data != "trec")
    return a


def auto(a, out: Path) -> tuple[dict, dict]:
    """auto's result and journal, run in a fresh process on ``out``."""
    command = [sys.executable, "-m", "adaptext.cli", "auto", "--data", a.data, "--data-dir", str(common.DATA),
               "--time", a.time, "--min-speed", a.min_speed, "--out", str(out)]
    command += ["--threads", a.threads] if a.threads else []
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(done.stdout), json.loads((out / "auto.json").read_text())


def beside_a_spinner(a, out: Path, seconds: float) -> tuple[dict, dict]:
    """auto on ``out`` while another process spins on a core (stopped after it, or after ``seconds``)."""
    spinner = subprocess.Popen([sys.executable, "-c", SPIN.format(seconds=seconds)])
    try:
        return auto(a, out)
    finally:
        spinner.kill()
        spinner.wait()


def rows_of(state: dict, condition: str) -> list[dict]:
    return [{"model": c["model"], "variant": c["name"], "dataset": state["identity"]["data"], "condition": condition,
             "metric": "sentences_per_s", "mean": c["speed"], "n": 1, "baseline": "transformer", "ratio": c["ratio"]}
            for c in state["candidates"] if c["status"] == "done" and c.get("speed")]


def main() -> None:
    a = args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(a.keep or Path(tmp) / "auto")
        started = time.perf_counter()
        auto(a, out)                                          # trains, quiet
        trained = time.perf_counter() - started
        quiet, quiet_state = auto(a, out)                     # measures again, quiet
        busy, busy_state = beside_a_spinner(a, out, 4 * trained + 600)
    rows = rows_of(quiet_state, "quiet") + rows_of(busy_state, "busy")
    ratios = {r["variant"]: r["ratio"] for r in rows_of(quiet_state, "quiet") if r["ratio"]}
    moved = {name: r["ratio"] / ratios[name] for r in rows_of(busy_state, "busy")
             if (name := r["variant"]) in ratios and r["ratio"]}
    worst = max((abs(v - 1) for v in moved.values()), default=0.0)
    notes = (f"adaptext auto --data {a.data} --time {a.time} --min-speed {a.min_speed}, trained once quiet "
             f"({trained:.0f} s), then run again on the same folder (nothing trained: the throughput pass, the "
             f"choice and the report) quiet and beside a process spinning on a core. Winner quiet: "
             f"{quiet['winner']}, busy: {busy['winner']} "
             f"({'the same' if quiet['winner'] == busy['winner'] else 'NOT the same'}); "
             f"ratios to the teacher moved by {100 * worst:.1f}% at most (busy over quiet: "
             f"{', '.join(f'{k} {v:.3f}' for k, v in moved.items())}).")
    print(common.write("auto_busy", rows, notes, a.out))


if __name__ == "__main__":
    main()
