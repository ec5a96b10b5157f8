"""Shen et al. (2019) Table 2: RecNN, Tree-LSTM and the tag-guided TG-HRecNN / TG-HTreeLSTM
(concat and multi fusion) on SST-1 and SST-2 (trained on every labelled node, evaluated on
the root), SICK entailment (tree pairs), and MR, SUBJ (10-fold CV) and TREC, whose plain
sentences are parsed by the shipped bracketer (``--parser``; the paper: the Stanford parser),
with the 50-d GloVe subset. A right-branching TG-HTreeLSTM row shows what the parses bring.

    python benchmarks/tree_table.py --seeds 3
    python benchmarks/tree_table.py --datasets trec --out trec.json      # one column
"""

import cells  # noqa: E402
from common import table_main  # noqa: E402

if __name__ == "__main__":
    table_main("tree_table", cells.TREE_CELLS, cells.TREE_DATASETS, ("accuracy",), cells.TREE_PAPER,
               "Trees: SST PTB trees (every node labelled; SST-2 leaves neutral nodes unlabelled) and the SICK "
               "Stanford-parser trees; MR, SUBJ and TREC sentences parsed by the shipped bracketer (the row marked "
               "right-branching: right-branching trees), labelled at the root only; POS tags from NLTK, phrase tags "
               "from the shipped labeller; 50-d GloVe subset, "
               "fine-tuned (the papers: 300-d GloVe). Dropout 0.5 on SST (the paper's), 0.2 on SICK (chosen on SICK dev). "
               "AdaGrad, lr 0.05 on SST (the paper's); elsewhere 0.05 for the Tree-LSTMs and 0.01 for the RecNNs "
               "(their default: at 0.05 they saturate when only the root is labelled).", default_epochs=15)
