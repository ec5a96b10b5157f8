"""Shared fixtures: small real slices of the TREC questions bundled in the package (always
there) and of ../shared/data (resolved from the repository root; tests that need it skip
without it)."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

import pytest
import torch

from adaptext.data import readers as R
from adaptext.data import tree_readers as T
from adaptext.data.batching import Collator, Encoder
from adaptext.data.examples import ContextsExample, PairExample, TreeExample, TreePairExample
from adaptext.data.text import LabelMap, Tokenizer, Vocab
from adaptext.data.trees import tree_from_brackets

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("ADAPTEXT_DATA") or ROOT / ".." / "shared" / "data").resolve()   # a GPU machine: a copied slice
os.environ.setdefault("ADAPTEXT_DATA", str(DATA))
# token stores and derived vectors of the suite's runs go to a folder of its own, not the user's cache
os.environ["ADAPTEXT_CACHE"] = tempfile.mkdtemp(prefix="adaptext-test-cache-")
# the cores shared among the suite's workers (pytest-xdist), at most 2 threads a worker
WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
torch.set_num_threads(max(1, min(2, (os.cpu_count() or 1) // WORKERS)))

needs_data = pytest.mark.skipif(not DATA.exists(), reason=f"the shared data is absent: {DATA} (ADAPTEXT_DATA)")
BUNDLED_TREC = ROOT / "adaptext" / "resources" / "trec" / "train.txt.gz"


def bundled_examples(kind: str, n: int = 8):
    """n examples of a task kind made from the bundled TREC questions, with no external data:
    texts; pairs and contexts of neighbouring questions (labelled by the first); the questions
    as balanced binary trees with every node labelled (trees) or root-labelled (tree pairs)."""
    questions = R.read_trec_raw(BUNDLED_TREC)[: n + 3]
    if kind == "text":
        return questions[:n]
    if kind == "pair":
        return [PairExample(q.text, questions[i + 1].text, q.label, q.where) for i, q in enumerate(questions[:n])]
    if kind == "contexts":
        return [ContextsExample(q.text, tuple(c.text for c in questions[i + 1: i + 2 + i % 3]), q.label, q.where)
                for i, q in enumerate(questions[:n])]
    if kind == "tree":
        return [TreeExample(_balanced(q.text, q.label), q.label, q.where) for q in questions[:n]]
    if kind == "tree_pair":
        return [TreePairExample(_balanced(q.text, "X"), _balanced(questions[i + 1].text, "X"), q.label, q.where)
                for i, q in enumerate(questions[:n])]
    raise ValueError(kind)


def _balanced(text: str, label: str):
    """A balanced binary tree over the text's words, every node labelled ``label``."""
    def brackets(words):
        if len(words) == 1:
            return f"({label} {words[0]})"
        mid = len(words) // 2
        return f"({label} {brackets(words[:mid])} {brackets(words[mid:])})"
    words = [w.replace("(", "-LRB-").replace(")", "-RRB-") for w in text.split()]
    return tree_from_brackets(brackets(words), labels_are="labels")


def real_examples(kind: str, n: int = 8):
    """n real examples of a task kind: TREC questions (bundled), SICK pairs, SST trees, SICK tree
    pairs (from the shared benchmark data)."""
    if kind == "text":
        return bundled_examples("text", n)
    if kind == "pair":
        return R.read_sick(DATA / "sick/SICK_train.txt")[:n]
    if kind == "contexts":
        pairs = R.read_sick(DATA / "sick/SICK_train.txt")[: n + 3]
        return [ContextsExample(p.text, tuple(q.pair for q in pairs[i: i + 1 + i % 3]), p.label, p.where)
                for i, p in enumerate(pairs[:n])]
    if kind == "tree":
        return T.read_sst_trees(DATA / "sst_ptb/dev.txt")[:n]
    if kind == "tree_pair":
        return T.read_sick_trees(DATA / "sick/parsed/dev", R.read_sick(DATA / "sick/SICK_trial.txt"), DATA / "sick/SICK_trial.txt")[:n]
    raise ValueError(kind)


def with_simple_tags(examples):
    """Give tree nodes deterministic tags (leaf: word-shape tag, inner: 'X') for model tests
    that need tags but are not about tagging."""
    from adaptext.data.examples import TreeExample, TreePairExample

    def tag(t):
        return t.with_tags(("NN" if w and w[0].isalpha() else "SYM") if w is not None else "NP" for w in t.words)
    out = []
    for ex in examples:
        if isinstance(ex, TreePairExample):
            out.append(TreePairExample(tag(ex.tree), tag(ex.pair), ex.label, ex.where))
        else:
            out.append(TreeExample(tag(ex.tree), ex.label, ex.where))
    return out


