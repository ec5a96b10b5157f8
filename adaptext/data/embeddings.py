"""Pretrained word vectors: GloVe / word2vec / fastText text formats (header or not, gzip or
not) and word2vec binary. Only the vocabulary's words are kept; coverage is reported."""
from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..errors import BadLines, DataError, UsageError


@dataclass
class Coverage:
    found: int
    total: int
    dim: int
    path: str

    @property
    def ratio(self) -> float:
        return self.found / max(self.total, 1)

    def __str__(self):
        return f"{self.found}/{self.total} vocabulary words ({100 * self.ratio:.1f}%) found in {self.path} (dim {self.dim})"


def _open(path):
    path = Path(path)
    if not path.exists():
        raise DataError(path, None, "no such embeddings file")
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rb") if gz else open(path, "rb")


def _is_binary(path) -> bool:
    name = Path(path).name.lower().removesuffix(".gz")
    return name.endswith(".bin")


def read_vectors(path, wanted=None, bad: BadLines | None = None, limit: int = 0) -> tuple[dict, int]:
    """word -> float32 vector for the words in ``wanted`` (all words if None), in the file's order;
    ``limit``: the file's first that many entries only. A malformed line raises, or under ``bad``'s
    ``skip`` is left out and counted (e.g. the few lines of GloVe 840B whose word holds a space)."""
    bad = bad or BadLines()
    if _is_binary(path):
        return _read_word2vec_binary(path, wanted, limit)
    vecs, dim, entries = {}, None, 0
    with _open(path) as f:
        for i, raw in enumerate(f, 1):
            if limit and entries == limit:
                break
            line = raw.decode("utf-8", errors="replace").rstrip("\n\r ")
            if not line:
                continue
            parts = line.split(" ")
            if i == 1 and len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
                dim = int(parts[1])          # word2vec / fastText header "count dim"
                continue
            if dim is None:
                dim = len(parts) - 1
                if dim < 1:
                    raise DataError(path, i, "expected 'word v1 v2 ...', found no numbers")
            if len(parts) - 1 != dim:
                bad(path, i, f"vector has {len(parts) - 1} numbers, expected {dim} as on the lines before")
                continue
            entries += 1
            word = parts[0]
            if wanted is not None and word not in wanted:
                continue
            try:
                vecs[word] = np.asarray(parts[1:], dtype=np.float32)
            except ValueError:
                bad(path, i, "vector holds a value that is not a number")
    if dim is None:
        raise DataError(path, None, "no vectors in the file")
    return vecs, dim


def _read_word2vec_binary(path, wanted, limit: int = 0):
    vecs = {}
    with _open(path) as f:
        header = f.readline().split()
        if len(header) != 2:
            raise DataError(path, 1, "word2vec binary needs a 'count dim' header")
        count, dim = int(header[0]), int(header[1])
        for k in range(min(count, limit) if limit else count):
            word = bytearray()
            while True:
                ch = f.read(1)
                if ch == b"":
                    raise DataError(path, None, f"file ends inside entry {k + 1} of {count}")
                if ch == b" ":
                    break
                if ch != b"\n":
                    word.extend(ch)
            buf = f.read(4 * dim)
            if len(buf) != 4 * dim:
                raise DataError(path, None, f"file ends inside the vector of entry {k + 1} of {count}")
            w = word.decode("utf-8", errors="replace")
            if wanted is None or w in wanted:
                vecs[w] = np.frombuffer(buf, dtype=np.float32).copy()
    return vecs, dim


def embedding_matrix(vocab, path, oov_init: str = "uniform", oov_scale: float = 0.25, seed: int = 0,
                     lower_fallback: bool = True, bad: BadLines | None = None) -> tuple[torch.Tensor, Coverage]:
    """[len(vocab), dim] matrix: pretrained rows where found, the rest drawn from
    ``uniform(-s, s)`` (Kim 2014: s=0.25) or ``normal(0, s)`` (Choi et al. 2019: s=0.6).
    The padding row is zero."""
    wanted = set(vocab.itos)
    if lower_fallback:
        wanted |= {w.lower() for w in vocab.itos}
    vecs, dim = read_vectors(path, wanted, bad)
    g = torch.Generator().manual_seed(seed)
    if oov_init == "uniform":
        mat = (torch.rand(len(vocab), dim, generator=g) * 2 - 1) * oov_scale
    elif oov_init == "normal":
        mat = torch.randn(len(vocab), dim, generator=g) * oov_scale
    else:
        raise ValueError(f"oov_init must be 'uniform' or 'normal', not {oov_init!r}")
    found = 0
    for i, w in enumerate(vocab.itos[2:], 2):
        v = vecs.get(w)
        if v is None and lower_fallback:
            v = vecs.get(w.lower())
        if v is not None:
            mat[i] = torch.from_numpy(v)
            found += 1
    mat[0] = 0
    return mat, Coverage(found, len(vocab) - 2, dim, str(path))


def leading_words(path, n: int, lower: bool, bad: BadLines | None = None) -> list[str]:
    """The first ``n`` words of a file of pretrained vectors (GloVe and word2vec list the most
    frequent first), lower-cased when the run's tokens are."""
    words = list(read_vectors(path, None, bad, limit=n)[0])
    return [w.lower() for w in words] if lower else words


def principal_components(mat: torch.Tensor, coverage: Coverage, dim: int) -> tuple[torch.Tensor, Coverage]:
    """The vectors projected on their ``dim`` principal components (over the vocabulary's words,
    not <pad> / <unk>): as model2vec shrinks an encoder's vectors, the directions that vary
    most across words kept. The padding row stays zero."""
    if not 0 < dim < mat.shape[1]:
        raise UsageError(f"--pca-dim {dim}: the vectors of {coverage.path} have {mat.shape[1]} dimensions; "
                         f"keep between 1 and {mat.shape[1] - 1} of them")
    words = mat[2:].double()
    if len(words) < dim:
        raise UsageError(f"--pca-dim {dim}: the vocabulary has only {len(words)} words")
    mean = words.mean(0)
    _, _, vt = torch.linalg.svd(words - mean, full_matrices=False)
    out = ((mat.double() - mean) @ vt[:dim].T).float()
    out[0] = 0
    return out, Coverage(coverage.found, coverage.total, dim, f"{coverage.path} (PCA to {dim})")
