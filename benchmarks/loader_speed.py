"""The batch loader before and after a change to it: the training loader alone (an epoch of
collated batches, no model), ``kim_speed.py`` (prediction, batches of 64 and calls of 16),
``padding_speed.py`` (training steps on padded batches) and ``scale.py`` (training and prediction
over the token store, the service) run in a checkout of the earlier commit (``--before``, first on
the import path of every process it starts) and in this one, alternately, in one run on one
machine. Each speed row is this checkout's mean over the earlier one's (``ratio``). With
``--before`` a checkout of this same commit, the ratios show how far the run's own noise reaches.

    git worktree add /tmp/before <commit>
    python benchmarks/loader_speed.py --before /tmp/before
    python benchmarks/loader_speed.py --before /tmp/before --benches kim_speed --rounds 6
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import common  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCALE = ["--copies", "2", "--steps", "120", "--predict-seconds", "30", "--requests", "300",
         "--parts", "train,predict,serve"]
BENCHES = {"loader": [], "kim_speed": [], "padding_speed": [], "scale": SCALE}
HEAVY = ("padding_speed", "scale")
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
# a benchmark script run after holding ``pad`` MiB: where a process's arrays land in memory moves
# prediction speed by up to a fifth from one process to the next (a table lookup is memory-bound),
# and the same code on each side lands them alike every time; both sides of a round hold the same
# pad and the rounds differ, so neither side keeps a layout that happens to suit it
PADDED = """
import runpy, sys
import numpy as np
pad = np.ones(int(float(sys.argv[1]) * 2 ** 20), dtype=np.uint8)
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="a checkout of the commit before the change")
    ap.add_argument("--rounds", type=int, default=2, help="runs of each benchmark on each side")
    ap.add_argument("--heavy-rounds", type=int, default=None,
                    help=f"runs of {' and '.join(HEAVY)} on each side (minutes each; default: --rounds)")
    ap.add_argument("--benches", default=",".join(BENCHES),
                    help=f"comma-separated, of: {', '.join(BENCHES)}")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    unknown = set(a.benches.split(",")) - set(BENCHES)
    if unknown:
        ap.error(f"--benches: unknown {', '.join(sorted(unknown))}; known: {', '.join(BENCHES)}")
    return a


def measured(bench: str, code: Path, work: Path, tag: str, pad_mb: float) -> dict:
    """The speed rows of one run of ``bench`` in the checkout ``code`` after holding ``pad_mb``
    MiB, keyed by what they measure."""
    out = work / f"{bench}-{tag}.json"
    cmd = ([sys.executable, "-c", LOADER] if bench == "loader" else
           [sys.executable, "-c", PADDED, f"{pad_mb:.3f}", f"benchmarks/{bench}.py", *BENCHES[bench],
            "--out", str(out)])
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
    before_commit = common.commit(before, short=True)
    with tempfile.TemporaryDirectory() as tmp:
        for bench in a.benches.split(","):
            runs = {"before": [], "after": []}
            rounds = a.heavy_rounds if bench in HEAVY and a.heavy_rounds else a.rounds
            for r in range(rounds):
                pad_mb = random.Random(r).uniform(0, 8)
                sides = (("before", before), ("after", ROOT))
                # the second of two runs in a row is a few percent slower (measured with both sides
                # the same code): every other round starts with this checkout
                for side, code in sides if r % 2 == 0 else sides[::-1]:
                    runs[side].append(measured(bench, code, Path(tmp), f"{side}-{r}", pad_mb))
                    print(f"{bench} {side} {r + 1}/{rounds}", file=sys.stderr)
            rows += compared(bench, runs["before"], runs["after"])
    notes = (f"'before': the checkout at --before ({before_commit}); 'after': this commit. Each "
             f"benchmark ran {a.rounds} times on each side ({', '.join(HEAVY)}: {a.heavy_rounds or a.rounds}), the "
             f"sides alternating (every other round starting with this commit), both sides of a round after "
             f"holding the same 0-8 MiB (a different amount each round: where arrays land moves prediction "
             f"speed by up to a fifth); mean: this commit's mean; "
             f"ratio: its mean over the earlier commit's (for microseconds per batch, seconds per step and seconds "
             f"to the first step lower is faster, for the others higher). scale ran with: {' '.join(SCALE)}. "
             f"padding_speed builds its batches itself and uses no loader: its ratios show a training "
             f"benchmark's own noise. benchmarks/predict_ab.py compares prediction in one process, where "
             f"the process-to-process noise of kim_speed does not enter.")
    print(common.write("loader_speed", rows, notes, a.out))


if __name__ == "__main__":
    main()
