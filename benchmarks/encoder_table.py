"""The comparison encoders on SST-1, SST-2 and TREC: bag of vectors, DCNN, QRNN, gated CNN,
LightConv, DynamicConv, the character-level FCN and Kim's CNN, mean / std over seeds; DCNN
beside its published figures (Kalchbrenner et al. 2014: SST-1 48.5, SST-2 86.8, TREC 93.0).

    python benchmarks/encoder_table.py --seeds 3
"""

import cells  # noqa: E402
from common import table_main  # noqa: E402

if __name__ == "__main__":
    table_main("encoder_table", cells.ENCODER_CELLS, cells.ENCODER_DATASETS, ("accuracy",), cells.ENCODER_PAPER,
               "Sentence-level training (no phrases), random word vectors, each model's registry defaults "
               "(fcn reads characters).")
