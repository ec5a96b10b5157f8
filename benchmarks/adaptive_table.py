"""Choi et al. (2019) Table 2: kim_cnn, DPCNN and DenseCNN against their hashed adaptive forms
(and ac_cnn with full generation) on SST-1, SST-2, TREC, SUBJ (10-fold CV) and AG News (when
its training split is under the data root); the Table 4 ablation (with / without the GRU
context) with --ablation.

    python benchmarks/adaptive_table.py --seeds 3
    python benchmarks/adaptive_table.py --ablation --datasets trec --epochs 10 --patience 3 \
        --out benchmarks/results/adaptive_ablation.json
"""
import sys

import cells  # noqa: E402
from common import table_main  # noqa: E402

EMB = cells.ADAPTIVE_EMB          # the table's word vectors (its cells are cells.ADAPTIVE_CELLS)
ABLATION = [
    {"model": "ac_cnn", "label": "hashed (GRU context)", "generation": "hashed", "context": "gru", **EMB},
    {"model": "ac_cnn", "label": "hashed (w/o GRU)", "generation": "hashed", "context": "attention-only", **EMB},
    {"model": "ac_cnn", "label": "hashed (mean context)", "generation": "hashed", "context": "mean", **EMB},
]
ABLATION_NOTE = (" Table 4's 'w/o GRU': the context vector is the attention of Eqs. 2-3 over the word vectors "
                 "themselves (attention-only); 'mean' averages them (no attention either).")

if __name__ == "__main__":
    ablation = "--ablation" in sys.argv          # kept in sys.argv: the result file records the command
    table_main("adaptive_ablation" if ablation else "adaptive_table",
               ABLATION if ablation else cells.ADAPTIVE_CELLS, cells.ADAPTIVE_DATASETS,
               ("accuracy",), None,
               "Words seen fewer than 6 times dropped, 50-d GloVe subset (the paper: 300-d word2vec), OOV vectors "
               "normal(0, 0.6) as in the paper; each model's registry training defaults (Adam lr 0.001, batch 64; "
               "ac_dpcnn with gradients clipped to norm 1)." + (ABLATION_NOTE if ablation else ""),
               argv=[x for x in sys.argv[1:] if x != "--ablation"])