def encode_for(examples, tokenizer_level: str = "word"):
    """(items, vocab size, number of classes, tag vocab size, multilabel) for a list of examples."""
    tok = Tokenizer(level=tokenizer_level, pretrained="all-MiniLM-L6-v2" if tokenizer_level == "subword" else None)
    texts = []
    for ex in examples:
        if hasattr(ex, "tree"):
            texts.append([w.lower() for w in ex.tree.leaves()] + ([w.lower() for w in ex.pair.leaves()] if hasattr(ex, "pair") and not isinstance(ex.pair, str) else []))
        else:
            texts.append(tok(ex.text) + (tok(ex.pair) if hasattr(ex, "pair") else []) +
                         [t for c in getattr(ex, "contexts", ()) for t in tok(c)])
    vocab = tok.vocabulary(texts)
    labels = LabelMap.from_examples(examples)
    tags = sorted({t for ex in examples for tr in ([ex.tree] + ([ex.pair] if hasattr(ex, "tree") and hasattr(ex, "pair") else []))
                   if hasattr(ex, "tree") for t in tr.tags if t is not None}) if hasattr(examples[0], "tree") else []
    tag_vocab = Vocab(tags) if tags else None
    enc = Encoder(tok, vocab, labels, tag_vocab)
    items = enc.encode(examples)
    return items, len(vocab), len(labels), len(tag_vocab) if tag_vocab else 0, labels.multilabel


def collate_for(items, num_classes, model, multilabel=False, pad_to: int = 0):
    """Collate as training does: padded to the model's ``min_length`` (or ``pad_to``, when
    longer) / ``fixed_length``."""
    return Collator(num_classes, multilabel, max(model.min_length, pad_to), model.fixed_length)(items)


def assert_alone_equals_batched(model, items, num_classes, pad_to: int = 0, atol: float = 1e-5):
    """Padding changes nothing: each example's logits alone equal its logits inside the batch,
    padded to its longest text or to ``pad_to`` positions (tree batches: beside other trees)."""
    model.eval()
    with torch.no_grad():
        together = _logits(model(collate_for(items, num_classes, model, pad_to=pad_to)))
        alone = torch.cat([_logits(model(collate_for([it], num_classes, model))) for it in items])
    assert torch.allclose(alone, together, atol=atol), (alone - together).abs().max()
    assert not torch.allclose(together[0], together[1])          # the examples do get different logits


def _logits(out):
    return out["logits"] if isinstance(out, dict) else out


CASE_SIZE = 6


def registered_case(name: str, kind: str):
    """(model, items, number of classes) of a registered model at its test size, on ``CASE_SIZE``
    examples of a task kind made from the bundled questions."""
    from adaptext.registry import create_model, get_entry
    entry = get_entry(name)
    examples = bundled_examples(kind, CASE_SIZE)
    if entry.needs_tags:
        examples = with_simple_tags(examples)
    items, vocab_size, num_classes, n_tags, _ = encode_for(examples, entry.tokenizer)
    model = create_model(name, num_classes=num_classes, vocab_size=vocab_size, kind=kind,
                         tag_vocab_size=n_tags, **entry.test_config)
    return model, items, num_classes


def distil_small(tmp_path, monkeypatch, accelerator: str, **student):
    """A small kim_cnn teacher trained on the bundled questions (on the CPU), then a student
    distilled from it on ``accelerator``: (the devices its teacher's logits were computed on,
    the teacher's run directory, the student's metrics)."""
    from adaptext.training import distill
    from adaptext.training.run import train_run
    small = {"epochs": 1, "seed": 3, "filters": 16, "embed_dim": 32, "progress": False}
    teacher = tmp_path / "teacher"
    train_run({**small, "out": str(teacher)})                     # any run can teach
    devices, teacher_logits = [], distill.teacher_logits

    def note_device(teacher_dir, examples, labels, log=print, device="cpu"):
        devices.append(device)
        return teacher_logits(teacher_dir, examples, labels, log, device=device)
    monkeypatch.setattr(distill, "teacher_logits", note_device)
    monkeypatch.setenv("ADAPTEXT_CACHE", str(tmp_path / "cache"))
    m = train_run({**small, **student, "out": str(tmp_path / "student"), "teacher": str(teacher),
                   "accelerator": accelerator})
    return devices, teacher, m


def both_paths(model, batch):
    """(the model's logits with gradients on: its training path; without: its prediction path,
    where a model may read word tables instead of computing the same products)."""
    with torch.enable_grad():
        trained = model(batch).detach()
    with torch.no_grad():
        predicted = model(batch)
    return trained, predicted


@contextlib.contextmanager
def serving(run_dir, *options):
    """`adaptext serve RUN` on a free loopback port: (its URL, the process), once /health answers."""
    import socket
    import subprocess
    import sys
    import time
    import urllib.request
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "adaptext.cli", "serve", str(run_dir), "--port", str(port),
                             *options], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(url + "/health", timeout=1).read()
                break
            except OSError:
                assert proc.poll() is None, f"the server stopped: {proc.stderr.read()[-2000:]}"
                assert time.time() < deadline, "the server did not answer /health within 60 s"
                time.sleep(0.2)
        yield url, proc
    finally:
        proc.terminate()
        proc.wait(10)


def after_one_step(model, batch):
    """(the model's word tables before, its two paths' logits after) one SGD step on ``batch``:
    a model that predicts through tables must rebuild them when its weights move."""
    both_paths(model, batch)
    before = model.projections()
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    torch.nn.functional.cross_entropy(model(batch), batch.labels).backward()
    opt.step()
    model.eval()
    return (before, *both_paths(model, batch))


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: a worker a core, at most 4 (each loads torch and its own module fixtures)."""
    return max(1, min(4, os.cpu_count() or 1))
