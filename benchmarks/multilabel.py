"""Multi-label classification on real data: 20 Newsgroups where each post carries its group
and the group's prefixes shared by two or more groups (comp.sys.mac.hardware -> comp,
comp.sys, comp.sys.mac.hardware), kim_cnn, micro / macro / example-based F1 on the test split.

    python benchmarks/multilabel.py --seeds 3
"""

from common import GLOVE, table_main  # noqa: E402

MAX_LENGTH = 800
CELLS = [{"model": "kim_cnn", "label": "non-static (GloVe 50d)", "embeddings": str(GLOVE),
          "embedding_mode": "non-static", "max_length": MAX_LENGTH}]
DATASETS = {"20news-hier": {"data": "20news-hier", "epochs": 10, "patience": 3}}

if __name__ == "__main__":
    table_main("multilabel", CELLS, DATASETS, ("micro_f1", "macro_f1", "example_f1", "subset_accuracy"), notes=(
        "Labels per post: its newsgroup plus every prefix shared by >= 2 groups: 27 labels (the 20 groups and "
        "comp, comp.sys, rec, rec.sport, sci, talk, talk.politics). Sigmoid outputs, binary cross-entropy; decision "
        f"threshold tuned on dev (10% of train held out), the top label always kept. Texts truncated to {MAX_LENGTH} "
        "tokens, headers kept (nothing removed). Early stopping on dev micro F1."))
