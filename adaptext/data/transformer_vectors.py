"""Word vectors for a run's own vocabulary, derived from a pretrained transformer encoder
(``--embeddings transformer`` or ``transformer:NAME_OR_PATH``): what a fast word-level model
gets of the encoder's knowledge without running the encoder at prediction time.

A word's vector is the mean of the encoder's last-layer states at that word over every
occurrence in the training texts (each state itself the mean over the word's pieces), so a
word is represented as the training data uses it; a vocabulary word never seen in a context
(none, unless the vocabulary was given) is encoded alone. Measured on SST-2 with kim_cnn, the
contextual average served better than the word encoded alone (see the README).

A run that reads the encoder's own word pieces (``--tokenizer subword``) gets the encoder's
input vectors of those pieces instead: every piece has one, so a word the training texts never
held still reaches the model as the encoder knows it, not as <unk>.

The vectors are cached on disk, keyed by the encoder and the vocabulary, so folds and reruns
reuse them (``$ADAPTEXT_CACHE``, else ``~/.cache/adaptext``).
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TypeGuard

import torch

from ..atomic import written_atomically
from ..errors import UsageError
from .cache import cache_dir as kind_dir

from .embeddings import Coverage

PREFIX = "transformer"
BATCH = 32
MAX_PIECES = 256          # pieces of one text read in context; longer texts are cut


def is_transformer_spec(spec: object) -> TypeGuard[str]:
    return isinstance(spec, str) and (spec == PREFIX or spec.startswith(PREFIX + ":"))


def encoder_name(spec: str) -> str:
    from ..pretrained import DEFAULT
    return spec.partition(":")[2] or DEFAULT


def cache_dir() -> Path:
    return kind_dir("vectors")


def transformer_vectors(vocab, spec: str, token_lists, log=print, device: str = "cpu") -> tuple[torch.Tensor, Coverage]:
    """[len(vocab), dim] vectors from the encoder of ``spec`` (the padding row zero, <unk> the
    mean of the others), and their coverage (every word has one); the encoder runs on ``device``."""
    from .. import pretrained
    name = encoder_name(spec)
    path = cache_dir() / f"{_key(pretrained.resolve(name), vocab.itos)}.safetensors"
    if path.is_file():
        from safetensors.torch import load_file
        mat = load_file(str(path))["vectors"]
    else:
        mat = _derive(name, vocab, token_lists, log, device)
        _save(mat, path)
    return mat, Coverage(len(vocab) - 2, len(vocab) - 2, mat.shape[1], f"{PREFIX}:{name}")


def piece_vectors(vocab, spec: str, pieces_of: str) -> tuple[torch.Tensor, Coverage]:
    """[len(vocab), dim]: the input vectors of the encoder whose word pieces ``vocab`` holds (ids
    shifted by <pad> and <unk>); the padding row zero, <unk> the encoder's own unknown piece."""
    from .. import pretrained
    name = encoder_name(spec)
    if pretrained.resolve(name) != pretrained.resolve(pieces_of):
        raise UsageError(f"--embeddings {spec}: the run reads the word pieces of {pieces_of}, whose input vectors "
                         f"are its own; give --embeddings transformer:{pieces_of}")
    table = pretrained.encoder(name).get_input_embeddings().weight.detach()
    mat = torch.zeros(len(vocab), table.shape[1])
    mat[2:] = table[:len(vocab) - 2]
    mat[1] = table[pretrained.tokenizer(name).unk_token_id]
    return mat, Coverage(len(vocab) - 2, len(vocab) - 2, mat.shape[1], f"{PREFIX}:{name} (its word pieces)")


def _key(resolved: str, words: list[str]) -> str:
    h = hashlib.sha256(f"contextual-mean/v1\n{resolved}\n".encode())
    h.update("\n".join(words).encode("utf-8"))
    return h.hexdigest()[:32]


@torch.no_grad()
def _derive(name: str, vocab, token_lists, log, device: str = "cpu") -> torch.Tensor:
    from .. import pretrained
    tok, enc = pretrained.tokenizer(name), pretrained.encoder(name).eval().to(device)
    dim = enc.config.hidden_size
    sums, counts = torch.zeros(len(vocab), dim, dtype=torch.float64), torch.zeros(len(vocab), dtype=torch.long)
    texts = [t for t in token_lists if t]
    log(f"deriving word vectors from {name}: {len(texts)} texts, {len(vocab) - 2} words")
    for start in range(0, len(texts), BATCH):
        _accumulate(tok, enc, texts[start:start + BATCH], vocab, sums, counts)
    alone = [i for i in range(2, len(vocab)) if counts[i] == 0]
    for start in range(0, len(alone), BATCH):                 # words never seen in a context
        ids = alone[start:start + BATCH]
        _accumulate(tok, enc, [[vocab.itos[i]] for i in ids], vocab, sums, counts)
    mat = (sums / counts.clamp_min(1)[:, None]).float()
    mat[0] = 0
    mat[1] = mat[2:].mean(0) if len(vocab) > 2 else 0
    return mat


def _accumulate(tok, enc, texts: list[list[str]], vocab, sums, counts) -> None:
    """Add each word's state (the mean over its pieces) to its row of ``sums``."""
    batch = tok(texts, is_split_into_words=True, truncation=True, max_length=MAX_PIECES, padding=True,
                return_tensors="pt")
    states = enc(**batch.to(enc.device)).last_hidden_state.double().cpu()     # [B, P, D]
    for b, words in enumerate(texts):
        row: dict[int, list[int]] = {}
        pieces = batch.word_ids(b)
        for p, w in enumerate(pieces):
            if w is not None:
                row.setdefault(w, []).append(p)
        for w, ps in row.items():
            i = vocab.stoi.get(words[w])
            if i is not None and i >= 2:
                sums[i] += states[b, ps].mean(0)
                counts[i] += 1


def _save(mat: torch.Tensor, path: Path) -> None:
    from safetensors.torch import save_file
    with written_atomically(path) as tmp:
        save_file({"vectors": mat.contiguous()}, str(tmp))
