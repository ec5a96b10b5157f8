"""Task-specific distillation (Tang et al. 2019, "Distilling Task-Specific Knowledge from BERT
into Simple Neural Networks"): a fast student learns the logits of a trained teacher run on a
transfer set, the training texts and more, beside the true labels of the texts that have one.

Transfer set (Section 3.2): the training examples; ``augment`` copies of each, rewritten word by
word (with probability 0.1 a word becomes <unk>, the masking rule: the student's unknown word, a
pretrained teacher's mask token; else with probability 0.1 a
word of the same part of speech seen in the training texts; then with probability 0.25 the
copy is cut to an n-gram of 1 to 5 words); and the lines of an ``unlabeled`` file, whose words
the student's vocabulary counts with the training texts' (it learns them from these logits). The
teacher's logits are computed once, in chunks cached on disk, each keyed by the teacher's weights
and its own texts: a killed run resumes from the last chunk, and reruns, other students and a
larger transfer set (the same training texts and copies, plus an unlabelled file) reuse them.
"""
from __future__ import annotations

import hashlib
import random
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..data.cache import cache_root, written_atomically
from ..data.errors import DataError
from ..data.examples import ExampleKind, TextExample
from ..data.text import Tokenizer
from ..runs.config import RunConfig

P_MASK, P_POS, P_NGRAM, MAX_N = 0.1, 0.1, 0.25, 5     # Tang et al. (2019), Section 3.2
CHUNK = 512                                           # texts per cached chunk of teacher logits
MASK = "<unk>"
DISTILLED = (ExampleKind.TEXT, ExampleKind.PAIR)     # the kinds a teacher's logits are read on


# ----------------------------------------------------------------------- transfer set
def transfer_set(cfg: RunConfig, train: list, unlabeled: list, log=print) -> list:
    """The training examples, then the augmented copies and the unlabelled texts (label None)."""
    out = list(train)
    if cfg.augment:
        out += augmented(train, cfg.augment, cfg.seed, cfg.tagger)
    out += unlabeled
    log(f"transfer set: {len(train)} training texts, {len(out) - len(train)} more")
    return out


def augmented(examples: list, copies: int, seed: int, tagger_name: str = "nltk") -> list:
    """``copies`` rewritten copies of each text (a pair keeps its second text), unlabelled."""
    from ..data.tags import get_tagger
    words = Tokenizer(lower=False)
    tagger = get_tagger(tagger_name)
    tokens = [words(ex.text) for ex in examples]
    tags = [tagger(t) if t else [] for t in tokens]
    by_tag: dict = {}
    for ts, gs in zip(tokens, tags):
        for w, g in zip(ts, gs):
            by_tag.setdefault(g, set()).add(w)
    pools = {g: sorted(ws) for g, ws in by_tag.items()}
    rng = random.Random(seed)
    out = []
    for ex, ts, gs in zip(examples, tokens, tags):
        for _ in range(copies):
            text = " ".join(rewrite(ts, gs, pools, rng)) or ex.text
            out.append(replace(ex, text=text, label=None) if ex.kind in DISTILLED else
                       TextExample(text, None, ex.where))
    return out


def rewrite(tokens: list[str], tags: list[str], pools: dict, rng: random.Random) -> list[str]:
    """One augmented copy: masking and POS-guided replacement word by word, then n-gram sampling."""
    out = []
    for w, g in zip(tokens, tags):
        r = rng.random()
        if r < P_MASK:
            out.append(MASK)
        elif r < P_MASK + P_POS and len(pools.get(g, ())) > 1:
            out.append(rng.choice(pools[g]))
        else:
            out.append(w)
    if out and rng.random() < P_NGRAM:
        n = rng.randint(1, min(MAX_N, len(out)))
        start = rng.randint(0, len(out) - n)
        out = out[start:start + n]
    return out


def unlabeled_texts(path) -> list:
    from ..data.lines import iter_lines, location
    # read as UTF-8, else cp1252, else Latin-1 (no --encoding reaches this file)
    texts = [TextExample(line.strip(), None, location(path, i)) for i, line in iter_lines(path, "auto")
             if line.strip()]
    if not texts:
        raise DataError(path, None, "no texts in the file of unlabelled texts")
    return texts


# ----------------------------------------------------------------------- teacher logits
def teachers_of(teacher) -> list[str]:
    """The run directories of ``--teacher``: one, or several separated by commas (an ensemble)."""
    return [t for t in str(teacher).split(",") if t]


