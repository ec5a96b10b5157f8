"""The batch loader before and after a change to it: the training loader alone (an epoch of
collated batches, no model), ``kim_speed.py`` (prediction, batches of 64 and calls of 16),
``padding_speed.py`` (training steps on padded batches) and ``scale.py`` (training and prediction
over the token store, the service) run in a checkout of the earlier commit (``--before``, first on
the import path of every process it starts) and in this one, alternately, in one run on one
machine. Each speed row is this checkout's mean over the earlier one's (``ratio``).

    git worktree add /tmp/before <commit>
    python benchmarks/loader_speed.py --before /tmp/before
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCALE = ["--copies", "2", "--steps", "120", "--predict-seconds", "30", "--requests", "300",
         "--parts", "train,predict,serve"]
BENCHES = {"loader": [], "kim_speed": [], "padding_speed": [], "scale": SCALE}
SPEEDS = {"sentences_per_s", "train_examples_per_s", "texts_per_s", "requests_per_s",
          "train_seconds_per_step", "seconds_to_first_step", "us_per_batch"}
# the training loader of either side over 20,000 items of 3-60 tokens, batches of 50: the best of 5
# epochs, in microseconds per collated batch
LOADER = """
import json, time
import numpy as np
from adaptext.data.batching import Collator, Item
try:
    from adaptext.data.loading import batch_loader as loader_of
except ImportError:
    from adaptext.data.batching import BatchLoader as loader_of
rng = np.random.default_rng(0)
items = [Item(index=i, label=i % 2, text=rng.integers(2, 20000, int(n))) for i, n in enumerate(rng.integers(3, 61, 20000))]
loader = loader_of(items, 50, Collator(num_classes=2, min_length=5), shuffle=True, bucket=50, seed=1)
best = float("inf")
for _ in range(5):
    start = time.perf_counter()
    batches = sum(1 for _ in loader)
    best = min(best, (time.perf_counter() - start) / batches * 1e6)
print(json.dumps({"us_per_batch": best}))
"""


def args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="a checkout of the commit before the change")
    ap.add_argument("--rounds", type=int, default=2, help="runs of each benchmark on each side")
    ap.add_argument("--out", default=None)
    return ap.parse_args()


def measured(bench: str, code: Path, work: Path, tag: str) -> dict:
    """The speed rows of one run of ``bench`` in the checkout ``code``, keyed by what they measure."""
    out = work / f"{bench}-{tag}.json"
    cmd = ([sys.executable, "-c", LOADER] if bench == "loader" else
           [sys.executable, f"benchmarks/{bench}.py", *BENCHES[bench], "--out", str(out)])
    # that checkout's package, not the installed one, in this process and every one it starts
    env = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run(cmd, cwd=code, capture_output=True, text=True, env=env)
    if done.returncode:
        raise SystemExit(f"{bench} in {code} failed: {done.stderr[-2000:]}")
    if bench == "loader":
        us = json.loads(done.stdout.strip().splitlines()[-1])["us_per_batch"]
        return {("-", "training loader alone, batches of 50", "20,000 items of 3-60 tokens", "us_per_batch"): us}
    rows = json.loads(out.read_text())["rows"]
    return {(r["model"], r.get("variant", "-"), r.get("dataset", "-"), r["metric"]): r["mean"]
            for r in rows if r["metric"] in SPEEDS and isinstance(r.get("mean"), (int, float))}


def compared(bench: str, before: list[dict], after: list[dict]) -> list[dict]:
    rows = []
    for key in after[0]:
        if not all(key in run for run in before + after):
            continue
        b = statistics.mean(run[key] for run in before)
        a = statistics.mean(run[key] for run in after)
        model, variant, dataset, metric = key
        rows.append({"model": model, "variant": f"{bench}: {variant}", "dataset": dataset, "metric": metric,
                     "mean": round(a, 2), "n": len(after), "baseline": f"before ({b:.2f})",
                     "ratio": round(a / b, 3) if b else None})
    return rows


def main() -> None:
    a = args()
    before, rows = Path(a.before).resolve(), []
    before_commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=before, capture_output=True,
                                   text=True).stdout.strip() or "not a git checkout"
    with tempfile.TemporaryDirectory() as tmp:
        for bench in BENCHES:
            runs = {"before": [], "after": []}
            for r in range(a.rounds):
                for side, code in (("before", before), ("after", ROOT)):
                    runs[side].append(measured(bench, code, Path(tmp), f"{side}-{r}"))
                    print(f"{bench} {side} {r + 1}/{a.rounds}", file=sys.stderr)
            rows += compared(bench, runs["before"], runs["after"])
    notes = (f"'before': the checkout at --before ({before_commit}); 'after': this commit. Each "
             f"benchmark ran {a.rounds} times on each side, the sides alternating; mean: this commit's mean; "
             f"ratio: its mean over the earlier commit's (for microseconds per batch, seconds per step and seconds "
             f"to the first step lower is faster, for the others higher). scale ran with: {' '.join(SCALE)}.")
    print(common.write("loader_speed", rows, notes, a.out))


if __name__ == "__main__":
    main()
