"""A student's general stage, before any task (Turc et al. 2019, "Well-read students learn
better"; TinyBERT's general distillation): the BiLSTM that reads the pretrained encoder's word
pieces through the encoder's own fixed input vectors (adaptext auto's first student) learns, over
unlabelled sentences, to give the encoder's sentence embedding (mean-pooled and normalised as
sentence-transformers pools it, each dimension standardised over the corpus) through a linear map
dropped afterwards, and with ``--pieces-weight`` the encoder's last layer at each word piece too.
Its recurrent layers, written to a safetensors file, are what a task's student can start from
(``adaptext distill ... --init FILE``): the word pieces make them fit every data set's vocabulary. Whether they help: benchmarks/results/distill_levers.md.

    python benchmarks/general_student.py --corpus ../shared/data/imdb/train.jsonl.gz \
        ../shared/data/20news/train.jsonl.gz --sentences 65000 --hidden 64 --cache targets/ \
        --out pieces-64.safetensors
"""
from __future__ import annotations

import argparse
import json
import random
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file

from adaptext import pretrained
from adaptext.auto.plan import BILSTM, PIECES
from adaptext.data.batching import Encoder
from adaptext.data.examples import ExampleKind, TextExample
from adaptext.data.loading import batch_loader
from adaptext.data.text import LabelMap, Vocab
from adaptext.errors import BadLines
from adaptext.nn import masked_max_pool
from adaptext.parse.silver import sentences_of
from adaptext.runs.options import resolve
from adaptext.runs.pipeline import collator
from adaptext.runs.spec import RunSpec, make_tokenizer
from adaptext.training.prepare import pretrained_vectors

HELD_OUT = 2000                 # sentences the per-epoch loss is read on (at most a tenth), never trained on
MAX_PIECES = 254                # the pieces of a sentence the encoder reads (with [CLS] and [SEP] in its 512)
SHIFT = 2                       # a pretrained vocabulary's ids follow <pad> and <unk> (Vocab(shift=True))


def corpus(paths: list[str], sentences: int, seed: int = 2) -> list[str]:
    """``sentences`` distinct sentences of 4-50 words drawn from each file, shuffled together."""
    texts = [" ".join(s) for path in paths for s in sentences_of([path], set(), sentences, seed)]
    random.Random(0).shuffle(texts)
    return texts


@dataclass
class Targets:
    """What the encoder gives over a corpus: each sentence's embedding [N, D], and its last layer
    at each word piece, sentence after sentence ([sum of lengths, D], float16, the rows of sentence
    i from ``offsets[i]`` to ``offsets[i + 1]``)."""
    sentences: np.ndarray
    pieces: np.ndarray
    offsets: np.ndarray

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for name, array in vars(self).items():
            np.save(folder / f"{name}.npy", array)

    @classmethod
    def load(cls, folder: Path) -> "Targets":
        return cls(**{name: np.load(folder / f"{name}.npy", mmap_mode="r" if name == "pieces" else None)
                      for name in ("sentences", "pieces", "offsets")})


