"""What the QRNN's word-projection tables save at prediction: the same run predicting through
the tables (the default: each word's products with the first layer's gate weights, looked up) and
through its gate convolutions (the tables switched off), in one process, as `kim_speed.py` does
for Kim's CNN (both measured by `projection_speed.py`).

Configurations: the one-layer bidirectional QRNN of 150 units a direction (the distillation
student of `distill_table.py`) on TREC and SST-2, and Bradbury et al.'s four densely connected
layers of 256 on SST-2 (only the first layer reads the words, so only its products are tables).
Each is trained one step (speed does not depend on the weights), then timed with
``adaptext.load(run).predict`` on the first 1,000 test sentences (TREC: its 500), in batches of 64
and in calls of 16, 2 threads, best of 3 passes after a warm-up; the outputs of the two paths are
compared too.

    python benchmarks/qrnn_speed.py
    python benchmarks/qrnn_speed.py --quick --out /tmp/qrnn_speed.json   # checks it works
"""
from __future__ import annotations

import projection_speed  # noqa: E402

STUDENT = {"layers": 1, "bidirectional": True, "hidden": 150}
CONFIGS = [("trec", "1 layer, bidirectional, 150", STUDENT), ("sst2", "1 layer, bidirectional, 150", STUDENT),
           ("sst2", "4 dense layers of 256 (the paper's)", {})]


def main() -> None:
    projection_speed.speed_table_main(
        "qrnn_speed", __doc__, "qrnn", CONFIGS,
        "qrnn (random 300-d word vectors), each trained one step on the dataset; the first 1,000 "
        "test sentences (TREC: 500), 2 threads, best of 3 passes; ratios against the same run "
        "predicting through its gate convolutions, in the same process ('convolutions' rows).")


if __name__ == "__main__":
    main()
