"""A student's general stage, before any task (Turc et al. 2019, "Well-read students learn
better"; TinyBERT's general distillation): the BiLSTM that reads the pretrained encoder's word
pieces through the encoder's own fixed input vectors (adaptext auto's first student) learns, over
unlabelled sentences, to give the encoder's sentence embedding (mean-pooled and normalised as
sentence-transformers pools it, each dimension standardised over the corpus) through a linear map
dropped afterwards. Its recurrent layers, written to a safetensors file, are what a task's student
can start from (``adaptext distill ... --init FILE``): the word pieces make them fit every data
set's vocabulary. Whether they help: benchmarks/results/student_probes.md.

    python benchmarks/general_student.py --corpus ../shared/data/imdb/train.jsonl.gz \
        ../shared/data/20news/train.jsonl.gz --sentences 65000 --hidden 64 --targets targets.npy \
        --out pieces-64.safetensors
"""
from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file

from adaptext import pretrained
from adaptext.auto.plan import BILSTM, PIECES
from adaptext.data.batching import Encoder
from adaptext.data.examples import ExampleKind, TextExample
from adaptext.data.loading import batch_loader
from adaptext.data.text import LabelMap
from adaptext.errors import BadLines
from adaptext.parse.silver import sentences_of
from adaptext.runs.options import resolve
from adaptext.runs.pipeline import collator
from adaptext.runs.spec import RunSpec, make_tokenizer
from adaptext.training.prepare import pretrained_vectors

HELD_OUT = 2000                 # sentences the per-epoch loss is read on (at most a tenth), never trained on


def corpus(paths: list[str], sentences: int, seed: int = 2) -> list[str]:
    """``sentences`` distinct sentences of 4-50 words drawn from each file, shuffled together."""
    texts = [" ".join(s) for path in paths for s in sentences_of([path], set(), sentences, seed)]
    random.Random(0).shuffle(texts)
    return texts


def sentence_embeddings(texts: list[str], batch: int = 64) -> np.ndarray:
    """The packaged encoder's sentence embedding of each text: its last layer mean-pooled over
    the text's pieces, L2-normalised [N, D]."""
    tokenize, encoder = pretrained.tokenizer(pretrained.DEFAULT), pretrained.encoder(pretrained.DEFAULT).eval()
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = np.zeros((len(texts), encoder.config.hidden_size), dtype=np.float32)
    with torch.inference_mode():
        for k in range(0, len(order), batch):
            idx = order[k:k + batch]
            enc = tokenize([texts[i] for i in idx], padding=True, truncation=True, max_length=128,
                           return_tensors="pt")
            mask = enc["attention_mask"][..., None].float()
            pooled = (encoder(**enc).last_hidden_state * mask).sum(1) / mask.sum(1)
            out[idx] = torch.nn.functional.normalize(pooled, dim=-1).numpy()
    return out


def student(hidden: int):
    """(model, encoder, collate) of the piece student: one bidirectional LSTM layer of ``hidden``
    units a direction over the packaged encoder's word pieces and fixed input vectors (auto's)."""
    cfg = resolve({**BILSTM, **PIECES, "hidden": hidden})
    tokenizer = make_tokenizer(cfg)
    vocab, labels = tokenizer.vocabulary(()), LabelMap(["-", "+"])       # the head is not kept
    vectors, coverage = pretrained_vectors(cfg, tokenizer, vocab, None, BadLines(), log=lambda m: None)
    model = RunSpec(cfg, ExampleKind.TEXT, tokenizer, vocab, None, labels, coverage.dim).build_model(vectors)
    return model, Encoder(tokenizer, vocab), collator(model, labels)


def fit(model, items, collate, targets: np.ndarray, epochs: int, lr: float, size: int, log=print) -> list[float]:
    """Train the recurrent layers (and the map onto the embedding) on the standardised targets;
    the held-out squared error after each epoch (1.0: no better than the mean embedding)."""
    y = torch.from_numpy((targets - targets.mean(0)) / (targets.std(0) + 1e-6)).float()
    pooled: dict = {}
    model.head.register_forward_pre_hook(lambda m, inputs: pooled.__setitem__("h", inputs[0]))
    project = torch.nn.Linear(model.head.linear.in_features, y.shape[1])
    params = [p for n, p in model.named_parameters() if n.startswith("layers.")] + list(project.parameters())
    optimizer = torch.optim.Adam(params, lr=lr)
    cut = min(HELD_OUT, len(items) // 10)
    train = batch_loader(items[cut:], size, collate, shuffle=True, seed=1)     # sorted by length in pools
    held = batch_loader(items[:cut], size, collate)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1 - s / (epochs * len(train)))

    def loss(batch):        # an item's index is its sentence's row of the targets
        model(batch)
        return torch.nn.functional.mse_loss(project(pooled["h"]), y[batch.index])
    errors, started = [], time.perf_counter()
    for epoch in range(epochs):
        model.train()
        for batch in train:
            optimizer.zero_grad()
            loss(batch).backward()
            optimizer.step()
            schedule.step()
        model.eval()
        with torch.no_grad():
            errors.append(float(np.mean([loss(batch).item() for batch in held])))
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
    ap.add_argument("--targets", type=Path, help="a .npy file caching the sentence embeddings (made if missing)")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    texts = corpus(a.corpus, a.sentences)
    if a.targets and a.targets.is_file():
        targets = np.load(a.targets)
        if len(targets) != len(texts):
            raise SystemExit(f"{a.targets}: {len(targets)} embeddings for {len(texts)} sentences (another corpus's)")
    else:
        targets = sentence_embeddings(texts)
        if a.targets:
            np.save(a.targets, targets)
    model, encoder, collate = student(a.hidden)
    items = encoder.encode([TextExample(t) for t in texts], with_labels=False)
    errors = fit(model, items, collate, targets, a.epochs, a.lr, a.batch_size)
    files = [f"{Path(p).parent.name}/{Path(p).name}" for p in a.corpus]
    save(model, a.out, {"encoder": pretrained.DEFAULT, "hidden": a.hidden, "corpus": files, "sentences": len(texts),
                        "epochs": a.epochs, "held_out_error": round(errors[-1], 4)})
    print(a.out)


if __name__ == "__main__":
    main()
