"""Two adaptext jobs on one machine: the quick start (``adaptext train`` on the bundled demo) and
``adaptext predict`` over many texts, each alone and two started at once, with the code before
the thread defaults (``--before``: a checkout of that commit) and after (this checkout), in one
run on one machine. A job's speed two at once is its solo time over its time beside the other.

    git worktree add /tmp/before 56caa6b
    python benchmarks/concurrency.py --before /tmp/before
"""
from __future__ import annotations

import argparse
import gzip
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="a checkout of the commit before the thread defaults")
    ap.add_argument("--texts", type=int, default=200_000, help="texts each predict job reads")
    ap.add_argument("--limit", type=float, default=1200.0, help="seconds after which a job is stopped")
    ap.add_argument("--out", default=None)
    return ap.parse_args()


def timed(commands: list[list[str]], code: Path, limit: float) -> list[float]:
    """Seconds each command took, all started at once with ``code`` first on the import path
    (None where it ran past ``limit`` and was stopped)."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    env.pop("OMP_WAIT_POLICY", None)                 # each checkout's own default
    start = time.perf_counter()
    procs = [subprocess.Popen(c, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=code)
             for c in commands]
    seconds = []
    for p in procs:
        try:
            p.wait(timeout=max(1.0, limit - (time.perf_counter() - start)))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            seconds.append(None)
            continue
        if p.returncode:
            raise SystemExit(f"{' '.join(commands[0])} failed: {p.stderr.read().decode()[-2000:]}")
        seconds.append(time.perf_counter() - start)
    return seconds


def train_command(out: Path) -> list[str]:
    return [sys.executable, "-m", "adaptext.cli", "train", "--no-progress", "--out", str(out)]


def predict_command(run: Path, texts: Path) -> list[str]:
    return [sys.executable, "-m", "adaptext.cli", "predict", str(run), str(texts)]


def rows_for(job: str, version: str, solo: float, pair: list) -> list[dict]:
    rows = [{"model": job, "variant": f"{version}, alone", "metric": "seconds", "mean": round(solo, 1), "n": 1}]
    for i, s in enumerate(pair, 1):
        rows.append({"model": job, "variant": f"{version}, two at once (job {i})", "metric": "seconds",
                     "mean": round(s, 1) if s else None, "n": 1, "baseline": f"{version}, alone",
                     "ratio": round(solo / s, 2) if s else None,
                     **({} if s else {"note": "stopped at the time limit"})})
    return rows


def measure(version: str, code: Path, work: Path, a) -> list[dict]:
    runs = [work / f"{version}-{i}" for i in range(3)]
    solo = timed([train_command(runs[0])], code, a.limit)[0]
    pair = timed([train_command(runs[1]), train_command(runs[2])], code, a.limit)
    texts = work / "texts.txt"
    if not texts.exists():
        with gzip.open(ROOT / "adaptext" / "resources" / "trec" / "train.txt.gz", "rt", encoding="latin-1") as f:
            demo = [ln.split(" ", 1)[1].strip() for ln in f if " " in ln.strip()]   # "LABEL:fine question"
        texts.write_text("\n".join(demo[i % len(demo)] for i in range(a.texts)) + "\n", encoding="utf-8")
    p_solo = timed([predict_command(runs[0], texts)], code, a.limit)[0]
    p_pair = timed([predict_command(runs[0], texts)] * 2, code, a.limit)
    return rows_for("quick start (adaptext train, demo)", version, solo, pair) + \
        rows_for(f"adaptext predict ({a.texts:,} texts)", version, p_solo, p_pair)


def main() -> None:
    a = args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = [r for version, code in (("before", Path(a.before).resolve()), ("after", ROOT))
                for r in measure(version, code, Path(tmp), a)]
    notes = (f"Each job a fresh process (python -m adaptext.cli) with that checkout first on the import path; "
             f"'two at once': two identical jobs started together, each timed to its own end; ratio: seconds "
             f"alone over seconds beside the other (1.0: no slowdown; 0.5: two jobs share the machine with no "
             f"loss). 'before': commit of --before (torch's default threads, OpenMP's default wait policy); "
             f"'after': this commit (OMP_WAIT_POLICY=PASSIVE unless set; threads 0 takes the cores other work "
             f"leaves free when it starts). The quick start: adaptext train with its defaults on the bundled demo; predict: "
             f"{a.texts:,} demo questions through the quick start's run, batch 64. One measurement each.")
    print(common.write("concurrency", rows, notes, a.out))


if __name__ == "__main__":
    main()
