"""How many texts a second the teacher reads when it writes its logits for a student, by batch size:
the pass that costs a distilled student most of its time in ``adaptext auto`` (``LOGITS_BATCH`` in
adaptext/training/distill.py). The teacher (MiniLM, ``cells.TEACHER``) is built and trained one step
on the dataset (its speed does not depend on its weights), then reads the first N training
sentences at each batch size, the sizes interleaved over several rounds; the mean of each.

    python benchmarks/logits_batch.py                              # SST-2, 2,048 sentences, 2 threads
    python benchmarks/logits_batch.py --data trec --texts 512 --rounds 1 --out /tmp/lb.json
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import cells  # noqa: E402
import common  # noqa: E402


def args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="sst2")
    ap.add_argument("--texts", type=int, default=2048)
    ap.add_argument("--batches", default="256,128,64,32")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    common.require_out(a, (a.data, a.texts, a.rounds) != ("sst2", 2048, 3))
    return a


def teacher(a, folder: Path):
    import adaptext
    from adaptext.training.run import train_run
    train_run({**cells.TEACHER, "data": a.data, "data_dir": str(common.DATA), "max_steps": 1, "out": str(folder),
               "progress": False, "threads": a.threads}, log=lambda *_: None)
    return adaptext.load(folder)


def main() -> None:
    a = args()
    from adaptext.data.datasets import load_named
    from adaptext.training.distill import LOGITS_BATCH
    texts = [ex.text for ex in load_named(a.data, str(common.DATA)).train[:a.texts]]
    sizes = [int(b) for b in a.batches.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        pipeline = teacher(a, Path(tmp) / "teacher").pipeline
        items = pipeline.items(texts)
        pipeline.logits(items[:64], 64)                              # warm-up
        seen: dict[int, list[float]] = {b: [] for b in sizes}
        for _ in range(a.rounds):
            for b in sizes:
                start = time.perf_counter()
                pipeline.logits(items, b)
                seen[b].append(len(items) / (time.perf_counter() - start))
    base = common.stats(seen[sizes[0]])["mean"]
    rows = [{"model": "transformer", "variant": f"teacher logits, batch {b}" + (" (LOGITS_BATCH)" if b == LOGITS_BATCH
                                                                             else ""),
             "dataset": a.data, "metric": "texts_per_s", **common.stats(v), "baseline": f"batch {sizes[0]}",
             "ratio": round(common.stats(v)["mean"] / base, 2)} for b, v in seen.items()]
    common.write("logits_batch", rows, f"The teacher ({cells.TEACHER['model']}, MiniLM-L6) built and trained one "
                 f"step on {a.data}, reading its first {len(texts):,} training sentences in order, as a student's "
                 f"transfer set is read, at {a.threads} thread{'s' if a.threads > 1 else ''}; each batch size's "
                 f"texts/s is the mean of {a.rounds} rounds, the sizes interleaved within each round.", a.out)


if __name__ == "__main__":
    main()
