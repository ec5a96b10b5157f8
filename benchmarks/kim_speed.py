"""What Kim CNN's word-projection table saves at prediction: the same run predicting through the
table (the default) and through its convolutions (the table switched off), in one process.

Each configuration is trained one step on its dataset (its vocabulary and vectors: speed does not
depend on the weights), then timed with ``adaptext.load(run).predict`` on the first 1,000 test
sentences (TREC: its 500): in batches of 64 (sorted by length, as ``predict`` does) and in calls of
16 sentences in test order (what a service's small requests look like), 2 threads, best of 3
passes after a warm-up. The outputs of the two paths are compared too. The measuring is
projection_speed.py's (qrnn_speed.py's too); the configurations are cells.py's ``KIM_SPEED_CONFIGS``.

    python benchmarks/kim_speed.py
    python benchmarks/kim_speed.py --quick --out /tmp/kim_speed.json   # checks it works
"""
from __future__ import annotations

import cells  # noqa: E402
import projection_speed  # noqa: E402


def main() -> None:
    projection_speed.speed_table_main(
        "kim_speed", __doc__, "kim_cnn", cells.KIM_SPEED_CONFIGS,
        "kim_cnn at Kim's sizes (widths 3, 4, 5 x 100 filters; rand: 300-d vectors), each trained one "
        "step on the dataset; the first 1,000 test sentences (TREC: 500), 2 threads, best of 3 passes; "
        "ratios against the same run predicting through its convolutions, in the same process.")


if __name__ == "__main__":
    main()
