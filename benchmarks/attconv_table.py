"""Yin & Schütze (2018): attentive convolution on SICK entailment (light, advanced, and the
baselines w/o attention, w/o convolution, attentive pooling), and intra-context ATTCONV on
SST-1, SST-2 and IMDB against kim_cnn from the same run; SNLI / SciTail rows when those
datasets are under the data root.

    python benchmarks/attconv_table.py --seeds 3
"""

import cells  # noqa: E402
from common import table_main  # noqa: E402

if __name__ == "__main__":
    table_main("attconv_table", cells.ATTCONV_CELLS, cells.ATTCONV_DATASETS, ("accuracy",), None,
               "SICK: the hypothesis modelled with the premise as context (3 classes, SemEval train/trial/test). "
               "SST-1/SST-2 sentences and IMDB reviews (truncated to 400 words) with intra-context ATTCONV; "
               "random word vectors unless the variant names GloVe (50-d subset, fine-tuned); AdaGrad lr 0.01, batch 50 (the paper's defaults).", default_epochs=20)
