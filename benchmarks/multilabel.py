"""Multi-label classification on real data: 20 Newsgroups where each post carries its group
and the group's prefixes shared by two or more groups (comp.sys.mac.hardware -> comp,
comp.sys, comp.sys.mac.hardware), kim_cnn, micro / macro / example-based F1 on the test split.

    python benchmarks/multilabel.py --seeds 3
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import common  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--max-length", type=int, default=800)
    ap.add_argument("--accelerator", default="auto")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    from adaptext.training.run import train_run
    runs = []
    for seed in range(1, a.seeds + 1):
        with tempfile.TemporaryDirectory() as tmp:
            m = train_run({"model": "kim_cnn", "data": "20news-hier", "seed": seed, "epochs": a.epochs, "patience": 3,
                           "max_length": a.max_length, "embeddings": str(common.GLOVE), "embedding_mode": "non-static",
                           "progress": False, "accelerator": a.accelerator, "out": str(Path(tmp) / "r"),
                           "data_dir": str(common.DATA)}, log=lambda *_: None)
        runs.append(m)
        print(f"seed {seed}: micro {m['test']['micro_f1']:.2f} macro {m['test']['macro_f1']:.2f} "
              f"threshold {m['info']['threshold']}", flush=True)
    rows = []
    for metric in ("micro_f1", "macro_f1", "example_f1", "subset_accuracy"):
        rows.append({"model": "kim_cnn", "variant": "non-static (GloVe 50d)", "dataset": "20news-hier", "split": "test",
                     "metric": metric, **common.stats([m["test"][metric] for m in runs]),
                     "seconds": round(sum(m["info"]["train_seconds"] for m in runs) / len(runs), 1)})
    common.write("multilabel", rows, (
        "Labels per post: its newsgroup plus every prefix shared by >= 2 groups: 27 labels (the 20 groups and "
        "comp, comp.sys, rec, rec.sport, sci, talk, talk.politics). "
        f"Sigmoid outputs, binary cross-entropy; decision threshold tuned on dev (10% of train held out), the top label "
        f"always kept. Texts truncated to {a.max_length} tokens, headers kept (nothing removed). At most {a.epochs} "
        "epochs, early stopping on dev micro F1 (patience 3)."), a.out)


if __name__ == "__main__":
    main()
