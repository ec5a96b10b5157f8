"""Two adaptext jobs on one machine: the quick start (``adaptext train`` on the bundled demo) and
``adaptext predict`` over many texts, each alone, two started together, and the second started a
few seconds after the first (which has then taken every core), with the code of earlier commits
(``--before LABEL=PATH``: a checkout, as often as wanted) and this checkout, in one run on one
machine. A job's speed beside another is its solo time over its time beside the other.

    git worktree add /tmp/torch-defaults 56caa6b
    python benchmarks/concurrency.py --before "torch's defaults=/tmp/torch-defaults"
"""
from __future__ import annotations

import argparse
import gzip
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", action="append", required=True, metavar="LABEL=PATH",
                    help="a checkout of an earlier commit and the label of its rows")
    ap.add_argument("--stagger", type=float, default=5.0, help="seconds between the starts of staggered jobs")
    ap.add_argument("--texts", type=int, default=200_000, help="texts each predict job reads")
    ap.add_argument("--limit", type=float, default=1200.0, help="seconds after which a job is stopped")
    ap.add_argument("--out", default=None)
    return ap.parse_args()


def timed(commands: list[list[str]], code: Path, limit: float, stagger: float = 0.0) -> list[float]:
    """Seconds each command took from its own start, the k-th started ``k * stagger`` seconds after
    the first, with ``code`` first on the import path (None where it ran past ``limit``)."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    env.pop("OMP_WAIT_POLICY", None)                 # each checkout's own default
    procs, starts = [], []
    for k, c in enumerate(commands):
        if k:
            time.sleep(stagger)
        starts.append(time.perf_counter())
        procs.append(subprocess.Popen(c, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=code))
    seconds = []
    for p, start in zip(procs, starts):
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


def rows_for(job: str, version: str, solo: float, beside: dict) -> list[dict]:
    """The solo row, and a row per job of each way of running two (``beside``: how -> seconds)."""
    rows = [{"model": job, "variant": f"{version}, alone", "metric": "seconds", "mean": round(solo, 1), "n": 1}]
    for how, pair in beside.items():
        for i, s in enumerate(pair, 1):
            rows.append({"model": job, "variant": f"{version}, {how} (job {i})", "metric": "seconds",
                         "mean": round(s, 1) if s else None, "n": 1, "baseline": f"{version}, alone",
                         "ratio": round(solo / s, 2) if s else None,
                         **({} if s else {"note": "stopped at the time limit"})})
    return rows


def demo_texts(work: Path, n: int) -> Path:
    texts = work / "texts.txt"
    if not texts.exists():
        with gzip.open(ROOT / "adaptext" / "resources" / "trec" / "train.txt.gz", "rt", encoding="latin-1") as f:
            demo = [ln.split(" ", 1)[1].strip() for ln in f if " " in ln.strip()]   # "LABEL:fine question"
        texts.write_text("\n".join(demo[i % len(demo)] for i in range(n)) + "\n", encoding="utf-8")
    return texts


def measure(version: str, code: Path, work: Path, a) -> list[dict]:
    runs = [work / re.sub(r"\W+", "-", f"{version}-{i}") for i in range(5)]
    together, staggered = "two started together", f"the second started {a.stagger:g} s after the first"
    solo = timed([train_command(runs[0])], code, a.limit)[0]
    train = {together: timed([train_command(runs[1]), train_command(runs[2])], code, a.limit),
             staggered: timed([train_command(runs[3]), train_command(runs[4])], code, a.limit, a.stagger)}
    texts = demo_texts(work, a.texts)
    p_solo = timed([predict_command(runs[0], texts)], code, a.limit)[0]
    predict = {together: timed([predict_command(runs[0], texts)] * 2, code, a.limit),
               staggered: timed([predict_command(runs[0], texts)] * 2, code, a.limit, a.stagger)}
    return rows_for("quick start (adaptext train, demo)", version, solo, train) + \
        rows_for(f"adaptext predict ({a.texts:,} texts)", version, p_solo, predict)


def main() -> None:
    a = args()
    versions = [tuple(b.split("=", 1)) for b in a.before] + [("this commit", str(ROOT))]
    if any(len(v) != 2 for v in versions):
        raise SystemExit("--before: give LABEL=PATH")
    with tempfile.TemporaryDirectory() as tmp:
        rows = [r for version, code in versions for r in measure(version, Path(code).resolve(), Path(tmp), a)]
    commits = "; ".join(f"'{label}': {common.commit(Path(code).resolve(), short=True)}" for label, code in versions)
    notes = (f"Each job a fresh process (python -m adaptext.cli) with that checkout first on the import path, "
             f"OMP_WAIT_POLICY unset; two identical jobs started together, or the second {a.stagger:g} s after "
             f"the first, each timed from its own start to its own end; ratio: seconds alone over seconds beside "
             f"the other (1.0: no slowdown; 0.5: two jobs share the machine with no loss). Commits: {commits}. The "
             f"quick start: adaptext train with its defaults on the bundled demo; predict: {a.texts:,} demo "
             f"questions through the quick start's run, batch 64. One measurement each.")
    print(common.write("concurrency", rows, notes, a.out))


if __name__ == "__main__":
    main()
