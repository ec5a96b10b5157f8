"""The configurations more than one benchmark script trains: the accuracy tables' cells, datasets
and published figures (read by their own ``*_table.py`` and by ``frontier.py``, which times each
cell as its table trains it), the distillation teacher and students (``distill_table.py``,
``frontier.py``) and the projection-table speed configurations of Kim's CNN (``kim_speed.py``,
``predict_ab.py``). A cell is ``{"model", "label", **train options}``, optionally with
``"datasets": (...)`` to restrict it (``common.table_main``)."""
from __future__ import annotations

from adaptext.auto.plan import PIECES
from common import GLOVE

# ---------------------------------------------------------------------------- adaptive_table.py
# Choi et al. (2019) Table 2
ADAPTIVE_EMB = {"embeddings": str(GLOVE), "embedding_mode": "non-static", "oov_init": "normal", "oov_scale": 0.6,
                "min_freq": 6}
ADAPTIVE_CELLS = [
    {"model": "kim_cnn", "label": "-", **ADAPTIVE_EMB},
    {"model": "ac_cnn", "label": "hashed", "generation": "hashed", **ADAPTIVE_EMB},
    {"model": "ac_cnn", "label": "full", "generation": "full", **ADAPTIVE_EMB},
    {"model": "dpcnn", "label": "-", **ADAPTIVE_EMB},
    {"model": "ac_dpcnn", "label": "hashed", "generation": "hashed", **ADAPTIVE_EMB},
    {"model": "densecnn", "label": "-", **ADAPTIVE_EMB},
    {"model": "ac_densecnn", "label": "hashed", "generation": "hashed", **ADAPTIVE_EMB},
]
ADAPTIVE_DATASETS = {"sst1": {"data": "sst1"}, "sst2": {"data": "sst2"}, "trec": {"data": "trec"},
                     "subj": {"data": "subj", "cv": 10}, "ag_news": {"data": "ag_news"}}

# ---------------------------------------------------------------------------- attconv_table.py
# Yin & Schütze (2018)
ATTCONV_PAIRS, ATTCONV_SINGLE = ("sick", "snli", "scitail"), ("sst1", "sst2", "imdb")
ATTCONV_EMB = {"embeddings": str(GLOVE), "embedding_mode": "non-static"}
ATTCONV_CELLS = [
    {"model": "attconv", "label": "light", "variant": "light"},
    {"model": "attconv", "label": "advanced", "variant": "advanced"},
    {"model": "attconv_noatt", "label": "w/o attention", "datasets": ATTCONV_PAIRS},
    {"model": "attconv_noconv", "label": "w/o convolution", "datasets": ATTCONV_PAIRS},
    {"model": "attentive_pooling", "label": "attentive pooling", "datasets": ATTCONV_PAIRS},
    {"model": "kim_cnn", "label": "rand", "datasets": ATTCONV_SINGLE},
    # the paper initialises with 300-d word2vec; the nearest we have is the 50-d GloVe subset
    {"model": "attconv", "label": "light (GloVe 50d)", "variant": "light", "datasets": ATTCONV_PAIRS, **ATTCONV_EMB},
    {"model": "attconv", "label": "advanced (GloVe 50d)", "variant": "advanced", "datasets": ATTCONV_PAIRS,
     **ATTCONV_EMB},
]
ATTCONV_DATASETS = {"sick": {"data": "sick"}, "snli": {"data": "snli"}, "scitail": {"data": "scitail"},
                    "sst1": {"data": "sst1"}, "sst2": {"data": "sst2"}, "imdb": {"data": "imdb", "max_length": 400}}

# ---------------------------------------------------------------------------- encoder_table.py
# the comparison encoders
ENCODER_CELLS = [{"model": m, "label": "-"} for m in
                 ("bov", "dcnn", "qrnn", "gated_cnn", "lightconv", "dynamicconv", "fcn", "kim_cnn")]
ENCODER_DATASETS = {"sst1": {"data": "sst1"}, "sst2": {"data": "sst2"}, "trec": {"data": "trec"}}
ENCODER_PAPER = {("dcnn", "-", "sst1", "accuracy"): 48.5, ("dcnn", "-", "sst2", "accuracy"): 86.8,
                 ("dcnn", "-", "trec", "accuracy"): 93.0}

