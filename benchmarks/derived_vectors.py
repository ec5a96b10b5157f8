"""Write transformer-derived word vectors for a dataset's vocabulary as a GloVe-format file, so
runs on a machine without the encoder (a GPU machine here has no MiniLM package) start from
the same vectors as ``--embeddings transformer --pca-dim D`` gives where it is installed.

    python benchmarks/derived_vectors.py --data imdb --max-vocab 50000 --pca-dim 300 --out minilm300.txt.gz

The words and vectors are the run's own (its vocabulary, the MiniLM contextual mean over its
training texts, then PCA as ``--pca-dim`` does), computed by the code the run calls. Values are
rounded to float16 so that a float16 copy (``--npz``, for a transfer) writes back the same file."""
from __future__ import annotations

import argparse
import gzip
from pathlib import Path

import numpy as np

import common  # noqa: E402


def derive(data: str, max_vocab: int, pca_dim: int, encoder: str, model: str = "qrnn",
           test: str | None = None) -> tuple[list[str], np.ndarray]:
    """The run's own vocabulary and vectors: what ``adaptext train --model MODEL --data DATA
    --max-vocab N --embeddings transformer[:ENCODER] --pca-dim D`` starts from (its dev is held
    out of train the same way for every seed, so every seed's vocabulary is this one)."""
    from adaptext.errors import BadLines
    from adaptext.runs.spec import make_tokenizer
    from adaptext.runs.options import resolve
    from adaptext.runs.splits import load_data
    from adaptext.training.prepare import pretrained_vectors, token_lists
    cfg = resolve({"model": model, "data": data, "test": test, "data_dir": str(common.DATA), "max_vocab": max_vocab,
                   "embeddings": f"transformer:{encoder}" if encoder else "transformer", "pca_dim": pca_dim})
    train = load_data(cfg, log=lambda *_: None).train
    tokenizer = make_tokenizer(cfg)
    vocab = tokenizer.vocabulary(token_lists(train, tokenizer), cfg.min_freq, cfg.max_vocab or None)
    mat, _ = pretrained_vectors(cfg, tokenizer, vocab, lambda: token_lists(train, tokenizer), BadLines())
    return vocab.itos[2:], mat[2:].numpy().astype(np.float16)


def write_glove(path: Path, words: list[str], mat: np.ndarray) -> None:
    with (gzip.open(path, "wt", encoding="utf-8") if path.suffix == ".gz" else open(path, "w", encoding="utf-8")) as f:
        for w, row in zip(words, mat.astype(np.float32)):
            f.write(w + " " + " ".join(f"{x:.5g}" for x in row) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--test", default=None, help="the test file of a training file (--data FILE)")
    ap.add_argument("--model", default="qrnn", help="the runs' model (its tokenizer makes the vocabulary)")
    ap.add_argument("--max-vocab", type=int, default=50000)
    ap.add_argument("--pca-dim", type=int, default=0)
    ap.add_argument("--encoder", default="", help="a local encoder folder (default: the packaged all-MiniLM-L6-v2)")
    ap.add_argument("--out", type=Path, help="the GloVe-format file to write (.txt, or .txt.gz)")
    ap.add_argument("--npz", type=Path, help="also (or, with --from-npz, only) a float16 copy: words and vectors")
    ap.add_argument("--from-npz", action="store_true", help="write --out from the --npz copy, deriving nothing")
    a = ap.parse_args()
    if a.from_npz:
        z = np.load(a.npz)
        words, mat = list(z["words"]), z["vectors"]
    else:
        words, mat = derive(a.data, a.max_vocab, a.pca_dim, a.encoder, a.model, a.test)
        if a.npz:
            np.savez_compressed(a.npz, words=np.array(words), vectors=mat)
    if a.out:
        write_glove(a.out, words, mat)
    print(f"{len(words)} words, {mat.shape[1]} dimensions")


if __name__ == "__main__":
    main()