def teacher_logits(teacher: str, examples: list, student_labels: list[str], log=print,
                   device: str = "cpu") -> np.ndarray:
    """[len(examples), classes] logits of the teacher run (on ``device``), in the student's class
    order; of an ensemble (several runs), the mean of its teachers' logits, each cached alone."""
    runs = teachers_of(teacher)
    if len(runs) > 1:
        log(f"teacher ensemble of {len(runs)} runs: their logits averaged")
    return np.mean([one_teacher_logits(t, examples, student_labels, log, device) for t in runs], axis=0)


def one_teacher_logits(teacher_dir, examples: list, student_labels: list[str], log=print,
                       device: str = "cpu") -> np.ndarray:
    from ..api import Classifier
    teacher = Classifier.load(teacher_dir, device)
    if sorted(teacher.labels.labels) != sorted(student_labels) or teacher.labels.multilabel:
        raise DataError(teacher_dir, None, f"the teacher's classes ({', '.join(teacher.labels.labels)}) are not the "
                                           f"training data's ({', '.join(student_labels)}), or it is multi-label")
    examples = as_the_teacher_reads(teacher, examples)
    folder = _cache(teacher_dir)
    folder.mkdir(parents=True, exist_ok=True)
    chunks = []
    for start in range(0, len(examples), CHUNK):
        part = examples[start:start + CHUNK]
        path = folder / f"{_key(part)}.npy"
        if not path.is_file():
            if start % (CHUNK * 20) == 0:
                log(f"teacher logits: {start}/{len(examples)} texts ({Path(teacher_dir).name})")
            _save(path, teacher.pipeline.logits(teacher.pipeline.items([_as_input(ex) for ex in part])))
        chunks.append(np.load(path))
    order = [teacher.labels.labels.index(l) for l in student_labels]
    return np.concatenate(chunks)[:, order]


def as_the_teacher_reads(teacher, examples: list) -> list:
    """The transfer set with each masked word spelled as the teacher's mask: a pretrained encoder's
    own mask token (``[MASK]``, the word it was trained to fill in: MiniLM reads the text ``<unk>``
    as an abbreviation and labels "What is <unk> ?" ABBR), <unk> for a word-level teacher."""
    mask = MASK
    tokenizer = teacher.encoder.tokenizer.config
    if tokenizer.level == "subword":
        from ..pretrained import tokenizer as pieces
        mask = pieces(tokenizer.pretrained).mask_token or MASK
    if mask == MASK:
        return examples
    return [replace(ex, text=ex.text.replace(MASK, mask)) if MASK in ex.text else ex for ex in examples]


def _as_input(ex):
    return ex.text if ex.kind == ExampleKind.TEXT else {"text": ex.text, "pair": ex.pair}


def _cache(teacher_dir) -> Path:
    weights = Path(teacher_dir) / "model.safetensors"
    h = hashlib.sha256(f"teacher-logits/v2\n{Path(teacher_dir).resolve()}\n{weights.stat().st_size}\n"
                       f"{weights.stat().st_mtime_ns}\n".encode())
    return cache_root() / "teacher_logits" / h.hexdigest()[:32]


def _key(examples: list) -> str:
    h = hashlib.sha256()
    for ex in examples:
        h.update(("\t".join(ex.texts()) + "\n").encode("utf-8"))
    return h.hexdigest()[:32]


def _save(path: Path, array: np.ndarray) -> None:
    with written_atomically(path, suffix=".npy") as tmp:         # np.save adds .npy to other names
        np.save(tmp, array.astype(np.float32))


def soft_items(cfg: RunConfig, train: list, unlabeled: list, encoder, bad, log=print, device: str = "cpu") -> list:
    """The transfer set (``unlabeled``: the texts of the ``unlabeled`` file) encoded for the
    student, each item with the teacher's logits (``soft``)."""
    if train and train[0].kind not in DISTILLED:
        raise DataError(cfg.teacher, None, f"distillation reads text or pair examples, not {train[0].kind}")
    transfer = transfer_set(cfg, train, unlabeled, log)
    logits = teacher_logits(cfg.teacher, transfer, encoder.labels.labels, log, device=device)
    items = encoder.encode(transfer, bad)
    for it in items:
        it.soft = logits[it.index]
    return items


def teacher_data_options(teacher_dir) -> dict:
    """The teacher run's data options (its training file or dataset, splits, columns): a student
    distilled from it reads the same data unless told otherwise (an ensemble: its first run's)."""
    from ..runs.files import read_json
    from ..runs.contract import OPTIONS
    from ..runs.options import flatten
    config = Path(teacher_dir) / "config.json"
    if not config.is_file():
        raise DataError(teacher_dir, None, "not a run directory (no config.json): the teacher must be a trained run")
    saved = flatten(read_json(config))
    return {k: v for k, v in saved.items() if k in OPTIONS and OPTIONS[k].section == "data"}
