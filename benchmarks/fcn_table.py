"""Anderson (2018) Tables 3-4: the seven attention variants of the fully convolutional
classifier on a many-class imbalanced task (TREC with its 50 fine classes) and on SST-1,
macro and micro F1 with min-max over seeds, and kim_cnn from the same run as reference.

    python benchmarks/fcn_table.py --seeds 3
"""

from common import table_main  # noqa: E402

CELLS = [
    {"model": "fcn", "label": "none", "attention": "none"},
    {"model": "fcn", "label": "scaled-dot 1 head", "attention": "scaled-dot", "heads": 1},
    {"model": "fcn", "label": "scaled-dot 8 heads", "attention": "scaled-dot", "heads": 8},
    {"model": "fcn", "label": "simplified", "attention": "simplified", "heads": 1},
    {"model": "fcn", "label": "simplified 8 heads", "attention": "simplified", "heads": 8},
    {"model": "fcn", "label": "local", "attention": "local", "heads": 1},
    {"model": "fcn", "label": "local 8 heads", "attention": "local", "heads": 8},
    {"model": "kim_cnn", "label": "rand"},
]
DATASETS = {"trec50": {"data": "trec50"}, "sst1": {"data": "sst1"}}

if __name__ == "__main__":
    table_main("fcn_table", CELLS, DATASETS, ("macro_f1", "micro_f1", "accuracy"), None,
               "fcn on characters (the paper's setting), kim_cnn on words; macro F1 is over the classes present "
               "in the test split.")
