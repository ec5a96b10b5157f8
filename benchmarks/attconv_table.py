"""Yin & Schütze (2018): attentive convolution on SICK entailment (light, advanced, and the
baselines w/o attention, w/o convolution, attentive pooling), and intra-context ATTCONV on
SST-1, SST-2 and IMDB against kim_cnn from the same run; SNLI / SciTail rows when those
datasets are under the data root.

    python benchmarks/attconv_table.py --seeds 3
"""

from common import GLOVE, table_main  # noqa: E402

PAIRS, SINGLE = ("sick", "snli", "scitail"), ("sst1", "sst2", "imdb")
EMB = {"embeddings": str(GLOVE), "embedding_mode": "non-static"}
CELLS = [
    {"model": "attconv", "label": "light", "variant": "light"},
    {"model": "attconv", "label": "advanced", "variant": "advanced"},
    {"model": "attconv_noatt", "label": "w/o attention", "datasets": PAIRS},
    {"model": "attconv_noconv", "label": "w/o convolution", "datasets": PAIRS},
    {"model": "attentive_pooling", "label": "attentive pooling", "datasets": PAIRS},
    {"model": "kim_cnn", "label": "rand", "datasets": SINGLE},
    # the paper initialises with 300-d word2vec; the nearest we have is the 50-d GloVe subset
    {"model": "attconv", "label": "light (GloVe 50d)", "variant": "light", "datasets": PAIRS, **EMB},
    {"model": "attconv", "label": "advanced (GloVe 50d)", "variant": "advanced", "datasets": PAIRS, **EMB},
]
DATASETS = {"sick": {"data": "sick"}, "snli": {"data": "snli"}, "scitail": {"data": "scitail"},
            "sst1": {"data": "sst1"}, "sst2": {"data": "sst2"}, "imdb": {"data": "imdb", "max_length": 400}}

if __name__ == "__main__":
    table_main("attconv_table", CELLS, DATASETS, ("accuracy",), None,
               "SICK: the hypothesis modelled with the premise as context (3 classes, SemEval train/trial/test). "
               "SST-1/SST-2 sentences and IMDB reviews (truncated to 400 words) with intra-context ATTCONV; "
               "random word vectors unless the variant names GloVe (50-d subset, fine-tuned); AdaGrad lr 0.01, batch 50 (the paper's defaults).", default_epochs=20)
