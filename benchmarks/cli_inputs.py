"""Bad input at the command line, tried as a new user would: every numeric option of ``adaptext
train`` (the run contract's and kim_cnn's own) at -1, 0, nan, inf and 1e30, the numeric options of
the other commands, and path options that name the wrong thing. Each case runs in a fresh
process; the table keeps its exit code, the line it said and its wall time. A case that is
accepted reaches the next check (train's data file that is not there, or for a model's option a
run directory that already holds a run), so every row should exit 2 with one line and no traceback; the run-contract rows also show how fast the answer comes
(no torch imported before the arguments are checked).

    python benchmarks/cli_inputs.py
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common  # noqa: E402

VALUES = ("-1", "0", "nan", "inf", "1e30")


def train_cases(missing: str, out: str, finished: str) -> list[tuple[str, list[str]]]:
    """(what, argv) for each numeric option of the run contract and of kim_cnn at each value. A
    run option accepted stops at the data file, which is not there; a model option (checked once
    the registry is imported, after the data is found) at the run directory, which holds a run."""
    from adaptext.registry import get_entry
    from adaptext.contract import OPTIONS
    base = ["train", "--data", missing, "--out", out]
    cases = [(f"train --{k.replace('_', '-')} {v}", [*base, f"--{k.replace('_', '-')}", v])
             for k, o in OPTIONS.items() if o.type in (int, float) for v in VALUES]
    entry = get_entry("kim_cnn")
    cases += [(f"train --model kim_cnn --{f.name.replace('_', '-')} {v}",
               ["train", "--out", finished, "--model", "kim_cnn", f"--{f.name.replace('_', '-')}", v])
              for f in dataclasses.fields(entry.config) if isinstance(entry.defaults[f.name], (int, float))
              and not isinstance(entry.defaults[f.name], bool) for v in VALUES]
    return cases


def other_cases(tmp: Path, run: str, missing: str) -> list[tuple[str, list[str]]]:
    """Numeric options of the other commands, and paths that are not what they must be (a sweep
    or auto whose value is accepted stops at its data file, which is not there)."""
    a_file = tmp / "a-file.txt"
    a_file.write_text("x\n")
    numeric = [("predict --batch-size", ["predict", run, "--batch-size"]),
               ("explain words --steps", ["explain", "words", run, "--text", "x", "--steps"]),
               ("explain filters --per-class", ["explain", "filters", run, "--out", str(tmp / "f"), "--per-class"]),
               ("explain tree --top", ["explain", "tree", run, "--out", str(tmp / "t"), "--tree", "(1 a)", "--top"]),
               ("explain tree --dim", ["explain", "tree", run, "--out", str(tmp / "t"), "--tree", "(1 a)", "--dim"]),
               ("export --length", ["export", run, "--out", str(tmp / "e"), "--length"]),
               ("export --opset", ["export", run, "--out", str(tmp / "e"), "--opset"]),
               ("serve --port", ["serve", run, "--port"]),
               ("serve --threads", ["serve", run, "--threads"]),
               ("sweep --trials", ["sweep", "--search", "lr=1e-4:1e-2", "--data", missing, "--out", str(tmp / "s"),
                                   "--trials"]),
               ("sweep --time", ["sweep", "--search", "lr=1e-4:1e-2", "--data", missing, "--out", str(tmp / "s"),
                                 "--time"]),
               ("auto --time", ["auto", "--data", missing, "--out", str(tmp / "a"), "--time"]),
               ("auto --min-speed", ["auto", "--data", missing, "--out", str(tmp / "a"), "--min-speed"])]
    cases = [(f"{what} {v}", [*argv, v]) for what, argv in numeric for v in VALUES]
    cases += [("predict RUN that is a file", ["predict", str(a_file)]),
              ("evaluate RUN that is missing", ["evaluate", str(tmp / "none")]),
              ("evaluate --data a folder", ["evaluate", run, "--data", str(tmp)]),
              ("export --out a file", ["export", run, "--out", str(a_file)]),
              ("explain words --out a file", ["explain", "words", run, "--text", "x", "--out", str(a_file)]),
              ("sweep --out a file", ["sweep", "--grid", "lr=1,2", "--out", str(a_file)]),
              ("auto --out a file", ["auto", "--data", "trec-demo", "--out", str(a_file)]),
              ("train --out a file", ["train", "--out", str(a_file)]),
              ("train --config missing", ["train", "--config", str(tmp / "none.yaml")]),
              ("cache --clear ../x", ["cache", "--clear", "../x"]),
              ("cache --clear /abs", ["cache", "--clear", str(tmp)]),
              ("cache --clear bogus", ["cache", "--clear", "bogus"])]
    return cases


def run_case(argv: list[str], env: dict) -> tuple[int, str, float]:
    started = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "adaptext.cli", *argv], capture_output=True, text=True, env=env,
                       timeout=300, stdin=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    said = next((line for line in lines if line.startswith("error:") or ": error: " in line),
                lines[-1] if lines else r.stdout.strip()[:120])
    if "Traceback" in r.stderr:
        said = "TRACEBACK: " + lines[-1]
    return r.returncode, said, seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    from adaptext.training.run import train_run
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        env = {**os.environ, "ADAPTEXT_CACHE": str(tmp / "cache"), "ADAPTEXT_DATA": str(common.DATA)}
        run = str(tmp / "run")
        train_run({"out": run, "epochs": 1, "filters": 8, "progress": False, "threads": 1}, log=lambda m: None)
        missing = str(tmp / "missing" / "train.csv")
        cases = train_cases(missing, str(tmp / "never"), run) + other_cases(tmp, run, missing)
        rows, contract_seconds = [], []
        for what, argv in cases:
            code, said, seconds = run_case(argv, env)
            said = said.replace(str(tmp), "TMP")
            rows.append({"model": "-", "variant": what, "dataset": "-", "metric": "exit_code", "mean": code,
                         "seconds": round(seconds, 2), "said": said})
            if argv[0] == "train" and "--model" not in argv:
                contract_seconds.append(seconds)
            print(f"{code}  {seconds:5.2f} s  {what}: {said}", flush=True)
    clean = sum(r["mean"] == 2 and not r["said"].startswith("TRACEBACK") for r in rows)
    notes = (f"{clean} of {len(rows)} cases exit 2 with one line. The run contract's options are answered in "
             f"{statistics.median(contract_seconds):.2f} s (median of {len(contract_seconds)} processes, max "
             f"{max(contract_seconds):.2f} s): they are checked before torch is imported; a model's own options "
             f"need the registry, and torch with it. Column 'said': the line on stderr (TMP: a temporary folder).")
    common.write("cli_inputs", rows, notes, a.out)


if __name__ == "__main__":
    main()
