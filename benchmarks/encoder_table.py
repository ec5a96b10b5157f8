"""The comparison encoders on SST-1, SST-2 and TREC: bag of vectors, DCNN, QRNN, gated CNN,
LightConv, DynamicConv, the character-level FCN and Kim's CNN, mean / std over seeds; DCNN
beside its published figures (Kalchbrenner et al. 2014: SST-1 48.5, SST-2 86.8, TREC 93.0).

    python benchmarks/encoder_table.py --seeds 3
"""

from common import table_main  # noqa: E402

CELLS = [{"model": m, "label": "-"} for m in
         ("bov", "dcnn", "qrnn", "gated_cnn", "lightconv", "dynamicconv", "fcn", "kim_cnn")]
DATASETS = {"sst1": {"data": "sst1"}, "sst2": {"data": "sst2"}, "trec": {"data": "trec"}}
PAPER = {("dcnn", "-", "sst1", "accuracy"): 48.5, ("dcnn", "-", "sst2", "accuracy"): 86.8,
         ("dcnn", "-", "trec", "accuracy"): 93.0}

if __name__ == "__main__":
    table_main("encoder_table", CELLS, DATASETS, ("accuracy",), PAPER,
               "Sentence-level training (no phrases), random word vectors, each model's registry defaults "
               "(fcn reads characters).")