# ---------------------------------------------------------------------------- tree_table.py
# Shen et al. (2019) Table 2
TREE_EMB = {"embeddings": str(GLOVE), "embedding_mode": "non-static"}
TREE_CELLS = [
    {"model": "recnn", "label": "-", **TREE_EMB},
    {"model": "treelstm", "label": "-", **TREE_EMB},
    {"model": "tg_hrecnn", "label": "concat", "fusion": "concat", **TREE_EMB},
    {"model": "tg_hrecnn", "label": "multi", "fusion": "multi", **TREE_EMB},
    {"model": "tg_htreelstm", "label": "concat", "fusion": "concat", **TREE_EMB},
    {"model": "tg_htreelstm", "label": "multi", "fusion": "multi", **TREE_EMB},
    {"model": "tg_htreelstm", "label": "multi, right-branching", "fusion": "multi", "parser": "right-branching",
     "datasets": ("mr", "subj", "trec"), **TREE_EMB},
]
# SICK: dropout 0.2; 0.5, the SST setting, underfits the 4,500 pairs (checked on SICK dev only:
# `adaptext train --model treelstm --data sick-trees --embeddings GLOVE --embedding-mode non-static --dropout D`)
# SST: AdaGrad lr 0.05 for every row, the paper's; every phrase is labelled there. Elsewhere each model's
# default (0.01 for the RecNNs, which saturate at 0.05 with root-only labels). SST and SICK train
# at most 10 epochs (patience 3), the root-labelled sets 15 (patience 4).
TREE_SHORT = {"epochs": 10, "patience": 3}
TREE_SST = {"lr": 0.05, **TREE_SHORT}
TREE_DATASETS = {"sst1": {"data": "sst1-trees", **TREE_SST}, "sst2": {"data": "sst2-trees", **TREE_SST},
                 "sick": {"data": "sick-trees", "dropout": 0.2, **TREE_SHORT},
                 "mr": {"data": "mr", "cv": 10}, "subj": {"data": "subj", "cv": 10}, "trec": {"data": "trec"}}
# published figures we can vouch for: Tai et al. 2015 (constituency Tree-LSTM, 300-d GloVe),
# Socher et al. 2013 (RecNN)
TREE_PAPER = {("treelstm", "-", "sst1", "accuracy"): 51.0, ("treelstm", "-", "sst2", "accuracy"): 88.0,
              ("recnn", "-", "sst1", "accuracy"): 43.2, ("recnn", "-", "sst2", "accuracy"): 82.4}
# Shen et al. 2019, Table 2: MR, SUBJ, TREC (Stanford-parser trees)
for (_model, _label), _figures in {("recnn", "-"): (76.4, 91.8, 90.2), ("treelstm", "-"): (81.2, 93.2, 93.6),
                                   ("tg_hrecnn", "concat"): (81.1, 93.8, 93.4),
                                   ("tg_htreelstm", "concat"): (82.9, 94.7, 95.0),
                                   ("tg_htreelstm", "multi"): (82.6, 94.9, 95.8)}.items():
    TREE_PAPER.update({(_model, _label, ds, "accuracy"): v for ds, v in zip(("mr", "subj", "trec"), _figures)})

# ---------------------------------------------------------------------------- distill_table.py
ONE_LAYER = {"layers": 1, "bidirectional": True, "hidden": 150, "batch_size": 64}
# student name -> (its train options, what its rows add after undistilled / distilled); a name that is
# not a model's names its model among the options
STUDENTS = {"kim_cnn": ({}, ""), "ac_cnn": ({}, ""),
            "ac_cnn-attention": ({"model": "ac_cnn", "context": "attention-only"}, ", attention-only context (no GRU)"),
            "attconv": ({"variant": "light"}, ""), "qrnn": ({}, ""),
            # Tang et al.'s (2019) student shape, one bidirectional recurrent layer (here 150 units a
            # direction, max-pooled over time, random word vectors): an LSTM, and a QRNN whose gates
            # are looked up per word at prediction
            "bilstm": ({"model": "lstm", **ONE_LAYER}, ", one-layer BiLSTM (150 a direction)"),
            "biqrnn": ({"model": "qrnn", **ONE_LAYER}, ", one-layer bidirectional QRNN (150 a direction)"),
            # the BiLSTM narrowed until it predicts about as fast as that QRNN
            "bilstm-64": ({"model": "lstm", **ONE_LAYER, "hidden": 64}, ", one-layer BiLSTM (64 a direction)"),
            # the same over the teacher's word pieces (random 300-d vectors): a word never seen in
            # training is still read, as pieces the student has seen in other words
            "bilstm-pieces": ({"model": "lstm", **ONE_LAYER, "tokenizer": "subword"},
                              ", one-layer BiLSTM over word pieces"),
            "biqrnn-pieces": ({"model": "qrnn", **ONE_LAYER, "tokenizer": "subword"},
                              ", one-layer bidirectional QRNN over word pieces"),
            # adaptext auto's first student: the 64-unit BiLSTM over the teacher's word pieces through
            # the encoder's own input vectors, kept fixed
            "bilstm-64-minilm": ({"model": "lstm", **ONE_LAYER, "hidden": 64, **PIECES},
                                 ", one-layer BiLSTM (64 a direction) over MiniLM's word pieces and fixed input "
                                 "vectors")}
TEACHER = {"model": "transformer", "epochs": 3, "lr": 5e-5, "batch_size": 32}

# ---------------------------------------------------------------------------- kim_speed.py
# (dataset, label, train options) of kim_cnn predicting through its word-projection table
KIM_SPEED_GLOVE = {"embeddings": str(GLOVE)}
KIM_SPEED_CONFIGS = [("trec", "rand", {}), ("sst2", "rand", {}),
                     ("sst2", "non-static, GloVe 50d", {**KIM_SPEED_GLOVE, "embedding_mode": "non-static"}),
                     ("sst2", "multichannel, GloVe 50d", {**KIM_SPEED_GLOVE, "embedding_mode": "multichannel"})]