def encoder_targets(items, batch: int = 64) -> Targets:
    """The packaged encoder over each item's own word pieces (the student's ids shifted back to the
    encoder's, between its [CLS] and [SEP]), so that its states line up with the student's steps:
    the sentence embedding is its last layer mean-pooled over the text, L2-normalised, as
    sentence-transformers pools it."""
    tokenize, encoder = pretrained.tokenizer(pretrained.DEFAULT), pretrained.encoder(pretrained.DEFAULT).eval()
    lengths = np.array([min(len(it.text), MAX_PIECES) for it in items])
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    dim = encoder.config.hidden_size
    sentences = np.zeros((len(items), dim), dtype=np.float32)
    pieces = np.zeros((offsets[-1], dim), dtype=np.float16)
    order = np.argsort(lengths, kind="stable")
    with torch.inference_mode():
        for k in range(0, len(order), batch):
            rows = order[k:k + batch]
            ids = torch.full((len(rows), lengths[rows].max() + 2), tokenize.pad_token_id)
            for r, i in enumerate(rows):
                own = items[i].text[:lengths[i]] - SHIFT
                own[own == Vocab.unk_id - SHIFT] = tokenize.unk_token_id
                ids[r, :lengths[i] + 2] = torch.tensor([tokenize.cls_token_id, *own, tokenize.sep_token_id])
            mask = (torch.arange(ids.shape[1])[None] < torch.from_numpy(lengths[rows] + 2)[:, None]).float()
            states = encoder(input_ids=ids, attention_mask=mask.long()).last_hidden_state
            pooled = (states * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
            sentences[rows] = torch.nn.functional.normalize(pooled, dim=-1).numpy()
            for r, i in enumerate(rows):
                pieces[offsets[i]:offsets[i + 1]] = states[r, 1:lengths[i] + 1].numpy()
    return Targets(sentences, pieces, offsets)


def student(hidden: int):
    """(model, encoder, collate) of the piece student: one bidirectional LSTM layer of ``hidden``
    units a direction over the packaged encoder's word pieces and fixed input vectors (auto's)."""
    cfg = resolve({**BILSTM, **PIECES, "hidden": hidden})
    tokenizer = make_tokenizer(cfg)
    vocab, labels = tokenizer.vocabulary(()), LabelMap(["-", "+"])       # the head is not kept
    vectors, coverage = pretrained_vectors(cfg, tokenizer, vocab, None, BadLines(), log=lambda m: None)
    model = RunSpec(cfg, ExampleKind.TEXT, tokenizer, vocab, None, labels, coverage.dim).build_model(vectors)
    return model, Encoder(tokenizer, vocab), collator(model, labels)


def standardised(rows: np.ndarray, chunk: int = 1 << 16) -> tuple[torch.Tensor, torch.Tensor]:
    """The mean and standard deviation of each column of ``rows`` (read a chunk at a time)."""
    total, squares = np.zeros(rows.shape[1]), np.zeros(rows.shape[1])
    for k in range(0, len(rows), chunk):
        part = np.asarray(rows[k:k + chunk], dtype=np.float64)
        total, squares = total + part.sum(0), squares + (part ** 2).sum(0)
    mean = total / len(rows)
    std = np.sqrt(np.maximum(squares / len(rows) - mean ** 2, 0)) + 1e-6
    return torch.from_numpy(mean).float(), torch.from_numpy(std).float()


class Objective(torch.nn.Module):
    """The squared error of the student's max-pooled states, mapped linearly onto the standardised
    sentence embedding, plus ``pieces_weight`` times that of its state at each word piece, mapped
    onto the encoder's standardised last layer there (TinyBERT's hidden-state loss; the student
    reads the encoder's own pieces, so the steps line up one to one)."""

    def __init__(self, model, targets: Targets, pieces_weight: float):
        super().__init__()
        width, dim = model.head.linear.in_features, targets.sentences.shape[1]
        self.model, self.targets, self.weight = model, targets, pieces_weight
        mean, std = standardised(targets.sentences)
        self.sentences = (torch.from_numpy(np.asarray(targets.sentences)) - mean) / std
        self.to_sentence = torch.nn.Linear(width, dim)
        if pieces_weight:
            self.piece_mean, self.piece_std = standardised(targets.pieces)
            self.to_piece = torch.nn.Linear(width, dim)

    def piece_targets(self, batch) -> torch.Tensor:
        """The standardised encoder states at each step of the batch [B, T, D] (zero where padded)."""
        t = self.targets
        out = torch.zeros(*batch.text.shape, t.pieces.shape[1])
        for row, i in enumerate(batch.index.tolist()):
            out[row, :t.offsets[i + 1] - t.offsets[i]] = torch.from_numpy(
                np.asarray(t.pieces[t.offsets[i]:t.offsets[i + 1]], dtype=np.float32))
        return (out - self.piece_mean) / self.piece_std

    def forward(self, batch) -> torch.Tensor:
        states = self.model.states(batch)
        pooled = masked_max_pool(states, batch.mask)
        loss = torch.nn.functional.mse_loss(self.to_sentence(pooled), self.sentences[batch.index])
        if self.weight:
            steps = batch.mask.clone()
            steps[:, MAX_PIECES:] = False             # past the encoder's reach: no target
            loss = loss + self.weight * torch.nn.functional.mse_loss(
                self.to_piece(states[steps]), self.piece_targets(batch)[steps])
        return loss


def fit(model, items, collate, targets: Targets, epochs: int, lr: float, size: int, pieces_weight: float = 0.0,
        log=print) -> list[float]:
    """Train the recurrent layers (and the maps onto the targets) on ``Objective``; its held-out
    value after each epoch (1.0 a term: no better than the mean target)."""
    objective = Objective(model, targets, pieces_weight)
    params = [p for n, p in objective.named_parameters() if not n.startswith("model.") or
              n.startswith("model.layers.")]
    optimizer = torch.optim.Adam(params, lr=lr)
    cut = min(HELD_OUT, len(items) // 10)
    train = batch_loader(items[cut:], size, collate, shuffle=True, seed=1)     # sorted by length in pools
    held = batch_loader(items[:cut], size, collate)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1 - s / (epochs * len(train)))
    errors, started = [], time.perf_counter()
    for epoch in range(epochs):
        objective.train()
        for batch in train:          # an item's index is its sentence's row of the targets
            optimizer.zero_grad()
            objective(batch).backward()
            optimizer.step()
            schedule.step()
        objective.eval()
        with torch.no_grad():
            errors.append(float(np.mean([objective(batch).item() for batch in held])))
        log(f"epoch {epoch + 1}: held-out squared error {errors[-1]:.4f} ({time.perf_counter() - started:.0f} s)")
    return errors


def save(model, path: Path, meta: dict) -> None:
    """The recurrent layers alone (the tensors ``--init`` replaces), with what made them."""
    layers = {k: v.contiguous() for k, v in model.state_dict().items() if k.startswith("layers.")}
    save_file(layers, str(path), metadata={k: json.dumps(v) for k, v in meta.items()})


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", nargs="+", required=True, help="files of texts (any format adaptext reads)")
    ap.add_argument("--sentences", type=int, default=65000, help="sentences drawn from each file")
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pieces-weight", type=float, default=0.0,
                    help="the weight of the loss at each word piece beside the sentence's (0: the sentence's alone)")
    ap.add_argument("--cache", type=Path, help="a folder keeping the encoder's targets over the corpus (made if "
                                               "missing)")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    texts = corpus(a.corpus, a.sentences)
    model, encoder, collate = student(a.hidden)
    items = encoder.encode([TextExample(t) for t in texts], with_labels=False)
    if a.cache and (a.cache / "offsets.npy").is_file():
        targets = Targets.load(a.cache)
        if len(targets.sentences) != len(texts):
            raise SystemExit(f"{a.cache}: targets of {len(targets.sentences)} sentences for {len(texts)} "
                             f"(another corpus's)")
    else:
        targets = encoder_targets(items)
        if a.cache:
            targets.save(a.cache)
    errors = fit(model, items, collate, targets, a.epochs, a.lr, a.batch_size, a.pieces_weight)
    files = [f"{Path(p).parent.name}/{Path(p).name}" for p in a.corpus]
    save(model, a.out, {"encoder": pretrained.DEFAULT, "hidden": a.hidden, "corpus": files, "sentences": len(texts),
                        "epochs": a.epochs, "pieces_weight": a.pieces_weight,
                        "held_out_error": round(errors[-1], 4)})
    print(a.out)


if __name__ == "__main__":
    main()
